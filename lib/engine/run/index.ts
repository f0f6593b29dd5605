/**
 * lib/engine/run — where a run happens: this module is the run itself (PipelineRun), writes.ts its
 * writes batch by batch; types.ts,
 * statistics.ts and position.ts are its outcome, counts and watermark position; read-ahead.ts starts
 * the first read before the guard; progress-meter.ts and guidance.ts are its progress and the
 * hints attached to its errors.
 *
 * The run state machine: guard → START → READ → (MAP → WRITE) per batch → DONE, with the
 * lease heartbeat, per-batch (or per-run) transactions, checkpoints and the final tracker
 * update. One `PipelineRun` object lives for one execution.
 */
import cds from '@sap/cds'
import { randomUUID } from 'node:crypto'
import { EVENTS, LOGGER } from '../../constants.js'
import { PipelineError } from '../../pipeline/errors.js'
import { rememberCorrelation } from '../../security/redact.js'
import { describeError, prefetch } from './support.js'
import { checkSchemaDrift, driftAllowsReadAhead } from '../drift/index.js'
import { rememberGuidance, warnMockedSource } from './guidance.js'
import { Tracker, type PipelineRow, type ReadPosition } from '../tracker/index.js'
import { liveProgress, liveStatistics, outcomeStatistics } from './statistics.js'
import type { EventDispatcher, PreparedPipeline, RunOutcome, RunRequest } from './types.js'
import { ProgressMeter } from './progress-meter.js'
import { RunEventWriter, RunRecorder, runEventsSettings } from '../../runs/index.js'
import type { Watermark } from '../../adapters/watermark.js'
import { WatermarkTracker } from '../../adapters/watermark-tracker.js'
import { startPosition, toIso } from './position.js'
import { serializable } from '../config/index.js'
import type { DataRecord } from '../../pipeline/types.js'
import { SoftDeletes } from '../deletes/soft-delete.js'
import { connect } from '../../model/ql.js'
import { RunRejects } from '../records/rejects.js'
import { openRejects } from '../records/open-rejects.js'
import { validatorOf, type RecordValidator } from '../records/index.js'
import { ReadAhead, readMayStartEarly } from './read-ahead.js'
import { underway } from '../../adapters/source/on-the-wire.js'
import { sequentialNote } from '../../adapters/source/base.js'
import type { TrackerState, WriteStatistics } from '../../adapters/types.js'
import { RunWriter, stampOrigin, type Transfer } from './writes.js'

const LOG = cds.log(LOGGER.engine)

export { describeError, prefetch }

export class PipelineRun {
  readonly runId = randomUUID()
  readonly statistics: WriteStatistics = { created: 0, updated: 0, deleted: 0 }
  /** When the run started: set again once the guard holds (the row's startTime), so history windows never overlap. */
  private startTime = new Date()
  private heartbeat?: NodeJS.Timeout
  private leaseLost = false
  /** The tracker row as the guard left it. */
  private row?: PipelineRow
  /** The first page of a delta run, requested while the guard was taken (read-ahead.ts). */
  private readAhead?: ReadAhead
  private readonly meter = new ProgressMeter(() => this.startTime.getTime())
  /** The run's event log and where it failed (lib/runs), and what writes the log. */
  private readonly recorder: RunRecorder
  private readonly events: RunEventWriter

  constructor(
    private readonly prepared: PreparedPipeline,
    private readonly request: RunRequest,
    private readonly tracker: Tracker,
    private readonly dispatch: EventDispatcher,
  ) {
    const settings = runEventsSettings()
    this.recorder = new RunRecorder(settings.max)
    this.events = new RunEventWriter(tracker, prepared.pipeline.name, this.runId, this.recorder, settings.flushInterval)
    // onError 'skip': failing records are set aside in PipelineRejects and counted as skipped
    if (prepared.pipeline.onError.mode === 'skip' || request.replay) {
      this.statistics.skipped = 0
      this.rejects = new RunRejects({ ...prepared, runId: this.runId, dispatch, replay: request.replay, stamp: records => stampOrigin(records, prepared.pipeline.config.source.origin) })
    } else {
      // onError 'fail': the same check against the target's types; the first misfit stops the run
      const entity = prepared.target.entityDefinition()
      this.validator = entity ? validatorOf(entity) : undefined
    }
  }

  private readonly rejects?: RunRejects
  private readonly validator?: RecordValidator

  get name(): string {
    return this.prepared.pipeline.name
  }

  /** Guard and history row; throws PIPELINE_RUNNING when another run holds the pipeline. */
  begin(): Promise<void> {
    return this.recorder.within(() => this.guard())
  }

  private async guard(): Promise<void> {
    const { pipeline } = this.prepared
    const early = this.startReadAhead()
    this.recorder.started(this.request, Boolean(early))
    if (early) await underway(early.sent) // on the wire before the guard's statements hold the event loop
    let acquired: Awaited<ReturnType<Tracker['acquire']>>
    const guardStart = performance.now()
    try {
      acquired = await this.tracker.acquire(this.name, this.runId, pipeline.leaseDuration, {
        trigger: this.request.trigger, mode: this.request.mode === 'delta' ? 'delta' : 'full', startTime: this.startTime.toISOString(),
      })
    } catch (error) {
      early?.drop()
      throw error
    }
    const { row, staleRun, startTime } = acquired
    if (startTime) this.startTime = new Date(startTime)
    this.recorder.guardTaken(guardStart, staleRun, pipeline.leaseDuration)
    if (staleRun) LOG.warn(`pipeline '${this.name}': run ${staleRun} lost its holder (lease expired); closed it as failed and took over`)
    this.row = row
    if (early?.matches(this.trackerState(row))) this.readAhead = early
    else if (early) {
      early.drop()
      this.tracker.positionMissed(this.name)
    }
    this.heartbeat = setInterval(() => this.renewLease(), Math.max(200, Math.floor(pipeline.leaseDuration / 3)))
    this.heartbeat.unref()
  }


  /**
   * A delta run's first read, sent before the guard is taken, from where this process's last
   * successful run left the pipeline; undefined where a run must not read before it holds the
   * guard (see read-ahead.ts).
   */
  private startReadAhead(): ReadAhead | undefined {
    const { source } = this.prepared
    if (this.request.mode !== 'delta' || this.request.replay || !source.readsAhead) return undefined
    if (!readMayStartEarly(this.name) || !driftAllowsReadAhead(this.prepared.pipeline)) return undefined
    const position = this.tracker.lastPosition(this.name)
    if (!position) return undefined
    const state = this.trackerState(position)
    if (!source.readsAheadFrom(state)) return undefined
    state.progress = this.meter.read
    return new ReadAhead(source, state)
  }

  private renewLease(): void {
    this.tracker.renew(this.name, this.runId, this.prepared.pipeline.leaseDuration).then(
      held => {
        if (held || this.leaseLost) return
        this.leaseLost = true
        this.recorder.event('lease', { phase: 'guard', message: 'lease lost: another holder took the pipeline over' })
      },
      error => {
        this.recorder.event('lease', { phase: 'guard', message: 'lease renewal failed' })
        LOG.warn(`pipeline '${this.name}': lease renewal failed: ${(error as Error).message}`)
      },
    )
  }

  /** Executes the run after `begin()`; never throws: failures are recorded and reported. */
  execute(): Promise<RunOutcome> {
    return this.recorder.within(() => this.run())
  }

  private async run(): Promise<RunOutcome> {
    const { runId, name, request } = this
    liveStatistics.set(runId, this.statistics)
    warnMockedSource(this.prepared.pipeline)
    try {
      const watermark = await this.transfer(this.row!)
      const endTime = new Date()
      // the events first: whoever reads the run's final status finds all of its events
      await this.recordEnd('completed', endTime)
      const stillOwned = await this.tracker.finishSuccess(name, runId, { ...watermark, statistics: this.statistics, keepCheckpoint: request.replay, replay: request.replay, progress: this.meter.snapshot(0, 'completed') })
      if (!stillOwned) LOG.error(`pipeline '${name}': run ${runId} finished after its lease was taken over; tracker state left to the new holder`)
      const { created, updated, unchanged, deleted, skipped } = this.statistics
      LOG.info(`pipeline '${name}' ${request.mode} run completed: ${created} created, ${updated} updated, ${unchanged ?? 0} unchanged, ${deleted} deleted${skipped === undefined ? '' : `, ${skipped} skipped`}`)
      await this.done('completed', endTime)
      return { runId, status: 'completed', statistics: outcomeStatistics(this.statistics) }
    } catch (error) {
      rememberGuidance(error, this.prepared.pipeline)
      const failure = describeError(error, `pipeline '${name}'`)
      // the log keeps the whole message (credentials redacted), the stored error what users may see
      LOG.error(`pipeline '${name}' ${request.mode} run ${runId} failed [correlation id ${failure.correlationId}]: ${failure.detail}`)
      rememberCorrelation(error, failure.correlationId)
      const failedAt = this.recorder.failed(error, failure)
      const endTime = new Date()
      await this.recordEnd('failed', endTime)
      await this.tracker.finishFailure(name, runId, failure, this.statistics, this.meter.snapshot(0, 'failed'), failedAt).catch(e => LOG.error(`could not record the failed run: ${(e as Error).message}`))
      await this.done('failed', endTime, failure)
      throw error
    } finally {
      this.readAhead?.drop() // a run that failed before reading leaves no request behind
      clearInterval(this.heartbeat)
      liveStatistics.delete(runId)
      liveProgress.delete(runId)
    }
  }

  /** The run's last events, stored in one statement (a failure to store them never fails the run). */
  private async recordEnd(status: 'completed' | 'failed', endTime: Date): Promise<void> {
    this.recorder.ended(status, endTime.getTime() - this.startTime.getTime(), this.meter.processed, outcomeStatistics(this.statistics))
    await this.events.flush()
  }

  private async done(status: 'completed' | 'failed', endTime: Date, error?: { message: string }): Promise<void> {
    const data = {
      runId: this.runId, status, mode: this.request.mode, trigger: this.request.trigger,
      startTime: this.startTime.toISOString(), endTime: endTime.toISOString(), statistics: outcomeStatistics(this.statistics), error,
      events: [...(this.recorder.log?.list() ?? [])],
    }
    // a failing DONE handler must not turn a completed run into a failed one
    await this.dispatch(EVENTS.DONE, this.name, data).catch(e => LOG.error(`pipeline '${this.name}': a ${EVENTS.DONE} handler failed: ${(e as Error).message}`))
  }

  /** START, READ, batches; returns the watermark to store. */
  private async transfer(row: PipelineRow): Promise<Watermark> {
    const { pipeline, source } = this.prepared
    const { runId, request } = this
    const trackerState = this.readAhead?.state ?? this.trackerState(row)
    trackerState.progress = this.meter.read // the source adds its counts there (README "Progress and freshness")
    // a read under way since before the guard: the provider may have answered from that moment on
    const readStart = this.readAhead?.startedAt ?? this.startTime
    const records = await this.openRecords(row, trackerState)
    // full and partial refreshes are atomic unless the config explicitly trades that for
    // shorter transactions (`transaction: 'batch'`); delta runs commit per batch unless 'run'
    const atomic = pipeline.config.transaction ? pipeline.config.transaction === 'run' : request.mode !== 'delta'
    const transfer: Transfer = {
      row, trackerState, records, atomic, db: await connect('db'), context: { runId, mode: request.mode, batchIndex: 0, atomic },
      watermark: new WatermarkTracker(source.watermarkPlan(), { lastSync: trackerState.lastSync, lastKey: trackerState.lastKey }, readStart, request.mode),
      softDeletes: SoftDeletes.of(this.prepared),
    }
    await this.rejects?.start()
    if (atomic) {
      try {
        await transfer.db.tx(() => this.writer(transfer).writeAll())
      } catch (error) {
        // the run's one transaction was rolled back: none of the writes it counted happened
        Object.assign(this.statistics, { created: 0, updated: 0, deleted: 0 })
        delete this.statistics.unchanged
        if (this.rejects) this.statistics.skipped = await this.rejects.afterRollback() // the first rejects are kept for examination
        throw error
      }
    } else await this.writer(transfer).writeAll()
    return this.watermarkToStore(transfer, readStart)
  }

  /** START and READ: the source's record batches, checked for schema drift (a replay reads its open rejects instead). */
  private async openRecords(row: PipelineRow, trackerState: TrackerState): Promise<AsyncIterable<DataRecord[]>> {
    const { pipeline, source, target } = this.prepared
    const { runId, request } = this
    const early = this.readAhead
    this.recorder.enter('source')
    await this.dispatch(EVENTS.START, this.name, { runId, mode: request.mode, trigger: request.trigger, config: serializable(pipeline.config), tracker: row })
    if ((request.mode === 'full' || request.mode === 'delta') && pipeline.parallel > 1 && !source.readsPartitioned) sequentialNote(pipeline, `${source.constructor.name} reads page after page`)
    const read = request.replay ? { sourceStream: openRejects(this.name, runId, pipeline.batchSize) }
      : await this.recorder.during('source', () => this.dispatch(EVENTS.READ, this.name, { runId, config: serializable(pipeline.config), source, target, tracker: trackerState, sourceStream: early?.stream() }))
    const readStream = read.sourceStream as AsyncIterable<DataRecord[]> | undefined
    if (!readStream || typeof (readStream as AsyncIterable<unknown>)[Symbol.asyncIterator] !== 'function')
      throw new PipelineError('SOURCE_FAILED', `${EVENTS.READ} produced no sourceStream (an async iterable of record batches)`)
    const stream = this.recorder.claimStream(readStream, request.replay ? 'mapping' : 'source')
    // schema drift (README "Schema drift"): checked before anything is written; a replay of
    // set-aside records reads no source, so it has no drift (flowMetadata keeps the latest real one)
    return request.replay ? stream : await this.recorder.during('source', () => checkSchemaDrift(this.prepared, runId, stream))
  }

  /** The writes of this run with these source batches (writes.ts). */
  private writer(transfer: Transfer): RunWriter {
    return new RunWriter({
      prepared: this.prepared, request: this.request, runId: this.runId, name: this.name, statistics: this.statistics,
      recorder: this.recorder, events: this.events, dispatch: this.dispatch, tracker: this.tracker, meter: this.meter,
      rejects: this.rejects, validator: this.validator, leaseLost: () => this.leaseLost,
    }, transfer)
  }

  /** The watermark the tracker stores after the run (a replay leaves it where it was). */
  private watermarkToStore(transfer: Transfer, readStart: Date): Watermark {
    const { pipeline, source } = this.prepared
    const { row, trackerState } = transfer
    if (this.request.replay) return { lastSync: toIso(row.lastSync), lastKey: row.lastKey }
    const result = transfer.watermark.result()
    // OData delta links: the link the read ended with, stored with the final tracker update (after the writes committed)
    if (source.watermarkPlan().mode === 'odata-delta') return { lastSync: readStart.toISOString(), lastKey: trackerState.deltaLink ?? result.lastKey }
    // a pipeline that always refreshes fully has no watermark: lastSync is the time its data reflects
    if (pipeline.mode === 'full' && this.request.mode !== 'delta') return { ...result, lastSync: this.startTime.toISOString() }
    // an unordered source (REST): rows changed during the read may sort below the highest value seen
    if (!source.readsInWatermarkOrder && result.lastSync && Date.parse(result.lastSync) > readStart.getTime())
      return { ...result, lastSync: trackerState.lastSync && Date.parse(trackerState.lastSync) > readStart.getTime() ? trackerState.lastSync : readStart.toISOString() }
    return result
  }

  /** The tracker state handed to the source (run-position.ts). */
  private trackerState(row: ReadPosition): TrackerState {
    return startPosition(this.prepared, this.request.mode, row)
  }
}
