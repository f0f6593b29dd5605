/**
 * Watermarks: which rows a delta run reads (inclusive next segment, stable order, first-run
 * segments) and what is stored afterwards (the highest value read, never backwards).
 */
import { deltaPlan, readSegments, splitUtc, watermarkFields, type DeltaPlan } from '../../lib/adapters/watermark'
import { WatermarkTracker } from '../../lib/adapters/watermark-tracker'
import { resolvePipeline } from '../../lib/engine/config/index'
import type { PipelineConfig } from '../../lib/pipeline/types'
import type { TrackerState } from '../../lib/adapters/types'

const pipeline = (extra: Partial<PipelineConfig> = {}) =>
  resolvePipeline({ name: 'w', source: { entity: 'E' }, target: { entity: 'T' }, ...extra })
const state = (extra: Partial<TrackerState> = {}): TrackerState => ({ name: 'w', mode: 'delta', lastSync: null, lastKey: null, ...extra })
const START = new Date('2026-06-01T12:00:00.000Z')

describe('deltaPlan: inference', () => {
  test('modifiedAt on the source is the default timestamp field', () => {
    expect(deltaPlan(pipeline(), ['ID', 'title', 'modifiedAt'], ['ID'])).toEqual({ mode: 'timestamp', field: 'modifiedAt', ties: { keys: ['ID'], precision: 36 * 3_600_000, settle: 60_000 } })
  })
  test('no delta field known → none (every run reads everything)', () => {
    expect(deltaPlan(pipeline(), ['ID', 'title'], ['ID'])).toEqual({ mode: 'none' })
    expect(deltaPlan(pipeline(), undefined, [])).toEqual({ mode: 'none' })
  })
  test('explicit delta.field wins', () => {
    expect(deltaPlan(pipeline({ delta: { field: 'changedAt' } }), ['ID', 'modifiedAt', 'changedAt'], ['ID'])).toMatchObject({ mode: 'timestamp', field: 'changedAt' })
  })
  test('key mode defaults to the single key', () => {
    expect(deltaPlan(pipeline({ delta: { mode: 'key' } }), ['ID'], ['ID'])).toEqual({ mode: 'key', field: 'ID' })
    expect(deltaPlan(pipeline({ delta: { mode: 'key' } }), ['a', 'b'], ['a', 'b'])).toEqual({ mode: 'none' })
  })
  test('datetime-fields', () => {
    expect(deltaPlan(pipeline({ delta: { mode: 'datetime-fields', dateField: 'd', timeField: 't' } }), ['d', 't'], ['ID']))
      .toEqual({ mode: 'datetime-fields', dateField: 'd', timeField: 't', ties: { keys: ['ID'], precision: 1000, settle: 60_000 } })
  })
})

describe('readSegments', () => {
  const timestamp: DeltaPlan = { mode: 'timestamp', field: 'modifiedAt' }

  test('full runs read everything in key order', () => {
    expect(readSegments(timestamp, state({ mode: 'full', lastSync: '2026-01-01T00:00:00.000Z' }), ['ID'])).toEqual([{ order: ['ID'] }])
    expect(readSegments({ mode: 'none' }, state(), ['ID'])).toEqual([{ order: ['ID'] }])
  })

  test('first delta run: rows without a watermark value, then the rest in watermark order', () => {
    expect(readSegments(timestamp, state(), ['ID'])).toEqual([
      { order: ['ID'], filter: { field: 'modifiedAt', op: 'eq', value: null } },
      { order: ['modifiedAt', 'ID'], from: { field: 'modifiedAt', op: 'ne', value: null } },
    ])
  })

  test('next delta run is inclusive (ge) of the stored watermark and ordered watermark, then keys', () => {
    expect(readSegments(timestamp, state({ lastSync: '2026-01-01T00:00:00.000Z' }), ['ID', 'sub'])).toEqual([
      { order: ['modifiedAt', 'ID', 'sub'], from: { field: 'modifiedAt', op: 'ge', value: '2026-01-01T00:00:00.000Z' } },
    ])
  })

  test('key mode: strictly after lastKey; numeric keys compare as numbers', () => {
    const plan: DeltaPlan = { mode: 'key', field: 'ID' }
    expect(readSegments(plan, state(), ['ID'])).toEqual([{ order: ['ID'], from: undefined }])
    expect(readSegments(plan, state({ lastKey: '42' }), ['ID'])).toEqual([{ order: ['ID'], from: { field: 'ID', op: 'gt', value: 42 } }])
    expect(readSegments(plan, state({ lastKey: 'K-42' }), ['ID'])).toEqual([{ order: ['ID'], from: { field: 'ID', op: 'gt', value: 'K-42' } }])
  })

  test('datetime-fields: later date, or same date with time ≥ (UTC)', () => {
    const plan: DeltaPlan = { mode: 'datetime-fields', dateField: 'd', timeField: 't' }
    expect(readSegments(plan, state({ lastSync: '2026-03-01T10:20:30.000Z' }), ['ID'])).toEqual([{
      order: ['d', 't', 'ID'],
      from: { or: [{ field: 'd', op: 'gt', value: '2026-03-01' }, { and: [{ field: 'd', op: 'eq', value: '2026-03-01' }, { field: 't', op: 'ge', value: '10:20:30' }] }] },
    }])
  })

  test('watermark fields are what every read (also full) must select', () => {
    expect(watermarkFields({ mode: 'timestamp', field: 'modifiedAt' })).toEqual(['modifiedAt'])
    expect(watermarkFields({ mode: 'key', field: 'ID' })).toEqual(['ID'])
    expect(watermarkFields({ mode: 'datetime-fields', dateField: 'd', timeField: 't' })).toEqual(['d', 't'])
    expect(watermarkFields({ mode: 'none' })).toEqual([])
  })

  test('splitUtc normalises offsets to UTC', () => {
    expect(splitUtc('2026-03-01T23:30:00+02:00')).toEqual(['2026-03-01', '21:30:00'])
    expect(splitUtc('2026-03-01T23:30:00-02:00')).toEqual(['2026-03-02', '01:30:00'])
  })
})

describe('WatermarkTracker', () => {
  const timestamp: DeltaPlan = { mode: 'timestamp', field: 'modifiedAt' }

  test('stores the highest value read, not the clock, across batches and out of order', () => {
    const tracker = new WatermarkTracker(timestamp, { lastSync: null, lastKey: null }, START)
    tracker.observe([{ modifiedAt: '2026-01-02T00:00:00.000Z' }, { modifiedAt: '2026-01-05T00:00:00.000Z' }])
    tracker.observe([{ modifiedAt: '2026-01-03T00:00:00.000Z' }, { modifiedAt: null }, { modifiedAt: 'garbage' }, {}])
    expect(tracker.result()).toEqual({ lastSync: '2026-01-05T00:00:00.000Z', lastKey: null })
  })

  test('accepts Date values and offsets, stores UTC ISO', () => {
    const tracker = new WatermarkTracker(timestamp, { lastSync: null, lastKey: null }, START)
    tracker.observe([{ modifiedAt: new Date('2026-01-05T00:00:00.000Z') }, { modifiedAt: '2026-01-05T03:00:00+02:00' }])
    expect(tracker.result().lastSync).toBe('2026-01-05T01:00:00.000Z')
  })

  test('never moves backwards: rows older than the previous watermark keep it', () => {
    const tracker = new WatermarkTracker(timestamp, { lastSync: '2026-02-01T00:00:00.000Z', lastKey: 'k' }, START)
    tracker.observe([{ modifiedAt: '2026-01-01T00:00:00.000Z' }])
    expect(tracker.result()).toEqual({ lastSync: '2026-02-01T00:00:00.000Z', lastKey: 'k' })
  })

  test('nothing read keeps the previous watermark', () => {
    const tracker = new WatermarkTracker(timestamp, { lastSync: '2026-02-01T00:00:00.000Z', lastKey: null }, START)
    tracker.observe([])
    expect(tracker.result().lastSync).toBe('2026-02-01T00:00:00.000Z')
  })

  test('the re-read of rows at the watermark does not change it (inclusive reads are idempotent)', () => {
    const tracker = new WatermarkTracker(timestamp, { lastSync: '2026-02-01T00:00:00.000Z', lastKey: null }, START)
    tracker.observe([{ modifiedAt: '2026-02-01T00:00:00.000Z' }])
    expect(tracker.result().lastSync).toBe('2026-02-01T00:00:00.000Z')
  })

  test('key mode: highest key, numbers compared numerically; lastSync is the read start', () => {
    const tracker = new WatermarkTracker({ mode: 'key', field: 'ID' }, { lastSync: null, lastKey: '5' }, START)
    tracker.observe([{ ID: 9 }, { ID: 10 }, { ID: 2 }, { ID: null }])
    expect(tracker.result()).toEqual({ lastSync: START.toISOString(), lastKey: '10' })
  })

  test('key mode with nothing read keeps lastKey', () => {
    const tracker = new WatermarkTracker({ mode: 'key', field: 'ID' }, { lastSync: null, lastKey: '5' }, START)
    expect(tracker.result().lastKey).toBe('5')
  })

  test('datetime-fields combine date and time (UTC)', () => {
    const tracker = new WatermarkTracker({ mode: 'datetime-fields', dateField: 'd', timeField: 't' }, { lastSync: null, lastKey: null }, START)
    tracker.observe([{ d: '2026-03-01', t: '10:20:30' }, { d: '2026-02-28', t: '23:59:59' }, { d: '2026-03-01', t: null }, { d: null, t: '23:00:00' }])
    expect(tracker.result().lastSync).toBe('2026-03-01T10:20:30.000Z')
  })

  test('no delta field: lastSync is the read start', () => {
    const tracker = new WatermarkTracker({ mode: 'none' }, { lastSync: '2026-01-01T00:00:00.000Z', lastKey: null }, START)
    tracker.observe([{ ID: 1 }])
    expect(tracker.result()).toEqual({ lastSync: START.toISOString(), lastKey: null })
  })
})
