/**
 * The registry of pipelines of one engine service: registration (validation, capability
 * checks, tracker row, overrides), preparation of adapters, execution and schedules.
 */
import cds from '@sap/cds'
import { LOGGER, RUN_MODES, type RunMode } from '../constants.js'
import { PipelineError, invalidConfig } from './errors.js'
import { configFingerprint, resolvePipeline, serializable, type PipelineConfig, type ResolvedPipeline } from './config.js'
import { applyOverrides, parseStoredOverrides, type Overrides } from './overrides.js'
import { scheduleLabel, SpawnTimer } from './schedule.js'
import { Tracker, assertConnectionAvailable, whitelistTrigger, type PipelineRow } from './tracker.js'
import { PipelineRun, type EventDispatcher, type PreparedPipeline, type RunOutcome } from './run.js'
import { createAdapters, requiredKind } from '../adapters/factory.js'
import { deriveMapping } from '../adapters/mapping.js'
import { dataElementNames, findEntity, keyNames } from '../model/csn.js'
import { ORIGIN_COLUMN } from '../adapters/target/db.js'
import { CqnSourceAdapter } from '../adapters/source/cqn.js'
import type { BaseTargetAdapter } from '../adapters/target/base.js'

const LOG = cds.log(LOGGER.engine)

export interface ExecuteOptions {
  mode?: RunMode
  trigger?: string
  async?: boolean
  /** Run in this tenant's context (multitenancy must be active). */
  tenant?: string
}

export interface ExecuteResult {
  runId: string
  name: string
  /** Settles when the run ends: resolves with the outcome, rejects with the failure. */
  done: Promise<RunOutcome>
}

interface Registered {
  coded: PipelineConfig
  fingerprint: string
  overrides: Overrides
  effective: ResolvedPipeline
  prepared?: Promise<PreparedPipeline>
  timer?: SpawnTimer
}

export class PipelineRegistry {
  readonly tracker = new Tracker()
  private readonly pipelines = new Map<string, Registered>()
  private schedulesActive = false

  constructor(private readonly dispatch: EventDispatcher, private readonly settings: { schedules?: boolean } = {}) {}

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
    checkOrigin(coded)

    let row: PipelineRow | undefined
    try {
      row = await this.tracker.register({
        name: coded.name,
        description: config.description ?? null,
        source: JSON.stringify(serializable(config.source)),
        target: JSON.stringify(serializable(config.target)),
        mode: coded.mode,
        baseConfig: JSON.stringify(serializable(config)),
        schedule: scheduleLabel(coded.schedule),
        origin: config.source.origin ?? null,
      }, coded.enabled)
    } catch (error) {
      if ((error as PipelineError).code !== 'TRACKER_MISSING') throw error
      LOG.warn((error as Error).message)
    }
    const overrides = parseStoredOverrides(row?.overrides)
    const entry: Registered = { coded: config, fingerprint, overrides: {}, effective: coded }
    this.pipelines.set(coded.name, entry)
    if (Object.keys(overrides).length) {
      try {
        await this.applyOverrides(coded.name, overrides)
      } catch (error) {
        LOG.error(`pipeline '${coded.name}': stored overrides are no longer valid and were not applied: ${(error as Error).message}`)
      }
    }
    this.startSchedule(coded.name)
    LOG.info(`registered pipeline '${coded.name}' (${entry.effective.shape}-shape, ${entry.effective.mode}${entry.effective.schedule ? `, ${scheduleLabel(entry.effective.schedule)}` : ''})`)
    return entry.effective
  }

  /** Validates and activates overrides; persists them. The effective config must pass registration rules. */
  async applyOverrides(name: string, overrides: Overrides): Promise<ResolvedPipeline> {
    const entry = this.entry(name)
    const effective = resolvePipeline(applyOverrides(entry.coded, overrides), { serviceKind: requiredKind })
    this.checkCapabilities(effective)
    entry.overrides = overrides
    entry.effective = effective
    entry.prepared = undefined
    await this.tracker.update(name, {
      overrides: Object.keys(overrides).length ? JSON.stringify(overrides) : null,
      mode: effective.mode,
      description: effective.config.description ?? null,
      schedule: scheduleLabel(effective.schedule),
      ...('enabled' in overrides ? { enabled: effective.enabled } : {}),
    }).catch(error => { if ((error as PipelineError).code !== 'TRACKER_MISSING') throw error })
    this.startSchedule(name)
    return effective
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

  /** Connects adapters and derives the mapping once per effective config. */
  prepare(name: string): Promise<PreparedPipeline> {
    const entry = this.entry(name)
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
        return { pipeline, source, target, mapping }
      })()
      entry.prepared.catch(() => { if (entry.prepared) entry.prepared = undefined })
    }
    return entry.prepared
  }

  async execute(name: string, options: ExecuteOptions = {}): Promise<ExecuteResult> {
    const pipeline = this.get(name)
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
    assertConnectionAvailable('execute')
    const prepared = await this.prepare(name)
    const run = new PipelineRun(prepared, { mode, trigger: whitelistTrigger(options.trigger) }, this.tracker, this.dispatch)
    await detached(() => run.begin(), options.tenant)
    // outside the caller's transaction: a run commits its own batches (a read joining an HTTP
    // request's open transaction would hold the connection the batch transactions wait for)
    const execution = detached(() => run.execute(), options.tenant)
    if (!options.async) await execution.catch(() => undefined)
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
      await this.tracker.release(name, flushId, { status: 'failed', lastError: (error as Error).message })
      throw error
    }
    await this.tracker.release(name, flushId, { status: 'idle', lastSync: null, lastKey: null, checkpoint: null, errorCount: 0, lastError: null })
    LOG.info(`pipeline '${name}' flushed: ${deleted} rows deleted; the next run reads everything`)
    return (await this.tracker.read(name))!
  }

  /** Starts in-process timers (called once the app serves). */
  activateSchedules(): void {
    if (this.settings.schedules === false) return
    this.schedulesActive = true
    for (const name of this.pipelines.keys()) this.startSchedule(name)
  }

  stopSchedules(): void {
    this.schedulesActive = false
    for (const entry of this.pipelines.values()) entry.timer?.stop()
  }

  private startSchedule(name: string): void {
    const entry = this.entry(name)
    entry.timer?.stop()
    entry.timer = undefined
    const schedule = entry.effective.schedule
    if (!schedule || !this.schedulesActive) return
    entry.timer = new SpawnTimer(schedule.every, () => this.tick(name)).start()
  }

  /** A scheduled tick: skipped while disabled or while a run is active. */
  private async tick(name: string): Promise<void> {
    try {
      const row = await this.tracker.read(name)
      if (row && row.enabled === false) return
      const { done } = await this.execute(name, { trigger: 'scheduled', async: true })
      await done
    } catch (error) {
      const code = (error as PipelineError).code
      if (code === 'PIPELINE_RUNNING') LOG.debug(`pipeline '${name}': scheduled tick skipped, a run is active`)
      else if (!code || code !== 'SOURCE_FAILED') LOG.debug(`pipeline '${name}': scheduled run failed`, error)
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
  then(undefined, error => setImmediate(() => { if (!observed) onUnobserved(error) }))
  promise.then = ((onFulfilled, onRejected) => {
    observed = true
    return then(onFulfilled, onRejected)
  }) as typeof promise.then
  return promise
}
