/**
 * Comparing rows as the database returns them with the rows a batch writes: key tuples in order,
 * and values equal across the types drivers give back (SQLite's 1/0 booleans, decimals as text,
 * timestamps with or without milliseconds). The database and HCQL targets count `unchanged` with it.
 */
import type { DataRecord } from '../../pipeline/types.js'

/** Orders key tuples of numbers and strings (values of one position share one type). */
export function compareKeys(a: unknown[], b: unknown[]): number {
  for (let i = 0; i < a.length; i++) {
    const x = a[i] as number | string
    const y = b[i] as number | string
    if (x !== y) return x < y ? -1 : 1
  }
  return 0
}

export function normalizeKey(value: unknown): unknown {
  return typeof value === 'bigint' ? String(value) : value ?? null
}

/** True when every written column already holds the same value (types as the database returns them). */
export function sameRow(incoming: DataRecord, stored: DataRecord): boolean {
  return Object.keys(incoming).every(column => !(column in stored) || sameValue(incoming[column], stored[column]))
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (a === null || a === undefined || b === null || b === undefined) return (a ?? null) === (b ?? null)
  if (typeof a === 'boolean' || typeof b === 'boolean') return asBoolean(a) !== undefined && asBoolean(a) === asBoolean(b) // SQLite stores 1/0
  const [x, y] = [String(a), String(b)]
  if (x === y) return true
  if (NUMERIC.test(x) && NUMERIC.test(y)) return Number(x) === Number(y) // Decimal '0.10' vs 0.1
  if (ISO_DATE.test(x) && ISO_DATE.test(y)) return Date.parse(x) === Date.parse(y) // '…00Z' vs '…00.000Z'
  return false
}

function asBoolean(value: unknown): boolean | undefined {
  if (value === true || value === 1 || value === '1' || value === 'true') return true
  if (value === false || value === 0 || value === '0' || value === 'false') return false
  return undefined
}

const NUMERIC = /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/
const ISO_DATE = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/
