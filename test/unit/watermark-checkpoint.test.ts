/**
 * The checkpoint of an unfinished delta run: only watermark values actually read, never the
 * run's clock (a run killed among the rows without a watermark value must not skip the rest).
 */
import { WatermarkTracker } from '../../lib/adapters/watermark'

const START = new Date('2026-06-01T12:00:00.000Z')

describe('WatermarkTracker.checkpoint', () => {
  test('timestamp: nothing with a value read yet → the previous watermark, not the run start', () => {
    const tracker = new WatermarkTracker({ mode: 'timestamp', field: 'modifiedAt' }, { lastSync: null, lastKey: null }, START)
    tracker.observe([{ ID: 1, modifiedAt: null }, { ID: 2, modifiedAt: null }])
    expect(tracker.checkpoint()).toEqual({ lastSync: null, lastKey: null })
    expect(tracker.result().lastSync).toBe(START.toISOString()) // a finished run may store its start
    const resumed = new WatermarkTracker({ mode: 'timestamp', field: 'modifiedAt' }, { lastSync: '2026-01-01T00:00:00.000Z', lastKey: null }, START)
    resumed.observe([{ ID: 3, modifiedAt: null }])
    expect(resumed.checkpoint()).toEqual({ lastSync: '2026-01-01T00:00:00.000Z', lastKey: null })
  })

  test('timestamp and datetime-fields: the highest value read, never backwards', () => {
    const tracker = new WatermarkTracker({ mode: 'timestamp', field: 'modifiedAt' }, { lastSync: '2026-01-01T00:00:00.000Z', lastKey: null }, START)
    tracker.observe([{ ID: 1, modifiedAt: '2026-03-01T00:00:00Z' }, { ID: 2, modifiedAt: '2026-02-01T00:00:00Z' }])
    expect(tracker.checkpoint()).toEqual({ lastSync: '2026-03-01T00:00:00.000Z', lastKey: null })
    const older = new WatermarkTracker({ mode: 'timestamp', field: 'modifiedAt' }, { lastSync: '2026-05-01T00:00:00.000Z', lastKey: null }, START)
    older.observe([{ ID: 1, modifiedAt: '2026-03-01T00:00:00Z' }])
    expect(older.checkpoint().lastSync).toBe('2026-05-01T00:00:00.000Z')
    const fields = new WatermarkTracker({ mode: 'datetime-fields', dateField: 'd', timeField: 't' }, { lastSync: null, lastKey: null }, START)
    fields.observe([{ ID: 1, d: null, t: null }])
    expect(fields.checkpoint().lastSync).toBeNull()
    fields.observe([{ ID: 2, d: '2026-04-02', t: '10:20:30' }])
    expect(fields.checkpoint().lastSync).toBe('2026-04-02T10:20:30.000Z')
  })

  test('key: the highest key read, else the previous one; no clock', () => {
    const tracker = new WatermarkTracker({ mode: 'key', field: 'ID' }, { lastSync: null, lastKey: '5' }, START)
    expect(tracker.checkpoint()).toEqual({ lastSync: null, lastKey: '5' })
    tracker.observe([{ ID: 7 }, { ID: 9 }])
    expect(tracker.checkpoint()).toEqual({ lastSync: null, lastKey: '9' })
  })
})
