/**
 * Key lists as CQN predicates: one key element becomes `k in (…)`, composite keys an OR of
 * AND conditions. CAP's remote services turn both into OData `$filter` text (`in` becomes an
 * `or` chain that OData V2 also understands; the proxy's own reads send it to OData V4 remotes
 * as `k in (…)`, see inlist.ts); the database runs them as they are.
 */
import { DELEGATE_DEFAULTS } from '../../constants.js'
import { pluginSettings } from '../../cap/settings.js'

export type Token = unknown
export type Tuple = unknown[]

/** Characters of key literals per `k in (…)` request to an OData V4 remote (see inlist.ts), when `keyChunkSize` is not set. */
export const KEY_LIST_LENGTH = 6000

/**
 * Settings under `cds.requires['data-pipeline'].federation`. `keyChunkSize` (default 100) bounds
 * the keys per call; `keyChunkLimit` is the same number only when the application set it, the
 * bound of a key list sent as `in`, which is otherwise bounded by `keyListLength` characters.
 */
export function delegateSettings(): { keyChunkSize: number; keyChunkLimit: number | undefined; keyListLength: number; maxFilterKeys: number; cacheEntries: number } {
  const conf = pluginSettings<Record<string, unknown>>('federation')
  const positive = (value: unknown, fallback: number) => (typeof value === 'number' && Number.isInteger(value) && value > 0 ? value : fallback)
  return {
    keyChunkSize: positive(conf.keyChunkSize, DELEGATE_DEFAULTS.keyChunkSize),
    keyChunkLimit: positive(conf.keyChunkSize, 0) || undefined,
    keyListLength: positive(conf.keyListLength, KEY_LIST_LENGTH),
    maxFilterKeys: positive(conf.maxFilterKeys, DELEGATE_DEFAULTS.maxFilterKeys),
    cacheEntries: positive(conf.cacheEntries, DELEGATE_DEFAULTS.cacheEntries),
  }
}

/** Distinct, complete (no null part) tuples of `fields` over `rows`. */
export function distinctTuples(rows: Array<Record<string, unknown>>, fields: string[]): Tuple[] {
  const seen = new Map<string, Tuple>()
  for (const row of rows) {
    const tuple = fields.map(f => row[f])
    if (tuple.some(v => v === null || v === undefined)) continue
    const id = tupleId(tuple)
    if (!seen.has(id)) seen.set(id, tuple)
  }
  return [...seen.values()]
}

/** A stable identity for a tuple of values (numbers and numeric strings compare equal). */
export function tupleId(tuple: Tuple): string {
  return JSON.stringify(tuple.map(v => (typeof v === 'number' || typeof v === 'bigint' ? String(v) : v instanceof Date ? v.toISOString() : v)))
}

export function chunk<T>(items: T[], size: number): T[][] {
  const chunks: T[][] = []
  for (let i = 0; i < items.length; i += size) chunks.push(items.slice(i, i + size))
  return chunks
}

/** `fields` match one of `tuples`. Never called with an empty list (that matches nothing: see `matchesNothing`). */
export function keyPredicate(fields: string[], tuples: Tuple[]): Token[] {
  if (fields.length === 1) {
    const ref = { ref: [fields[0]] }
    if (tuples.length === 1) return [ref, '=', { val: tuples[0][0] }]
    return [ref, 'in', { list: tuples.map(t => ({ val: t[0] })) }]
  }
  const ors: Token[] = []
  for (const tuple of tuples) {
    if (ors.length) ors.push('or')
    const ands: Token[] = []
    fields.forEach((f, i) => {
      if (ands.length) ands.push('and')
      ands.push({ ref: [f] }, '=', { val: tuple[i] })
    })
    ors.push({ xpr: ands })
  }
  return ors
}

/** A predicate no row satisfies. */
export function matchesNothing(): Token[] {
  return [{ val: 1 }, '=', { val: 0 }]
}

/** `a and b`, each parenthesized so an `or` inside either side never widens the result. */
export function and(...parts: Array<Token[] | undefined>): Token[] | undefined {
  const present = parts.filter((p): p is Token[] => Array.isArray(p) && p.length > 0)
  if (!present.length) return undefined
  if (present.length === 1) return present[0]
  const out: Token[] = []
  for (const p of present) {
    if (out.length) out.push('and')
    out.push({ xpr: p })
  }
  return out
}
