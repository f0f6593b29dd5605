import { and, fromSlice, toCqn, type Predicate } from '../predicate.js'
import type { DataRecord, ResolvedPipeline, SlicePredicate } from '../../pipeline/types.js'
import type { AdapterContext, PreviewRequest, PreviewResult, TargetCapabilities, WriteContext, WriteStatistics } from '../types.js'
import type { CsnEntity } from '../../model/csn.js'

/**
 * Base of every target adapter. The engine calls `truncate` / `deleteSlice` and `writeBatch`
 * inside the run's database transaction where the target is the database.
 */
export abstract class BaseTargetAdapter {
  readonly pipeline: ResolvedPipeline

  constructor(context: AdapterContext) {
    this.pipeline = context.pipeline
  }

  abstract capabilities(): TargetCapabilities

  /** Writes one batch (target field names) and tells what happened. */
  abstract writeBatch(records: DataRecord[], context: WriteContext): Promise<WriteStatistics>

  /** Deletes all rows this pipeline owns (all rows, or those of its origin); returns the count. */
  abstract truncate(context: WriteContext): Promise<number>

  /**
   * Full refresh (optional): after the last batch, the run's counts by key against the target's
   * rows before its truncate — created, updated, unchanged, deleted — replacing the writes' own
   * (which count every rewritten row as deleted and created). Undefined: the writes' counts stand.
   */
  reconcileRefresh?(context: WriteContext): Promise<Required<Pick<WriteStatistics, 'created' | 'updated' | 'unchanged' | 'deleted'>> | undefined>

  /** Deletes the rows matching the predicate; returns the count. */
  abstract deleteSlice(predicate: SlicePredicate, context: WriteContext): Promise<number>

  /**
   * Deletes sweep (optional): the keys of the rows this pipeline owns (`ownedRows`), the given
   * key columns only, ascending in that column order, in pages of at most `size` rows; only
   * those matching `within` where given (a key range of a partitioned sweep). `range.to`, where
   * given, is `within` without its lower bound: enough for every page after the first, which start
   * after their previous page's last key (a database ranges its index scan on one lower bound and
   * would scan from the range's start on every page).
   */
  readKeys?(columns: string[], size: number, within?: Predicate, range?: { to?: Predicate }): AsyncIterable<DataRecord[]>

  /** Deletes (optional): removes the owned rows with these keys (target names); returns how many existed. */
  deleteKeys?(keys: DataRecord[], context: WriteContext): Promise<number>

  /** Deletes sweep (optional): how many rows the pipeline owns, the base of `deletes.maxShare`. */
  countRows?(): Promise<number>

  /** Soft delete with `deletedAction: 'flag'` (optional): sets `field` to `value` on the owned rows with these keys not flagged yet; returns how many. */
  flagKeys?(keys: DataRecord[], field: string, value: unknown, context: WriteContext): Promise<number>

  /**
   * `onError: 'skip'` (optional): runs one write so that its failure undoes only its own
   * statements and leaves the surrounding transaction usable (a savepoint); a database target
   * needs it on PostgreSQL, where a failed statement aborts the whole transaction.
   */
  isolate?<T>(write: () => Promise<T>): Promise<T>

  /** Called once before writing; resolve models, connect services. */
  async prepare(): Promise<void> {}

  /** Target element names (for the default mapping); undefined when unknown. */
  elementNames(): string[] | undefined {
    return undefined
  }

  /** Data inspector page; undefined when the target cannot be previewed (capability `none`). */
  preview?(request: PreviewRequest): Promise<PreviewResult>

  /** The target's entity definition, when the adapter has one. */
  entityDefinition(): CsnEntity | undefined {
    return undefined
  }
}

/** Key column contributed by aspect `plugin.data_pipeline.sourced`: the origin label of fan-in pipelines. */
export const ORIGIN_COLUMN = 'source'

/**
 * The target rows a pipeline owns, narrowed to a slice: all rows (undefined), or those of its
 * `source.origin` (fan-in), within the slice when one is given.
 */
export function ownedRows(pipeline: ResolvedPipeline, slice?: SlicePredicate): Predicate | undefined {
  const origin = pipeline.config.source.origin
  return and(slice ? fromSlice(slice) : undefined, origin === undefined ? undefined : { field: ORIGIN_COLUMN, op: 'eq', value: origin })
}

/** CQN `where` tokens matching exactly these key tuples (`in` list for a single key, OR of ANDs otherwise). */
export function keysWhere(keys: DataRecord[], columns: string[]): unknown[] {
  if (columns.length === 1) return [{ ref: [columns[0]] }, 'in', { list: keys.map(k => ({ val: k[columns[0]] ?? null })) }]
  return toCqn({ or: keys.map(key => and(...columns.map(c => ({ field: c, op: 'eq' as const, value: key[c] ?? null })))!) })
}

/** One record per key, the last occurrence wins (a row read twice within a batch). */
export function uniqueByKey(records: DataRecord[], keys: string[]): DataRecord[] {
  const [single] = keys.length === 1 ? keys : []
  if (single !== undefined && ascending(records, single)) return records // a keyset page: no key twice, no map of the page built
  const byKey = new Map<unknown, DataRecord>()
  for (const record of records) byKey.set(single ? record[single] ?? null : JSON.stringify(keys.map(k => record[k] ?? null)), record)
  return byKey.size === records.length ? records : [...byKey.values()]
}

/** Whether a single key strictly ascends over the records (all strings, or all numbers): then no key occurs twice. */
function ascending(records: DataRecord[], key: string): boolean {
  if (!records.length) return true
  let previous = records[0][key]
  const kind = typeof previous
  if (kind !== 'string' && kind !== 'number') return false
  for (let i = 1; i < records.length; i++) {
    const value = records[i][key]
    if (typeof value !== kind || !((previous as number | string) < (value as number | string))) return false
    previous = value
  }
  return true
}
