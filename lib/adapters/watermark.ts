/**
 * Watermarks: which rows a delta run reads and where the next run starts.
 *
 * The watermark is the highest value *read* (never the end-of-run clock), and the next run
 * compares inclusively (`ge`), so rows sharing the last value — or written later with that
 * same value — are read again rather than lost. Re-reads are harmless: writes are upserts.
 */
import type { DataRecord, ResolvedPipeline } from '../pipeline/types.js'
import type { TrackerState } from './types.js'
import type { Predicate } from './predicate.js'

export interface ReadSegment {
  filter?: Predicate
  /** Columns (source names) giving a total order; keys last. */
  order: string[]
}

export interface Watermark {
  lastSync: string | null
  lastKey: string | null
}

/** The effective delta settings after inference from the source entity. */
export interface DeltaPlan {
  mode: 'none' | 'timestamp' | 'key' | 'datetime-fields'
  field?: string
  dateField?: string
  timeField?: string
}

export function deltaPlan(pipeline: ResolvedPipeline, sourceElements: string[] | undefined, sourceKeys: string[]): DeltaPlan {
  const delta = pipeline.delta
  if (delta?.mode === 'datetime-fields') return { mode: 'datetime-fields', dateField: delta.dateField, timeField: delta.timeField }
  if (delta?.mode === 'key') {
    const field = delta.field ?? (sourceKeys.length === 1 ? sourceKeys[0] : undefined)
    return field ? { mode: 'key', field } : { mode: 'none' }
  }
  const field = delta?.field ?? (sourceElements?.includes('modifiedAt') ? 'modifiedAt' : undefined)
  return field ? { mode: 'timestamp', field } : { mode: 'none' }
}

/** The ordered reads of one run. */
export function readSegments(plan: DeltaPlan, tracker: TrackerState, keys: string[]): ReadSegment[] {
  if (tracker.mode !== 'delta' || plan.mode === 'none') return [{ order: keys }]
  if (plan.mode === 'key') {
    const field = plan.field!
    const order = [field, ...keys.filter(k => k !== field)]
    return [{ order, filter: tracker.lastKey === null ? undefined : { field, op: 'gt', value: keyValue(tracker.lastKey) } }]
  }
  const fields = plan.mode === 'timestamp' ? [plan.field!] : [plan.dateField!, plan.timeField!]
  const order = [...fields, ...keys.filter(k => !fields.includes(k))]
  if (tracker.lastSync === null) {
    // first delta run: rows without a watermark value first, then the rest in watermark order
    return [
      { order: keys, filter: { field: fields[0], op: 'eq', value: null } },
      { order, filter: { field: fields[0], op: 'ne', value: null } },
    ]
  }
  if (plan.mode === 'timestamp') return [{ order, filter: { field: fields[0], op: 'ge', value: tracker.lastSync } }]
  const [date, time] = splitUtc(tracker.lastSync)
  return [{
    order,
    filter: { or: [{ field: fields[0], op: 'gt', value: date }, { and: [{ field: fields[0], op: 'eq', value: date }, { field: fields[1], op: 'ge', value: time }] }] },
  }]
}

/**
 * The source fields a watermark is taken from. Reads select them even when a run does not
 * filter on them (full runs), so every successful run stores the highest value read.
 */
export function watermarkFields(plan: DeltaPlan): string[] {
  if (plan.mode === 'none') return []
  return [plan.field, plan.dateField, plan.timeField].filter((field): field is string => Boolean(field))
}

/** Key watermarks are stored as text; numeric keys compare as numbers. */
function keyValue(text: string): string | number {
  return /^-?\d{1,15}$/.test(text) ? Number(text) : text
}

/** `2026-03-01T10:20:30.000Z` → [`2026-03-01`, `10:20:30`] in UTC. */
export function splitUtc(iso: string): [string, string] {
  const normalized = new Date(iso).toISOString()
  return [normalized.slice(0, 10), normalized.slice(11, 19)]
}

/** Follows the records of a run and yields the watermark to store after success. */
export class WatermarkTracker {
  private maxTime: number | undefined
  private maxKey: string | number | undefined

  constructor(private readonly plan: DeltaPlan, private readonly previous: Watermark, private readonly readStart: Date) {}

  observe(records: DataRecord[]): void {
    const { plan } = this
    for (const record of records) {
      if (plan.mode === 'key') {
        const value = record[plan.field!]
        if (value === null || value === undefined) continue
        const key = typeof value === 'number' ? value : String(value)
        if (this.maxKey === undefined || compareKeys(key, this.maxKey) > 0) this.maxKey = key
      } else if (plan.mode === 'timestamp' || plan.mode === 'datetime-fields') {
        const time = plan.mode === 'timestamp'
          ? toTime(record[plan.field!])
          : toTime(record[plan.dateField!] ? `${String(record[plan.dateField!]).slice(0, 10)}T${String(record[plan.timeField!] ?? '00:00:00')}Z` : null)
        if (time !== undefined && (this.maxTime === undefined || time > this.maxTime)) this.maxTime = time
      }
    }
  }

  result(): Watermark {
    const { plan } = this
    if (plan.mode === 'timestamp' || plan.mode === 'datetime-fields') {
      const lastSync = this.maxTime !== undefined ? new Date(this.maxTime).toISOString() : this.previous.lastSync ?? this.readStart.toISOString()
      return { lastSync: later(lastSync, this.previous.lastSync), lastKey: this.previous.lastKey }
    }
    if (plan.mode === 'key') {
      const lastKey = this.maxKey !== undefined ? String(this.maxKey) : this.previous.lastKey
      return { lastSync: this.readStart.toISOString(), lastKey }
    }
    return { lastSync: this.readStart.toISOString(), lastKey: this.previous.lastKey }
  }

  /**
   * The position reached by the committed batches of an unfinished run (stored as checkpoint):
   * only values actually read, never the run's clock. A run interrupted before it read any
   * watermark value (e.g. while reading the rows that have none) resumes from the previous
   * watermark; `result()`'s clock fallback would make it skip every row not read yet.
   */
  checkpoint(): Watermark {
    const { plan, previous } = this
    if (plan.mode === 'timestamp' || plan.mode === 'datetime-fields')
      return { lastSync: this.maxTime !== undefined ? later(new Date(this.maxTime).toISOString(), previous.lastSync) : previous.lastSync, lastKey: previous.lastKey }
    if (plan.mode === 'key') return { lastSync: previous.lastSync, lastKey: this.maxKey !== undefined ? String(this.maxKey) : previous.lastKey }
    return { ...previous }
  }
}

/** Orders keys: integers (also Int64 as text, e.g. '9' < '10') numerically, other keys as text. */
export function compareKeys(a: string | number, b: string | number): number {
  const integer = /^-?\d+$/
  if (integer.test(String(a)) && integer.test(String(b))) {
    const [x, y] = [BigInt(a), BigInt(b)]
    return x === y ? 0 : x > y ? 1 : -1
  }
  return String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0
}

function toTime(value: unknown): number | undefined {
  if (value === null || value === undefined || value === '') return undefined
  const time = value instanceof Date ? value.getTime() : Date.parse(String(value))
  return Number.isNaN(time) ? undefined : time
}

/** A watermark never moves backwards (a full run over a shrunken source keeps the old one). */
function later(candidate: string, previous: string | null): string {
  if (!previous) return candidate
  return Date.parse(candidate) >= Date.parse(previous) ? candidate : previous
}
