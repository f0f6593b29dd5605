/**
 * Poison records, part 2 (README "Rejected records"): with `onError: 'skip'` a batch is mapped,
 * checked against the target's types and written as usual; only when something fails are the
 * failing records isolated — by halving the failed part until single records remain — and set
 * aside in `PipelineRejects`, while every other record of the batch is written.
 *
 * - MAP: the batch is mapped at once; when the MAP event throws, its halves are mapped again,
 *   down to single records (a MAP handler should therefore be record-wise).
 * - validate: every mapped record is checked against the target entity's elements (records/index.ts).
 * - WRITE: the batch is written at once inside a savepoint of the batch's transaction (the
 *   target adapter's `isolate`); only when that write fails is it undone to the savepoint and
 *   the halves written again, so a clean batch costs one write and a batch with one bad record
 *   about 2·log2(n) more. The savepoint keeps the surrounding transaction usable: on
 *   PostgreSQL a failed statement would otherwise abort it.
 * - A batch of several records whose every record fails MAP or WRITE on its own, all with the
 *   same error, holds no poison records but meets a broken handler or target (a missing table,
 *   a lost connection): the run fails as with `onError: 'fail'`.
 *
 * Rejects are written in the batch's transaction (committed with the batch's records and
 * progress). A run in one transaction (full refresh) that fails is rolled back with its rejects;
 * the first rejects of such a run are written again afterwards so the failure can be examined.
 */
import cds from '@sap/cds'
import { EVENTS, LOGGER, TRACKER_NAMESPACE } from '../../constants.js'
import { PipelineError } from '../../pipeline/errors.js'
import { validatorOf, type RecordValidator } from './index.js'
import type { ResolvedOnError } from '../../pipeline/types.js'
import { ORIGIN_COLUMN } from '../../adapters/target/base.js'
import { sourceNameOf, type FieldMapping } from '../../adapters/mapping.js'
import { keyNames } from '../../model/csn.js'
import { connect, ql, type QueryRunner } from '../../model/ql.js'
import type { DataRecord, ResolvedPipeline } from '../../pipeline/types.js'
import type { BaseTargetAdapter } from '../../adapters/target/base.js'
import type { WriteStatistics } from '../../adapters/types.js'
import { fieldPolicy, hiddenValuesOf, redactValues, withoutFields, type FieldPolicy, type PipelineFields } from '../../security/hidden.js'
import { capped, message, plain, sameFailure } from './reject-text.js'

const LOG = cds.log(LOGGER.engine)

export const REJECTS_ENTITY = `${TRACKER_NAMESPACE}.PipelineRejects` as const

/** Rejects of a rolled-back run-scoped transaction written again afterwards. */
const KEPT_AFTER_ROLLBACK = 100
const ERROR_CHARS = 1000
/** Keys per `in` list when resolving rejects. */
const KEY_CHUNK = 500

export type RejectPhase = 'map' | 'validate' | 'write'

/** Run statistics with the skipped count of `onError: 'skip'`. */
export interface SkipStatistics extends WriteStatistics {
  skipped: number
}

/** A stored reject as read for replay. */
export interface RejectRow {
  ID: string
  recordKey: string | null
  record: string | null
  mapped: string | null
}

/** A mapped record and the source record it came from, when known. */
interface Pair {
  target: DataRecord
  source?: DataRecord
}

interface Reject {
  key: string | null
  phase: RejectPhase
  error: string
  source?: DataRecord
  target?: DataRecord
  cause?: unknown
}

/** Dispatches a pipeline event (the engine service's CAP events). */
type Dispatch = (event: string, pipeline: string, data: Record<string, unknown>) => Promise<Record<string, unknown>>

export interface RunRejectsOptions {
  pipeline: ResolvedPipeline
  source: PipelineFields['source']
  target: BaseTargetAdapter
  mapping?: FieldMapping[]
  runId: string
  dispatch: Dispatch
  /** Stamps the fan-in origin into mapped records. */
  stamp: (records: DataRecord[]) => DataRecord[]
  /** A replay run: batches are stored rejects, resolved as `replayed`. */
  replay?: boolean
}

/** The poison-record handling of one run with `onError: 'skip'`. */
export class RunRejects {
  /** Records read by the run (the base of a share limit). */
  read = 0
  private readonly onError: ResolvedOnError
  private readonly keys: string[]
  private readonly validator?: RecordValidator
  /** Open rejects of the pipeline exist (from earlier runs, or this one): written keys resolve them. */
  private open = false
  /** Rejects written in the current transaction: kept (a few) to write again after a rollback of the run's transaction. */
  private uncommitted: Array<Record<string, unknown>> = []
  private db?: QueryRunner
  /** Hidden fields are never stored, nor their values in error messages (security/hidden.ts). */
  private readonly policy: FieldPolicy

  constructor(private readonly options: RunRejectsOptions) {
    this.onError = options.pipeline.onError
    this.policy = fieldPolicy(options)
    const entity = options.target.entityDefinition()
    this.keys = entity ? keyNames(entity) : []
    this.validator = entity ? validatorOf(entity) : undefined
  }

  private get name(): string {
    return this.options.pipeline.name
  }

  /** Before the first batch: whether the pipeline has open rejects that written keys resolve. */
  async start(): Promise<void> {
    this.db = await connect('db')
    const found = await this.db.run(ql.SELECT.one.from(REJECTS_ENTITY).columns('ID').where({ pipeline_name: this.name, status: 'open' }))
    this.open = Boolean(found)
  }

  /**
   * Maps, validates and writes one batch, setting failing records aside; returns what the batch
   * changed, with `skipped`. Runs in the caller's transaction (`tx`, or the run's).
   * In a replay run the batch is stored rejects (`RejectRow`).
   */
  async processBatch(batch: DataRecord[], batchIndex: number, mode: 'full' | 'delta' | 'partial-refresh', tx?: QueryRunner): Promise<SkipStatistics> {
    const statistics: SkipStatistics = { created: 0, updated: 0, deleted: 0, skipped: 0 }
    const rejects: Reject[] = []
    this.read += batch.length
    let pairs: Pair[]
    if (this.options.replay) {
      const rows = batch as unknown as RejectRow[]
      const sources = rows.filter(row => row.record).map(row => JSON.parse(row.record!) as DataRecord)
      pairs = [...(sources.length ? await this.map(sources, batchIndex, rejects) : []),
        ...rows.filter(row => !row.record && row.mapped).map(row => ({ target: JSON.parse(row.mapped!) as DataRecord }))]
    } else pairs = await this.map(batch, batchIndex, rejects)
    this.options.stamp(pairs.map(pair => pair.target))

    const valid = pairs.filter(pair => {
      const problem = this.validator?.check(pair.target)
      if (problem) rejects.push({ key: this.keyOf(pair.target), phase: 'validate', error: problem.message, source: pair.source, target: pair.target })
      return !problem
    })
    const written: Pair[] = []
    if (valid.length) {
      const context = { runId: this.options.runId, batchIndex, mode }
      const failures: Reject[] = []
      const stats = await this.write(valid, context, written, failures)
      if (valid.length > 1 && sameFailure(failures, valid.length)) throw failures[0].cause
      rejects.push(...failures)
      statistics.created += stats.created
      statistics.updated += stats.updated
      statistics.deleted += stats.deleted
      if (stats.unchanged) statistics.unchanged = (statistics.unchanged ?? 0) + stats.unchanged
    }
    statistics.skipped = rejects.length
    await this.record(rejects, written, tx)
    return statistics
  }

  /** Throws when the run's skipped records exceed `onError.maxSkipped`. */
  checkLimit(skipped: number): void {
    const { maxCount, maxShare, label } = this.onError
    const exceeded = (maxCount !== undefined && skipped > maxCount) || (maxShare !== undefined && this.read > 0 && skipped / this.read > maxShare)
    if (!exceeded) return
    throw new PipelineError('TARGET_FAILED',
      `${skipped} of ${this.read} records read were skipped, more than onError.maxSkipped allows (${label}); the run stops. See PipelineRejects of run ${this.options.runId}`,
      { target: 'onError.maxSkipped' })
  }

  /** The run's one transaction was rolled back: writes its first rejects again, so the failure can be examined; returns how many. */
  async afterRollback(): Promise<number> {
    const kept = this.uncommitted.slice(0, KEPT_AFTER_ROLLBACK)
    this.uncommitted = []
    if (!kept.length) return 0
    try {
      await (await connect('db')).tx(tx => tx.run(ql.INSERT.into(REJECTS_ENTITY).entries(kept)))
      return kept.length
    } catch (error) {
      LOG.warn(`pipeline '${this.name}': could not keep the rejects of the rolled-back run ${this.options.runId}: ${(error as Error).message}`)
      return 0
    }
  }

  /** The batch's transaction committed: its rejects are safe. */
  committed(): void {
    this.uncommitted = []
  }

  /** MAP of a batch; on failure, of its halves, down to single records that are rejected. */
  private async map(sources: DataRecord[], batchIndex: number, rejects: Reject[]): Promise<Pair[]> {
    const failures: Reject[] = []
    const pairs = await this.mapPart(sources, batchIndex, failures)
    if (sources.length > 1 && sameFailure(failures, sources.length)) throw failures[0].cause
    rejects.push(...failures)
    return pairs
  }

  private async mapPart(sources: DataRecord[], batchIndex: number, failures: Reject[]): Promise<Pair[]> {
    try {
      const mapped = await this.options.dispatch(EVENTS.MAP, this.name, { runId: this.options.runId, batchIndex, sourceRecords: sources, targetRecords: [] })
      const targets = Array.isArray(mapped.targetRecords) ? (mapped.targetRecords as DataRecord[]) : []
      return this.pair(sources, targets)
    } catch (error) {
      if (sources.length === 1) {
        failures.push({ key: this.sourceKeyOf(sources[0]), phase: 'map', error: message(error), source: sources[0], cause: error })
        return []
      }
      const half = Math.ceil(sources.length / 2)
      return [...await this.mapPart(sources.slice(0, half), batchIndex, failures), ...await this.mapPart(sources.slice(half), batchIndex, failures)]
    }
  }

  /** Pairs mapped records with their source records: by position when MAP kept one record per record, else by key. */
  private pair(sources: DataRecord[], targets: DataRecord[]): Pair[] {
    if (targets.length === sources.length) return targets.map((target, i) => ({ target, source: sources[i] }))
    const byKey = new Map(sources.map(source => [this.sourceKeyOf(source), source]))
    return targets.map(target => ({ target, source: byKey.get(this.keyOf(target)) ?? undefined }))
  }

  /** WRITE of valid records, isolated; on failure, of its halves, down to single records that are rejected. */
  private async write(pairs: Pair[], context: { runId: string; batchIndex: number; mode: string }, written: Pair[], failures: Reject[]): Promise<WriteStatistics> {
    const { target, dispatch } = this.options
    const records = pairs.map(pair => pair.target)
    const writeAll = async () => {
      const result = await dispatch(EVENTS.WRITE, this.name, { ...context, targetRecords: records, statistics: undefined })
      return (result.statistics ?? {}) as Partial<WriteStatistics>
    }
    try {
      const stats = target.isolate ? await target.isolate(writeAll) : await writeAll()
      written.push(...pairs)
      return { created: Number(stats.created ?? 0), updated: Number(stats.updated ?? 0), deleted: Number(stats.deleted ?? 0), unchanged: Number(stats.unchanged ?? 0) }
    } catch (error) {
      if (pairs.length === 1) {
        failures.push({ key: this.keyOf(pairs[0].target), phase: 'write', error: message(error), source: pairs[0].source, target: pairs[0].target, cause: error })
        return { created: 0, updated: 0, deleted: 0 }
      }
      const half = Math.ceil(pairs.length / 2)
      const first = await this.write(pairs.slice(0, half), context, written, failures)
      const second = await this.write(pairs.slice(half), context, written, failures)
      return { created: first.created + second.created, updated: first.updated + second.updated, deleted: first.deleted + second.deleted, unchanged: (first.unchanged ?? 0) + (second.unchanged ?? 0) }
    }
  }

  /** Stores the batch's rejects and resolves earlier open rejects of the keys it wrote or rejected again. */
  private async record(rejects: Reject[], written: Pair[], tx?: QueryRunner): Promise<void> {
    const runner = tx ?? this.db!
    const now = new Date().toISOString()
    if (this.open) {
      const resolve = async (keys: Array<string | null>, status: string) => {
        const list = [...new Set(keys.filter((key): key is string => key !== null))]
        for (let i = 0; i < list.length; i += KEY_CHUNK)
          await runner.run(ql.UPDATE.entity(REJECTS_ENTITY).set({ status, resolvedAt: now, resolvedBy: this.options.runId })
            .where({ pipeline_name: this.name, status: 'open', recordKey: { in: list.slice(i, i + KEY_CHUNK) } }))
      }
      await resolve(written.map(pair => this.keyOf(pair.target)), this.options.replay ? 'replayed' : 'written')
      await resolve(rejects.map(reject => reject.key), 'superseded')
    }
    if (!rejects.length) return
    for (const reject of rejects) reject.error = redactValues(reject.error, hiddenValuesOf(this.policy, [reject.source], [reject.target]))
    const rows = rejects.map(reject => this.row(reject, now))
    await runner.run(ql.INSERT.into(REJECTS_ENTITY).entries(rows))
    this.uncommitted.push(...rows.slice(0, Math.max(0, KEPT_AFTER_ROLLBACK - this.uncommitted.length)))
    this.open = true
    LOG.warn(`pipeline '${this.name}': ${rejects.length} record(s) skipped (onError: 'skip'), e.g. ${rejects[0].key ?? '(no key)'} at ${rejects[0].phase}: ${rejects[0].error}`)
  }

  /**
   * The stored form: the source record when known (replayed from MAP on), else the mapped record
   * (replayed from validation on) — without hidden fields, which are never stored.
   */
  private row(reject: Reject, now: string): Record<string, unknown> {
    const { hidden } = this.policy
    const record = reject.source ? capped(withoutFields(reject.source, hidden.source)) : undefined
    const mapped = !reject.source && reject.target ? capped(withoutFields(reject.target, hidden.target)) : undefined
    return {
      ID: cds.utils.uuid(), run_ID: this.options.runId, pipeline_name: this.name, recordKey: reject.key, phase: reject.phase,
      error: reject.error.slice(0, ERROR_CHARS), record: record?.text ?? null, mapped: mapped?.text ?? null,
      truncated: Boolean(record?.truncated || mapped?.truncated), status: 'open', createdAt: now,
    }
  }

  /** The target key of a mapped record as JSON (`{"ID":7}`), or null when the target has no known keys. */
  private keyOf(target: DataRecord): string | null {
    if (!this.keys.length) return null
    return JSON.stringify(Object.fromEntries(this.keys.map(k => [k, plain(target[k])])))
  }

  /** The target key of a source record, through the mapping (and the fan-in origin). */
  private sourceKeyOf(source: DataRecord): string | null {
    if (!this.keys.length) return null
    const origin = this.options.pipeline.config.source.origin
    return JSON.stringify(Object.fromEntries(this.keys.map(k => [k, k === ORIGIN_COLUMN && origin !== undefined ? origin : plain(source[sourceNameOf(this.options.mapping, k)])])))
  }
}
