/**
 * Fan-out schedules (multitenancy, `multitenancy.fanOutScheduledRuns`): a spawn schedule is one
 * timer whose ticks run the pipeline for every subscribed tenant (CAP's registry, read at each
 * tick); a queued schedule is one task per tenant (`data-pipeline/<tenant>/<pipeline>`) in that
 * tenant's database. A tenant with a schedule of its own (`multitenancy.tenants`, or set by its
 * admin) gets its own timer or task.
 */
import cds from '@sap/cds'
import { LOGGER } from '../../constants.js'
import { SpawnTimer } from '../schedule/spawn-timer.js'
import type { QueuedSchedules } from '../schedule/queued.js'
import { tenancy } from '../tenancy/index.js'
import type { TenantFanOut } from '../tenancy/fanout.js'
import type { PipelineDefinitions } from './definitions.js'
import type { TenantDefinitions } from './tenant-definitions.js'
import type { PipelineLauncher } from './launcher.js'
import type { ScheduleState } from './schedule-state.js'

const LOG = cds.log(LOGGER.engine)

export class TenantSchedules {
  constructor(
    private readonly definitions: PipelineDefinitions,
    private readonly tenants: TenantDefinitions,
    private readonly launcher: PipelineLauncher,
    private readonly queue: QueuedSchedules,
    private readonly fanOut: TenantFanOut,
    /** The schedule state of each pipeline, shared with PipelineSchedules. */
    private readonly states: ReadonlyMap<string, ScheduleState>,
    /** Whether schedules run in this process (PipelineSchedules). */
    private readonly active: () => boolean,
  ) {}

  /** (Re)starts the schedules of every subscribed tenant; the provider's own timer is the caller's. */
  async applyAll(name: string, state: ScheduleState): Promise<void> {
    for (const timer of state.tenantTimers?.values() ?? []) timer.stop()
    state.tenantTimers = undefined
    let tenants: string[]
    try {
      tenants = await tenancy().subscribedTenants()
    } catch (error) {
      // the tenants get their schedules when they subscribe (or at the next start)
      LOG.error(`pipeline '${name}': the subscribed tenants could not be read, their schedules are not started: ${(error as Error).message}`)
      return
    }
    await Promise.all(tenants.map(tenant => this.apply(name, state, tenant).catch(error =>
      LOG.error(`pipeline '${name}': its schedule for tenant '${tenant}' could not be started: ${(error as Error).message}`))))
  }

  /** (Re)starts one tenant's schedule of the pipeline: its queued task, or its own timer when it has a schedule of its own. */
  async apply(name: string, state: ScheduleState, tenant: string): Promise<void> {
    state.tenantTimers?.get(tenant)?.stop()
    state.tenantTimers?.delete(tenant)
    await this.tenants.ensureInTenant(name, tenant) // loads what the tenant's admin set
    const own = this.definitions.tenantOverrides(name, tenant)
    const schedule = this.definitions.effectiveFor(name, tenant).schedule
    if (schedule?.engine === 'queued') {
      await this.queue.install(name, schedule, tenant)
      return
    }
    await this.queue.removeOrphan(name, tenant)
    if (schedule && own && 'schedule' in own)
      (state.tenantTimers ??= new Map()).set(tenant, new SpawnTimer(schedule.every!, () => this.tenantTick(name, tenant)).start())
  }

  /** The tenant's settings of the pipeline changed: its schedule restarts, if schedules run and fan out here. */
  async restart(name: string, tenant: string): Promise<void> {
    const state = this.states.get(name)
    if (this.active() && state?.activated && tenancy().settings().fanOutScheduledRuns) await this.apply(name, state, tenant)
  }

  /** Starts the tenant's schedules (fan-out): after a subscription, or an upgrade that recreated its database. */
  async install(tenant: string): Promise<void> {
    if (!this.active() || !tenancy().settings().fanOutScheduledRuns) return
    for (const name of this.definitions.names()) {
      const state = this.states.get(name)
      if (!state?.activated) continue
      await this.apply(name, state, tenant).catch(error =>
        LOG.error(`pipeline '${name}': its schedule for tenant '${tenant}' could not be started: ${(error as Error).message}`))
    }
  }

  /** Removes the tenant's queued tasks (best effort; before its database goes) and stops its timers. */
  async remove(tenant: string): Promise<void> {
    for (const name of this.definitions.names()) {
      this.stopTimer(name, tenant)
      await this.queue.removeOrphan(name, tenant)
    }
    this.queue.forgetTenant(tenant)
  }

  /** Stops this process's timers and watchdogs of the tenant (unsubscribed, or its database recreated). */
  forget(tenant: string): void {
    for (const name of this.definitions.names()) this.stopTimer(name, tenant)
    this.queue.forgetTenant(tenant)
  }

  /** A fan-out spawn tick: the pipeline runs for each subscribed tenant without a schedule of its own, `parallel` at once. */
  async fanOutTick(name: string): Promise<void> {
    let tenants: string[]
    try {
      tenants = (await tenancy().subscribedTenants()).filter(tenant => !('schedule' in (this.definitions.tenantOverrides(name, tenant) ?? {})))
    } catch (error) {
      LOG.warn(`pipeline '${name}': scheduled tick could not read the subscribed tenants: ${(error as Error).message}`)
      return
    }
    // not awaited: a slow tenant must not delay the next tick of the others (its own is skipped while it runs)
    void this.fanOut.run(name, tenants, tenant => tenancy().inTenant(tenant, () => this.launcher.startScheduled(name, false, tenant)).then(started => started?.done.catch(() => undefined)))
  }

  /** A tick of a tenant's own spawn schedule. */
  private async tenantTick(name: string, tenant: string): Promise<void> {
    if (!(await tenancy().subscribedTenants().catch(() => [] as string[])).includes(tenant)) return
    void this.fanOut.run(name, [tenant], each => tenancy().inTenant(each, () => this.launcher.startScheduled(name, false, each)).then(started => started?.done.catch(() => undefined)))
  }

  private stopTimer(name: string, tenant: string): void {
    const timers = this.states.get(name)?.tenantTimers
    timers?.get(tenant)?.stop()
    timers?.delete(tenant)
  }
}
