/**
 * The checkpoint of an unfinished delta run: only watermark values actually read, never the
 * run's clock (a run killed among the rows without a watermark value must not skip the rest).
 */
import { WatermarkTracker } from '../../lib/adapters/watermark-tracker'
import { RangeLedger, tagBatch } from '../../lib/adapters/ranges'

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

  test('partitioned: a later range\'s rows never move the checkpoint past a row a lower range has not handed on (ties across the boundaries)', () => {
    const T1 = '2026-02-01T00:00:00.000Z'
    const T2 = '2026-03-01T00:00:00.000Z'
    const ties = { keys: ['ID'], precision: 1, settle: 60_000 }
    const tracker = new WatermarkTracker({ mode: 'timestamp', field: 'modifiedAt', ties }, { lastSync: '2026-01-01T00:00:00.000Z', lastKey: null }, START)
    const ledger = new RangeLedger()
    // range 0: the first page; ranges 1 and 2 split the rows at T1 (IDs 1…30 at T1, 31… at T2)
    tracker.observe(tagBatch([{ ID: 1, modifiedAt: T1 }, { ID: 2, modifiedAt: T1 }], ledger, 0))
    ledger.end(0)
    tracker.observe(tagBatch([{ ID: 40, modifiedAt: T2 }, { ID: 41, modifiedAt: T2 }], ledger, 2)) // range 2 runs ahead
    const cursor = (at: string, ID: number) => JSON.stringify({ at, after: { ID }, readAt: START.toISOString() })
    expect(tracker.checkpoint()).toEqual({ lastSync: T1, lastKey: cursor(T1, 2) })
    tracker.observe(tagBatch([{ ID: 3, modifiedAt: T1 }, { ID: 20, modifiedAt: T1 }], ledger, 1))
    expect(tracker.checkpoint()).toEqual({ lastSync: T1, lastKey: cursor(T1, 20) }) // range 1 is not complete: still at its own rows
    tracker.observe(tagBatch([{ ID: 30, modifiedAt: T1 }, { ID: 31, modifiedAt: T2 }], ledger, 1))
    expect(tracker.checkpoint()).toEqual({ lastSync: T2, lastKey: cursor(T2, 31) })
    ledger.end(1)
    expect(tracker.checkpoint()).toEqual({ lastSync: T2, lastKey: cursor(T2, 41) }) // range 1 complete: range 2's rows count
    ledger.end(2)
    expect(tracker.result()).toEqual({ lastSync: T2, lastKey: cursor(T2, 41) })
  })

  test('partitioned key mode: the highest key below the first incomplete range', () => {
    const tracker = new WatermarkTracker({ mode: 'key', field: 'ID' }, { lastSync: null, lastKey: '5' }, START)
    const ledger = new RangeLedger()
    tracker.observe(tagBatch([{ ID: 90 }], ledger, 2))
    expect(tracker.checkpoint().lastKey).toBe('5')
    tracker.observe(tagBatch([{ ID: 6 }], ledger, 0))
    expect(tracker.checkpoint().lastKey).toBe('6')
    ledger.end(0)
    ledger.end(1)
    expect(tracker.checkpoint().lastKey).toBe('90')
  })
})
