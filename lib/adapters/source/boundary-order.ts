/**
 * Whether sampled range boundaries are in the source's own order, decided here only where every
 * collation a source may use agrees with a plain comparison: numbers, and strings of one shape
 * and length — digits (S/4 keys with leading zeros), canonical UUIDs of one case, ISO dates and
 * UTC timestamps. Other strings (names, codes) sort differently by database and locale, so their
 * order stays unknown, and a partitioned read then bounds each range by every later boundary and
 * asks for its count (partitions.ts): correct in any order, at the cost of longer filters and a
 * count per range.
 */
import type { DataRecord } from '../../pipeline/types.js'

const SHAPES = [
  /^\d+$/,
  /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/,
  /^[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}$/,
  /^\d{4}-\d{2}-\d{2}$/,
  /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?Z$/,
]

/** True when the boundaries strictly ascend in `order` for certain; false when they do not or nobody can tell here. */
export function inSourceOrder(order: string[], boundaries: DataRecord[]): boolean {
  for (let k = 1; k < boundaries.length; k++) if (compareRows(order, boundaries[k - 1], boundaries[k]) !== -1) return false
  return true
}

/** -1, 0 or 1 as `a` sorts before, with or after `b` in `order`; undefined when a column's values cannot be compared safely. */
export function compareRows(order: string[], a: DataRecord, b: DataRecord): -1 | 0 | 1 | undefined {
  for (const column of order) {
    const result = compareValues(a[column], b[column])
    if (result !== 0) return result
  }
  return 0
}

function compareValues(a: unknown, b: unknown): -1 | 0 | 1 | undefined {
  if (typeof a === 'number' && typeof b === 'number') return Number.isFinite(a) && Number.isFinite(b) ? sign(a - b) : undefined
  if (typeof a !== 'string' || typeof b !== 'string' || a.length !== b.length) return undefined
  if (!SHAPES.some(shape => shape.test(a) && shape.test(b))) return undefined
  return a === b ? 0 : a < b ? -1 : 1
}

const sign = (x: number): -1 | 0 | 1 => (x < 0 ? -1 : x > 0 ? 1 : 0)
