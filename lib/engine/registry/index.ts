/**
 * The registry of pipelines of one engine service: a façade that wires its parts (folder
 * registry/) and keeps the names srv/, lib/tenancy, lib/federation and lib/management call.
 *
 * - definitions.ts: coded config, overrides, effective config, registration rules, adapters;
 * - tenant-definitions.ts: tracker rows and own settings per tenant (multitenancy);
 * - launcher.ts: `execute`, scheduled and queued runs, `flush` (tenant-fan-out.ts: one run per tenant);
 * - schedules.ts: spawn timers and queued tasks (tenant-schedules.ts: per tenant while fanning out).
 *
 * Registering and overriding touch definitions and schedules both; that order lives here.
 */
import cds from '@sap/cds'
import { LOGGER } from '../../constants.js'
import type { PipelineConfig, ResolvedPipeline, ScheduleInput } from '../../pipeline/types.js'
import type { Overrides } from '../config/overrides.js'
import { parseSchedule, scheduleLabel } from '../schedule/spec.js'
import { QueuedSchedules, type QueueHost } from '../schedule/queued.js'
import type { QueuedRunMessage, TickMessage } from '../schedule/queue-table.js'
import { Tracker, type PipelineRow } from '../tracker/index.js'
import type { EventDispatcher, PreparedPipeline } from '../run/types.js'
import { TenantFanOut } from '../tenancy/fanout.js'
import { contextTenant, tenancy } from '../tenancy/index.js'
import { PipelineDefinitions } from './definitions.js'
import { TenantDefinitions } from './tenant-definitions.js'
import { PipelineLauncher } from './launcher.js'
import { PipelineSchedules } from './schedules.js'
import type { ExecuteOptions } from './execute-result.js'

export type {
  ExecuteOptions, ExecuteResult, StartedRun, EnqueuedRun, FanOutRun, EnqueuedFanOut, FanOutOutcome, InProcessExecuteOptions, QueuedExecuteOptions,
} from './execute-result.js'

const LOG = cds.log(LOGGER.engine)

export interface RegistrySettings {
  /** `false` keeps schedules from starting in this process (`cds.requires['data-pipeline'].schedules`); an object `{ minInterval }` (lib/engine/config/limits.ts) keeps them on. */
  schedules?: boolean | { minInterval?: number | string }
  /** Where the host's `@sap/cds` version comes from (default `cds.version`); injectable for tests. */
  hostVersion?: () => string
}

export class PipelineRegistry {
  readonly tracker = new Tracker()
  /** Bounded parallelism of tenant runs (`multitenancy.parallel`). */
  readonly fanOut = new TenantFanOut(() => tenancy().settings().parallel)
  private readonly definitions = new PipelineDefinitions(this.tracker)
  private readonly tenants = new TenantDefinitions(this.definitions, this.tracker)
  private readonly launcher: PipelineLauncher
  private readonly schedules: PipelineSchedules

  /**
   * @param host the engine service: queued schedules are tasks of this service on CAP's queue
   */
  constructor(dispatch: EventDispatcher, settings: RegistrySettings = {}, host?: QueueHost) {
    const queue = new QueuedSchedules(host ?? { name: 'data-pipeline' })
    const hostVersion = settings.hostVersion ?? (() => String(cds.version ?? ''))
    this.launcher = new PipelineLauncher(this.definitions, this.tenants, this.tracker, dispatch, queue, this.fanOut)
    this.schedules = new PipelineSchedules(this.definitions, this.tenants, this.launcher, queue, this.fanOut, settings.schedules !== false, hostVersion)
  }

  /** Replaces the source of the host's `@sap/cds` version (tests of the cds 9 behaviour). */
  useHostVersion(source: () => string): void {
    this.schedules.hostVersion = source
  }

  // -------------------------------------------------------------------------------------------
  // definitions

  has(name: string): boolean {
    return this.definitions.has(name)
  }

  names(): string[] {
    return this.definitions.names()
  }

  get(name: string): ResolvedPipeline {
    return this.definitions.definition(name).effective
  }

  coded(name: string): PipelineConfig {
    return this.definitions.definition(name).coded
  }

  overrides(name: string): Overrides {
    return this.definitions.definition(name).overrides
  }

  /** Registers a pipeline: its definition with the overrides stored for it, then its schedule. */
  async add(config: PipelineConfig): Promise<ResolvedPipeline> {
    const { definition, existing, stored } = await this.definitions.define(config)
    if (existing) return definition.effective
    const name = definition.effective.name
    if (Object.keys(stored).length) {
      try {
        await this.applyOverrides(name, stored)
      } catch (error) {
        LOG.error(`pipeline '${name}': stored overrides are no longer valid and were not applied: ${(error as Error).message}`)
      }
    }
    try {
      await this.schedules.start(name)
    } catch (error) {
      // a schedule that cannot run (queued without CAP's queue table) fails the registration
      this.definitions.undefine(name)
      this.schedules.drop(name)
      throw error
    }
    LOG.info(`registered pipeline '${name}' (${definition.effective.shape}-shape, ${definition.effective.mode}${definition.effective.schedule ? `, ${scheduleLabel(definition.effective.schedule)}` : ''})`)
    return definition.effective
  }

  /**
   * Validates and activates overrides; persists them. The effective config must pass registration
   * rules. A schedule change takes effect live, except a change involving a `queued` schedule on
   * `@sap/cds` < 10: it is saved (effective at the next restart) and rejected with 409 guidance.
   */
  async applyOverrides(name: string, overrides: Overrides): Promise<ResolvedPipeline> {
    const effective = this.definitions.resolveOverrides(name, overrides)
    const change = this.schedules.planChange(name, effective.schedule)
    // the label shows what runs: a deferred queued change shows once it is live (next restart)
    await this.definitions.putOverrides(name, overrides, effective, change.deferred ? this.schedules.installed(name) : effective.schedule)
    if (change.deferred) throw this.schedules.deferredChange(name, effective.schedule)
    if (change.restart) await this.schedules.start(name)
    return effective
  }

  /** Resolves overrides with the registration rules and changes nothing (validate-only); throws as applyOverrides would. */
  checkOverrides(name: string, overrides: Overrides): ResolvedPipeline {
    return this.definitions.resolveOverrides(name, overrides)
  }

  /** Sets the pipeline's schedule as an override (persisted; live per SPEC "Schedule rules"). */
  async setSchedule(name: string, schedule: ScheduleInput): Promise<ResolvedPipeline> {
    const current = this.overrides(name)
    parseSchedule(schedule, 'schedule')
    return this.applyOverrides(name, { ...current, schedule })
  }

  /** Stops the pipeline's schedule and records `schedule: null`, so a coded schedule stays off until that override is cleared. */
  async clearSchedule(name: string): Promise<ResolvedPipeline> {
    return this.applyOverrides(name, { ...this.overrides(name), schedule: null })
  }

  /**
   * The effective config of a pipeline for a tenant: with the tenant's own `mode`/`schedule`
   * (`multitenancy.tenants.<tenant>.replicate.<pipeline>`) on top, else the pipeline's.
   */
  effectiveFor(name: string, tenant: string | undefined = contextTenant()): ResolvedPipeline {
    return this.definitions.effectiveFor(name, tenant)
  }

  /** Connects adapters and derives the mapping once per effective config (per tenant with settings of its own). */
  prepare(name: string, tenant: string | undefined = contextTenant()): Promise<PreparedPipeline> {
    return this.definitions.prepare(name, tenant)
  }

  // -------------------------------------------------------------------------------------------
  // runs

  /** Starts a run; its overloads and the shapes it returns are PipelineLauncher.execute's. */
  readonly execute = ((name: string, options?: ExecuteOptions) => this.launcher.execute(name, options)) as PipelineLauncher['execute']

  /** Clears the pipeline's output and resets the tracker so the next run is a full sync. */
  flush(name: string): Promise<PipelineRow> {
    return this.launcher.flush(name)
  }

  /** The handler of `QUEUE.runEvent` (a queued one-off run). */
  queuedRun(message: QueuedRunMessage | undefined): Promise<void> {
    return this.launcher.queuedRun(message)
  }

  // -------------------------------------------------------------------------------------------
  // schedules

  /** Starts spawn timers and installs queued tasks (called once the app serves). */
  activateSchedules(): Promise<void> {
    return this.schedules.activate()
  }

  /** Stops this process's timers. Queued tasks stay: they belong to the app, not to this instance. */
  stopSchedules(): void {
    this.schedules.stop()
  }

  /** The handler of `QUEUE.tickEvent` (a queued schedule's tick). */
  queuedTick(message: TickMessage | undefined): Promise<void> {
    return this.schedules.queuedTick(message)
  }

  /**
   * Whether a change of this pipeline's schedule takes effect live: always for spawn; for a
   * queued schedule on `@sap/cds` ≥ 10 only (SPEC "Versioning").
   */
  isScheduleLiveChangeSupported(name: string): boolean {
    return this.schedules.isLiveChangeSupported(name)
  }

  // -------------------------------------------------------------------------------------------
  // multitenancy (lib/tenancy): tracker rows per tenant, a tenant's own settings, its schedules

  /** Makes sure the pipeline's tracker row exists in the tenant's database (once per process, again after `forgetTenant`). */
  ensureInTenant(name: string, tenant: string): Promise<void> {
    return this.tenants.ensureInTenant(name, tenant)
  }

  /** Tracker rows of all pipelines in the tenant's database. */
  ensureTenant(tenant: string): Promise<void> {
    return this.tenants.ensureTenant(tenant)
  }

  /**
   * A tenant's own settings of a pipeline: the provider's `multitenancy.tenants` and what the
   * tenant's admin set (within the provider's bounds); undefined when it has none.
   */
  tenantOverrides(name: string, tenant: string | undefined): Overrides | undefined {
    return this.definitions.tenantOverrides(name, tenant)
  }

  /** What the tenant's admin set for the tenant (management API), as stored. */
  storedTenantOverrides(name: string, tenant: string): Overrides {
    return this.tenants.storedTenantOverrides(name, tenant)
  }

  /**
   * Sets what the tenant's admin chose for the tenant (its mode or schedule; the caller checked
   * the provider's bounds): validated like any override, stored in the tenant's tracker row,
   * live for that tenant only (its schedule restarts).
   */
  async applyTenantOverrides(name: string, tenant: string, overrides: Overrides): Promise<ResolvedPipeline> {
    const { effective, own } = await this.tenants.putTenantOverrides(name, tenant, overrides)
    await this.schedules.tenants.restart(name, tenant)
    LOG.info(`pipeline '${name}': tenant '${tenant}' set its own settings ${JSON.stringify(own)}`)
    return effective
  }

  /** Starts the tenant's schedules (fan-out): after a subscription, or an upgrade that recreated its database. */
  installTenantSchedules(tenant: string): Promise<void> {
    return this.schedules.tenants.install(tenant)
  }

  /** Removes the tenant's queued tasks (best effort; before its database goes) and stops its timers. */
  removeTenantSchedules(tenant: string): Promise<void> {
    return this.schedules.tenants.remove(tenant)
  }

  /** Forgets what this process knows of a tenant's database (unsubscribed, or recreated by an upgrade). */
  forgetTenant(tenant: string): void {
    this.tenants.forget(tenant)
    this.schedules.tenants.forget(tenant)
  }
}
