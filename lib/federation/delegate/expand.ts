/**
 * Expands across the local/remote boundary (SPEC rules 2, 3 and 6).
 *
 * `planColumns` removes every expand whose target lives on another side (a local table, or a
 * delegated entity of another remote service) from a query's columns — also inside expands
 * that stay on the same side, recursively — and makes sure the join fields are selected.
 * The query then runs on its own side, and `applyStitch` loads the removed expands: the
 * distinct join keys of all parent rows, chunked to a bounded size, one query per chunk
 * through the application service (so the target's own rules, caches and authorization
 * apply), results grouped per parent and attached under the association's local name.
 *
 * For a to-many expand into a local table with `$top/$skip`, the per-parent limit is pushed to
 * the database as a `row_number() over (partition by <join key> order by …)` window.
 */
import {
  delegationOf, fenced, isAssociationElement, isToMany, joinPairs, keyFields, sideOf, targetOf,
  type JoinPair, type LinkedElement, type LinkedEntity,
} from './model.js'
import { and, chunk, delegateSettings, distinctTuples, keyPredicate, tupleId, type Token, type Tuple } from './keys.js'
import { connectRemote, type Row } from './remote.js'
import { chunkByLength, inListCost, inStitch, usesInList } from './inlist.js'
import { inProcessSlots } from '../../adapters/source/slots.js'
import { primaryDatabase } from '../../cap/index.js'

export interface Column {
  ref?: Array<string | { id: string; where?: Token[] }>
  as?: string
  expand?: Array<Column | '*'>
  where?: Token[]
  orderBy?: Array<{ ref?: string[]; sort?: string; [k: string]: unknown }>
  limit?: { rows?: { val?: number }; offset?: { val?: number } }
  [other: string]: unknown
}

export interface Stitch {
  /** Result property names from the root rows down to the parent rows. */
  path: string[]
  parent: LinkedEntity
  assoc: LinkedElement
  target: LinkedEntity
  pairs: JoinPair[]
  column: Column
  alias: string
}

export interface ColumnPlan {
  columns: Array<Column | '*'> | undefined
  stitches: Stitch[]
  /** Fields added only for joining, per path (`''` = root rows), removed after stitching. */
  added: Map<string, Set<string>>
}

export class FederationRequestError extends Error {
  constructor(readonly status: number, message: string) {
    super(message)
  }
}

export function stepName(step: string | { id: string }): string {
  return typeof step === 'string' ? step : step.id
}

function selectsAll(columns: Array<Column | '*'> | undefined): boolean {
  return !columns || columns.some(c => c === '*' || (typeof c === 'object' && c.ref?.length === 1 && c.ref[0] === '*'))
}

function selects(columns: Array<Column | '*'>, field: string): boolean {
  return columns.some(c => typeof c === 'object' && !c.expand && c.ref?.length === 1 && c.ref[0] === field && (!c.as || c.as === field))
}

/** Adds `fields` to `columns` unless they are selected already; returns the ones added. */
export function ensureSelected(columns: Array<Column | '*'> | undefined, fields: string[]): string[] {
  if (!columns || selectsAll(columns)) return []
  const added: string[] = []
  for (const field of fields) {
    if (selects(columns, field)) continue
    columns.push({ ref: [field] })
    added.push(field)
  }
  return added
}

/** Splits the columns of a query on `entity` into what runs on its side and the stitches. */
export function planColumns(entity: LinkedEntity, columns: Array<Column | '*'> | undefined): ColumnPlan {
  const plan: ColumnPlan = { columns: columns ? [...columns] : columns, stitches: [], added: new Map() }
  if (plan.columns) plan.columns = visit(entity, plan.columns, [], plan)
  return plan
}

function visit(entity: LinkedEntity, columns: Array<Column | '*'>, path: string[], plan: ColumnPlan): Array<Column | '*'> {
  const side = sideOf(entity)
  const kept: Array<Column | '*'> = []
  const joinFields: string[] = []
  for (const column of columns) {
    if (column === '*' || !column.expand || column.ref?.length !== 1) {
      kept.push(column)
      continue
    }
    const name = stepName(column.ref[0])
    const assoc = entity.elements[name]
    const target = isAssociationElement(assoc) ? targetOf(assoc) : undefined
    if (!assoc || !target) {
      kept.push(column)
      continue
    }
    const alias = column.as ?? name
    if (sideOf(target) === side && !fenced(target)) {
      // stays on this side: look for boundary crossings further down (a delegate with a where
      // is stitched instead: CAP's expand at the remote would drop its where)
      const nested = visit(target, [...column.expand], [...path, alias], plan)
      kept.push({ ...column, expand: nested })
      continue
    }
    const pairs = joinPairs(assoc)
    if (!pairs) throw new FederationRequestError(501, `Expanding '${name}' of '${entity.name}' across the federation boundary needs an association with foreign keys or an equality 'on' condition`)
    plan.stitches.push({ path, parent: entity, assoc, target, pairs, column, alias })
    joinFields.push(...pairs.map(p => p.source))
  }
  const added = ensureSelected(kept, [...new Set(joinFields)])
  if (added.length) {
    const key = path.join('/')
    const set = plan.added.get(key) ?? new Set<string>()
    for (const field of added) set.add(field)
    plan.added.set(key, set)
  }
  return kept
}

/** The rows at `path` below `roots` (arrays flattened, missing parents skipped). */
export function rowsAt(roots: Row[], path: string[]): Row[] {
  let rows = roots
  for (const step of path) {
    const next: Row[] = []
    for (const row of rows) {
      const value = row?.[step]
      if (Array.isArray(value)) next.push(...(value as Row[]))
      else if (value && typeof value === 'object') next.push(value as Row)
    }
    rows = next
  }
  return rows
}

export function stripAdded(roots: Row[], added: Map<string, Set<string>>): void {
  for (const [key, fields] of added) {
    for (const row of rowsAt(roots, key ? key.split('/') : [])) for (const field of fields) delete row[field]
  }
}

export interface QueryRunner {
  run(query: unknown): Promise<unknown>
}

function asRows(result: unknown): Row[] {
  if (Array.isArray(result)) return result as Row[]
  return result && typeof result === 'object' ? [result as Row] : []
}

function select(from: string, columns: Array<Column | '*'> | undefined, where: Token[] | undefined, orderBy?: unknown[]): object {
  const SELECT: Record<string, unknown> = { from: { ref: [from] }, limit: null }
  if (columns) SELECT.columns = columns
  if (where) SELECT.where = where
  if (orderBy?.length) SELECT.orderBy = orderBy
  return { SELECT }
}

/**
 * Loads one removed expand for all parent rows at its path and attaches the results. Parent
 * join keys are collected over the whole page, deduplicated and chunked: one query per chunk
 * (per target), never one per row.
 */
export async function applyStitch(srv: QueryRunner, roots: Row[], stitch: Stitch, options: { rewrite?: (entity: LinkedEntity, where: Token[]) => Promise<Token[]> } = {}): Promise<void> {
  const { pairs, column, alias, target } = stitch
  const parents = rowsAt(roots, stitch.path)
  const toMany = isToMany(stitch.assoc)
  const sources = pairs.map(p => p.source)
  const targets = pairs.map(p => p.target)
  const tuples = distinctTuples(parents, sources)
  const groups = new Map<string, Row[]>()
  if (tuples.length) {
    const columns = column.expand ? [...column.expand] : undefined
    const addedTargets = ensureSelected(columns, targets)
    const limit = toMany ? column.limit : undefined
    const perParentInDb = Boolean(limit?.rows && sideOf(target) === 'local')
    let rows: Row[]
    if (perParentInDb) {
      const where = column.where && options.rewrite ? await options.rewrite(target, column.where) : column.where
      rows = await windowedLocalRead(srv, target, targets, tuples, columns, where, column.orderBy, limit!)
    } else {
      const chunks = await stitchChunks(target, tuples)
      const results = await inStitch(() => inProcessSlots(chunks.map(part => () => srv.run(select(target.name, columns, and(keyPredicate(targets, part), column.where), column.orderBy)))))
      rows = results.flatMap(asRows)
    }
    for (const row of rows) {
      const id = tupleId(targets.map(f => row[f]))
      const group = groups.get(id)
      if (group) group.push(row)
      else groups.set(id, [row])
    }
    if (limit?.rows && !perParentInDb) {
      // a per-parent $top into another remote: applied to each parent's group
      const offset = limit.offset?.val ?? 0
      for (const [id, group] of groups) groups.set(id, group.slice(offset, offset + (limit.rows.val ?? group.length)))
    }
    if (addedTargets.length) for (const row of rows) for (const field of addedTargets) delete row[field]
  }
  for (const parent of parents) {
    const tuple = sources.map(f => parent[f])
    const group = tuple.some(v => v === null || v === undefined) ? undefined : groups.get(tupleId(tuple))
    parent[alias] = toMany ? (group ?? []) : (group?.[0] ?? null)
  }
}

/**
 * The key chunks of a stitch: a single key into an OData V4 remote goes out as `k in (…)`,
 * bounded by characters (`keyListLength`) and, when the application set it, by `keyChunkSize`;
 * everything else in chunks of `keyChunkSize` keys.
 */
async function stitchChunks(target: LinkedEntity, tuples: Tuple[]): Promise<Tuple[][]> {
  const { keyChunkSize, keyChunkLimit, keyListLength } = delegateSettings()
  const info = tuples[0]?.length === 1 ? delegationOf(target) : undefined
  if (info && usesInList(await connectRemote(info))) return chunkByLength(tuples, t => inListCost(t[0]), keyListLength, keyChunkLimit)
  return chunk(tuples, keyChunkSize)
}

function orderTokens(orderBy: Column['orderBy'], fallback: string[]): Token[] {
  const items = orderBy?.length ? orderBy : fallback.map(f => ({ ref: [f], sort: 'asc' }))
  const tokens: Token[] = []
  for (const item of items) {
    if (tokens.length) tokens.push(',')
    const { sort, nulls, ...expr } = item as { sort?: string; nulls?: string }
    tokens.push(expr, sort?.toLowerCase() === 'desc' ? 'desc' : 'asc')
    if (nulls) tokens.push('nulls', nulls)
  }
  return tokens
}

/**
 * Per-parent `$top/$skip` of a local to-many expand, in the database: a window over the join
 * key selects the keys of the rows to keep, then the rows are read with their columns (and
 * nested expands) in the expand's order.
 */
async function windowedLocalRead(srv: QueryRunner, target: LinkedEntity, partition: string[], tuples: Tuple[], columns: Array<Column | '*'> | undefined, where: Token[] | undefined, orderBy: Column['orderBy'], limit: NonNullable<Column['limit']>): Promise<Row[]> {
  const keys = keyFields(target)
  const db: QueryRunner = primaryDatabase()!
  const offset = limit.offset?.val ?? 0
  const rows = limit.rows?.val ?? Number.MAX_SAFE_INTEGER
  const { keyChunkSize } = delegateSettings()
  const partitionTokens: Token[] = []
  for (const field of partition) {
    if (partitionTokens.length) partitionTokens.push(',')
    partitionTokens.push({ ref: [field] })
  }
  const selectedKeys: Tuple[] = []
  const rank = new Map<string, number>()
  for (const part of chunk(tuples, keyChunkSize)) {
    const ranked = {
      SELECT: {
        from: { ref: [target.name] },
        columns: [
          ...[...new Set([...keys, ...partition])].map(k => ({ ref: [k] })),
          { xpr: [{ func: 'row_number', args: [] }, 'over', { xpr: ['partition', 'by', ...partitionTokens, 'order', 'by', ...orderTokens(orderBy, keys)] }], as: 'federation_rank' },
        ],
        where: and(keyPredicate(partition, part), where),
      },
      as: 'ranked',
    }
    const result = asRows(await db.run({
      SELECT: {
        from: ranked,
        columns: [...keys.map(k => ({ ref: [k] })), { ref: ['federation_rank'] }],
        where: [{ ref: ['federation_rank'] }, '>', { val: offset }, 'and', { ref: ['federation_rank'] }, '<=', { val: offset + rows }],
      },
    }))
    for (const row of result) {
      const tuple = keys.map(k => row[k])
      selectedKeys.push(tuple)
      rank.set(tupleId(tuple), Number(row.federation_rank))
    }
  }
  if (!selectedKeys.length) return []
  const addedKeys = columns ? ensureSelected(columns, keys) : []
  const out: Row[] = []
  for (const part of chunk(selectedKeys, keyChunkSize)) {
    out.push(...asRows(await srv.run(select(target.name, columns, keyPredicate(keys, part)))))
  }
  // the rank is the position within the parent: sorting by it restores each parent's order
  const position = (row: Row) => rank.get(tupleId(keys.map(k => row[k]))) ?? 0
  out.sort((a, b) => position(a) - position(b))
  for (const row of out) for (const field of addedKeys) delete row[field]
  return out
}
