/**
 * The registry of pipelines of one engine service: registration (validation, capability
 * checks, tracker row, overrides), preparation of adapters, execution and schedules.
 */
import cds from '@sap/cds'
import { LOGGER, RUN_MODES, SCHEDULE_ENGINES, type RunMode, type ScheduleEngine } from '../constants.js'
import { PipelineError, invalidConfig } from '../pipeline/errors.js'
import { configFingerprint, resolvePipeline, serializable } from './config.js'
import type { PipelineConfig, ResolvedPipeline } from '../pipeline/types.js'
import type { WriteStatistics } from '../adapters/types.js'
import { applyOverrides, parseStoredOverrides, type Overrides } from './overrides.js'
import {
  QueuedSchedules, SpawnTimer, sameSchedule, scheduleLabel, scheduleLiveChangeSupported, parseSchedule,
  type QueueHost, type QueuedRunMessage, type TickMessage,
} from './schedule.js'
import type { ScheduleInput, ScheduleSpec } from '../pipeline/types.js'
import { Tracker, assertConnectionAvailable, whitelistTrigger, type PipelineRow, type RegistrationRow } from './tracker.js'
import { PipelineRun, addStatistics, describeError, type EventDispatcher, type PreparedPipeline, type RunOutcome } from './run.js'
import { createAdapters, requiredKind } from '../adapters/factory.js'
import { deriveMapping } from '../adapters/mapping.js'
import { dataElementNames, findEntity, keyNames } from '../model/csn.js'
import { ORIGIN_COLUMN } from '../adapters/target/db.js'
import { CqnSourceAdapter } from '../adapters/source/cqn.js'
import type { BaseTargetAdapter } from '../adapters/target/base.js'
import { TenantFanOut } from './fanout.js'
import { contextTenant, tenancy } from './tenancy.js'
import { trackTenantWork } from './tenant-work.js'
import { afterCurrentTransaction } from './after-transaction.js'
import { checkSource } from './source-check.js'
import { checkOverridesSize } from './limits.js'
import { assertTenantId, invalidTenantId } from '../security/tenant-id.js'
import { warnNarrowerTarget } from './shapes.js'

/** At the latest this long after a queue task's start, its run starts even if the task's transaction has not ended. */
const QUEUED_RUN_FALLBACK = 5000

const LOG = cds.log(LOGGER.engine)

export interface ExecuteOptions {
  mode?: RunMode
  trigger?: string
  async?: boolean
  /** Run in this tenant's context (multitenancy must be active). */
  tenant?: string
  /**
   * With `async: true`: `spawn` (default) starts the run in this process; `queued` enqueues one
   * run on CAP's persistent task queue (any instance runs it). Ignored for synchronous calls.
   */
  engine?: ScheduleEngine
}

/**
 * What `execute` returns. Four shapes, told apart by `tenants` (an array only for a fan-out over
 * tenants) and `done` (absent when the work was enqueued on CAP's task queue):
 *
 * | shape | when | `runId` | `tenants` | `done` |
 * |---|---|---|---|---|
 * | `StartedRun` | one run in this process (a tenant given, or no fan-out) | the run's ID | — | `Promise<RunOutcome>` |
 * | `EnqueuedRun` | `{ async: true, engine: 'queued' }`, one run | — | — | — |
 * | `FanOutRun` | no tenant while fan-out is active (`multitenancy.fanOutScheduledRuns`), provider context | — | the subscribed tenants | `Promise<FanOutOutcome>` |
 * | `EnqueuedFanOut` | the same with `{ async: true, engine: 'queued' }`: one queued run per tenant | — | the subscribed tenants | — |
 *
 * ```ts
 * const result = await engine.execute('books')
 * if (result.tenants) (await result.done).runs      // fan-out: one entry per tenant
 * else console.log(result.runId, await result.done) // one run
 * ```
 */
export type ExecuteResult = StartedRun | EnqueuedRun | FanOutRun | EnqueuedFanOut

/** One run started in this process: its ID and outcome are known. */
export interface StartedRun {
  name: string
  runId: string
  /** Settles when the run ends: resolves with the outcome, rejects with the failure (already settled unless `async: true`). */
  done: Promise<RunOutcome>
  tenants?: undefined
}

/** One run enqueued on CAP's task queue: only the pipeline name is known; the outcome lands in PipelineRuns. */
export interface EnqueuedRun {
  name: string
  runId?: undefined
  done?: undefined
  tenants?: undefined
}

/** One run per subscribed tenant (`parallel` at once); there is no single run ID. */
export interface FanOutRun {
  name: string
  /** The subscribed tenants the pipeline runs for. */
  tenants: string[]
  /** Settles once all tenants' runs ended: the summed statistics and each tenant's outcome, or rejects naming the failed tenants. */
  done: Promise<FanOutOutcome>
  runId?: undefined
}

/** One queued run enqueued per subscribed tenant. */
export interface EnqueuedFanOut {
  name: string
  tenants: string[]
  runId?: undefined
  done?: undefined
}

/** Options that start the run in this process (no queued engine). */
export type InProcessExecuteOptions = ExecuteOptions & { engine?: 'spawn' }
/** Options that enqueue the run on CAP's task queue. */
export type QueuedExecuteOptions = ExecuteOptions & { async: true; engine: 'queued' }

export interface RegistrySettings {
  /** `false` keeps schedules from starting in this process (`cds.requires['data-pipeline'].schedules`); an object `{ minInterval }` (lib/engine/limits.ts) keeps them on. */
  schedules?: boolean | { minInterval?: number | string }
  /** Where the host's `@sap/cds` version comes from (default `cds.version`); injectable for tests. */
  hostVersion?: () => string
}

interface Registered {
  coded: PipelineConfig
  fingerprint: string
  overrides: Overrides
  effective: ResolvedPipeline
  prepared?: Promise<PreparedPipeline>
  timer?: SpawnTimer
  /** The schedule running live (spawn timer or queued task); differs from `effective` after a deferred queued change. */
  installed?: ScheduleSpec
  /** The schedule was applied live at least once in this process. */
  activated?: boolean
  /** Serialises schedule changes of this pipeline. */
  scheduling?: Promise<void>
  /** The tracker row of the registration: written into a tenant's database on first use there (multitenancy). */
  registration?: { row: RegistrationRow; enabled: boolean }
  /** Tenants with settings of their own (`multitenancy.tenants`): their effective config and adapters. */
  tenants?: Map<string, { effective: ResolvedPipeline; prepared?: Promise<PreparedPipeline> }>
  /** Spawn timers of tenants with a schedule of their own (fan-out). */
  tenantTimers?: Map<string, SpawnTimer>
  /** What each tenant's admin set for its tenant (stored in its tracker row, `overrides`). */
  tenantOwn?: Map<string, Overrides>
}

/** The outcome of a fan-out: summed statistics, one entry per tenant; `runId` is '' (no single run). */
export interface FanOutOutcome extends RunOutcome {
  runId: ''
  runs: Array<{ tenant: string; runId?: string; status: 'completed' | 'failed' | 'skipped'; statistics?: RunOutcome['statistics']; error?: string }>
}

export class PipelineRegistry {
  readonly tracker = new Tracker()
  private readonly pipelines = new Map<string, Registered>()
  private schedulesActive = false
  private readonly queue: QueuedSchedules
  private hostVersion: () => string
  /** Bounded parallelism of tenant runs (`multitenancy.parallel`). */
  readonly fanOut = new TenantFanOut(() => tenancy().settings().parallel)
  /** `<tenant>\0<pipeline>`: tracker rows known to exist in that tenant's database. */
  private readonly registeredIn = new Set<string>()

  /**
   * @param host the engine service: queued schedules are tasks of this service on CAP's queue
   */
  constructor(private readonly dispatch: EventDispatcher, private readonly settings: RegistrySettings = {}, host?: QueueHost) {
    this.queue = new QueuedSchedules(host ?? { name: 'data-pipeline' })
    this.hostVersion = settings.hostVersion ?? (() => String((cds as unknown as { version?: string }).version ?? ''))
  }

  /** Replaces the source of the host's `@sap/cds` version (tests of the cds 9 behaviour). */
  useHostVersion(source: () => string): void {
    this.hostVersion = source
  }

  has(name: string): boolean {
    return this.pipelines.has(name)
  }

  names(): string[] {
    return [...this.pipelines.keys()]
  }

  get(name: string): ResolvedPipeline {
    return this.entry(name).effective
  }

  coded(name: string): PipelineConfig {
    return this.entry(name).coded
  }

  overrides(name: string): Overrides {
    return this.entry(name).overrides
  }

  private entry(name: string): Registered {
    const entry = typeof name === 'string' ? this.pipelines.get(name) : undefined
    if (!entry) throw new PipelineError('UNKNOWN_PIPELINE', `Pipeline '${String(name)}' is not registered`, { target: 'name' })
    return entry
  }

  async add(config: PipelineConfig): Promise<ResolvedPipeline> {
    const coded = resolvePipeline(config, { serviceKind: requiredKind })
    const fingerprint = configFingerprint(config)
    const existing = this.pipelines.get(coded.name)
    if (existing) {
      if (existing.fingerprint === fingerprint) return existing.effective
      throw invalidConfig('name', `'${coded.name}' is already registered with a different config; choose another name`)
    }
    this.checkCapabilities(coded)
    checkSource(coded)
    checkOrigin(coded)

    let row: PipelineRow | undefined
    const registration: RegistrationRow = {
      name: coded.name,
      description: config.description ?? null,
      source: JSON.stringify(serializable(config.source)),
      target: JSON.stringify(serializable(config.target)),
      mode: coded.mode,
      baseConfig: JSON.stringify(serializable(config)),
      schedule: scheduleLabel(coded.schedule),
      origin: config.source.origin ?? null,
    }
    // multitenancy: the tracker rows live in each tenant's database, written there on first use
    if (!tenancy().settings().active || contextTenant()) try {
      row = await this.tracker.register(registration, coded.enabled)
    } catch (error) {
      if ((error as PipelineError).code !== 'TRACKER_MISSING') throw error
      LOG.warn((error as Error).message)
    }
    const overrides = parseStoredOverrides(row?.overrides)
    const entry: Registered = { coded: config, fingerprint, overrides: {}, effective: coded, registration: { row: registration, enabled: coded.enabled } }
    this.pipelines.set(coded.name, entry)
    if (Object.keys(overrides).length) {
      try {
        await this.applyOverrides(coded.name, overrides)
      } catch (error) {
        LOG.error(`pipeline '${coded.name}': stored overrides are no longer valid and were not applied: ${(error as Error).message}`)
      }
    }
    try {
      await this.startSchedule(coded.name)
    } catch (error) {
      // a schedule that cannot run (queued without CAP's queue table) fails the registration
      this.pipelines.delete(coded.name)
      entry.timer?.stop()
      throw error
    }
    LOG.info(`registered pipeline '${coded.name}' (${entry.effective.shape}-shape, ${entry.effective.mode}${entry.effective.schedule ? `, ${scheduleLabel(entry.effective.schedule)}` : ''})`)
    return entry.effective
  }

  /**
   * Validates and activates overrides; persists them. The effective config must pass registration
   * rules. A schedule change takes effect live, except a change involving a `queued` schedule on
   * `@sap/cds` < 10: it is saved (effective at the next restart) and rejected with 409 guidance.
   */
  async applyOverrides(name: string, overrides: Overrides): Promise<ResolvedPipeline> {
    const entry = this.entry(name)
    checkOverridesSize(JSON.stringify(overrides))
    const effective = resolvePipeline(applyOverrides(entry.coded, overrides), { serviceKind: requiredKind })
    this.checkCapabilities(effective)
    checkSource(effective)
    const scheduleChanged = !sameSchedule(entry.effective.schedule, effective.schedule)
    const live = this.schedulesActive && entry.activated === true
    const deferred = live && scheduleChanged && !this.canChangeLive(entry.installed, effective.schedule)
    entry.overrides = overrides
    entry.effective = effective
    entry.prepared = undefined
    entry.tenants = undefined
    await this.tracker.update(name, {
      overrides: Object.keys(overrides).length ? JSON.stringify(overrides) : null,
      mode: effective.mode,
      description: effective.config.description ?? null,
      // the label shows what runs: a deferred queued change shows once it is live (next restart)
      schedule: scheduleLabel(deferred ? entry.installed : effective.schedule),
      ...('enabled' in overrides ? { enabled: effective.enabled } : {}),
    }).catch(error => { if ((error as PipelineError).code !== 'TRACKER_MISSING') throw error })
    if (deferred) {
      throw new PipelineError('NOT_SUPPORTED',
        `Schedule of pipeline '${name}' saved (${scheduleLabel(effective.schedule) ?? 'no schedule'}), but @sap/cds ${this.hostVersion()} cannot change queued schedules live: ` +
        `it takes effect at the next restart; until then '${scheduleLabel(entry.installed) ?? 'no schedule'}' keeps running. ` +
        "Upgrade to @sap/cds 10 for live changes, switch to engine 'spawn', or restart the app.",
        { target: 'schedule', status: 409 })
    }
    if (live && scheduleChanged) await this.startSchedule(name)
    return effective
  }

  /** Sets the pipeline's schedule as an override (persisted; live per SPEC "Schedule rules"). */
  async setSchedule(name: string, schedule: ScheduleInput): Promise<ResolvedPipeline> {
    const entry = this.entry(name)
    parseSchedule(schedule, 'schedule')
    return this.applyOverrides(name, { ...entry.overrides, schedule })
  }

  /** Stops the pipeline's schedule and records `schedule: null`, so a coded schedule stays off until that override is cleared. */
  async clearSchedule(name: string): Promise<ResolvedPipeline> {
    const entry = this.entry(name)
    return this.applyOverrides(name, { ...entry.overrides, schedule: null })
  }

  /**
   * Whether a change of this pipeline's schedule takes effect live: always for spawn; for a
   * queued schedule on `@sap/cds` ≥ 10 only (SPEC "Versioning").
   */
  isScheduleLiveChangeSupported(name: string): boolean {
    const entry = this.entry(name)
    return this.canChangeLive(entry.installed ?? entry.effective.schedule, entry.effective.schedule)
  }

  private canChangeLive(from: ScheduleSpec | undefined, to: ScheduleSpec | undefined): boolean {
    const version = this.hostVersion()
    return scheduleLiveChangeSupported(from, version) && scheduleLiveChangeSupported(to, version)
  }

  /** Registration rule: the target must offer what the mode needs. */
  private checkCapabilities(pipeline: ResolvedPipeline): void {
    const { target } = createAdapters(pipeline)
    const capabilities = target.capabilities()
    const need = (capability: keyof typeof capabilities, why: string) => {
      if (!capabilities[capability]) throw invalidConfig(pipeline.config.target.adapter ? 'target.adapter' : 'target', `lacks capability '${capability}', needed ${why}`)
    }
    if (pipeline.shape === 'query') need('batchInsert', 'for a query-shape pipeline')
    else if (pipeline.mode === 'delta') need('keyAddressableUpsert', "for mode 'delta'")
    if (pipeline.mode === 'full' && !capabilities.truncate && !capabilities.batchDelete)
      throw invalidConfig('target', "lacks capability 'truncate' or 'batchDelete', needed for mode 'full'")
  }

  /**
   * The effective config of a pipeline for a tenant: with the tenant's own `mode`/`schedule`
   * (`multitenancy.tenants.<tenant>.replicate.<pipeline>`) on top, else the pipeline's.
   */
  effectiveFor(name: string, tenant: string | undefined = contextTenant()): ResolvedPipeline {
    return this.holder(name, tenant).effective
  }

  private holder(name: string, tenant: string | undefined): { effective: ResolvedPipeline; prepared?: Promise<PreparedPipeline> } {
    const entry = this.entry(name)
    const own = this.tenantOverrides(name, tenant)
    if (!own || !tenant) return entry
    let holder = entry.tenants?.get(tenant)
    if (!holder) {
      try {
        holder = { effective: resolvePipeline(applyOverrides(entry.coded, { ...entry.overrides, ...own }), { serviceKind: requiredKind }) }
      } catch (error) {
        throw invalidConfig(`multitenancy.tenants.${tenant}.replicate`, `of pipeline '${name}' is invalid: ${(error as Error).message}`)
      }
      ;(entry.tenants ??= new Map()).set(tenant, holder)
    }
    return holder
  }

  /** Connects adapters and derives the mapping once per effective config (per tenant with settings of its own). */
  prepare(name: string, tenant: string | undefined = contextTenant()): Promise<PreparedPipeline> {
    const entry = this.holder(name, tenant)
    if (!entry.prepared) {
      const pipeline = entry.effective
      entry.prepared = (async () => {
        const { source, target } = createAdapters(pipeline)
        await Promise.all([source.prepare(), target.prepare()])
        const targetEntity = target.entityDefinition()
        const sourceEntity = source.entityDefinition()
        const mapping = pipeline.shape === 'query'
          ? targetEntity && dataElementNames(targetEntity).map(n => ({ source: n, target: n }))
          : deriveMapping(targetEntity, sourceEntity)
        if (mapping) source.columns = mapping.map(m => m.source)
        if (source instanceof CqnSourceAdapter && targetEntity) source.orderKeys = keyNames(targetEntity)
        const prepared = { pipeline, source, target, mapping }
        warnNarrowerTarget(prepared) // a configuration fact, said once here, never as drift
        return prepared
      })()
      entry.prepared.catch(() => { if (entry.prepared) entry.prepared = undefined })
    }
    return entry.prepared
  }

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
    this.get(name)
    if (options.tenant !== undefined) await this.assertSubscribed(options.tenant)
    if (options.tenant === undefined && tenancy().settings().fanOutScheduledRuns && !contextTenant()) return this.executeForAll(name, options)
    const pipeline = this.effectiveFor(name, options.tenant || contextTenant())
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
      if (inTenant && tenant) await this.ensureInTenant(name, tenant)
      return await this.launchIn(name, request, tenant, afterTransaction, ended)
    } catch (error) {
      ended()
      throw error
    }
  }

  private async launchIn(name: string, request: { mode: RunMode; trigger: ReturnType<typeof whitelistTrigger>; tenant?: string; async?: boolean }, tenant: string | undefined, afterTransaction: boolean, ended: () => void): Promise<StartedRun> {
    const prepared = await this.prepare(name, tenant)
    const run = new PipelineRun(prepared, { mode: request.mode, trigger: request.trigger }, this.tracker, this.dispatch)
    await detached(() => run.begin(), request.tenant)
    // outside the caller's transaction: a run commits its own batches (a read joining an HTTP
    // request's open transaction would hold the connection the batch transactions wait for)
    const execution = afterTransaction
      ? new Promise<RunOutcome>((resolve, reject) => afterCurrentTransaction(() => { detached(() => run.execute(), request.tenant).then(resolve, reject) }, QUEUED_RUN_FALLBACK))
      : detached(() => run.execute(), request.tenant)
    // (before `observable`: this handler must not count as someone observing `done`)
    void execution.then(ended, ended)
    if (!request.async) await execution.catch(() => undefined)
    const done = observable(execution, error => LOG.error(`pipeline '${name}': run ${run.runId} failed and nobody awaited its 'done': ${(error as Error).message}`))
    return { runId: run.runId, name, done }
  }

  /** Clears the pipeline's output and resets the tracker so the next run is a full sync. */
  async flush(name: string): Promise<PipelineRow> {
    const pipeline = this.get(name)
    assertConnectionAvailable('flush')
    const prepared = await this.prepare(name)
    const flushId = cds.utils.uuid()
    await this.tracker.acquire(name, flushId, pipeline.leaseDuration)
    let deleted = 0
    try {
      const db = await cds.connect.to('db')
      deleted = await db.tx(() => (prepared.target as BaseTargetAdapter).truncate({ runId: flushId, mode: 'full', batchIndex: 0 }))
    } catch (error) {
      await this.tracker.release(name, flushId, { status: 'failed', lastError: describeError(error, `pipeline '${name}'`).message })
      throw error
    }
    await this.tracker.release(name, flushId, { status: 'idle', lastSync: null, lastKey: null, checkpoint: null, lastSuccess: null, errorCount: 0, lastError: null })
    LOG.info(`pipeline '${name}' flushed: ${deleted} rows deleted; the next run reads everything`)
    return (await this.tracker.read(name))!
  }

  /** Starts spawn timers and installs queued tasks (called once the app serves). */
  async activateSchedules(): Promise<void> {
    if (this.settings.schedules === false) return
    this.schedulesActive = true
    await Promise.all([...this.pipelines.keys()].map(name => this.startSchedule(name).catch(error =>
      LOG.error(`pipeline '${name}': its schedule could not be started: ${(error as Error).message}`))))
  }

  /** Stops this process's timers. Queued tasks stay: they belong to the app, not to this instance. */
  stopSchedules(): void {
    this.schedulesActive = false
    for (const entry of this.pipelines.values()) {
      entry.timer?.stop()
      for (const timer of entry.tenantTimers?.values() ?? []) timer.stop()
    }
    this.queue.stop()
  }

  /** Applies the effective schedule live; serialised per pipeline. */
  private startSchedule(name: string): Promise<void> {
    const entry = this.entry(name)
    const next = (entry.scheduling ?? Promise.resolve()).catch(() => undefined).then(() => this.applySchedule(name, entry))
    entry.scheduling = next
    return next
  }

  private async applySchedule(name: string, entry: Registered): Promise<void> {
    if (!this.schedulesActive || this.pipelines.get(name) !== entry) return
    const first = !entry.activated
    entry.activated = true
    const previous = entry.installed
    const schedule = entry.effective.schedule
    entry.timer?.stop()
    entry.timer = undefined
    if (tenancy().settings().fanOutScheduledRuns) return this.applyTenantSchedules(name, entry, first)
    if (schedule?.engine === 'queued') {
      await this.queue.install(name, schedule)
      entry.installed = schedule
      return
    }
    // no queued schedule (any more): its task must not keep ticking
    if (previous?.engine === 'queued') await this.queue.unschedule(name)
    else if (first) await this.queue.removeOrphan(name)
    entry.installed = schedule
    if (schedule && this.schedulesActive) entry.timer = new SpawnTimer(schedule.every!, () => this.tick(name)).start()
  }

  // -------------------------------------------------------------------------------------------
  // multitenancy (lib/tenancy): tracker rows per tenant, fan-out, per-tenant schedules

  /**
   * Fan-out schedules: a spawn schedule is one timer whose ticks run the pipeline for every
   * subscribed tenant (CAP's registry, read at each tick); a queued schedule is one task per
   * tenant (`data-pipeline/<tenant>/<pipeline>`) in that tenant's database. A tenant with a
   * schedule of its own (`multitenancy.tenants`) gets its own timer or task.
   */
  private async applyTenantSchedules(name: string, entry: Registered, first: boolean): Promise<void> {
    const schedule = entry.effective.schedule
    // the provider has no tenant data: no task of its own, one per tenant instead
    if (first || entry.installed?.engine === 'queued') await this.queue.removeOrphan(name)
    entry.installed = schedule
    if (schedule?.engine === 'spawn' && this.schedulesActive) entry.timer = new SpawnTimer(schedule.every!, () => this.tick(name)).start()
    for (const timer of entry.tenantTimers?.values() ?? []) timer.stop()
    entry.tenantTimers = undefined
    let tenants: string[]
    try {
      tenants = await tenancy().subscribedTenants()
    } catch (error) {
      // the tenants get their schedules when they subscribe (or at the next start)
      LOG.error(`pipeline '${name}': the subscribed tenants could not be read, their schedules are not started: ${(error as Error).message}`)
      return
    }
    await Promise.all(tenants.map(tenant => this.applyTenantSchedule(name, entry, tenant).catch(error =>
      LOG.error(`pipeline '${name}': its schedule for tenant '${tenant}' could not be started: ${(error as Error).message}`))))
  }

  private async applyTenantSchedule(name: string, entry: Registered, tenant: string): Promise<void> {
    entry.tenantTimers?.get(tenant)?.stop()
    entry.tenantTimers?.delete(tenant)
    await this.ensureInTenant(name, tenant) // loads what the tenant's admin set
    const own = this.tenantOverrides(name, tenant)
    const schedule = this.effectiveFor(name, tenant).schedule
    if (schedule?.engine === 'queued') {
      await this.queue.install(name, schedule, tenant)
      return
    }
    await this.queue.removeOrphan(name, tenant)
    if (schedule && own && 'schedule' in own)
      (entry.tenantTimers ??= new Map()).set(tenant, new SpawnTimer(schedule.every!, () => this.tenantTick(name, tenant)).start())
  }

  /** A fan-out spawn tick: the pipeline runs for each subscribed tenant without a schedule of its own, `parallel` at once. */
  private async fanOutTick(name: string): Promise<void> {
    let tenants: string[]
    try {
      tenants = (await tenancy().subscribedTenants()).filter(tenant => !('schedule' in (this.tenantOverrides(name, tenant) ?? {})))
    } catch (error) {
      LOG.warn(`pipeline '${name}': scheduled tick could not read the subscribed tenants: ${(error as Error).message}`)
      return
    }
    // not awaited: a slow tenant must not delay the next tick of the others (its own is skipped while it runs)
    void this.fanOut.run(name, tenants, tenant => tenancy().inTenant(tenant, () => this.startScheduled(name, false, tenant)).then(started => started?.done.catch(() => undefined)))
  }

  /** A tick of a tenant's own spawn schedule. */
  private async tenantTick(name: string, tenant: string): Promise<void> {
    if (!(await tenancy().subscribedTenants().catch(() => [] as string[])).includes(tenant)) return
    void this.fanOut.run(name, [tenant], each => tenancy().inTenant(each, () => this.startScheduled(name, false, each)).then(started => started?.done.catch(() => undefined)))
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
    const settled = this.fanOut.run(name, tenants, async tenant => {
      const { runId, done } = await this.execute(name, { ...options, tenant, async: true, engine: 'spawn' })
      return { runId, outcome: await done }
    })
    const execution = settled.then(results => {
      const statistics: WriteStatistics = { created: 0, updated: 0, deleted: 0 }
      const runs: FanOutOutcome['runs'] = results.map(({ tenant, skipped, value, error }) => {
        if (value) {
          addStatistics(statistics, value.outcome.statistics ?? undefined)
          return { tenant, runId: value.runId, status: 'completed' as const, statistics: value.outcome.statistics }
        }
        if (skipped || (error as PipelineError)?.code === 'PIPELINE_RUNNING') return { tenant, status: 'skipped' as const, error: skipped ? 'a run is queued or active in this process' : (error as Error).message }
        return { tenant, status: 'failed' as const, error: describeError(error, `pipeline '${name}'`).message }
      })
      const failed = runs.filter(run => run.status === 'failed')
      if (failed.length) {
        throw Object.assign(new PipelineError('SOURCE_FAILED', `Pipeline '${name}' failed for tenant${failed.length > 1 ? 's' : ''} ${failed.map(run => `'${run.tenant}' (${run.error})`).join(', ')}`, { status: 502 }), { runs })
      }
      const outcome: FanOutOutcome = { runId: '', status: 'completed', statistics, runs }
      return outcome
    })
    if (!options.async) await execution.catch(() => undefined)
    const done = observable<FanOutOutcome>(execution, error => LOG.error(`pipeline '${name}': fan-out over tenants failed and nobody awaited its 'done': ${(error as Error).message}`))
    return { name, tenants, done }
  }

  /** Makes sure the pipeline's tracker row exists in the tenant's database (once per process, again after `forgetTenant`). */
  async ensureInTenant(name: string, tenant: string): Promise<void> {
    const key = `${tenant}\u0000${name}`
    if (this.registeredIn.has(key)) return
    const registration = this.entry(name).registration
    if (!registration) return
    const entry = this.entry(name)
    const effective = this.effectiveFor(name, tenant)
    const row = await tenancy().inTenant(tenant, () => this.tracker.register({ ...registration.row, mode: effective.mode, schedule: scheduleLabel(effective.schedule) }, registration.enabled))
    const stored = parseStoredOverrides(row.overrides)
    if (Object.keys(stored).length) {
      // the tenant's admin set its own mode or schedule (before a restart): the row shows them
      ;(entry.tenantOwn ??= new Map()).set(tenant, stored)
      entry.tenants?.delete(tenant)
      const own = this.effectiveFor(name, tenant)
      await tenancy().inTenant(tenant, () => this.tracker.update(name, { mode: own.mode, schedule: scheduleLabel(own.schedule) }))
    }
    this.registeredIn.add(key)
  }

  /**
   * A tenant's own settings of a pipeline: the provider's `multitenancy.tenants` and what the
   * tenant's admin set (within the provider's bounds); undefined when it has none.
   */
  tenantOverrides(name: string, tenant: string | undefined): Overrides | undefined {
    return tenant ? tenancy().overrides(tenant, name, this.entry(name).tenantOwn?.get(tenant)) : undefined
  }

  /** What the tenant's admin set for the tenant (management API), as stored. */
  storedTenantOverrides(name: string, tenant: string): Overrides {
    return { ...this.entry(name).tenantOwn?.get(tenant) }
  }

  /**
   * Sets what the tenant's admin chose for the tenant (its mode or schedule; the caller checked
   * the provider's bounds): validated like any override, stored in the tenant's tracker row,
   * live for that tenant only (its schedule restarts).
   */
  async applyTenantOverrides(name: string, tenant: string, overrides: Overrides): Promise<ResolvedPipeline> {
    const entry = this.entry(name)
    await this.ensureInTenant(name, tenant)
    const own = tenancy().overrides(tenant, name, overrides) ?? {}
    const effective = resolvePipeline(applyOverrides(entry.coded, { ...entry.overrides, ...own }), { serviceKind: requiredKind })
    this.checkCapabilities(effective)
    await tenancy().inTenant(tenant, () => this.tracker.update(name, {
      overrides: Object.keys(overrides).length ? JSON.stringify(overrides) : null, mode: effective.mode, schedule: scheduleLabel(effective.schedule),
    }))
    ;(entry.tenantOwn ??= new Map()).set(tenant, overrides)
    entry.tenants?.delete(tenant)
    if (this.schedulesActive && entry.activated && tenancy().settings().fanOutScheduledRuns) await this.applyTenantSchedule(name, entry, tenant)
    LOG.info(`pipeline '${name}': tenant '${tenant}' set its own settings ${JSON.stringify(own)}`)
    return effective
  }

  /** Tracker rows of all pipelines in the tenant's database. */
  async ensureTenant(tenant: string): Promise<void> {
    for (const name of this.names()) await this.ensureInTenant(name, tenant)
  }

  /** Starts the tenant's schedules (fan-out): after a subscription, or an upgrade that recreated its database. */
  async installTenantSchedules(tenant: string): Promise<void> {
    if (!this.schedulesActive || !tenancy().settings().fanOutScheduledRuns) return
    for (const [name, entry] of this.pipelines) {
      if (!entry.activated) continue
      await this.applyTenantSchedule(name, entry, tenant).catch(error =>
        LOG.error(`pipeline '${name}': its schedule for tenant '${tenant}' could not be started: ${(error as Error).message}`))
    }
  }

  /** Removes the tenant's queued tasks (best effort; before its database goes) and stops its timers. */
  async removeTenantSchedules(tenant: string): Promise<void> {
    for (const [name, entry] of this.pipelines) {
      entry.tenantTimers?.get(tenant)?.stop()
      entry.tenantTimers?.delete(tenant)
      await this.queue.removeOrphan(name, tenant)
    }
    this.queue.forgetTenant(tenant)
  }

  /** Forgets what this process knows of a tenant's database (unsubscribed, or recreated by an upgrade). */
  forgetTenant(tenant: string): void {
    for (const key of this.registeredIn) if (key.startsWith(`${tenant}\u0000`)) this.registeredIn.delete(key)
    for (const entry of this.pipelines.values()) {
      entry.tenantTimers?.get(tenant)?.stop()
      entry.tenantTimers?.delete(tenant)
    }
    this.queue.forgetTenant(tenant)
  }

  /** A spawn tick: skipped while disabled or while a run is active; waits for the run (no overlap). */
  private async tick(name: string): Promise<void> {
    if (tenancy().settings().fanOutScheduledRuns) return this.fanOutTick(name)
    const started = await this.startScheduled(name)
    await started?.done.catch(() => undefined)
  }

  /**
   * A queued tick (the handler of `QUEUE.tickEvent`). Never throws: a skipped tick, a failed
   * guard or a failing run complete the queue task normally, so the recurring task never
   * becomes a dead letter. The run is not awaited: the task completes once the guard decided
   * and the run starts when the task's transaction ended; the run's lease, not the queue's
   * processing timeout, keeps a second run out while it runs.
   */
  async queuedTick(message: TickMessage | undefined): Promise<void> {
    const name = message?.pipeline
    try {
      if (typeof name !== 'string' || !this.pipelines.has(name)) {
        LOG.warn(`queued tick for pipeline '${String(name)}', which this instance has not registered: skipped`)
        return
      }
      const entry = this.entry(name)
      const tenant = message?.tenant
      if (tenant !== undefined && tenant !== null && invalidTenantId(tenant)) {
        LOG.error(`queued tick of pipeline '${name}' for an invalid tenant id: skipped (${invalidTenantId(tenant)})`)
        return
      }
      if (tenant) {
        if (this.schedulesActive && entry.activated && this.effectiveFor(name, tenant).schedule?.engine !== 'queued') {
          LOG.info(`pipeline '${name}' has no queued schedule for tenant '${tenant}' any more: its leftover task is removed`)
          await this.queue.unschedule(name, tenant)
          return
        }
      } else if (this.schedulesActive && entry.activated && entry.installed?.engine !== 'queued') {
        LOG.info(`pipeline '${name}' has no queued schedule any more: its leftover task is removed`)
        await this.queue.unschedule(name)
        return
      }
      const started = await this.startScheduled(name, true, tenant)
      started?.done.catch(() => undefined) // a failed run is recorded in PipelineRuns and logged by the run
    } catch (error) {
      LOG.error(`pipeline '${String(name)}': queued tick failed: ${(error as Error).message}`)
    }
  }

  /**
   * A queued one-off run (the handler of `QUEUE.runEvent`). A pipeline that is running makes the
   * task fail so CAP's queue retries it with backoff; anything else completes the task (run
   * failures land in PipelineRuns).
   */
  async queuedRun(message: QueuedRunMessage | undefined): Promise<void> {
    const name = message?.pipeline
    if (typeof name !== 'string' || !this.pipelines.has(name)) {
      LOG.error(`queued run of pipeline '${String(name)}', which this instance has not registered: dropped`)
      return
    }
    try {
      if (message!.tenant !== undefined && message!.tenant !== null) assertTenantId(message!.tenant)
      const mode = (message!.mode ?? this.get(name).mode) as RunMode
      const { done } = await this.launch(name, { mode, trigger: whitelistTrigger(message!.trigger), tenant: message!.tenant, async: true }, true)
      done.catch(() => undefined) // recorded in PipelineRuns and logged by the run
    } catch (error) {
      if ((error as PipelineError).code === 'PIPELINE_RUNNING')
        throw new PipelineError('PIPELINE_RUNNING', `Pipeline '${name}' is running; CAP's task queue retries the queued run later`)
      LOG.error(`pipeline '${name}': queued run could not start: ${(error as Error).message}`)
    }
  }

  /** Starts a scheduled run unless disabled or running; never throws. */
  private async startScheduled(name: string, afterTransaction = false, tenant?: string): Promise<StartedRun | undefined> {
    const where = tenant ? ` (tenant '${tenant}')` : ''
    try {
      if (tenant) await this.ensureInTenant(name, tenant)
      const row = await this.tracker.read(name)
      if (row && row.enabled === false) {
        LOG.debug(`pipeline '${name}'${where}: scheduled tick skipped, the pipeline is disabled`)
        return undefined
      }
      const pipeline = this.effectiveFor(name, tenant)
      assertConnectionAvailable('execute')
      return await this.launch(name, { mode: pipeline.mode, trigger: 'scheduled', async: true, tenant }, afterTransaction)
    } catch (error) {
      const code = (error as PipelineError).code
      if (code === 'PIPELINE_RUNNING') LOG.debug(`pipeline '${name}'${where}: scheduled tick skipped, a run is active`)
      else LOG.warn(`pipeline '${name}'${where}: scheduled tick could not start a run: ${(error as Error).message}`)
      return undefined
    }
  }
}

/** Fan-in: a pipeline with `source.origin` needs the target key column of aspect `sourced`. */
function checkOrigin(pipeline: ResolvedPipeline): void {
  const { source, target } = pipeline.config
  if (source.origin === undefined || target.adapter || !target.entity) return
  const entity = findEntity(target.entity) ?? (target.service ? findEntity(`${target.service}.${target.entity}`) : undefined)
  if (entity && !keyNames(entity).includes(ORIGIN_COLUMN))
    throw invalidConfig('source.origin', `needs target.entity '${target.entity}' to include aspect plugin.data_pipeline.sourced (key column '${ORIGIN_COLUMN}')`)
}

/** Runs `fn` in a fresh context without a transaction, keeping the caller's user and tenant (or the given one). */
function detached<T>(fn: () => Promise<T>, tenant?: string): Promise<T> {
  const caller = cds.context as { user?: unknown; tenant?: string } | undefined
  const EventContext = (cds as unknown as { EventContext: new (data: object) => object }).EventContext
  const effectiveTenant = tenant ?? caller?.tenant
  const context = new EventContext({ ...(caller?.user ? { user: caller.user } : {}), ...(effectiveTenant ? { tenant: effectiveTenant } : {}) })
  return (cds as unknown as { _with(context: object, fn: () => Promise<T>): Promise<T> })._with(context, fn)
}

/**
 * A promise that logs its rejection when nobody observes it: awaiting or chaining marks it
 * observed. The process never crashes on an unobserved failed run.
 */
function observable<T>(promise: Promise<T>, onUnobserved: (error: unknown) => void): Promise<T> {
  let observed = false
  const then = promise.then.bind(promise)
  void then(undefined, error => setImmediate(() => { if (!observed) onUnobserved(error) }))
  // the point of this helper: `then` of the returned promise notes that someone observes it
  // oxlint-disable-next-line unicorn/no-thenable
  promise.then = ((onFulfilled, onRejected) => {
    observed = true
    return then(onFulfilled, onRejected)
  }) as typeof promise.then
  return promise
}
