/**
 * Ties at the watermark (issue 14): the tie cursor stored beside a timestamp watermark, when a
 * delta run may start after it (settle window), and what it reads then — in memory and as the
 * `$filter` / CQN the sources send, for integer, String, UUID and composite keys.
 */
import { deltaPlan, parseTieCursor, readSegments, type DeltaPlan } from '../../lib/adapters/watermark'
import { WatermarkTracker } from '../../lib/adapters/watermark-tracker'
import { matches, toCqn, toODataFilter, type Predicate } from '../../lib/adapters/predicate'
import { resolvePipeline } from '../../lib/engine/config/index'
import type { PipelineConfig } from '../../lib/pipeline/types'
import type { TrackerState } from '../../lib/adapters/types'

const pipeline = (extra: Partial<PipelineConfig> = {}) =>
  resolvePipeline({ name: 'w', source: { entity: 'E' }, target: { entity: 'T' }, ...extra })
const state = (extra: Partial<TrackerState> = {}): TrackerState => ({ name: 'w', mode: 'delta', lastSync: null, lastKey: null, ...extra })

const V = '2026-01-05T00:00:00.000Z'
const MINUTE = 60_000
const at = (offset: number) => new Date(Date.parse(V) + offset)
const plan = (keys = ['ID'], precision = 1, settle = MINUTE): DeltaPlan => ({ mode: 'timestamp', field: 'modifiedAt', ties: { keys, precision, settle } })
const cursor = (after: Record<string, unknown>, readAt: Date, value = V) => JSON.stringify({ at: value, after, readAt: readAt.toISOString() })

describe('deltaPlan: tie settings', () => {
  const types: Record<string, string> = { ts: 'cds.Timestamp', dt: 'cds.DateTime', v2: 'Edm.DateTime', d: 'cds.Date' }
  test("a value's period follows the field's type; unknown types count as dates", () => {
    const precision = (field: string) => deltaPlan(pipeline({ delta: { field } }), [field], ['ID'], f => types[f]).ties?.precision
    expect(precision('ts')).toBe(1)
    expect(precision('dt')).toBe(1000)
    expect(precision('v2')).toBe(1000)
    expect(precision('d')).toBe(36 * 3_600_000)
    expect(precision('text')).toBe(36 * 3_600_000)
  })
  test('delta.settle: default one minute, milliseconds or a duration, 0 allowed, anything else named', () => {
    expect(deltaPlan(pipeline(), ['modifiedAt'], ['ID']).ties?.settle).toBe(MINUTE)
    expect(deltaPlan(pipeline({ delta: { settle: '5m' } }), ['modifiedAt'], ['ID']).ties?.settle).toBe(5 * MINUTE)
    expect(deltaPlan(pipeline({ delta: { settle: 0 } }), ['modifiedAt'], ['ID']).ties?.settle).toBe(0)
    expect(() => pipeline({ delta: { settle: 'soon' } })).toThrow(/delta\.settle/)
    expect(() => pipeline({ delta: { settle: -1 } })).toThrow(/delta\.settle/)
    expect(() => pipeline({ delta: { settle: true as never } })).toThrow(/delta\.settle/)
  })
  test('no keys (REST, custom adapters) or key mode: no tie cursor', () => {
    expect(deltaPlan(pipeline({ delta: { field: 'modifiedAt' } }), undefined, []).ties).toBeUndefined()
    expect(deltaPlan(pipeline({ delta: { mode: 'key' } }), ['ID'], ['ID']).ties).toBeUndefined()
  })
})

describe('WatermarkTracker: the tie cursor stored in lastKey', () => {
  const START = at(10 * MINUTE)

  test('delta read in (watermark, keys) order: the keys of the last row at the highest value, and when the run started', () => {
    const tracker = new WatermarkTracker(plan(), { lastSync: null, lastKey: null }, START)
    tracker.observe([{ ID: 1, modifiedAt: '2026-01-04T00:00:00.000Z' }, { ID: 7, modifiedAt: V }])
    tracker.observe([{ ID: 9, modifiedAt: V }, { ID: 12, modifiedAt: V }])
    const { lastSync, lastKey } = tracker.result()
    expect(lastSync).toBe(V)
    expect(parseTieCursor(lastKey)).toEqual({ at: V, after: { ID: 12 }, readAt: START.toISOString() })
    // the checkpoint of the committed batches carries the same position
    expect(tracker.checkpoint()).toEqual({ lastSync: V, lastKey })
  })

  test('a full read in key order: the highest key among the rows at the highest value', () => {
    const tracker = new WatermarkTracker(plan(['a', 'b']), { lastSync: null, lastKey: null }, START, 'full')
    tracker.observe([{ a: 'x', b: 1, modifiedAt: V }, { a: 'x', b: 2, modifiedAt: '2026-01-01T00:00:00.000Z' }, { a: 'y', b: 1, modifiedAt: V }, { a: 'z', b: 0, modifiedAt: null }])
    expect(parseTieCursor(tracker.result().lastKey)?.after).toEqual({ a: 'y', b: 1 })
  })

  test('nothing read at the stored value, a shrunken source or a partial refresh keep the stored cursor', () => {
    const stored = cursor({ ID: 5 }, START)
    const nothing = new WatermarkTracker(plan(), { lastSync: V, lastKey: stored }, at(20 * MINUTE))
    expect(nothing.result()).toEqual({ lastSync: V, lastKey: stored })
    const shrunken = new WatermarkTracker(plan(), { lastSync: V, lastKey: stored }, at(20 * MINUTE), 'full')
    shrunken.observe([{ ID: 1, modifiedAt: '2026-01-01T00:00:00.000Z' }])
    expect(shrunken.result()).toEqual({ lastSync: V, lastKey: stored })
    const slice = new WatermarkTracker(plan(), { lastSync: V, lastKey: stored }, at(20 * MINUTE), 'partial-refresh')
    slice.observe([{ ID: 9, modifiedAt: V }])
    expect(slice.result()).toEqual({ lastSync: V, lastKey: stored })
  })

  test('without keys in the plan (REST), lastKey stays as it was; a cursor too long for the column is not stored', () => {
    const rest = new WatermarkTracker({ mode: 'timestamp', field: 'modifiedAt' }, { lastSync: null, lastKey: null }, START)
    rest.observe([{ ID: 1, modifiedAt: V }])
    expect(rest.result()).toEqual({ lastSync: V, lastKey: null })
    const long = new WatermarkTracker(plan(['code']), { lastSync: null, lastKey: null }, START)
    long.observe([{ code: 'x'.repeat(1000), modifiedAt: V }])
    expect(long.result()).toEqual({ lastSync: V, lastKey: null })
  })

  test('datetime-fields: the row at the highest date and time', () => {
    const fields: DeltaPlan = { mode: 'datetime-fields', dateField: 'd', timeField: 't', ties: { keys: ['ID'], precision: 1000, settle: MINUTE } }
    const tracker = new WatermarkTracker(fields, { lastSync: null, lastKey: null }, START)
    tracker.observe([{ ID: 3, d: '2026-01-05', t: '00:00:00' }, { ID: 4, d: '2026-01-05', t: '00:00:00' }])
    expect(tracker.result()).toEqual({ lastSync: V, lastKey: cursor({ ID: 4 }, START) })
  })
})

describe('readSegments: after the cursor once the value has settled', () => {
  const inclusive = { field: 'modifiedAt', op: 'ge', value: V }

  test('an older release (lastSync without cursor), a key watermark or a cursor of another value: inclusive as before', () => {
    for (const lastKey of [null, '42', 'garbage {', cursor({ ID: 5 }, at(10 * MINUTE), '2026-01-04T00:00:00.000Z')])
      expect(readSegments(plan(), state({ lastSync: V, lastKey }), ['ID'])).toEqual([{ order: ['modifiedAt', 'ID'], from: inclusive }])
  })

  test('inside the settle window (read too soon after the value, which a new write may still carry): inclusive', () => {
    expect(readSegments(plan(), state({ lastSync: V, lastKey: cursor({ ID: 5 }, at(MINUTE)) }), ['ID'])[0].from).toEqual(inclusive)
    // a Date value is given to writes for a day in every time zone
    expect(readSegments(plan(['ID'], 36 * 3_600_000), state({ lastSync: V, lastKey: cursor({ ID: 5 }, at(24 * 3_600_000)) }), ['ID'])[0].from).toEqual(inclusive)
  })

  test('settled: later values, or the same value after the cursor', () => {
    const [segment] = readSegments(plan(), state({ lastSync: V, lastKey: cursor({ ID: 5 }, at(MINUTE + 1)) }), ['ID'])
    expect(segment).toEqual({
      order: ['modifiedAt', 'ID'],
      from: { and: [inclusive, { or: [{ field: 'modifiedAt', op: 'gt', value: V }, { field: 'ID', op: 'gt', value: 5 }] }] },
    })
    // delta.settle 0: as soon as the value's period ended
    expect(readSegments(plan(['ID'], 1000, 0), state({ lastSync: V, lastKey: cursor({ ID: 5 }, at(1000)) }), ['ID'])[0].from).not.toEqual(inclusive)
    expect(readSegments(plan(['ID'], 1000, 0), state({ lastSync: V, lastKey: cursor({ ID: 5 }, at(999)) }), ['ID'])[0].from).toEqual(inclusive)
  })

  test('a cursor missing a key of the entity (its keys changed) is not used', () => {
    expect(readSegments(plan(['a', 'b']), state({ lastSync: V, lastKey: cursor({ a: 'x' }, at(10 * MINUTE)) }), ['a', 'b'])[0].from).toEqual(inclusive)
  })

  test('key mode ignores a tie cursor left in lastKey by an earlier timestamp configuration', () => {
    expect(readSegments({ mode: 'key', field: 'ID' }, state({ lastKey: cursor({ ID: 5 }, at(MINUTE)) }), ['ID'])).toEqual([{ order: ['ID'], from: undefined }])
  })

  test('datetime-fields: a later date, or a later time, or the same date and time after the cursor', () => {
    const fields: DeltaPlan = { mode: 'datetime-fields', dateField: 'd', timeField: 't', ties: { keys: ['ID'], precision: 1000, settle: MINUTE } }
    const [segment] = readSegments(fields, state({ lastSync: V, lastKey: cursor({ ID: 4 }, at(10 * MINUTE)) }), ['ID'])
    const rows = [
      { ID: 1, d: '2026-01-04', t: '23:59:59' }, { ID: 3, d: '2026-01-05', t: '00:00:00' }, { ID: 4, d: '2026-01-05', t: '00:00:00' },
      { ID: 5, d: '2026-01-05', t: '00:00:00' }, { ID: 2, d: '2026-01-05', t: '00:00:01' }, { ID: 0, d: '2026-01-06', t: '00:00:00' }, { ID: 9, d: '2026-01-06', t: null },
    ]
    expect(rows.filter(row => matches(row, segment.from!)).map(row => row.ID)).toEqual([5, 2, 0, 9])
  })
})

describe('what the exclusive read takes, per key kind', () => {
  const settledAt = at(10 * MINUTE)
  const read = (keys: string[], last: Record<string, unknown>, rows: Array<Record<string, unknown>>) =>
    rows.filter(row => matches(row, readSegments(plan(keys), state({ lastSync: V, lastKey: cursor(last, settledAt) }), keys)[0].from!))

  test('integer, String and UUID keys: rows at the value above the cursor, all later values, nothing at or below it', () => {
    const before = '2026-01-04T00:00:00.000Z', later = '2026-01-06T00:00:00.000Z'
    expect(read(['ID'], { ID: 5 }, [{ ID: 4, modifiedAt: V }, { ID: 5, modifiedAt: V }, { ID: 6, modifiedAt: V }, { ID: 1, modifiedAt: later }, { ID: 9, modifiedAt: before }]).map(r => r.ID))
      .toEqual([6, 1])
    expect(read(['code'], { code: 'm' }, [{ code: 'a', modifiedAt: V }, { code: 'm', modifiedAt: V }, { code: 'n', modifiedAt: V }]).map(r => r.code)).toEqual(['n'])
    const uuid = (n: number) => `${String(n).padStart(8, '0')}-0000-4000-8000-000000000000`
    expect(read(['ID'], { ID: uuid(5) }, [uuid(1), uuid(5), uuid(7)].map(ID => ({ ID, modifiedAt: V }))).map(r => r.ID)).toEqual([uuid(7)])
  })

  test('composite keys: lexicographic after the cursor', () => {
    const rows = [[1, 9], [2, 1], [2, 3], [2, 4], [3, 0]].map(([a, b]) => ({ a, b, modifiedAt: V }))
    expect(read(['a', 'b'], { a: 2, b: 3 }, rows).map(r => [r.a, r.b])).toEqual([[2, 4], [3, 0]])
  })

  test('on the wire: OData V4 and V2 literals per key type, CQN with parenthesised groups', () => {
    const types: Record<string, string> = { modifiedAt: 'cds.Timestamp', ID: 'cds.UUID', a: 'cds.String', b: 'cds.Integer' }
    const uuid = '0f8fad5b-d9cb-469f-a165-70867728950e'
    const [single] = readSegments(plan(['ID']), state({ lastSync: V, lastKey: cursor({ ID: uuid }, settledAt) }), ['ID'])
    expect(toODataFilter(single.from!, f => types[f], 'v4')).toBe(`(modifiedAt ge ${V}) and ((modifiedAt gt ${V}) or (ID gt ${uuid}))`)
    expect(toODataFilter(single.from!, f => types[f], 'v2')).toBe(`(modifiedAt ge datetimeoffset'${V}') and ((modifiedAt gt datetimeoffset'${V}') or (ID gt guid'${uuid}'))`)
    const [composite] = readSegments(plan(['a', 'b']), state({ lastSync: V, lastKey: cursor({ a: "O'Neil", b: 3 }, settledAt) }), ['a', 'b'])
    expect(toODataFilter(composite.from!, f => types[f], 'v4'))
      .toBe(`(modifiedAt ge ${V}) and ((modifiedAt gt ${V}) or (a gt 'O''Neil') or ((a eq 'O''Neil') and (b gt 3)))`)
    expect(toCqn(composite.from as Predicate)).toEqual([
      { xpr: [{ ref: ['modifiedAt'] }, '>=', { val: V }] }, 'and',
      { xpr: [{ xpr: [{ ref: ['modifiedAt'] }, '>', { val: V }] }, 'or', { xpr: [{ ref: ['a'] }, '>', { val: "O'Neil" }] }, 'or',
        { xpr: [{ xpr: [{ ref: ['a'] }, '=', { val: "O'Neil" }] }, 'and', { xpr: [{ ref: ['b'] }, '>', { val: 3 }] }] }] },
    ])
  })
})

describe('loss-free: a delta sequence against a table changing between runs', () => {
  /** Runs reads against `table` as a source would (ordered by watermark, then keys) and returns what each read took. */
  function replicate(settle: number) {
    const p = plan(['ID'], 1, settle)
    let watermark = { lastSync: null as string | null, lastKey: null as string | null }
    return (table: Array<{ ID: number; modifiedAt: string }>, now: Date) => {
      const tracker = new WatermarkTracker(p, watermark, now)
      const segments = readSegments(p, state(watermark), ['ID'])
      const taken = segments.flatMap(s => table.filter(row => [s.filter, s.from].every(p => !p || matches(row, p)))
        .sort((x, y) => x.modifiedAt.localeCompare(y.modifiedAt) || x.ID - y.ID))
      tracker.observe(taken)
      watermark = tracker.result()
      return taken.map(row => row.ID)
    }
  }

  test('after a bulk update, later no-change runs read nothing; later ties above the cursor arrive', () => {
    const run = replicate(MINUTE)
    const table = Array.from({ length: 50 }, (_, i) => ({ ID: i + 1, modifiedAt: V }))
    expect(run(table, at(10))).toHaveLength(50) // inside the window: the group is read
    expect(run(table, at(2 * MINUTE))).toHaveLength(50) // the first read after the window reads it once more
    expect(run(table, at(3 * MINUTE))).toEqual([]) // then: nothing
    table.push({ ID: 51, modifiedAt: V })
    expect(run(table, at(4 * MINUTE))).toEqual([51])
    expect(run(table, at(5 * MINUTE))).toEqual([])
  })

  test('a row written later with the value and a lower key arrives while inside the window', () => {
    const run = replicate(MINUTE)
    const table = [{ ID: 5, modifiedAt: V }, { ID: 9, modifiedAt: V }]
    expect(run(table, at(10))).toEqual([5, 9])
    table.push({ ID: 1, modifiedAt: V })
    expect(run(table, at(20))).toEqual([1, 5, 9])
  })
})
