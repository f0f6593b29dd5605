/**
 * The typed configuration editor's logic (app/pipeline-console/webapp/model/settings.ts) with the
 * rules as the server serves them (lib/engine/config/rules.ts): controls per type, inline checks,
 * the diff against the current overrides, payloads, and reset to coded.
 */
import { settingRules } from '../../lib/engine/config/rules'
import { CODED, choose, diff, editorsOf, isChanged, payloads, problemOf, resetToCoded, type ServedField, type SettingEditor } from '../../app/pipeline-console/webapp/model/settings'

const rules = settingRules()
const field = (path: string, values: Partial<ServedField> = {}): ServedField =>
  ({ path, coded: null, override: null, effective: null, source: 'default', overridable: true, rule: rules[path] as ServedField['rule'], ...values })

function editors(...fields: ServedField[]): Record<string, SettingEditor> {
  return Object.fromEntries(editorsOf(fields, f => `coded: ${String(f.coded ?? f.effective)}`).map(e => [e.path, e]))
}

describe('typed settings editor logic', () => {
  test('a control per served type; fields without a rule or not overridable get none', () => {
    const all = editors(field('mode', { effective: 'delta' }), field('source.batchSize'), field('enabled', { effective: true }), field('description'),
      field('schedule'), field('maxStaleness'), field('onError'), { ...field('leaseDuration'), overridable: false, rule: undefined })
    expect(Object.fromEntries(Object.values(all).map(e => [e.path, e.control]))).toEqual({
      mode: 'select', 'source.batchSize': 'number', enabled: 'switch', description: 'text', schedule: 'schedule', maxStaleness: 'text', onError: 'json',
    })
    expect(all.mode.options.map(o => o.key)).toEqual([CODED, 'delta', 'full'])
    expect(all.enabled.state).toBe(true)
  })

  test('inline checks use the served bounds', () => {
    const { 'source.batchSize': batch, mode, maxStaleness, 'delta.field': deltaField, 'deletes.maxShare': share } = editors(
      field('source.batchSize'), field('mode'), field('maxStaleness'), field('delta.field'), field('deletes.maxShare'))
    for (const [draft, ok] of [['-5', false], ['0', false], ['1', true], ['100000', true], ['100001', false], ['2.5', false], ['', true]] as const) {
      batch.draft = draft
      expect(problemOf(batch) === undefined, draft).toBe(ok)
    }
    batch.draft = '-5'
    expect(problemOf(batch)).toEqual({ key: 'ruleInteger', args: [1, 100000] })
    choose(mode, 'sometimes')
    expect(problemOf(mode)?.key).toBe('ruleEnum')
    maxStaleness.draft = '2h'
    expect(problemOf(maxStaleness)).toBeUndefined()
    maxStaleness.draft = 'soon'
    expect(problemOf(maxStaleness)?.key).toBe('ruleDuration')
    deltaField.draft = 'a&b'
    expect(problemOf(deltaField)?.key).toBe('rulePattern')
    share.draft = '0'
    expect(problemOf(share)?.key).toBe('ruleNumberExclusive')
    share.draft = '0.5'
    expect(problemOf(share)).toBeUndefined()
  })

  test('the schedule editor: every within the served interval bounds, cron with 5 fields', () => {
    const { schedule } = editors(field('schedule'))
    schedule.schedule = { kind: 'every', every: '500', cron: '', engine: 'spawn' }
    expect(problemOf(schedule)?.key).toBe('ruleScheduleRange')
    schedule.schedule.every = '10m'
    expect(problemOf(schedule)).toBeUndefined()
    schedule.schedule = { kind: 'cron', every: '', cron: '* * *', engine: 'queued' }
    expect(problemOf(schedule)?.key).toBe('ruleCron')
  })

  test('diff against the current overrides, payloads, and reset to coded', () => {
    const all = editors(field('mode', { effective: 'delta' }), field('source.batchSize', { source: 'override', override: 250, effective: 250 }),
      field('schedule'), field('transaction', { effective: 'batch' }))
    expect(diff(Object.values(all))).toEqual([])
    choose(all.mode, 'full')
    resetToCoded(all['source.batchSize'])
    all.schedule.schedule = { kind: 'cron', every: '', cron: '0 2 * * *', engine: 'queued' }
    expect(isChanged(all.transaction)).toBe(false)
    const changes = diff(Object.values(all))
    expect(changes.map(c => [c.path, c.action, c.from, c.to])).toEqual([
      ['mode', 'set', 'delta', 'full'],
      ['source.batchSize', 'clear', '250', '–'],
      ['schedule', 'set', '–', '{"cron":"0 2 * * *","engine":"queued"}'],
    ])
    expect(payloads(changes)).toEqual({ overrides: { mode: 'full', schedule: { cron: '0 2 * * *', engine: 'queued' } }, cleared: ['source.batchSize'] })
    // the same value as the current override is no change
    all['source.batchSize'].draft = '250'
    expect(isChanged(all['source.batchSize'])).toBe(false)
  })
})
