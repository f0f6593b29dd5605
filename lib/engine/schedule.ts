/**
 * Schedules: parsing of the user's input (ms, duration strings, cron, objects) into one spec,
 * human-readable labels, the in-process `spawn` timer, and the `queued` engine on CAP's
 * persistent task queue (one named task per pipeline in `cds.outbox.Messages`).
 */
import cds from '@sap/cds'
import { DEFAULTS, LOGGER, QUEUE, SCHEDULE_ENGINES } from '../constants.js'
import { PipelineError, invalidConfig } from '../pipeline/errors.js'
import { ql } from '../model/ql.js'
import type { ScheduleInput, ScheduleSpec } from '../pipeline/types.js'
import { parseDuration } from './duration.js'
import { STORED_LENGTHS, checkCronGap, checkInterval, checkLength, minInterval } from './limits.js'

const LOG = cds.log(LOGGER.schedule)

export { parseDuration }

/** A string of whitespace-separated fields that looks like cron rather than a duration. */
function looksLikeCron(input: string): boolean {
  const fields = input.trim().split(/\s+/)
  return fields.length >= 5 || (fields.length > 1 && /[*/,]/.test(input))
}

/** Parses a schedule and checks it against the bounds every entry shares (lib/engine/limits.ts). */
export function parseSchedule(input: ScheduleInput, key = 'schedule'): ScheduleSpec {
  const spec = parseScheduleInput(input, key)
  if (spec.cron) {
    if (minInterval() > 60_000) checkCronGap(cronShortestGap(spec.cron), spec.cron, typeof input === 'object' ? `${key}.cron` : key)
    checkLength(scheduleLabel(spec), typeof input === 'object' ? `${key}.cron` : key, STORED_LENGTHS.schedule)
  } else checkInterval(spec.every!, typeof input === 'object' && input?.every !== undefined && input.every !== null ? `${key}.every` : key)
  return spec
}

function parseScheduleInput(input: ScheduleInput, key: string): ScheduleSpec {
  if (typeof input === 'string' && looksLikeCron(input)) return { engine: 'queued', cron: parseCron(input, key) }
  if (typeof input === 'number' || typeof input === 'string') return { every: parseDuration(input, key), engine: 'spawn' }
  if (typeof input !== 'object' || input === null || Array.isArray(input))
    throw invalidConfig(key, "must be milliseconds, a duration string, a 5-field cron string or { every, cron, engine }")
  const engine = input.engine ?? (input.cron !== undefined && input.cron !== null ? 'queued' : 'spawn')
  if (!(SCHEDULE_ENGINES as readonly string[]).includes(engine))
    throw invalidConfig(`${key}.engine`, `'${String(engine)}' is invalid; expected spawn or queued`)
  if (input.cron !== undefined && input.cron !== null) {
    if (engine !== 'queued')
      throw invalidConfig(`${key}.engine`, `'${engine}' cannot run cron schedules; cron needs engine 'queued' (CAP's persistent task queue): omit engine or set it to 'queued', or use { every } with 'spawn'`)
    if (input.every !== undefined && input.every !== null) throw invalidConfig(`${key}.every`, 'cannot be combined with cron; give either every or cron')
    return { engine, cron: parseCron(input.cron, `${key}.cron`) }
  }
  return { every: input.every === undefined || input.every === null ? DEFAULTS.scheduleEvery : parseDuration(input.every, `${key}.every`), engine }
}

// ---------------------------------------------------------------------------------------------
// cron (5 fields, the subset CAP's task queue evaluates: numbers, *, ranges, lists, steps)

const CRON_FIELDS = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12 },
  { name: 'day of week', min: 0, max: 7 },
] as const

/** Validates a 5-field cron expression; returns it with normalised spacing. */
export function parseCron(input: unknown, key: string): string {
  if (typeof input !== 'string' || !input.trim()) throw invalidConfig(key, 'must be a 5-field cron string such as */5 * * * *')
  const fields = input.trim().split(/\s+/)
  if (fields.length !== 5)
    throw invalidConfig(key, `'${input}' has ${fields.length} fields; expected 5 (minute hour day-of-month month day-of-week), e.g. */5 * * * *`)
  fields.forEach((field, i) => cronValues(field, CRON_FIELDS[i], key, input))
  const text = fields.join(' ')
  // the queue itself must accept it too (cds ≥ 9.9 validates with cds.utils.cron)
  const accepts = (cds.utils as unknown as { cron?: (t: string) => string | undefined }).cron
  if (typeof accepts === 'function' && !accepts(text)) throw invalidConfig(key, `'${input}' is not a cron expression CAP's task queue accepts`)
  return text
}

function cronValues(field: string, spec: (typeof CRON_FIELDS)[number], key: string, input: string): Set<number> {
  const values = new Set<number>()
  const bad = (why: string) => invalidConfig(key, `'${input}': ${spec.name} field '${field}' ${why}`)
  for (const part of field.split(',')) {
    const match = /^(\*|\d+(?:-\d+)?)(?:\/(\d+))?$/.exec(part)
    if (!match) throw bad(`is invalid; use numbers, *, ranges a-b, lists a,b and steps /n (${spec.min}-${spec.max})`)
    const step = match[2] === undefined ? 1 : Number(match[2])
    if (step < 1) throw bad('has a step below 1')
    let lo: number, hi: number
    if (match[1] === '*') [lo, hi] = [spec.min, spec.max]
    else if (match[1].includes('-')) [lo, hi] = match[1].split('-').map(Number)
    else [lo, hi] = [Number(match[1]), match[2] === undefined ? Number(match[1]) : spec.max]
    if (lo < spec.min || hi > spec.max) throw bad(`is out of range ${spec.min}-${spec.max}`)
    if (lo > hi) throw bad(`has a range ${lo}-${hi} that runs backwards`)
    for (let v = lo; v <= hi; v += step) values.add(v)
  }
  return values
}

/**
 * The shortest time (ms) between two fire times of a cron, within a day or across midnight
 * (conservative: two days are taken to follow each other).
 */
export function cronShortestGap(cron: string): number {
  const fields = cron.trim().split(/\s+/)
  const minutes = [...cronValues(fields[0], CRON_FIELDS[0], 'cron', cron)].sort((a, b) => a - b)
  const hours = [...cronValues(fields[1], CRON_FIELDS[1], 'cron', cron)].sort((a, b) => a - b)
  const times = hours.flatMap(hour => minutes.map(minute => hour * 60 + minute))
  let gap = 1440 - times[times.length - 1] + times[0]
  for (let i = 1; i < times.length; i++) gap = Math.min(gap, times[i] - times[i - 1])
  return gap * 60_000
}

/**
 * The next time a cron expression fires after `from`, in the server's local time zone, with
 * CAP's semantics (day of month AND day of week must both match) so the engine arms its
 * flush for the moment CAP's queue stored as the task's timestamp.
 */
export function nextCronTime(cron: string, from: Date = new Date()): Date {
  const fields = cron.trim().split(/\s+/)
  const [minutes, hours, days, months, weekdays] = fields.map((f, i) => cronValues(f, CRON_FIELDS[i], 'cron', cron))
  const dow = new Set([...weekdays].map(d => (d === 7 ? 0 : d)))
  const next = new Date(from)
  next.setSeconds(0, 0)
  next.setMinutes(next.getMinutes() + 1)
  const limit = new Date(from)
  limit.setFullYear(limit.getFullYear() + 4)
  while (next <= limit) {
    if (!months.has(next.getMonth() + 1)) { next.setMonth(next.getMonth() + 1, 1); next.setHours(0, 0, 0, 0); continue }
    if (!days.has(next.getDate()) || !dow.has(next.getDay())) { next.setDate(next.getDate() + 1); next.setHours(0, 0, 0, 0); continue }
    if (!hours.has(next.getHours())) { next.setHours(next.getHours() + 1, 0, 0, 0); continue }
    if (!minutes.has(next.getMinutes())) { next.setMinutes(next.getMinutes() + 1, 0, 0); continue }
    return next
  }
  throw invalidConfig('schedule.cron', `'${cron}' never fires (no matching time within 4 years)`)
}

/** `every 2 min (spawn)`, `every 10 min (queued)`, `every 1500 ms (spawn)`, `cron 0 2 * * * (queued)` (cron text as given). */
export function scheduleLabel(spec: ScheduleSpec | undefined): string | null {
  if (!spec) return null
  if (spec.cron) return `cron ${spec.cron} (${spec.engine})`
  const every = spec.every ?? DEFAULTS.scheduleEvery
  const units: Array<[number, string]> = [[86_400_000, 'd'], [3_600_000, 'h'], [60_000, 'min'], [1000, 's']]
  const unit = units.find(([size]) => every % size === 0)
  const text = unit ? `${every / unit[0]} ${unit[1]}` : `${every} ms`
  return `every ${text} (${spec.engine})`
}

export function sameSchedule(a: ScheduleSpec | undefined, b: ScheduleSpec | undefined): boolean {
  return (a?.engine ?? null) === (b?.engine ?? null) && (a?.every ?? null) === (b?.every ?? null) && (a?.cron ?? null) === (b?.cron ?? null)
}

/** The major version of a semver-like string (`10.1.1` → 10); NaN when unreadable. */
export function majorVersion(version: string | undefined): number {
  return Number(/^\s*v?(\d+)/.exec(version ?? '')?.[1] ?? Number.NaN)
}

/**
 * SPEC "Versioning": spawn schedules always change live; queued ones on `@sap/cds` ≥ 10 only
 * (on 9 a change is saved and takes effect at the next restart).
 */
export function scheduleLiveChangeSupported(spec: ScheduleSpec | undefined, hostVersion: string | undefined): boolean {
  if (!spec || spec.engine !== 'queued') return true
  return majorVersion(hostVersion) >= QUEUE.liveChangeMajor
}

// ---------------------------------------------------------------------------------------------
// spawn

/** A repeating in-process timer that never overlaps itself and never keeps the process alive. */
export class SpawnTimer {
  private handle?: NodeJS.Timeout
  constructor(private readonly every: number, private readonly tick: () => Promise<unknown>) {}

  start(): this {
    this.stop()
    const loop = () => {
      this.handle = setTimeout(() => {
        this.tick().catch(() => undefined).finally(() => { if (this.handle) loop() })
      }, this.every)
      this.handle.unref()
    }
    loop()
    return this
  }

  stop(): void {
    if (this.handle) clearTimeout(this.handle)
    this.handle = undefined
  }
}

// ---------------------------------------------------------------------------------------------
// queued: CAP's persistent task queue

/** The task name of a pipeline's queued schedule; a tenant segment keeps the name unique per tenant. */
export function queuedTaskName(pipeline: string, tenant?: string): string {
  return tenant ? `${QUEUE.taskPrefix}${tenant}/${pipeline}` : `${QUEUE.taskPrefix}${pipeline}`
}

/** Payload of a queued tick (`QUEUE.tickEvent`). */
export interface TickMessage {
  pipeline: string
  /** The schedule label when the task was written (for logs and the queue table). */
  schedule?: string | null
  tenant?: string
}

/** Payload of a queued one-off run (`QUEUE.runEvent`). */
export interface QueuedRunMessage {
  pipeline: string
  mode?: string
  trigger?: string
  tenant?: string
}

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

/** A row of `cds.outbox.Messages`, as far as the engine reads it. */
export interface QueueRow {
  ID: string
  task: string | null
  timestamp: string | null
  msg: string | null
  attempts: number | null
  status: string | null
  lastError?: string | null
}

const MISSING_TABLE = /no such table|does not exist|invalid table name|not found|could not find/i

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
    if (!(cds as unknown as { db?: unknown }).db) return "CAP's persistent task queue needs a database (cds.requires.db)"
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
    const appid = (cds.env as unknown as { appid?: string }).appid
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
    if (typeof this.host.unschedule !== 'function' || !modelHasQueue() || !(cds as unknown as { db?: unknown }).db) return
    try {
      if (await this.unschedule(pipeline, tenant)) LOG.info(`pipeline '${pipeline}' has no queued schedule any more: its task was removed`)
    } catch (error) {
      LOG.debug(`pipeline '${pipeline}': no queued task to remove (${(error as Error).message})`)
    }
  }

  /** Enqueues one run as a one-off task (not a singleton: every call is one run). */
  async enqueue(message: QueuedRunMessage): Promise<void> {
    this.assertAvailable()
    const queued = (cds as unknown as { queued(srv: unknown): QueuedService }).queued(this.host)
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
        const queued = (cds as unknown as { queued(srv: unknown): QueuedService }).queued(this.host)
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
    const User = (cds as unknown as { User: { privileged: unknown } }).User
    const facade = cds as unknown as { tx<R>(context: object, fn: () => Promise<R>): Promise<R> }
    try {
      return await facade.tx<T>({ user: User.privileged, ...(tenant ? { tenant } : {}) }, fn)
    } catch (error) {
      throw asQueueError(error)
    }
  }
}

/** Runs `fn` in a fresh context (no transaction) with these properties. */
function withContext<T>(properties: object, fn: () => Promise<T>): Promise<T> {
  const facade = cds as unknown as { EventContext: new (data: object) => object; _with(context: object, fn: () => Promise<T>): Promise<T> }
  return facade._with(new facade.EventContext(properties), fn)
}

/** The watchdog key of a task: the pipeline, or tenant and pipeline. */
function watchKey(pipeline: string, tenant?: string): string {
  return tenant ? `${tenant}\u0000${pipeline}` : pipeline
}

function run(query: unknown): Promise<unknown> {
  return (cds as unknown as { run(q: unknown): Promise<unknown> }).run(query)
}

/** The queue's processing timeout in ms (`cds.requires.queue.timeout`, default 1 h). */
function queueTimeout(): number {
  const value = ((cds.env.requires as Record<string, unknown>).queue as { timeout?: string | number } | undefined)?.timeout
  if (typeof value === 'number') return value
  try {
    return typeof value === 'string' ? parseDuration(value.replace(/\s+/g, ''), 'cds.requires.queue.timeout') : 3_600_000
  } catch {
    return 3_600_000
  }
}

function modelHasQueue(): boolean {
  const model = (cds as unknown as { model?: { definitions?: Record<string, unknown> } }).model
  return Boolean(model?.definitions?.[QUEUE.entity])
}

/** The task row carries the same interval or cron and is not dead-lettered. */
function isSameTask(row: QueueRow, every: number | string): boolean {
  let stored: unknown
  try {
    stored = (JSON.parse(row.msg ?? '{}') as { queue?: { every?: unknown } }).queue?.every
  } catch {
    return false
  }
  const maxAttempts = Number(((cds.env.requires as Record<string, unknown>).queue as { maxAttempts?: number } | undefined)?.maxAttempts ?? 10)
  return stored === every && Number(row.attempts ?? 0) < maxAttempts
}

/** A missing queue table becomes a guidance error naming what to deploy. */
export function asQueueError(error: unknown): unknown {
  const message = (error as Error)?.message ?? String(error)
  if (MISSING_TABLE.test(message) && /outbox/i.test(message)) {
    return new PipelineError('NOT_SUPPORTED',
      `Queued schedules need CAP's task queue: table ${QUEUE.table} is missing: deploy CAP's queue model (${QUEUE.model}, ` +
      'included by cds deploy with @sap/cds ≥ 10 while cds.requires.queue is on): run cds deploy (or redeploy the database), ' +
      `or use engine 'spawn'. Cause: ${message}`,
      { target: 'schedule.engine', status: 500, cause: error })
  }
  return error
}
