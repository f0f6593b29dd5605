/**
 * The engine service `data-pipeline`: `cds.connect.to('data-pipeline')`.
 *
 * Pipeline events are CAP events of this service, so applications use CAP's own
 * `srv.before/on/after('PIPELINE.MAP', 'orders', handler)`; the built-in READ, MAP and
 * WRITE behaviour is an `on` handler kept last, which a custom `on` handler replaces
 * (or calls through `next()`).
 */
import cds from '@sap/cds'
import { EVENTS, LOGGER, QUEUE, SERVICE_NAME } from '../lib/constants.js'
import {
  PipelineRegistry, type EnqueuedFanOut, type EnqueuedRun, type ExecuteOptions, type ExecuteResult, type FanOutRun, type InProcessExecuteOptions, type QueuedExecuteOptions, type StartedRun,
} from '../lib/engine/registry/index.js'
import { majorVersion, type QueueHost, type QueuedRunMessage, type TickMessage } from '../lib/engine/schedule/index.js'
import type { ScheduleInput } from '../lib/pipeline/types.js'
import { applyMapping } from '../lib/adapters/mapping.js'
import { whenServing } from '../lib/lifecycle.js'
import type { PipelineEngine } from '../lib/engine/registry/port.js'
import { EventReplication, eventsOf } from '../lib/events/index.js'
import { runRetentionSettings } from '../lib/retention/index.js'
import type { PipelineConfig, ResolvedPipeline, DataRecord } from '../lib/pipeline/types.js'
import type { PipelineRow } from '../lib/engine/tracker/index.js'
import type { RunOutcome } from '../lib/engine/run/types.js'
import type { BaseSourceAdapter } from '../lib/adapters/source/base.js'
import type { BaseTargetAdapter } from '../lib/adapters/target/base.js'
import type { TrackerState, WriteContext } from '../lib/adapters/types.js'
import { handlerLists, handlerRegistry, pipelineEventRequest, primaryDatabase, queuedService, serviceOptions } from '../lib/cap/index.js'
import { detachedFromCaller } from '../lib/engine/registry/background.js'

interface PipelineRequest {
  event: string
  path?: string
  data: Record<string, unknown>
}

type Handler = (req: PipelineRequest, next?: () => unknown) => unknown

/** Anything with CAP's `on(event, handler)`: a messaging service, an application service. */
export interface EventSource {
  on(event: string, handler: (message: unknown) => unknown): unknown
}

export interface PipelineHook {
  phase: 'before' | 'on' | 'after'
  event: string
  /** Registered for this pipeline by name, or for all pipelines. */
  scope: 'pipeline' | 'all'
  handler: string
}

const LOG = cds.log(LOGGER.engine)

/** Marks the built-in handlers so user handlers are always inserted before them. */
const BUILT_IN = new WeakSet<Handler>()
/** Observers of pipeline events that belong to the plugin itself (telemetry): never reported as application hooks. */
const INSTRUMENTATION = new WeakSet<Handler>()

/**
 * The application's function behind a handler CAP registered in its place: `@sap/cds` 9 wraps sync
 * `before`/`after` handlers in an anonymous async function (unless `features.async_handler_compat`),
 * which would hide their names from `registeredHooks`; cds 10 registers the function itself.
 */
const ORIGINAL = new WeakMap<Handler, Handler>()

type ScheduleBuilder = { as?: (task: string) => ScheduleBuilder; asTask?: (task: string) => ScheduleBuilder }

/**
 * Named tasks are `srv.schedule(...).as(name)` on `@sap/cds` 10 and `.asTask(name)` on cds 9: this
 * service's `schedule` answers to both names on cds 9, so the queued engine uses one API.
 */
function nameTasksAsOnCds9(service: { schedule?: (...args: unknown[]) => ScheduleBuilder }): void {
  const schedule = service.schedule
  if (typeof schedule !== 'function' || majorVersion(cds.version) >= 10) return
  const compatible = function (this: unknown, ...args: unknown[]) {
    const builder = schedule.apply(this, args)
    if (builder && typeof builder.as !== 'function' && typeof builder.asTask === 'function') builder.as = builder.asTask
    return builder
  }
  Object.defineProperty(service, 'schedule', { value: Object.assign(compatible, schedule), configurable: true, writable: true })
}

export default class DataPipelineService extends cds.Service implements PipelineEngine {
  readonly registry = new PipelineRegistry((event, pipeline, data) => this.emitPipelineEvent(event, pipeline, data), this.settings(), this as unknown as QueueHost)

  /** Event-driven replication of the pipelines with `events` (lib/events). */
  readonly eventReplication = new EventReplication({
    prepare: name => this.registry.prepare(name), tracker: this.registry.tracker, dispatch: (event, pipeline, data) => this.emitPipelineEvent(event, pipeline, data),
    ensureInTenant: (name, tenant) => this.registry.ensureInTenant(name, tenant),
  })

  private settings(): { schedules?: boolean | { minInterval?: number | string } } {
    return { schedules: serviceOptions<{ schedules?: boolean | { minInterval?: number | string } }>(this)?.schedules }
  }

  override async init(): Promise<void> {
    runRetentionSettings() // an invalid `retention` stops the app naming the key (also checked once it serves)
    nameTasksAsOnCds9(this as { schedule?: (...args: unknown[]) => ScheduleBuilder })
    const builtIn = (event: string, handler: Handler) => {
      BUILT_IN.add(handler)
      handlerRegistry(this).on(event, handler)
    }
    // built-ins must be async functions: CAP wraps sync handlers, which would lose their identity
    builtIn(EVENTS.READ, async req => {
      if (req.data.sourceStream) return
      const source = req.data.source as BaseSourceAdapter
      req.data.sourceStream = source.readStream(req.data.tracker as TrackerState)
    })
    builtIn(EVENTS.MAP, async req => {
      const prepared = await this.registry.prepare(pipelineOf(req, this.name))
      req.data.targetRecords = applyMapping(req.data.sourceRecords as DataRecord[], prepared.mapping)
    })
    builtIn(EVENTS.WRITE, async req => {
      const prepared = await this.registry.prepare(pipelineOf(req, this.name))
      const context: WriteContext = { runId: String(req.data.runId), mode: (req.data.mode as WriteContext['mode']) ?? 'delta', batchIndex: Number(req.data.batchIndex) }
      req.data.statistics = await (prepared.target as BaseTargetAdapter).writeBatch(req.data.targetRecords as DataRecord[], context)
    })
    // queued schedules: ticks and one-off runs delivered by CAP's persistent task queue
    builtIn(QUEUE.tickEvent, async req => { await this.queueTask(() => this.registry.queuedTick(req.data as unknown as TickMessage)) })
    builtIn(QUEUE.runEvent, async req => { await this.queueTask(() => this.registry.queuedRun(req.data as unknown as QueuedRunMessage)) })
    whenServing(() => { void this.registry.activateSchedules() })
    cds.once('shutdown', () => { this.registry.stopSchedules(); this.eventReplication.stop() })
    return super.init()
  }

  /** CAP's `on` appends; keep the built-in handlers behind every handler the application adds. */
  override on(...args: unknown[]): this {
    ;(super.on as (...a: unknown[]) => unknown)(...args)
    const handlers = handlerLists(this)
    const on = handlers.on ?? []
    handlers.on = [...on.filter(h => !BUILT_IN.has(h.handler as Handler)), ...on.filter(h => BUILT_IN.has(h.handler as Handler))]
    return this
  }

  override before(...args: unknown[]): this {
    return this.rememberOriginal('before', args, () => (super.before as (...a: unknown[]) => unknown)(...args))
  }

  override after(...args: unknown[]): this {
    return this.rememberOriginal('after', args, () => (super.after as (...a: unknown[]) => unknown)(...args))
  }

  /** Registers through CAP, then maps every entry it added with a wrapper to the function passed in. */
  private rememberOriginal(phase: 'before' | 'after', args: unknown[], register: () => unknown): this {
    const lists = () => { const h = handlerLists(this); return [h[phase], h._initial].filter(list => Array.isArray(list)) }
    const lengths = new Map(lists().map(list => [list, list.length]))
    register()
    const original = [...args].reverse().find(arg => typeof arg === 'function') as Handler | undefined
    if (original) for (const list of lists()) for (const entry of list.slice(lengths.get(list) ?? 0)) if (entry.handler !== original) ORIGINAL.set(entry.handler as Handler, original)
    return this
  }

  /**
   * The work of a queue task. With `legacyLocking` (`@sap/cds` 9's default) CAP's queue runs a
   * task's handler inside the transaction that fetched the task; on a single-connection database
   * (SQLite, pool max 1) that transaction holds the only connection, and the guard and the run, which
   * take transactions of their own, would wait for it forever (the app hangs at the first tick). There
   * the work starts once the handler has returned and the queue's transaction has ended; a one-off run
   * that then finds the pipeline running is logged instead of retried by the queue. Everywhere else
   * (cds 10's default, PostgreSQL) the handler awaits the work.
   */
  private async queueTask(work: () => Promise<void>): Promise<void> {
    const legacyLocking = queuedService<{ queued?: { legacyLocking?: boolean } } | undefined>(this)?.queued?.legacyLocking ?? cds.env.requires.queue?.legacyLocking
    if (!legacyLocking || primaryDatabase()?.options?.pool?.max !== 1) return work()
    // the caller's user and tenant, in a context of its own: the queue's transaction has ended by then
    const run = detachedFromCaller(work)
    setImmediate(() => {
      run().catch(error => LOG.error(`queued task of service '${this.name}' failed: ${(error as Error).message}`))
    })
  }

  private async emitPipelineEvent(event: string, pipeline: string, data: Record<string, unknown>): Promise<Record<string, unknown>> {
    const req = pipelineEventRequest(this.name, event, pipeline, data)
    await this.dispatch(req as never)
    return req.data
  }

  /** Registers a pipeline (see README "Pipeline definition"); rejects incoherent configs naming the key. */
  async addPipeline(config: PipelineConfig): Promise<ResolvedPipeline> {
    const events = eventsOf(config) // checked first: its errors name the `events…` key
    if (events) this.eventReplication.check(config, events)
    const pipeline = await this.registry.add(config)
    if (events) await this.eventReplication.subscribe(pipeline, events)
    return pipeline
  }

  /**
   * Starts a run: `{ runId, name, done }`; `done` is settled already unless `async: true`. With
   * `{ async: true, engine: 'queued' }` one run is enqueued on CAP's task queue and only
   * `{ name }` is returned (the run's outcome lands in PipelineRuns). Without a tenant while
   * fan-out is active (`multitenancy.fanOutScheduledRuns`, no tenant in the context) the
   * pipeline runs once per subscribed tenant: `{ name, tenants, done }` without `runId`
   * (`FanOutRun`; queued: `{ name, tenants }`). See `ExecuteResult`: test `result.tenants`.
   */
  execute(name: string, options: QueuedExecuteOptions & { tenant: string }): Promise<EnqueuedRun>
  execute(name: string, options: QueuedExecuteOptions): Promise<EnqueuedRun | EnqueuedFanOut>
  execute(name: string, options: InProcessExecuteOptions & { tenant: string }): Promise<StartedRun>
  execute(name: string, options?: InProcessExecuteOptions): Promise<StartedRun | FanOutRun>
  execute(name: string, options: ExecuteOptions & { tenant: string }): Promise<StartedRun | EnqueuedRun>
  execute(name: string, options?: ExecuteOptions): Promise<ExecuteResult>
  execute(name: string, options?: ExecuteOptions): Promise<ExecuteResult> {
    return this.registry.execute(name, options)
  }

  /**
   * `execute(name, { ...options, tenant })`: one run in the tenant's context (its database, its
   * tracker rows, its settings under `multitenancy.tenants`); needs CAP's multitenancy.
   */
  executeForTenant(tenant: string, name: string, options: Omit<QueuedExecuteOptions, 'tenant'>): Promise<EnqueuedRun>
  executeForTenant(tenant: string, name: string, options?: Omit<InProcessExecuteOptions, 'tenant'>): Promise<StartedRun>
  executeForTenant(tenant: string, name: string, options?: Omit<ExecuteOptions, 'tenant'>): Promise<StartedRun | EnqueuedRun>
  executeForTenant(tenant: string, name: string, options: Omit<ExecuteOptions, 'tenant'> = {}): Promise<StartedRun | EnqueuedRun> {
    return this.registry.execute(name, { ...options, tenant })
  }

  /** Sets the pipeline's schedule (an override, persisted); see SPEC "Schedule rules". */
  async setSchedule(name: string, schedule: ScheduleInput): Promise<PipelineRow> {
    await this.registry.setSchedule(name, schedule)
    return (await this.registry.tracker.read(name))!
  }

  /** Stops the pipeline's schedule and records `schedule: null` as an override. */
  async clearSchedule(name: string): Promise<PipelineRow> {
    await this.registry.clearSchedule(name)
    return (await this.registry.tracker.read(name))!
  }

  /** Whether schedule changes of this pipeline take effect live (spawn: always; queued: `@sap/cds` ≥ 10). */
  isScheduleLiveChangeSupported(name: string): boolean {
    return this.registry.isScheduleLiveChangeSupported(name)
  }

  /**
   * `run('<pipeline>')` runs with the pipeline's default mode and resolves with the outcome;
   * any other argument is CAP's own `srv.run(query | fn)`.
   */
  // a function, not an arrow: CAP calls `run` on derivatives of this service (`cds.queued(srv)`,
  // transactions), and dispatching must stay on that receiver (else `srv.schedule()` would
  // bypass the queue and run the handler at once)
  override run = function (this: DataPipelineService, ...args: unknown[]): Promise<unknown> {
    if (typeof args[0] === 'string' && this.registry.has(args[0]) && args.length === 1)
      return this.registry.execute(args[0]).then(({ done }): Promise<RunOutcome> => done)
    return (cds.Service.prototype.run as (...a: unknown[]) => Promise<unknown>).apply(this, args)
  }

  /** `flush('<pipeline>')` clears its output and resets its tracker (next run is full). */
  override flush = async (...args: unknown[]): Promise<void> => {
    if (typeof args[0] === 'string') await this.registry.flush(args[0])
    else await (cds.Service.prototype.flush as (...a: unknown[]) => Promise<void>).apply(this, args)
  }

  /** Like `flush(name)`, resolving with the reset tracker record. */
  flushPipeline(name: string): Promise<PipelineRow> {
    return this.registry.flush(name)
  }

  /** The tracker record of a pipeline. */
  async status(name: string): Promise<PipelineRow> {
    this.registry.get(name)
    return (await this.registry.tracker.read(name))!
  }

  async setEnabled(name: string, enabled: boolean): Promise<PipelineRow> {
    this.registry.get(name)
    await this.registry.tracker.update(name, { enabled })
    return (await this.registry.tracker.read(name))!
  }

  /**
   * Starts `name` whenever `source` emits `event` (a messaging topic, a service event):
   * `execute(name, { trigger: 'event', async: true })`. While a run is active the event is
   * skipped; the next run picks the change up.
   */
  executeOn(source: EventSource, event: string, name: string, options: Omit<ExecuteOptions, 'trigger' | 'async'> = {}): this {
    this.registry.get(name)
    source.on(event, async () => {
      try {
        const { done } = await this.execute(name, { ...options, trigger: 'event', async: true })
        done?.catch(() => undefined) // failures are recorded in PipelineRuns and logged
      } catch (error) {
        if ((error as { code?: string }).code === 'PIPELINE_RUNNING') LOG.info(`pipeline '${name}': event '${event}' skipped, a run is active`)
        else LOG.error(`pipeline '${name}': event '${event}' could not start a run: ${(error as Error).message}`)
      }
    })
    return this
  }

  /**
   * Registers an observer of pipeline events that is part of the plugin (e.g. the OpenTelemetry
   * export): it runs like any before/after handler but is not an application hook, so it never
   * shows in flowMetadata or turns a graph orange.
   */
  observe(phase: 'before' | 'after', event: string, handler: Handler): this {
    INSTRUMENTATION.add(handler)
    return phase === 'before' ? this.before(event, handler) : this.after(event, handler)
  }

  /** Application handlers registered for a pipeline's events (built-ins and the plugin's observers excluded). */
  registeredHooks(name: string): PipelineHook[] {
    const handlers = handlerLists(this)
    const events = Object.values(EVENTS) as string[]
    const hooks: PipelineHook[] = []
    for (const phase of ['before', 'on', 'after'] as const) {
      for (const entry of handlers[phase] ?? []) {
        const event = entry[phase] as string
        const handler = entry.handler as Handler
        if (BUILT_IN.has(handler) || INSTRUMENTATION.has(ORIGINAL.get(handler) ?? handler) || !events.includes(event)) continue
        const path = entry.path as string | undefined
        if (path && path !== `${this.name}.${name}`) continue
        hooks.push({ phase, event, scope: path ? 'pipeline' : 'all', handler: (ORIGINAL.get(handler) ?? handler).name || 'anonymous' })
      }
    }
    return hooks
  }

  getPipelineNames(): string[] {
    return this.registry.names()
  }
}

/** The pipeline name of an event request (`data-pipeline.<name>`). */
function pipelineOf(req: PipelineRequest, service: string): string {
  const path = req.path ?? ''
  return path.startsWith(`${service}.`) ? path.slice(service.length + 1) : path
}

export { SERVICE_NAME }
