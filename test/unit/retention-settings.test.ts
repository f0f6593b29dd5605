/**
 * `cds.requires['data-pipeline'].retention` (lib/retention/settings.ts, docs/reference/management-api.md
 * "Run events" and docs/reference/settings.md): the defaults, `false` at either level, durations, and errors naming the key.
 */
import cds from '@sap/cds'
import { runRetentionSettings, RETENTION_DEFAULTS } from '../../lib/retention/settings'

const requires = cds.env.requires as unknown as Record<string, Record<string, unknown> | undefined>
const withRetention = (retention: unknown) => {
  requires['data-pipeline'] = { ...requires['data-pipeline'], retention }
  if (retention === undefined) delete requires['data-pipeline']!.retention
  return runRetentionSettings
}
afterEach(() => { delete requires['data-pipeline']?.retention })

describe('retention settings', () => {
  test('defaults: 90 days, 1000 runs per pipeline, pruned at most every 5 minutes', () => {
    expect(withRetention(undefined)()).toEqual({ maxAge: 90 * 86_400_000, maxCount: 1000, interval: 300_000 })
    expect(withRetention(true)()).toEqual(RETENTION_DEFAULTS)
    expect(withRetention({})()).toEqual(RETENTION_DEFAULTS)
    expect(withRetention({ runs: {} })()).toEqual(RETENTION_DEFAULTS)
  })

  test('false keeps every run; a limit of one kind may be switched off', () => {
    expect(withRetention(false)()).toBeUndefined()
    expect(withRetention({ runs: false })()).toBeUndefined()
    expect(withRetention({ runs: { maxAge: false } })()).toEqual({ maxAge: undefined, maxCount: 1000, interval: 300_000 })
    expect(withRetention({ runs: { maxAge: '30d', maxCount: false, interval: '1h' } })()).toEqual({ maxAge: 30 * 86_400_000, maxCount: undefined, interval: 3_600_000 })
  })

  test('invalid values throw INVALID_CONFIG naming the key', () => {
    const cases: Array<[unknown, string, RegExp]> = [
      ['30d', 'retention', /must be false or an object/],
      [{ run: {} }, 'retention.run', /is unknown; retention has runs/],
      [{ runs: 1000 }, 'retention.runs', /must be false or an object/],
      [{ runs: { maxRuns: 5 } }, 'retention.runs.maxRuns', /is unknown; retention.runs has maxAge, maxCount and interval/],
      [{ runs: { maxAge: 'a month' } }, 'retention.runs.maxAge', /'a month' is not a duration/],
      [{ runs: { maxAge: 30 } }, 'retention.runs.maxAge', /at least 1 minute \(a number is milliseconds; write '30d' for 30 days\)/],
      [{ runs: { maxCount: 0 } }, 'retention.runs.maxCount', /must be false or a positive integer, got 0/],
      [{ runs: { maxCount: '100' } }, 'retention.runs.maxCount', /positive integer, got "100"/],
      [{ runs: { interval: null } }, 'retention.runs.interval', /must be a duration/],
    ]
    for (const [retention, target, message] of cases) {
      let error: { code?: string; target?: string; message?: string } | undefined
      try {
        withRetention(retention)()
      } catch (e) {
        error = e as typeof error
      }
      expect(error, JSON.stringify(retention)).toMatchObject({ code: 'INVALID_CONFIG', target })
      expect(error!.message).toMatch(message)
    }
  })
})
