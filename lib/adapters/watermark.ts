/**
 * Watermarks: which rows a delta run reads and where the next run starts.
 *
 * The watermark is the highest value *read* (never the end-of-run clock), and the next run
 * compares inclusively (`ge`), so rows sharing the last value — or written later with that
 * same value — are read again rather than lost. Re-reads are harmless: writes are upserts.
 *
 * Ties (issue 14): a run also stores where it stopped inside the group of rows sharing the
 * watermark value (the keys of the last such row, reads being ordered by watermark, then keys:
 * a {@link TieCursor} in `lastKey`). Once that value can no longer be given to new writes — the
 * run that read the group started at least `delta.settle` after the value's period ended —
 * the next run skips the rows of the group it already read (`ge value and (gt value or keys >
 * cursor)`), so a no-change run after a bulk update transfers nothing. Before that it reads
 * the whole group again, as a row written later with that value may sort below the cursor.
 */
import type { DataRecord, ResolvedPipeline } from '../pipeline/types.js'
import type { TrackerState } from './types.js'
import { afterAlternatives, type Predicate } from './predicate.js'

export interface ReadSegment {
  filter?: Predicate
  /** Columns (source names) giving a total order; keys last. */
  order: string[]
  /**
   * A lower bound in `order` for the first page only (a delta's watermark, a key range's start):
   * later pages start after the last row read, which lies within it. Sent once, it leaves the
   * source one lower bound per page (SQLite, for one, ranges its index scan on one of several and
   * filters the rest: a watermark sent with every page had it walk the rows tied at the watermark
   * on every page).
   */
  from?: Predicate
}

export interface Watermark {
  lastSync: string | null
  lastKey: string | null
}

/** The effective delta settings after inference from the source entity. */
export interface DeltaPlan {
  /** `odata-delta`: the provider's delta link (stored in `lastKey`) replaces watermark fields (delta-links.ts). */
  mode: 'none' | 'timestamp' | 'key' | 'datetime-fields' | 'odata-delta'
  field?: string
  dateField?: string
  timeField?: string
  /** Tie cursor settings; only for sources reading in (watermark, keys) order with known keys. */
  ties?: TiePolicy
}

export interface TiePolicy {
  /** Source keys ordering rows inside a watermark value. */
  keys: string[]
  /** How long one watermark value is handed to new writes (ms): its period (Timestamp 1 ms, DateTime 1 s, Date a day in every time zone). */
  precision: number
  /** How long after that period a read must have happened before its cursor is trusted (`delta.settle`, ms). */
  settle: number
}

/** Where a run stopped inside the rows sharing the watermark value; stored as JSON in `lastKey`. */
export interface TieCursor {
  /** The watermark value (ISO) the position belongs to. */
  at: string
  /** Key values (source names) of the last row read with that value. */
  after: DataRecord
  /** Start of the run that read it (ISO, the consumer's clock). */
  readAt: string
}

/** `delta.settle` default: clock skew between consumer and provider plus the longest write transaction stay below it. */
export const DEFAULT_TIE_SETTLE = 60_000
const SECOND = 1000
/** A Date value is written until the last time zone (UTC−12) leaves that day. */
const DATE_PERIOD = 36 * 3_600_000
/** Tracker column `lastKey` is String(1000): a longer cursor is not stored (the next run reads the group inclusively). */
export const MAX_CURSOR_LENGTH = 1000

export function deltaPlan(pipeline: ResolvedPipeline, sourceElements: string[] | undefined, sourceKeys: string[], typeOf?: (field: string) => string | undefined): DeltaPlan {
  const delta = pipeline.delta
  if (delta?.mode === 'odata-delta') return { mode: 'odata-delta' }
  if (delta?.mode === 'datetime-fields')
    return withTies({ mode: 'datetime-fields', dateField: delta.dateField, timeField: delta.timeField }, pipeline, sourceKeys, SECOND)
  if (delta?.mode === 'key') {
    const field = delta.field ?? (sourceKeys.length === 1 ? sourceKeys[0] : undefined)
    return field ? { mode: 'key', field } : { mode: 'none' }
  }
  const field = delta?.field ?? (sourceElements?.includes('modifiedAt') ? 'modifiedAt' : undefined)
  return field ? withTies({ mode: 'timestamp', field }, pipeline, sourceKeys, periodOf(typeOf?.(field))) : { mode: 'none' }
}

function withTies(plan: DeltaPlan, pipeline: ResolvedPipeline, sourceKeys: string[], precision: number): DeltaPlan {
  const fields = watermarkFields(plan)
  const keys = sourceKeys.filter(key => !fields.includes(key))
  if (!keys.length) return plan
  const settle = pipeline.delta?.settle
  return { ...plan, ties: { keys, precision, settle: typeof settle === 'number' ? settle : DEFAULT_TIE_SETTLE } }
}

/** The period one value of a watermark field covers; unknown types count as dates (the longest). */
function periodOf(type: string | undefined): number {
  if (type === 'cds.Timestamp') return 1
  if (type === 'cds.DateTime' || type === 'Edm.DateTime') return SECOND
  return DATE_PERIOD
}

/**
 * The ordered reads of one run. A watermark is a lower bound in the segment's order (`from`):
 * the first page asks for it, each later page only for the rows after the last one read.
 */
export function readSegments(plan: DeltaPlan, tracker: TrackerState, keys: string[]): ReadSegment[] {
  if (tracker.mode !== 'delta' || plan.mode === 'none' || plan.mode === 'odata-delta') return [{ order: keys }]
  if (plan.mode === 'key') {
    const field = plan.field!
    const order = [field, ...keys.filter(k => k !== field)]
    const lastKey = tracker.lastKey === null || parseTieCursor(tracker.lastKey) ? null : tracker.lastKey
    return [{ order, from: lastKey === null ? undefined : { field, op: 'gt', value: keyValue(lastKey) } }]
  }
  const fields = plan.mode === 'timestamp' ? [plan.field!] : [plan.dateField!, plan.timeField!]
  const order = [...fields, ...keys.filter(k => !fields.includes(k))]
  if (tracker.lastSync === null) {
    // first delta run: rows without a watermark value first, then the rest in watermark order
    return [
      { order: keys, filter: { field: fields[0], op: 'eq', value: null } },
      { order, from: { field: fields[0], op: 'ne', value: null } },
    ]
  }
  const cursor = plan.ties && settledCursor(plan.ties, tracker, keys.filter(k => !fields.includes(k)))
  if (plan.mode === 'timestamp') {
    const inclusive: Predicate = { field: fields[0], op: 'ge', value: tracker.lastSync }
    return [{ order, from: cursor ? { and: [inclusive, { or: [{ field: fields[0], op: 'gt', value: tracker.lastSync }, ...afterAlternatives(cursor.keys, cursor.after)] }] } : inclusive }]
  }
  const [date, time] = splitUtc(tracker.lastSync)
  const inclusive: Predicate = { or: [{ field: fields[0], op: 'gt', value: date }, { and: [{ field: fields[0], op: 'eq', value: date }, { field: fields[1], op: 'ge', value: time }] }] }
  // within the inclusive rows, `date > d or time > t` is "a later date, or the same date and a later time"
  return [{ order, from: cursor ? { and: [inclusive, { or: [{ field: fields[0], op: 'gt', value: date }, { field: fields[1], op: 'gt', value: time }, ...afterAlternatives(cursor.keys, cursor.after)] }] } : inclusive }]
}

/**
 * The tie cursor stored with the watermark, when the next read may start after it: it belongs
 * to the stored value, names every key, and was read `settle` after the value's period ended
 * (no new write can carry the value any more). Otherwise undefined: the group is read again.
 */
function settledCursor(policy: TiePolicy, tracker: TrackerState, keys: string[]): { keys: string[]; after: DataRecord } | undefined {
  if (!tracker.lastSync || !tracker.lastKey || !keys.length) return undefined
  const cursor = parseTieCursor(tracker.lastKey)
  if (!cursor || Date.parse(cursor.at) !== Date.parse(tracker.lastSync)) return undefined
  if (!keys.every(key => cursor.after[key] !== null && cursor.after[key] !== undefined)) return undefined
  if (Date.parse(cursor.readAt) - (Date.parse(cursor.at) + policy.precision) < policy.settle) return undefined
  return { keys, after: cursor.after }
}

/** A tie cursor stored in `lastKey`, or undefined for anything else (a key watermark, an older release's null). */
export function parseTieCursor(text: string | null | undefined): TieCursor | undefined {
  if (!text || !text.startsWith('{"at":')) return undefined
  try {
    const value = JSON.parse(text) as Partial<TieCursor>
    if (typeof value.at !== 'string' || typeof value.readAt !== 'string' || !value.after || typeof value.after !== 'object') return undefined
    if (Number.isNaN(Date.parse(value.at)) || Number.isNaN(Date.parse(value.readAt))) return undefined
    return value as TieCursor
  } catch {
    return undefined
  }
}

/**
 * The source fields a watermark is taken from. Reads select them even when a run does not
 * filter on them (full runs), so every successful run stores the highest value read.
 */
export function watermarkFields(plan: DeltaPlan): string[] {
  if (plan.mode === 'none' || plan.mode === 'odata-delta') return []
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
