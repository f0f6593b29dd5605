/**
 * The watermark of a run in progress: follows the records read (the highest watermark value and the
 * keys of its last row, or the highest key), gives the checkpoint of each committed batch and the
 * watermark to store after success. Planning the reads is watermark.ts.
 */
import type { DataRecord } from '../pipeline/types.js'
import type { TrackerState } from './types.js'
import { rangeOf, type RangeLedger } from './ranges.js'
import { MAX_CURSOR_LENGTH, type DeltaPlan, type TieCursor, type TiePolicy, type Watermark } from './watermark.js'

/** How far the rows read so far reach: the highest watermark value (and the keys of its last row), or the highest key. */
class Reach {
  maxTime: number | undefined
  maxKey: string | number | undefined
  /** Keys of the last record read with `maxTime` (reads are ordered: the highest at that value). */
  tie: DataRecord | undefined

  /** `maxTime` as the text it was read from, when that text is plain UTC (PLAIN_UTC). */
  private maxText: string | undefined

  observe(plan: DeltaPlan, ties: TiePolicy | undefined, records: DataRecord[]): void {
    let last: DataRecord | undefined // the batch's last record at the highest value: its keys become the tie position
    for (const record of records) {
      if (plan.mode === 'timestamp' && this.maxText !== undefined) {
        // plain UTC text orders as its time: a value below the highest, or equal to it, is judged without Date.parse
        const value = record[plan.field!]
        if (value === this.maxText) {
          last = record
          continue
        }
        if (typeof value === 'string' && value < this.maxText && PLAIN_UTC.test(value)) continue
      }
      if (plan.mode === 'key') {
        const value = record[plan.field!]
        if (value === null || value === undefined) continue
        const key = typeof value === 'number' ? value : String(value)
        if (this.maxKey === undefined || compareKeys(key, this.maxKey) > 0) this.maxKey = key
      } else if (plan.mode === 'timestamp' || plan.mode === 'datetime-fields') {
        const time = plan.mode === 'timestamp'
          ? toTime(record[plan.field!])
          : toTime(record[plan.dateField!] ? `${String(record[plan.dateField!]).slice(0, 10)}T${String(record[plan.timeField!] ?? '00:00:00')}Z` : null)
        if (time === undefined || (this.maxTime !== undefined && time < this.maxTime)) continue
        this.maxTime = time
        const text = plan.mode === 'timestamp' ? record[plan.field!] : undefined
        this.maxText = typeof text === 'string' && PLAIN_UTC.test(text) ? text : undefined
        last = record
      }
    }
    if (last && ties) this.tie = keysOf(last, ties.keys)
  }
}

/** Follows the records of a run and yields the watermark to store after success. */
export class WatermarkTracker {
  /** A sequential read's reach. */
  private readonly reach = new Reach()
  /** A partitioned read's reach per key range (ranges.ts), in the read's order. */
  private readonly ranges = new Map<number, Reach>()
  private ledger: RangeLedger | undefined
  private readonly ties: TiePolicy | undefined

  /**
   * `mode`: the run's mode. Tie cursors come from runs that read every row up to the value
   * (delta and full runs); a partial refresh reads a slice and keeps the stored cursor.
   */
  constructor(private readonly plan: DeltaPlan, private readonly previous: Watermark, private readonly readStart: Date, mode: TrackerState['mode'] = 'delta') {
    this.ties = mode === 'partial-refresh' ? undefined : plan.ties
  }

  observe(records: DataRecord[]): void {
    const range = rangeOf(records)
    if (!range) return this.reach.observe(this.plan, this.ties, records)
    this.ledger = range.ledger
    let reach = this.ranges.get(range.index)
    if (!reach) this.ranges.set(range.index, (reach = new Reach()))
    reach.observe(this.plan, this.ties, records)
  }

  /**
   * How far the rows read reach without a gap. Sequential: all of them. Partitioned: the ranges
   * below the first one not read to its end, and that one's rows so far (a range reads in
   * order); a later range's rows wait until the ones below are complete — the watermark never
   * passes a row another range has not handed on. The highest range with rows holds the
   * highest value and the last row at it (ranges follow the read's order).
   */
  private reached(): Reach {
    if (!this.ledger) return this.reach
    const frontier = this.ledger.frontier()
    let best: Reach | undefined
    for (let index = 0; index <= frontier; index++) {
      const reach = this.ranges.get(index)
      if (reach && (reach.maxTime !== undefined || reach.maxKey !== undefined)) best = reach
    }
    return best ?? new Reach()
  }

  result(): Watermark {
    const { plan } = this
    const { maxTime, maxKey } = this.reached()
    if (plan.mode === 'timestamp' || plan.mode === 'datetime-fields') {
      const lastSync = later(maxTime !== undefined ? new Date(maxTime).toISOString() : this.previous.lastSync ?? this.readStart.toISOString(), this.previous.lastSync)
      return { lastSync, lastKey: this.tieCursor(lastSync) }
    }
    if (plan.mode === 'key') {
      const lastKey = maxKey !== undefined ? String(maxKey) : this.previous.lastKey
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
    const { maxTime, maxKey } = this.reached()
    if (plan.mode === 'timestamp' || plan.mode === 'datetime-fields') {
      const lastSync = maxTime !== undefined ? later(new Date(maxTime).toISOString(), previous.lastSync) : previous.lastSync
      return { lastSync, lastKey: lastSync === null ? previous.lastKey : this.tieCursor(lastSync) }
    }
    if (plan.mode === 'key') return { lastSync: previous.lastSync, lastKey: maxKey !== undefined ? String(maxKey) : previous.lastKey }
    return { ...previous }
  }

  /**
   * `lastKey` beside a timestamp watermark: this run's tie cursor when the stored value is the
   * highest it read, else the stored one (nothing read at the value, or a shrunken source).
   */
  private tieCursor(lastSync: string): string | null {
    const { maxTime, tie } = this.reached()
    if (maxTime === undefined || !tie || Date.parse(lastSync) !== maxTime) return this.previous.lastKey
    const cursor: TieCursor = { at: lastSync, after: tie, readAt: this.readStart.toISOString() }
    const text = JSON.stringify(cursor)
    return text.length <= MAX_CURSOR_LENGTH ? text : null
  }
}

/** The key values of a record, or undefined when one is missing (no position can be stored). */
function keysOf(record: DataRecord, keys: string[]): DataRecord | undefined {
  const out: DataRecord = {}
  for (const key of keys) {
    const value = record[key]
    if (value === null || value === undefined) return undefined
    out[key] = value instanceof Date ? value.toISOString() : value
  }
  return out
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

/**
 * `YYYY-MM-DDTHH:MM:SS.sssZ` with a day every month has: one fixed form, so two such texts
 * compare as their times do (a day 29–31 might be read as one of the next month: not taken).
 */
const PLAIN_UTC = /^\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1\d|2[0-8])T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z$/

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
