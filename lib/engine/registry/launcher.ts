/**
 * Launching runs: `execute` (checked parameters, then a run in this process, one enqueued on
 * CAP's task queue, or a fan-out over tenants), scheduled and queued runs, and `flush`. Every
 * run passes the tracker's guard first, and runs outside the caller's transaction.
 */
import cds from '@sap/cds'
import { LOGGER, RUN_MODES, SCHEDULE_ENGINES, type RunMode } from '../../constants.js'
import { PipelineError } from '../../pipeline/errors.js'
import type { BaseTargetAdapter } from '../../adapters/target/base.js'
import { assertTenantId } from '../../security/tenant-id.js'
import { PipelineRun } from '../run/index.js'
import { describeError } from '../run/support.js'
import type { EventDispatcher, RunOutcome } from '../run/types.js'
import { assertConnectionAvailable, whitelistTrigger, type PipelineRow, type Tracker } from '../tracker/index.js'
import type { QueuedSchedules } from '../schedule/queued.js'
import type { QueuedRunMessage } from '../schedule/queue-table.js'
import { contextTenant, tenancy } from '../tenancy/index.js'
import { trackTenantWork } from '../tenancy/tenant-work.js'
import { afterCurrentTransaction } from './after-transaction.js'
import type { TenantFanOut } from '../tenancy/fanout.js'
import type { PipelineDefinitions } from './definitions.js'
import type { TenantDefinitions } from './tenant-definitions.js'
import { detached, observable } from './background.js'
import { holdLocally } from './local-runs.js'
import { runForTenants } from './tenant-fan-out.js'
import type {
  EnqueuedFanOut, EnqueuedRun, ExecuteOptions, ExecuteResult, FanOutOutcome, FanOutRun, InProcessExecuteOptions, QueuedExecuteOptions, StartedRun,
} from './execute-result.js'

/** At the latest this long after a queue task's start, its run starts even if the task's transaction has not ended. */
const QUEUED_RUN_FALLBACK = 5000

const LOG = cds.log(LOGGER.engine)

export class PipelineLauncher {
  constructor(
    private readonly definitions: PipelineDefinitions,
    private readonly tenants: TenantDefinitions,
    private readonly tracker: Tracker,
    private readonly dispatch: EventDispatcher,
    private readonly queue: QueuedSchedules,
    private readonly fanOut: TenantFanOut,
  ) {}

  /**
   * Starts a run: synchronous (resolved `done`), async in this process (`engine` spawn, the
   * default), or async through CAP's task queue (`engine: 'queued'`: one run is enqueued, any
   * instance runs it; only `{ name }` is returned).
   */
  async execute(name: string, options: QueuedExecuteOptions & { tenant: string }): Promise<EnqueuedRun>
  async execute(name: string, options: QueuedExecuteOptions): Promise<EnqueuedRun | EnqueuedFanOut>
  async execute(name: string, options: InProcessExecuteOptions & { tenant: string }): Promise<StartedRun>
  async execute(name: string, options?: InProcessExecuteOptions): Promise<StartedRun | FanOutRun>
  async execute(name: string, options: ExecuteOptions & { tenant: string }): Promise<StartedRun | EnqueuedRun>
  async execute(name: string, options?: ExecuteOptions): Promise<ExecuteResult>
  async execute(name: string, options: ExecuteOptions = {}): Promise<ExecuteResult> {
    this.definitions.definition(name)
    if (options.tenant !== undefined) await this.assertSubscribed(options.tenant)
    if (options.tenant === undefined && tenancy().settings().fanOutScheduledRuns && !contextTenant()) return this.executeForAll(name, options)
    const pipeline = this.definitions.effectiveFor(name, options.tenant || contextTenant())
    const mode = options.mode ?? pipeline.mode
    if (!(RUN_MODES as readonly string[]).includes(mode))
      throw new PipelineError('INVALID_PARAMETER', `mode '${String(mode)}' is invalid; expected one of ${RUN_MODES.join(', ')}`, { target: 'mode' })
    if (mode === 'delta' && pipeline.shape === 'query')
      throw new PipelineError('INVALID_PARAMETER', `mode 'delta' is not possible for query-shape pipeline '${name}'`, { target: 'mode' })
    if (mode === 'partial-refresh' && pipeline.shape !== 'query')
      throw new PipelineError('INVALID_PARAMETER', `mode 'partial-refresh' applies to query-shape pipelines; '${name}' is entity-shape`, { target: 'mode' })
    if (options.tenant !== undefined && (typeof options.tenant !== 'string' || !options.tenant))
      throw new PipelineError('INVALID_PARAMETER', 'tenant: must be a non-empty string', { target: 'tenant' })
    if (options.tenant && !(cds.env.requires as { multitenancy?: unknown }).multitenancy)
      throw new PipelineError('INVALID_PARAMETER', `tenant: '${options.tenant}' given, but multitenancy is not active (cds.requires.multitenancy)`, { target: 'tenant' })
    if (options.engine !== undefined && !(SCHEDULE_ENGINES as readonly string[]).includes(options.engine))
      throw new PipelineError('INVALID_PARAMETER', `engine: '${String(options.engine)}' is invalid; expected spawn or queued`, { target: 'engine' })
    assertConnectionAvailable('execute')
    const trigger = whitelistTrigger(options.trigger)
    if (options.async && options.engine === 'queued') {
      await this.queue.enqueue({ pipeline: name, mode, trigger, ...(options.tenant ? { tenant: options.tenant } : {}) })
      LOG.debug(`pipeline '${name}': one ${mode} run enqueued (trigger ${trigger})`)
      return { name }
    }
    return this.launch(name, { mode, trigger, tenant: options.tenant, async: options.async })
  }

  /**
   * `execute` without a tenant while fan-out is on (a provider or technical caller): one run per
   * subscribed tenant, `parallel` at once. `done` settles once all ended: it resolves with the
   * summed statistics and each tenant's outcome, or rejects naming the tenants whose run failed.
   */
  private async executeForAll(name: string, options: ExecuteOptions): Promise<FanOutRun | EnqueuedFanOut> {
    const tenants = await tenancy().subscribedTenants()
    if (options.async && options.engine === 'queued') {
      for (const tenant of tenants) await this.execute(name, { ...options, tenant })
      return { name, tenants }
    }
    const execution = runForTenants(this.fanOut, name, tenants, tenant => this.execute(name, { ...options, tenant, async: true, engine: 'spawn' }))
    if (!options.async) await execution.catch(() => undefined)
    const done = observable<FanOutOutcome>(execution, error => LOG.error(`pipeline '${name}': fan-out over tenants failed and nobody awaited its 'done': ${(error as Error).message}`))
    return { name, tenants, done }
  }

  /**
   * A tenant given to `execute`: a safe id (400 naming `tenant`) of a subscribed tenant (404),
   * checked before anything touches a database — an unknown tenant would get an empty one.
   */
  private async assertSubscribed(tenant: unknown): Promise<void> {
    assertTenantId(tenant)
    // the context's own tenant (its user's request, a job of the tenant) came through CAP already
    if (!tenancy().settings().active || tenant === contextTenant()) return
    if (!(await tenancy().subscribedTenants()).includes(tenant as string))
      throw new PipelineError('UNKNOWN_TENANT', `tenant: '${String(tenant)}' is not subscribed to this application`, { target: 'tenant' })
  }

  /**
   * Guard, then the run. With `afterTransaction` the run starts once the caller's transaction
   * (a queue task's) has ended, so the task completes as soon as the guard has decided.
   */
  private async launch(name: string, request: { mode: RunMode; trigger: ReturnType<typeof whitelistTrigger>; tenant?: string; async?: boolean }, afterTransaction = false): Promise<StartedRun> {
    const tenant = request.tenant ?? contextTenant()
    const inTenant = Boolean(tenant && tenancy().settings().active)
    // underway in the tenant from the guard to the run's end: an unsubscribe waits for it
    let ended: () => void = () => undefined
    if (inTenant) void trackTenantWork(tenant, new Promise<void>(resolve => { ended = resolve }))
    try {
      if (inTenant && tenant) await this.tenants.ensureInTenant(name, tenant)
      return await this.launchIn(name, request, tenant, afterTransaction, ended)
    } catch (error) {
      ended()
      throw error
    }
  }

  private async launchIn(name: string, request: { mode: RunMode; trigger: ReturnType<typeof whitelistTrigger>; tenant?: string; async?: boolean }, tenant: string | undefined, afterTransaction: boolean, ended: () => void): Promise<StartedRun> {
    let run!: PipelineRun
    // a run this process holds rejects the trigger at once (local-runs.ts), else the database's guard decides
    const release = await holdLocally(name, tenant, async () => {
      const prepared = await this.definitions.prepare(name, tenant)
      run = new PipelineRun(prepared, { mode: request.mode, trigger: request.trigger }, this.tracker, this.dispatch)
      await detached(() => run.begin(), request.tenant)
    })
    // outside the caller's transaction: a run commits its own batches (a read joining an HTTP
    // request's open transaction would hold the connection the batch transactions wait for)
    const execution = afterTransaction
      ? new Promise<RunOutcome>((resolve, reject) => afterCurrentTransaction(() => { detached(() => run.execute(), request.tenant).then(resolve, reject) }, QUEUED_RUN_FALLBACK))
      : detached(() => run.execute(), request.tenant)
    // (before `observable`: this handler must not count as someone observing `done`)
    const finished = () => { release(); ended() }
    void execution.then(finished, finished)
    if (!request.async) await execution.catch(() => undefined)
    const done = observable(execution, error => LOG.error(`pipeline '${name}': run ${run.runId} failed and nobody awaited its 'done': ${(error as Error).message}`))
    return { runId: run.runId, name, done }
  }

  /** Starts a scheduled run (a spawn or queued tick) unless disabled or running; never throws. */
  async startScheduled(name: string, afterTransaction = false, tenant?: string): Promise<StartedRun | undefined> {
    const where = tenant ? ` (tenant '${tenant}')` : ''
    try {
      if (tenant) await this.tenants.ensureInTenant(name, tenant)
      const row = await this.tracker.read(name)
      if (row && row.enabled === false) {
        LOG.debug(`pipeline '${name}'${where}: scheduled tick skipped, the pipeline is disabled`)
        return undefined
      }
      const pipeline = this.definitions.effectiveFor(name, tenant)
      assertConnectionAvailable('execute')
      return await this.launch(name, { mode: pipeline.mode, trigger: 'scheduled', async: true, tenant }, afterTransaction)
    } catch (error) {
      const code = (error as PipelineError).code
      if (code === 'PIPELINE_RUNNING') LOG.debug(`pipeline '${name}'${where}: scheduled tick skipped, a run is active`)
      else LOG.warn(`pipeline '${name}'${where}: scheduled tick could not start a run: ${(error as Error).message}`)
      return undefined
    }
  }

  /**
   * A queued one-off run (the handler of `QUEUE.runEvent`). A pipeline that is running makes the
   * task fail so CAP's queue retries it with backoff; anything else completes the task (run
   * failures land in PipelineRuns).
   */
  async queuedRun(message: QueuedRunMessage | undefined): Promise<void> {
    const name = message?.pipeline
    if (typeof name !== 'string' || !this.definitions.has(name)) {
      LOG.error(`queued run of pipeline '${String(name)}', which this instance has not registered: dropped`)
      return
    }
    try {
      if (message!.tenant !== undefined && message!.tenant !== null) assertTenantId(message!.tenant)
      const mode = (message!.mode ?? this.definitions.definition(name).effective.mode) as RunMode
      const { done } = await this.launch(name, { mode, trigger: whitelistTrigger(message!.trigger), tenant: message!.tenant, async: true }, true)
      done.catch(() => undefined) // recorded in PipelineRuns and logged by the run
    } catch (error) {
      if ((error as PipelineError).code === 'PIPELINE_RUNNING')
        throw new PipelineError('PIPELINE_RUNNING', `Pipeline '${name}' is running; CAP's task queue retries the queued run later`)
      LOG.error(`pipeline '${name}': queued run could not start: ${(error as Error).message}`)
    }
  }

  /** Clears the pipeline's output and resets the tracker so the next run is a full sync. */
  async flush(name: string): Promise<PipelineRow> {
    const pipeline = this.definitions.definition(name).effective
    assertConnectionAvailable('flush')
    const prepared = await this.definitions.prepare(name)
    const flushId = cds.utils.uuid()
    const { row } = await this.tracker.acquire(name, flushId, pipeline.leaseDuration)
    let deleted = 0
    try {
      const db = await cds.connect.to('db')
      deleted = await db.tx(() => (prepared.target as BaseTargetAdapter).truncate({ runId: flushId, mode: 'full', batchIndex: 0 }))
      await prepared.source.releasePosition(row.lastKey) // an ODP subscription of the dropped link ends
    } catch (error) {
      await this.tracker.release(name, flushId, { status: 'failed', lastError: describeError(error, `pipeline '${name}'`).message })
      throw error
    }
    await this.tracker.release(name, flushId, { status: 'idle', lastSync: null, lastKey: null, checkpoint: null, lastSuccess: null, errorCount: 0, lastError: null })
    LOG.info(`pipeline '${name}' flushed: ${deleted} rows deleted; the next run reads everything`)
    return (await this.tracker.read(name))!
  }
}
