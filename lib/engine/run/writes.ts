/**
 * A run's writes, batch by batch: a refresh's clearing, each batch's MAP, validation and WRITE (or
 * the rejects' own processing) in the run's transaction or one of its own, soft deletes, progress and
 * checkpoints, then the sweep (delta) or the refresh's count by key (full). index.ts runs it.
 */
import cds from '@sap/cds'
import { EVENTS, LOGGER } from '../../constants.js'
import { PipelineError } from '../../pipeline/errors.js'
import { prefetch } from './support.js'
import type { PipelineRow } from '../tracker/index.js'
import type { Tracker } from '../tracker/index.js'
import { addStatistics, liveProgress } from './statistics.js'
import type { EventDispatcher, PreparedPipeline, RunRequest } from './types.js'
import type { ProgressMeter } from './progress-meter.js'
import type { RunEventWriter, RunRecorder } from '../../runs/index.js'
import type { WatermarkTracker } from '../../adapters/watermark-tracker.js'
import type { Checkpoint } from './position.js'
import type { DataRecord } from '../../pipeline/types.js'
import { ORIGIN_COLUMN } from '../../adapters/target/base.js'
import type { SoftDeletes } from '../deletes/soft-delete.js'
import { sweepIfDue } from '../deletes/index.js'
import type { QueryRunner } from '../../model/ql.js'
import type { RunRejects } from '../records/rejects.js'
import type { RecordValidator } from '../records/index.js'
import { fieldPolicy, hiddenValuesOf, redactError } from '../../security/hidden.js'
import type { TrackerState, WriteStatistics } from '../../adapters/types.js'
import { primaryDatabase } from '../../cap/index.js'

const LOG = cds.log(LOGGER.engine)

/** What one run's transfer works with: its source batches, transaction scope, watermark and soft deletes. */
export interface Transfer {
  row: PipelineRow
  trackerState: TrackerState
  records: AsyncIterable<DataRecord[]>
  atomic: boolean
  db: QueryRunner
  context: { runId: string; mode: RunRequest['mode']; batchIndex: number; atomic: boolean }
  watermark: WatermarkTracker
  softDeletes: SoftDeletes | undefined
}

/** What the writes use of their run. */
export interface WritingRun {
  prepared: PreparedPipeline
  request: RunRequest
  runId: string
  name: string
  statistics: WriteStatistics
  recorder: RunRecorder
  events: RunEventWriter
  dispatch: EventDispatcher
  tracker: Tracker
  meter: ProgressMeter
  rejects?: RunRejects
  validator?: RecordValidator
  leaseLost(): boolean
}

export class RunWriter {
  constructor(private readonly run: WritingRun, private readonly transfer: Transfer) {}

  /** The writes of the run: the refresh's clearing, every batch, then the sweep (delta) or the refresh's count by key (full). */
  async writeAll(): Promise<void> {
    const transfer = this.transfer
    const { target } = this.run.prepared
    const { request } = this.run
    const { context, trackerState } = transfer
    // the rows deleted up front are an event of their own (a refresh counted by key reports 0 here and its deletes at the end)
    const clearStart = performance.now()
    if (request.mode === 'full') {
      const deleted = await this.run.recorder.during('target', () => target.truncate(context))
      this.run.statistics.deleted += deleted
      this.run.recorder.cleared('full refresh', deleted, clearStart)
    }
    if (request.mode === 'partial-refresh') {
      const deleted = await this.run.recorder.during('target', () => target.deleteSlice(trackerState.slice!, context))
      this.run.statistics.deleted += deleted
      this.run.recorder.cleared('partial refresh', deleted, clearStart)
    }
    let batchIndex = 0
    for await (const batch of prefetch(transfer.records)) await this.writeOneBatch(batch, batchIndex++)
    if (request.mode === 'delta' && !request.replay) this.run.statistics.deleted += await sweepIfDue(this.run.prepared, { runId: this.run.runId, atomic: transfer.atomic, db: transfer.db, context, row: transfer.row })
    // a full refresh counts by key against the rows before it, not its truncate and rewrite
    if (request.mode === 'full' && transfer.atomic) {
      const reconcileStart = performance.now()
      const counts = await target.reconcileRefresh?.(context)
      if (counts) {
        // the batches counted by key as well: normally only the rows gone from the source remain to report
        this.run.recorder.refreshReconciled(this.run.statistics, counts, reconcileStart)
        Object.assign(this.run.statistics, counts)
      }
    }
  }

  /** One batch: written in the run's transaction (atomic) or a transaction of its own, then counted, events and limits checked. */
  private async writeOneBatch(batch: DataRecord[], index: number): Promise<void> {
    const transfer = this.transfer
    const { runId, request } = this.run
    if (this.run.leaseLost()) throw new PipelineError('LEASE_EXPIRED', `Run ${runId} lost its lease (the tracker row was taken over); stopping`)
    if (!request.replay) transfer.watermark.observe(batch)
    const gone = transfer.softDeletes?.take(batch) ?? [] // soft-deleted rows: deleted below instead of written
    const mapped: { records: DataRecord[] } = { records: [] }
    const write = async (tx?: QueryRunner): Promise<WriteStatistics> => {
      try {
        return await this.writeBatch(batch, index, gone, mapped, tx)
      } catch (error) {
        // a run error never quotes a hidden field's value (PipelineRuns.error, lastError, DONE, logs)
        throw redactError(error, hiddenValuesOf(fieldPolicy(this.run.prepared), batch, mapped.records))
      }
    }
    this.run.recorder.enter('target') // from here on an error nothing claims is the target's (commits, bookkeeping)
    const before = { ...this.run.statistics }
    const writeStart = performance.now()
    Object.assign(this.run.statistics, transfer.atomic ? await write() : await transfer.db.tx(tx => write(tx)))
    this.run.recorder.batchWritten(index, batch.length, writeStart, before, this.run.statistics)
    this.run.meter.processed += batch.length
    if (transfer.atomic) await this.atomicProgress()
    if (!transfer.atomic) this.run.rejects?.committed()
    if (!transfer.atomic || !singleConnection()) await this.run.events.due() // SQLite: the run's one transaction holds the only connection
    this.run.rejects?.checkLimit(this.run.statistics.skipped ?? 0)
  }

  /** MAP, validation and WRITE of a batch (or the rejects' own processing), soft deletes, progress and checkpoint; the run's totals including it. */
  private async writeBatch(batch: DataRecord[], index: number, gone: DataRecord[], mapped: { records: DataRecord[] }, tx?: QueryRunner): Promise<WriteStatistics> {
    const transfer = this.transfer
    const { runId, request } = this.run
    const totals = { ...this.run.statistics }
    // onError 'skip': maps, validates and writes the batch itself, setting failing records aside
    if (this.run.rejects) addStatistics(totals, await this.run.recorder.during('target', () => this.run.rejects!.processBatch(batch, index, request.mode, tx)))
    const mapResult = this.run.rejects ? {} : await this.run.recorder.during('mapping', () => this.run.dispatch(EVENTS.MAP, this.run.name, { runId, batchIndex: index, sourceRecords: batch, targetRecords: [] }))
    const records = stampOrigin(mapResult.targetRecords as DataRecord[] | undefined, this.run.prepared.pipeline.config.source.origin)
    mapped.records = records
    if (records.length) {
      await this.run.recorder.during('mapping', async () => this.run.validator?.assertValid(records, this.run.name))
      const written = await this.run.recorder.during('target', () => this.run.dispatch(EVENTS.WRITE, this.run.name, { runId, batchIndex: index, mode: request.mode, targetRecords: records, statistics: undefined }))
      addStatistics(totals, written.statistics as Partial<WriteStatistics> | undefined)
    }
    if (gone.length) totals.deleted += await this.run.recorder.during('target', () => transfer.softDeletes!.apply(gone, { ...transfer.context, batchIndex: index }))
    // a batch that changed nothing needs no bookkeeping (a crash would only re-read unchanged rows)
    const changed = totals.created !== this.run.statistics.created || totals.updated !== this.run.statistics.updated || totals.deleted !== this.run.statistics.deleted || totals.skipped !== this.run.statistics.skipped
    if (tx) await this.run.tracker.progress(runId, totals, tx, this.run.meter.snapshot(batch.length))
    if (tx && changed) {
      const checkpoint: Checkpoint = { runId, ...transfer.watermark.checkpoint() }
      await this.run.tracker.checkpoint(this.run.name, runId, JSON.stringify(checkpoint), tx)
    }
    return totals
  }

  /**
   * Progress of a run in one transaction: written beside it in the tracker's own transaction
   * where the database has more than one connection (PostgreSQL, HANA); on SQLite the run holds
   * the only connection, so its row shows the progress at the end (and this process's reads
   * show `liveProgress`).
   */
  private async atomicProgress(): Promise<void> {
    const progress = this.run.meter.snapshot()
    liveProgress.set(this.run.runId, progress)
    if (singleConnection()) return
    await this.run.tracker.progress(this.run.runId, undefined, undefined, progress)
      .catch(e => LOG.debug(`pipeline '${this.run.name}': progress not written: ${(e as Error).message}`))
  }
}

/** SQLite: CAP's pool of one connection. */
function singleConnection(): boolean {
  return primaryDatabase()?.options?.pool?.max === 1
}

export function stampOrigin(records: DataRecord[] | undefined, origin: string | undefined): DataRecord[] {
  const list = Array.isArray(records) ? records : []
  if (origin === undefined) return list
  for (const record of list) record[ORIGIN_COLUMN] = origin
  return list
}
