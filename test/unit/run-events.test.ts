/**
 * The bounded run event log (lib/runs/log.ts, docs/reference/management-api.md "Run events"): the bound holds whatever a run
 * records, the first error and the end always find room, the roll-up adds up what it replaced, and
 * messages carry no URL parameters or user info.
 */
import { RunEventLog, maskUrls } from '../../lib/runs/log'

describe('RunEventLog', () => {
  test('never more than max events: details beyond max − 3 are rolled up by kind; the first error and the end always kept', () => {
    const log = new RunEventLog(6)
    log.add('start')
    for (let i = 0; i < 100; i++) {
      log.add('page', { rows: 10, bytes: 100, durationMs: 2 })
      log.add('batch', { rows: 10, durationMs: 1 })
    }
    log.add('error', { phase: 'target', message: 'first' })
    log.add('error', { phase: 'target', message: 'second' })
    log.end({ message: 'failed' })
    log.add('page', { rows: 1 }) // after the end: ignored
    const events = log.list()
    expect(events.length).toBe(6)
    expect(events.map(e => e.kind)).toEqual(['start', 'page', 'batch', 'error', 'rollup', 'end'])
    expect(events.map(e => e.seq)).toEqual([1, 2, 3, 4, 5, 6])
    expect(events[3].message).toBe('first')
    const rollup = events[4]
    expect(rollup).toMatchObject({ rows: 99 * 10 + 99 * 10, bytes: 99 * 100, durationMs: 99 * 2 + 99 })
    expect(rollup.message).toBe('199 more events: 99 page reads (990 rows, 9900 bytes, 198 ms); 99 write batches (990 rows, 99 ms); 1 errors (0 rows, 0 ms)')
    expect(JSON.parse(rollup.details!)).toEqual({ page: { count: 99, rows: 990, bytes: 9900, durationMs: 198 }, batch: { count: 99, rows: 990, bytes: 0, durationMs: 99 }, error: { count: 1, rows: 0, bytes: 0, durationMs: 0 } })
  })

  test('under the bound nothing is rolled up', () => {
    const log = new RunEventLog(200)
    log.add('start')
    log.add('page', { rows: 3, httpStatus: 200 })
    log.end({ message: 'completed', rows: 3, details: { created: 3 } })
    expect(log.list().map(e => e.kind)).toEqual(['start', 'page', 'end'])
    expect(log.list()[2]).toMatchObject({ rows: 3, details: '{"created":3}' })
  })

  test('messages: query parameters and user info of URLs masked, long texts cut', () => {
    expect(maskUrls('GET /odata/v4/catalog/Books?$filter=modifiedAt%20gt%202026-01-01&$top=10 failed')).toBe('GET /odata/v4/catalog/Books?… failed')
    expect(maskUrls('request to https://user:s3cret@api.example.com/v1/items?token=abc failed')).toBe('request to https://***@api.example.com/v1/items?… failed')
    expect(maskUrls('no url here: 3 rows')).toBe('no url here: 3 rows')
    const log = new RunEventLog(10)
    log.add('error', { message: 'x'.repeat(5000) })
    expect(log.list()[0].message!.length).toBe(1000)
  })
})
