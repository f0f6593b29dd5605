/**
 * lib/engine/deletes — rows deleted at the source: this module is the key sweep of delta runs,
 * key-cursor.ts the ordered key pages it merges; soft-delete.ts applies a source's deleted flag
 * (`delta.deletedField`) and the deleted entries of OData delta links.
 *
 * Key reconciliation sweep (README "Deletes in delta mode"): after a delta run's batches, the
 * source's keys are compared with the replica's and the replica's rows whose key is gone at the
 * source are deleted.
 *
 * Bounded memory: both sides are read as key-only keyset pages in the same key order
 * (`source.readKeys()`, `target.readKeys()`), and the two sorted streams are merged: at any
 * time one page of each side and at most one page of keys to delete are held, never all keys.
 * A target key is *proven* missing when the source, read in order, has passed it (returned a
 * larger key) or has ended. Both streams are checked to be ascending in the order the merge
 * compares in; a source (or database collation) that orders otherwise fails the sweep instead
 * of deleting rows that merely sort differently.
 *
 * Nothing is deleted wrongly:
 * - the sweep runs in one database transaction (its own, or the run's with `transaction: 'run'`):
 *   a sweep that fails midway — a source error after its retries, a lost connection, the guard
 *   below — rolls back every delete it made;
 * - the guard: a source that answers empty or truncated because of an error makes every
 *   replica key after its end look deleted. Once a sweep would delete more than
 *   `deletes.maxShare` (default 0.5) of the rows the pipeline owns, it stops and fails, naming
 *   the setting, unless `deletes.force` is true;
 * - fan-in: only the rows of the pipeline's `source.origin` are read, counted and deleted.
 *
 * Its outcome is stored as JSON in the tracker's `lastSweep` (see {@link SweepState}); the
 * deleted rows count in the run's `deleted` statistics.
 */
import { currentRun } from '../../runs/index.js'
import cds from '@sap/cds'
import { PipelineError } from '../../pipeline/errors.js'
import { LOGGER, PIPELINES_ENTITY } from '../../constants.js'
import { ORIGIN_COLUMN } from '../../adapters/target/base.js'
import { keyNames } from '../../model/csn.js'
import { KeyCursor, comparator, type Compare, type KeyBounds } from './key-cursor.js'

export { KeyCursor, comparator } from './key-cursor.js'
import { ql, type QueryRunner } from '../../model/ql.js'
import type { DataRecord } from '../../pipeline/types.js'
import type { PreparedPipeline } from '../run/types.js'
import type { WriteContext } from '../../adapters/types.js'
import { rangeBounds } from '../../adapters/source/partitions.js'
import { sequentialNote } from '../../adapters/source/base.js'
import { and, type Predicate } from '../../adapters/predicate.js'

const LOG = cds.log(LOGGER.engine)

/** The JSON in `Pipelines.lastSweep`: the last sweep's outcome and the count of delta runs since the last completed one. */
export interface SweepState {
  /** When the last sweep started (ISO). */
  time?: string
  runId?: string
  status?: 'completed' | 'failed'
  /** Rows deleted by it (0 when it failed: its deletes were rolled back). */
  deleted?: number
  /** Keys read from the source and the target. */
  sourceKeys?: number
  targetKeys?: number
  /** Rows the pipeline owned when it started (the base of `maxShare`). */
  rows?: number
  durationMs?: number
  error?: string
  /** When the last *completed* sweep started: the base of `{ every: '<duration>' }`. */
  completedAt?: string
  /** Delta runs since the last completed sweep: the base of `{ every: <n> }`. */
  runsSince: number
}

interface SweepOptions {
  runId: string
  /** The run's transaction is open (`transaction: 'run'`): sweep inside it, no own transaction. */
  atomic: boolean
  db: QueryRunner
  context: WriteContext
  /** The tracker row as the run's guard read it. */
  row: object
}

/**
 * Runs the sweep when it is due for this delta run and records the outcome; returns the number
 * of rows deleted. Throws (after recording) when the sweep fails; the run then fails.
 */
export async function sweepIfDue(prepared: PreparedPipeline, options: SweepOptions): Promise<number> {
  const deletes = prepared.pipeline.deletes
  if (!deletes) return 0
  const previous = readState(options.row)
  const started = new Date()
  const due = 'always' in deletes.sweep
    || ('runs' in deletes.sweep && previous.runsSince + 1 >= deletes.sweep.runs)
    || ('interval' in deletes.sweep && (!previous.completedAt || started.getTime() - Date.parse(previous.completedAt) >= deletes.sweep.interval))
  if (!due) {
    await writeState(prepared, options, { ...previous, runsSince: previous.runsSince + 1 })
    return 0
  }
  const counts = { sourceKeys: 0, targetKeys: 0, rows: 0 }
  try {
    const deleted = options.atomic ? await sweep(prepared, options.context, counts) : await options.db.tx(() => sweep(prepared, options.context, counts))
    const state: SweepState = { time: started.toISOString(), runId: options.runId, status: 'completed', deleted, ...counts, durationMs: Date.now() - started.getTime(), completedAt: started.toISOString(), runsSince: 0 }
    await writeState(prepared, options, state)
    currentRun()?.event('sweep', { phase: 'target', rows: deleted, durationMs: state.durationMs, message: `compared ${counts.sourceKeys} source keys with ${counts.targetKeys} local keys; deleted ${deleted} rows`, details: counts })
    LOG.info(`pipeline '${prepared.pipeline.name}': deletes sweep compared ${counts.sourceKeys} source keys with ${counts.targetKeys} local keys and deleted ${deleted} rows in ${state.durationMs} ms`)
    return deleted
  } catch (error) {
    const state: SweepState = {
      ...previous, time: started.toISOString(), runId: options.runId, status: 'failed', deleted: 0, ...counts,
      durationMs: Date.now() - started.getTime(), error: String((error as Error)?.message ?? error).slice(0, 1000), runsSince: previous.runsSince + 1,
    }
    await writeState(prepared, options, state).catch(e => LOG.warn(`pipeline '${prepared.pipeline.name}': could not record the failed sweep: ${(e as Error).message}`))
    throw error
  }
}

function readState(row: object): SweepState {
  const text = (row as { lastSweep?: unknown }).lastSweep
  if (typeof text !== 'string' || !text) return { runsSince: 0 }
  try {
    const state = JSON.parse(text) as SweepState
    return { ...state, runsSince: Number(state.runsSince) || 0 }
  } catch {
    return { runsSince: 0 }
  }
}

/** Writes `lastSweep` while the run holds the pipeline (in the run's transaction when atomic, else its own). */
async function writeState(prepared: PreparedPipeline, options: SweepOptions, state: SweepState): Promise<void> {
  const update = ql.UPDATE.entity(PIPELINES_ENTITY).set({ lastSweep: JSON.stringify(state) }).where({ name: prepared.pipeline.name, currentRun: options.runId })
  // atomic: joins the run's open transaction; otherwise a root transaction of its own, as the tracker's writes
  if (options.atomic) await options.db.run(update)
  else await options.db.tx(tx => tx.run(update))
}

/** The merge; returns the number of rows deleted. */
async function sweep(prepared: PreparedPipeline, context: WriteContext, counts: { sourceKeys: number; targetKeys: number; rows: number }): Promise<number> {
  const { pipeline, source, target, mapping } = prepared
  const name = pipeline.name
  const { maxShare, force } = pipeline.deletes!
  if (!target.readKeys || !target.deleteKeys || !target.countRows)
    throw new PipelineError('INVALID_CONFIG', `Invalid pipeline config: deletes.sweep needs a target that can list, count and delete keys (the database target; pipeline '${name}')`, { target: 'deletes.sweep' })
  const entity = target.entityDefinition()
  const origin = pipeline.config.source.origin
  const targetKeys = entity ? keyNames(entity).filter(k => origin === undefined || k !== ORIGIN_COLUMN) : []
  // the order both sides are read in: the source's key order, in target names
  const sourceOrder = source.keyOrder()
  const order = sourceOrder ? sourceOrder.map(k => mapping?.find(m => m.source === k)?.target ?? k) : targetKeys
  if (!targetKeys.length || order.length !== targetKeys.length || !targetKeys.every(k => order.includes(k)))
    throw new PipelineError('INVALID_CONFIG', `Invalid pipeline config: deletes.sweep needs the source keys (${(sourceOrder ?? order).join(', ')}) to map onto the target keys (${targetKeys.join(', ')}) of pipeline '${name}'`, { target: 'deletes.sweep' })

  counts.rows = await target.countRows()
  if (counts.rows === 0) return 0
  const compare = comparator(order, entity)
  const guard: Guard = { limit: force ? Infinity : Math.floor(maxShare * counts.rows), planned: 0, maxShare, rows: counts.rows, name }
  const readTarget = (range?: { from?: Predicate; to?: Predicate }) => target.readKeys!(order, pipeline.batchSize, range && and(range.from, range.to), range && { to: range.to })
  const merge = (keys: AsyncIterable<DataRecord[]>, range?: { from?: Predicate; to?: Predicate }, bounds?: KeyBounds) => mergeKeys(
    new KeyCursor(keys[Symbol.asyncIterator](), sourceOrder ?? order, compare, 'source', bounds),
    new KeyCursor(readTarget(range)[Symbol.asyncIterator](), order, compare, 'target', bounds),
    { order, compare, guard, counts, chunk: pipeline.batchSize, remove: keys => target.deleteKeys!(keys, context) })
  // `parallel` > 1: the source's keys in ranges listed at once, each merged with the replica's keys of the same range
  const ranges = await source.keyRanges()
  if (!ranges && pipeline.parallel > 1) sequentialNote(pipeline, 'the deletes sweep lists the source\'s keys page after page: its source cannot list them in key ranges')
  if (!ranges || !ranges.boundaries.length) {
    const keys = ranges ? ranges.keys(0) : source.readKeys()
    try {
      return await merge(keys)
    } finally {
      ranges?.close()
    }
  }
  // the boundaries in target names (same positions as the source's key order)
  const bounds = ranges.boundaries.map(bound => Object.fromEntries(order.map((column, i) => [column, bound[(sourceOrder ?? order)[i]]])))
  const within = rangeBounds(order, bounds)
  const tuples = bounds.map(bound => order.map(column => bound[column] ?? null))
  const merges = within.map((range, k) => merge(ranges.keys(k), range, { from: tuples[k - 1], to: tuples[k] }).catch(error => {
    // one range failed: the others stop sending (their merges end with that error too)
    guard.failed ??= error
    ranges.close()
    throw error
  }))
  const settled = await Promise.allSettled(merges)
  if (guard.failed) throw guard.failed
  return settled.reduce((sum, result) => sum + (result.status === 'fulfilled' ? result.value : 0), 0)
}

/** Shared by the merges of one sweep: the `maxShare` guard over all of them, and the first failure. */
interface Guard {
  limit: number
  planned: number
  maxShare: number
  rows: number
  name: string
  failed?: unknown
}

interface MergeOptions {
  order: string[]
  compare: Compare
  guard: Guard
  counts: { sourceKeys: number; targetKeys: number }
  chunk: number
  remove: (keys: DataRecord[]) => Promise<number>
}

/** One merge of ascending source and target keys: deletes the target keys the source passed (or ended) without; returns how many. */
async function mergeKeys(sourceCursor: KeyCursor, targetCursor: KeyCursor, options: MergeOptions): Promise<number> {
  const { order, compare, guard, chunk } = options
  let doomed: DataRecord[] = []
  let deleted = 0
  try {
    for (let local = await targetCursor.current(); local; local = await targetCursor.current()) {
      if (guard.failed) throw guard.failed
      let remote = await sourceCursor.current()
      while (remote && compare(remote, local) < 0) {
        sourceCursor.advance()
        remote = await sourceCursor.current()
      }
      if (remote && compare(remote, local) === 0) {
        sourceCursor.advance()
        targetCursor.advance()
        continue
      }
      // proven missing: the source passed this key (or ended) without returning it
      if (++guard.planned > guard.limit)
        throw new PipelineError('SOURCE_FAILED',
          `deletes sweep of pipeline '${guard.name}' stopped: it would delete more than ${Math.round(guard.maxShare * 100)} % of the ${guard.rows} local rows ` +
          `(deletes.maxShare = ${guard.maxShare}); the source may have answered empty or truncated. Nothing was deleted. ` +
          'If the source really lost those rows, run once with deletes.force: true or raise deletes.maxShare.', { status: 502, target: 'deletes.maxShare' })
      doomed.push(Object.fromEntries(order.map((k, i) => [k, local[i]])))
      targetCursor.advance()
      if (doomed.length >= chunk) {
        deleted += await options.remove(doomed)
        doomed = []
      }
    }
    if (doomed.length) deleted += await options.remove(doomed)
    // the keys the source has beyond the replica's last one are only counted (no reads beyond need)
    return deleted
  } finally {
    options.counts.sourceKeys += sourceCursor.count
    options.counts.targetKeys += targetCursor.count
    await Promise.all([sourceCursor.close(), targetCursor.close()])
  }
}
