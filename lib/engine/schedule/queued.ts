/**
 * The `queued` engine on CAP's persistent task queue: one named task per pipeline (and tenant)
 * in `cds.outbox.Messages`, a watchdog per task, and one-off queued runs.
 */
import cds from '@sap/cds'
import { LOGGER, QUEUE } from '../../constants.js'
import { PipelineError } from '../../pipeline/errors.js'
import { ql } from '../../model/ql.js'
import type { ScheduleSpec } from '../../pipeline/types.js'
import { nextCronTime } from './cron.js'
import { scheduleLabel } from './spec.js'
import {
  asQueueError, isSameTask, modelHasQueue, queueTimeout, queuedTaskName, type QueueRow, type QueuedRunMessage, type TickMessage,
} from './queue-table.js'
import { inContext, primaryDatabase, privilegedUser, queuedService, rootTx, runQuery } from '../../cap/index.js'

const LOG = cds.log(LOGGER.schedule)

/** The part of CAP's `srv.schedule(...)` builder the engine uses. */
interface ScheduleBuilder extends PromiseLike<unknown> {
  every(interval: number | string): ScheduleBuilder
  after?(delay: number): ScheduleBuilder
  as?(task: string): ScheduleBuilder
}

/** The engine service as far as the queue is concerned (a CAP service). */
export interface QueueHost {
  name: string
  schedule?(event: string, data: object): ScheduleBuilder
  unschedule?(task: string): Promise<unknown>
}

interface QueuedService {
  send(event: string, data: object): Promise<unknown>
  flush?(): Promise<unknown>
}

/**
 * Installs and removes the queued schedules of one engine service: each pipeline's schedule is
 * ONE named (singleton) task `data-pipeline/<pipeline>` in `cds.outbox.Messages`, written with
 * CAP's own API (`srv.schedule(...).every(...).as(task)`, `srv.unschedule(task)`), so one
 * instance wins each tick and restarts never add a second task.
 */
export class QueuedSchedules {
  /** The watchdog timer of each pipeline's task in this process. */
  private readonly watched = new Map<string, NodeJS.Timeout>()

  constructor(private readonly host: QueueHost) {}

  /** Why queued schedules cannot work in this app, or undefined when they can. */
  unavailable(): string | undefined {
    if (typeof this.host.schedule !== 'function' || typeof this.host.unschedule !== 'function')
      return `CAP's persistent task queue API (srv.schedule/srv.unschedule) is missing in @sap/cds ${cds.version}; upgrade to @sap/cds 10 or use engine 'spawn'`
    const queue = (cds.env.requires as Record<string, unknown>).queue as { kind?: string } | false | undefined
    if (!queue || (typeof queue === 'object' && queue.kind && !/persistent/.test(queue.kind)))
      return "CAP's persistent task queue is disabled (cds.requires.queue); enable it (the default, kind 'persistent-queue') or use engine 'spawn'"
    if (!primaryDatabase()) return "CAP's persistent task queue needs a database (cds.requires.db)"
    if (!modelHasQueue())
      return `the model has no entity ${QUEUE.entity}: add CAP's queue model (${QUEUE.model}, included by cds.requires.queue by default) and run cds deploy`
    return undefined
  }

  /** Throws a guidance error (target `schedule.engine`) when queued schedules cannot work here. */
  assertAvailable(): void {
    const reason = this.unavailable()
    if (reason) throw new PipelineError('NOT_SUPPORTED', `Queued schedules are not available: ${reason}`, { target: 'schedule.engine' })
  }

  /**
   * The pipeline's task row, or undefined; a missing table becomes a guidance error. With a
   * tenant: its task `data-pipeline/<tenant>/<pipeline>` in the tenant's database.
   */
  async read(pipeline: string, tenant?: string): Promise<QueueRow | undefined> {
    const appid: string | undefined = cds.env.appid
    // `cds.appid` isolates apps sharing one database (CAP's own unschedule filters on it too)
    const query = ql.SELECT.one.from(QUEUE.entity).columns('ID', 'task', 'timestamp', 'msg', 'attempts', 'status', 'lastError')
      .where({ task: queuedTaskName(pipeline, tenant), ...(appid ? { appid } : {}) })
    return (await this.inTx(() => run(query), tenant)) as QueueRow | undefined
  }

  /**
   * Makes sure the pipeline's task exists with this schedule. A task that already carries the
   * same schedule is kept as it is (restarts and further instances do not move its next tick);
   * otherwise it is replaced. The first tick of a new interval task comes after one interval
   * (like spawn); a cron task fires at its next cron time.
   */
  async install(pipeline: string, spec: ScheduleSpec, tenant?: string): Promise<'kept' | 'written'> {
    this.assertAvailable()
    const every = spec.cron ?? spec.every!
    const task = queuedTaskName(pipeline, tenant)
    const existing = await this.read(pipeline, tenant)
    const now = Date.now()
    if (existing && isSameTask(existing, every)) {
      const due = Date.parse(existing.timestamp ?? '')
      this.watch(pipeline, spec, Number.isNaN(due) ? now : due, tenant)
      LOG.debug(`pipeline '${pipeline}': queued task ${task} kept (next tick ${existing.timestamp})`)
      return 'kept'
    }
    if (existing) await this.unschedule(pipeline, tenant)
    const after = spec.cron ? Math.max(0, nextCronTime(spec.cron).getTime() - now) : spec.every!
    const data: TickMessage = { pipeline, schedule: scheduleLabel(spec), ...(tenant ? { tenant } : {}) }
    await this.inTx(async () => {
      let builder = this.host.schedule!(QUEUE.tickEvent, data).every(every)
      // the queue arms its processing timer with `after` (a cron task's first fire time included)
      if (typeof builder.after === 'function') builder = builder.after(after)
      if (typeof builder.as !== 'function')
        throw new PipelineError('NOT_SUPPORTED', `Queued schedules need named tasks (srv.schedule(...).as(name)), which @sap/cds ${cds.version} lacks; upgrade to @sap/cds 10 or use engine 'spawn'`, { target: 'schedule.engine' })
      await builder.as(task)
    }, tenant)
    this.watch(pipeline, spec, now + after, tenant)
    LOG.info(`pipeline '${pipeline}': queued task ${task} scheduled (${scheduleLabel(spec)})`)
    return 'written'
  }

  /** Removes the pipeline's task (no-op when there is none); returns the number of rows removed. */
  async unschedule(pipeline: string, tenant?: string): Promise<number> {
    this.unwatch(pipeline, tenant)
    if (typeof this.host.unschedule !== 'function') return 0
    const task = queuedTaskName(pipeline, tenant)
    const result = await this.inTx(() => this.host.unschedule!(task), tenant)
    const removed = typeof result === 'number' ? result : Number((result as { affected?: number } | undefined)?.affected ?? 0)
    if (removed) LOG.info(`pipeline '${pipeline}': queued task ${task} unscheduled`)
    return removed
  }

  /** Stops this process's watchdogs of a tenant's tasks (the tenant unsubscribed); its tasks go with its database. */
  forgetTenant(tenant: string): void {
    for (const key of this.watched.keys()) if (key.startsWith(`${tenant}\u0000`)) this.unwatchKey(key)
  }

  /**
   * Removes a leftover task of a pipeline that has no queued schedule (any more). Quiet when the
   * app does not use CAP's queue at all.
   */
  async removeOrphan(pipeline: string, tenant?: string): Promise<void> {
    if (typeof this.host.unschedule !== 'function' || !modelHasQueue() || !primaryDatabase()) return
    try {
      if (await this.unschedule(pipeline, tenant)) LOG.info(`pipeline '${pipeline}' has no queued schedule any more: its task was removed`)
    } catch (error) {
      LOG.debug(`pipeline '${pipeline}': no queued task to remove (${(error as Error).message})`)
    }
  }

  /** Enqueues one run as a one-off task (not a singleton: every call is one run). */
  async enqueue(message: QueuedRunMessage): Promise<void> {
    this.assertAvailable()
    const queued: QueuedService = queuedService(this.host)
    await this.inTx(() => queued.send(QUEUE.runEvent, message), message.tenant)
  }

  /** Stops the watchdogs (shutdown); the tasks stay in the database. */
  stop(): void {
    for (const key of this.watched.keys()) this.unwatchKey(key)
  }

  /**
   * The watchdog of a pipeline's task in this instance. CAP's queue arms its processing timer
   * only in the process that wrote or last ran a task: a task kept from before a restart has
   * none, and when the instance that ran the last tick dies, the others would wait for the
   * queue's periodic flush (`cds.requires.scheduling.flushInterval`, 1 h). So every instance
   * looks at the task shortly after it is due and flushes CAP's queue if it is still waiting
   * (the queue's row lock lets one instance run the tick). A task left `processing` by a dead
   * instance for longer than the queue's `timeout` is written anew (cds 10's queue does not
   * pick it up again by itself).
   */
  private watch(pipeline: string, spec: ScheduleSpec, dueAt: number, tenant?: string): void {
    this.unwatch(pipeline, tenant)
    this.plan(pipeline, spec, Math.max(0, dueAt - Date.now()) + QUEUE.watchGrace, tenant)
  }

  private plan(pipeline: string, spec: ScheduleSpec, delay: number, tenant?: string): void {
    const key = watchKey(pipeline, tenant)
    const step = Math.min(delay, 2 ** 31 - 1)
    const timer = setTimeout(() => {
      if (this.watched.get(key) !== timer) return
      if (step < delay) return this.plan(pipeline, spec, delay - step, tenant)
      this.check(pipeline, spec, tenant).catch(error => LOG.debug(`pipeline '${pipeline}': watchdog failed: ${(error as Error).message}`))
    }, step)
    timer.unref()
    this.watched.set(key, timer)
  }

  private async check(pipeline: string, spec: ScheduleSpec, tenant?: string): Promise<void> {
    const key = watchKey(pipeline, tenant)
    const timer = this.watched.get(key)
    let next: number = QUEUE.watchRetry
    try {
      const row = await this.read(pipeline, tenant)
      if (this.watched.get(key) !== timer) return // unscheduled or reinstalled meanwhile
      if (!row) {
        this.unwatch(pipeline, tenant) // removed (by another instance): nothing to watch
        return
      }
      const now = Date.now()
      const due = Date.parse(row.timestamp ?? '')
      if (Number.isNaN(due) || due + QUEUE.watchGrace > now) next = (Number.isNaN(due) ? now : due) + QUEUE.watchGrace - now
      else if (row.status === 'processing') {
        if (now - due > queueTimeout()) {
          LOG.warn(`pipeline '${pipeline}': queued task ${queuedTaskName(pipeline, tenant)} stuck in 'processing' since ${row.timestamp} (its instance died?): writing it anew`)
          await this.unschedule(pipeline, tenant)
          await this.install(pipeline, spec, tenant)
          return
        }
      } else {
        LOG.debug(`pipeline '${pipeline}': queued task due ${row.timestamp} still waiting: flushing CAP's task queue`)
        const queued: QueuedService = queuedService(this.host)
        // a tenant's queue is flushed in that tenant's context, as CAP's own periodic processing does
        await (tenant ? withContext({ tenant }, () => Promise.resolve(queued.flush?.())) : Promise.resolve(queued.flush?.()))
      }
    } catch (error) {
      LOG.debug(`pipeline '${pipeline}': watchdog check failed: ${(error as Error).message}`)
    }
    if (this.watched.get(key) === timer) this.plan(pipeline, spec, Math.max(next, 50), tenant)
  }

  private unwatch(pipeline: string, tenant?: string): void {
    this.unwatchKey(watchKey(pipeline, tenant))
  }

  private unwatchKey(key: string): void {
    const timer = this.watched.get(key)
    if (timer) clearTimeout(timer)
    this.watched.delete(key)
  }

  /** Runs `fn` in its own root transaction (privileged), committed before returning. */
  private async inTx<T>(fn: () => Promise<T>, tenant?: string): Promise<T> {
    try {
      return await rootTx<T>({ user: privilegedUser(), ...(tenant ? { tenant } : {}) }, fn)
    } catch (error) {
      throw asQueueError(error)
    }
  }
}

/** Runs `fn` in a fresh context (no transaction) with these properties. */
function withContext<T>(properties: object, fn: () => Promise<T>): Promise<T> {
  return inContext(properties, fn)
}

/** The watchdog key of a task: the pipeline, or tenant and pipeline. */
function watchKey(pipeline: string, tenant?: string): string {
  return tenant ? `${tenant}\u0000${pipeline}` : pipeline
}

function run(query: unknown): Promise<unknown> {
  return runQuery(query)
}
