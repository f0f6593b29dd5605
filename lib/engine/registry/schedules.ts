/**
 * The live schedules of one engine service's pipelines: spawn timers in this process and
 * queued tasks on CAP's task queue, started once the app serves, changed live when a pipeline's
 * schedule changes (SPEC "Schedule rules", "Versioning"), and the queued tick's handler.
 */
import cds from '@sap/cds'
import { LOGGER } from '../../constants.js'
import { PipelineError } from '../../pipeline/errors.js'
import type { ScheduleSpec } from '../../pipeline/types.js'
import { invalidTenantId } from '../../security/tenant-id.js'
import { sameSchedule, scheduleLabel, scheduleLiveChangeSupported } from '../schedule/spec.js'
import { SpawnTimer } from '../schedule/spawn-timer.js'
import type { QueuedSchedules } from '../schedule/queued.js'
import type { TickMessage } from '../schedule/queue-table.js'
import { tenancy } from '../tenancy/index.js'
import type { TenantFanOut } from '../tenancy/fanout.js'
import type { PipelineDefinitions } from './definitions.js'
import type { TenantDefinitions } from './tenant-definitions.js'
import type { PipelineLauncher } from './launcher.js'
import type { ScheduleState } from './schedule-state.js'
import { TenantSchedules } from './tenant-schedules.js'

const LOG = cds.log(LOGGER.engine)

export class PipelineSchedules {
  private active = false
  private readonly states = new Map<string, ScheduleState>()
  /** Per-tenant schedules while runs fan out over tenants. */
  readonly tenants: TenantSchedules

  constructor(
    private readonly definitions: PipelineDefinitions,
    tenantDefinitions: TenantDefinitions,
    private readonly launcher: PipelineLauncher,
    private readonly queue: QueuedSchedules,
    fanOut: TenantFanOut,
    /** `false` keeps schedules from starting in this process (`cds.requires['data-pipeline'].schedules`). */
    private readonly enabled: boolean,
    /** Where the host's `@sap/cds` version comes from: it decides whether queued schedules change live. */
    public hostVersion: () => string,
  ) {
    this.tenants = new TenantSchedules(definitions, tenantDefinitions, launcher, queue, fanOut, this.states, () => this.active)
  }

  /** Starts spawn timers and installs queued tasks (called once the app serves). */
  async activate(): Promise<void> {
    if (!this.enabled) return
    this.active = true
    await Promise.all(this.definitions.names().map(name => this.start(name).catch(error =>
      LOG.error(`pipeline '${name}': its schedule could not be started: ${(error as Error).message}`))))
  }

  /** Stops this process's timers. Queued tasks stay: they belong to the app, not to this instance. */
  stop(): void {
    this.active = false
    for (const state of this.states.values()) {
      state.timer?.stop()
      for (const timer of state.tenantTimers?.values() ?? []) timer.stop()
    }
    this.queue.stop()
  }

  /** Applies the pipeline's effective schedule live; serialised per pipeline. */
  start(name: string): Promise<void> {
    this.definitions.definition(name)
    let state = this.states.get(name)
    if (!state) this.states.set(name, state = {})
    const current = state
    const next = (current.scheduling ?? Promise.resolve()).catch(() => undefined).then(() => this.apply(name, current))
    current.scheduling = next
    return next
  }

  /** Forgets the pipeline's schedule and stops its timers (its registration failed). */
  drop(name: string): void {
    const state = this.states.get(name)
    state?.timer?.stop()
    for (const timer of state?.tenantTimers?.values() ?? []) timer.stop()
    this.states.delete(name)
  }

  /**
   * How a change of the pipeline's schedule to `to` takes effect: `restart` when it runs live
   * and changes; `deferred` when that change involves a `queued` schedule on `@sap/cds` < 10
   * (saved, effective at the next restart).
   */
  planChange(name: string, to: ScheduleSpec | undefined): { restart: boolean; deferred: boolean } {
    const state = this.states.get(name)
    const changed = !sameSchedule(this.definitions.definition(name).effective.schedule, to)
    const live = this.active && state?.activated === true
    return { restart: live && changed, deferred: live && changed && !this.canChangeLive(state?.installed, to) }
  }

  /** The schedule running live, as far as it differs from the effective one (after a deferred change). */
  installed(name: string): ScheduleSpec | undefined {
    return this.states.get(name)?.installed
  }

  /** The 409 guidance of a deferred queued schedule change. */
  deferredChange(name: string, to: ScheduleSpec | undefined): PipelineError {
    return new PipelineError('NOT_SUPPORTED',
      `Schedule of pipeline '${name}' saved (${scheduleLabel(to) ?? 'no schedule'}), but @sap/cds ${this.hostVersion()} cannot change queued schedules live: ` +
      `it takes effect at the next restart; until then '${scheduleLabel(this.installed(name)) ?? 'no schedule'}' keeps running. ` +
      "Upgrade to @sap/cds 10 for live changes, switch to engine 'spawn', or restart the app.",
      { target: 'schedule', status: 409 })
  }

  /**
   * Whether a change of this pipeline's schedule takes effect live: always for spawn; for a
   * queued schedule on `@sap/cds` ≥ 10 only (SPEC "Versioning").
   */
  isLiveChangeSupported(name: string): boolean {
    const effective = this.definitions.definition(name).effective.schedule
    return this.canChangeLive(this.installed(name) ?? effective, effective)
  }

  private canChangeLive(from: ScheduleSpec | undefined, to: ScheduleSpec | undefined): boolean {
    const version = this.hostVersion()
    return scheduleLiveChangeSupported(from, version) && scheduleLiveChangeSupported(to, version)
  }

  private async apply(name: string, state: ScheduleState): Promise<void> {
    if (!this.active || this.states.get(name) !== state || !this.definitions.has(name)) return
    const first = !state.activated
    state.activated = true
    const previous = state.installed
    const schedule = this.definitions.definition(name).effective.schedule
    state.timer?.stop()
    state.timer = undefined
    if (tenancy().settings().fanOutScheduledRuns) {
      // the provider has no tenant data: no task of its own, one per tenant instead
      if (first || state.installed?.engine === 'queued') await this.queue.removeOrphan(name)
      state.installed = schedule
      if (schedule?.engine === 'spawn' && this.active) state.timer = new SpawnTimer(schedule.every!, () => this.tick(name)).start()
      return this.tenants.applyAll(name, state)
    }
    if (schedule?.engine === 'queued') {
      await this.queue.install(name, schedule)
      state.installed = schedule
      return
    }
    // no queued schedule (any more): its task must not keep ticking
    if (previous?.engine === 'queued') await this.queue.unschedule(name)
    else if (first) await this.queue.removeOrphan(name)
    state.installed = schedule
    if (schedule && this.active) state.timer = new SpawnTimer(schedule.every!, () => this.tick(name)).start()
  }

  /** A spawn tick: skipped while disabled or while a run is active; waits for the run (no overlap). */
  private async tick(name: string): Promise<void> {
    if (tenancy().settings().fanOutScheduledRuns) return this.tenants.fanOutTick(name)
    const started = await this.launcher.startScheduled(name)
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
      if (typeof name !== 'string' || !this.definitions.has(name)) {
        LOG.warn(`queued tick for pipeline '${String(name)}', which this instance has not registered: skipped`)
        return
      }
      const state = this.states.get(name)
      const live = this.active && state?.activated === true
      const tenant = message?.tenant
      if (tenant !== undefined && tenant !== null && invalidTenantId(tenant)) {
        LOG.error(`queued tick of pipeline '${name}' for an invalid tenant id: skipped (${invalidTenantId(tenant)})`)
        return
      }
      if (tenant) {
        if (live && this.definitions.effectiveFor(name, tenant).schedule?.engine !== 'queued') {
          LOG.info(`pipeline '${name}' has no queued schedule for tenant '${tenant}' any more: its leftover task is removed`)
          await this.queue.unschedule(name, tenant)
          return
        }
      } else if (live && state?.installed?.engine !== 'queued') {
        LOG.info(`pipeline '${name}' has no queued schedule any more: its leftover task is removed`)
        await this.queue.unschedule(name)
        return
      }
      const started = await this.launcher.startScheduled(name, true, tenant)
      started?.done.catch(() => undefined) // a failed run is recorded in PipelineRuns and logged by the run
    } catch (error) {
      LOG.error(`pipeline '${String(name)}': queued tick failed: ${(error as Error).message}`)
    }
  }
}
