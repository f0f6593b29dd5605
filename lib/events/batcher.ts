/**
 * Coalescing per pipeline: a stored key schedules a drain after the window; the drain takes the
 * oldest waiting keys (at most `maxBatch`), holds the pipeline's run guard for the micro-batch
 * (without a run row: the tracker keeps aggregates instead, stats.ts), applies them and removes
 * them. While a full or delta run holds the guard, the keys wait and the drain tries again after
 * it, so a message arriving during a run is applied after that run. Instances sharing a database
 * share the waiting keys and the guard: whichever instance holds the guard applies them, once.
 * With multitenancy there is one batcher per pipeline and tenant: every step that touches a
 * database (take, apply, remove, the guard) runs in the tenant's context, the pauses between them
 * outside it (an unsubscribe waits for the steps, never for a pause); retries are the batcher's own,
 * so a tenant whose source fails holds no other tenant back.
 */
import cds from '@sap/cds'
import { randomUUID } from 'node:crypto'
import { describeError } from '../engine/run/support.js'
import type { EventDispatcher, PreparedPipeline } from '../engine/run/types.js'
import type { Tracker } from '../engine/tracker/index.js'
import { applyBatch } from './apply.js'
import { pause, type PendingKey, type PendingKeys } from './store.js'
import type { EventStats } from './stats.js'
import type { ResolvedEvents } from './config.js'
import { batchSpan } from './span.js'
import { labelOf, withinTenant } from './tenant.js'

const LOG = cds.log('data-pipeline|events')
/** Waits between attempts while a run holds the guard (doubling up to the maximum). */
const BUSY_FIRST = 50
const BUSY_MAX = 1000
/** Waits before a failed micro-batch is tried again (doubling up to the maximum). */
const FAILED_FIRST = 1000
const FAILED_MAX = 30_000
/** Attempts of a failing micro-batch (about two minutes with the pauses) before its keys are dropped. */
const MAX_ATTEMPTS = 8


export interface BatcherHost {
  prepare(name: string): Promise<PreparedPipeline>
  tracker: Tracker
  dispatch: EventDispatcher
  keys: PendingKeys
  stats: EventStats
  /** Makes sure the pipeline's tracker row exists in the tenant's database (multitenancy). */
  ensureInTenant?(name: string, tenant: string): Promise<void>
}

export class EventBatcher {
  private timer?: NodeJS.Timeout
  private draining?: Promise<void>
  private again = false
  /** When the first key arrived during the drain under way. */
  private waitingSince = 0
  private stopped = false
  private failed = FAILED_FIRST
  private attempts = 0

  /** How logs name the pipeline (and tenant). */
  private readonly label: string

  constructor(readonly name: string, private readonly settings: ResolvedEvents, private readonly host: BatcherHost, readonly tenant?: string) {
    this.label = labelOf(name, tenant)
  }

  /** Runs a step in the batcher's tenant (its database), or as it is without one. */
  private within<T>(fn: () => Promise<T>): Promise<T> {
    return withinTenant(this.tenant, fn)
  }

  /** Keys were stored: drain after the window (a drain under way goes on with them). */
  notify(delay = this.settings.window): void {
    if (this.stopped) return
    if (this.draining) {
      // the window of these keys starts now, not when the drain ends: under a steady stream a
      // micro-batch follows the previous one after max(window, drain), not window + drain
      if (!this.again) this.waitingSince = Date.now()
      this.again = true
      return
    }
    if (this.timer) return
    this.timer = setTimeout(() => {
      this.timer = undefined
      this.draining = this.drain().catch(async error => {
        // the database failed (waiting keys unreadable): try again after a pause, the keys are safe where they are
        LOG.error(`${this.label}: event keys could not be drained: ${(error as Error).message}`)
        await pause(this.failed)
        this.failed = Math.min(FAILED_MAX, this.failed * 2)
        this.again = true
      }).finally(() => {
        this.draining = undefined
        if (this.again) {
          this.again = false
          this.notify(Math.max(0, this.settings.window - (Date.now() - this.waitingSince)))
        }
      })
    }, delay)
    this.timer.unref?.()
  }

  /** Resolves once nothing is scheduled or under way (tests, shutdown). */
  async idle(): Promise<void> {
    while (this.timer || this.draining) await (this.draining ?? new Promise(resolve => setTimeout(resolve, 10)))
  }

  stop(): void {
    this.stopped = true
    clearTimeout(this.timer)
    this.timer = undefined
  }

  private reset(): void {
    this.failed = FAILED_FIRST
    this.attempts = 0
  }

  private async drain(): Promise<void> {
    let busy = BUSY_FIRST
    for (;;) {
      if (this.stopped) return
      if (!(await this.within(() => this.host.keys.hasWaiting(this.name)))) return
      const { outcome, rows } = await this.within(() => this.applyGuarded())
      if (outcome === 'busy') {
        // a run (or another instance's micro-batch) holds the pipeline: its keys wait for it to end
        await pause(busy)
        busy = Math.min(BUSY_MAX, busy * 2)
        continue
      }
      busy = BUSY_FIRST
      if (outcome === 'failed') {
        // no keys taken (the pipeline could not be prepared or guarded): nothing to drop, retried at the growing pause
        if (++this.attempts >= MAX_ATTEMPTS && rows.length) {
          // never stuck behind a batch that keeps failing: its keys go, counted as skipped; the scheduled delta run catches their changes
          LOG.error(`${this.label}: an event batch of ${rows.length} keys failed ${this.attempts} times; its keys are dropped (counted as skipped), the next delta run catches their changes`)
          await this.within(() => this.host.keys.remove(this.name, rows)).catch(e => LOG.error(`${this.label}: could not drop the failed keys: ${(e as Error).message}`))
          this.host.stats.applied(this.name, 0, rows.length, [], this.tenant)
          this.reset()
          continue
        }
        // the keys stay and are tried again after a pause growing to FAILED_MAX (never a tight loop against the source)
        await pause(this.failed)
        this.failed = Math.min(FAILED_MAX, this.failed * 2)
        continue
      }
      this.reset()
      // a full batch: a backlog, go on at once; otherwise keys arriving meanwhile wait for a new window
      if (rows.length < this.settings.maxBatch) return
    }
  }

  /**
   * Takes the oldest waiting keys while holding the guard, and applies them. Taken before the
   * guard, they could be keys another instance applied meanwhile (its batch ran between this take
   * and this acquire): each would be fetched and written again.
   */
  private async applyGuarded(): Promise<{ outcome: 'applied' | 'busy' | 'failed'; rows: PendingKey[] }> {
    const { tracker, keys } = this.host
    const batchId = randomUUID()
    // the tenant's tracker row is written on first use there
    if (this.tenant !== undefined) await this.host.ensureInTenant?.(this.name, this.tenant)
    const before = await tracker.read(this.name)
    let prepared: PreparedPipeline
    try {
      prepared = await this.host.prepare(this.name)
      await tracker.acquire(this.name, batchId, prepared.pipeline.leaseDuration)
    } catch (error) {
      if ((error as { code?: string }).code === 'PIPELINE_RUNNING') return { outcome: 'busy', rows: [] }
      LOG.error(`${this.label}: event batch not applied: ${(error as Error).message}`)
      return { outcome: 'failed', rows: [] }
    }
    let rows: PendingKey[]
    const status = before?.status === 'failed' ? 'failed' : 'idle'
    try {
      // a failing take (the database) fails the drain, which tries again after a pause
      rows = await keys.take(this.name, this.settings.maxBatch)
      if (!rows.length) return { outcome: 'applied', rows }
      return { outcome: await this.apply(prepared, rows, batchId, before?.enabled === false), rows }
    } finally {
      await tracker.release(this.name, batchId, { status }).catch(e => LOG.error(`${this.label}: event batch could not release the guard: ${(e as Error).message}`))
    }
  }

  private async apply(prepared: PreparedPipeline, rows: PendingKey[], batchId: string, disabled: boolean): Promise<'applied' | 'failed'> {
    const { keys, stats } = this.host
    const span = batchSpan(this.name, rows.length)
    try {
      if (disabled) {
        // a disabled pipeline writes nothing: its keys are dropped and counted as skipped
        await keys.remove(this.name, rows)
        stats.applied(this.name, 0, rows.length, [], this.tenant)
        span.end({ skipped: rows.length })
        return 'applied'
      }
      const outcome = await applyBatch(prepared, rows, batchId, this.host.dispatch, tx => keys.remove(this.name, rows, tx))
      const now = Date.now()
      stats.applied(this.name, outcome.applied, outcome.skipped, rows.map(r => now - Date.parse(r.eventTime)), this.tenant)
      span.end({ applied: outcome.applied, skipped: outcome.skipped, created: outcome.statistics.created, updated: outcome.statistics.updated, deleted: outcome.statistics.deleted })
      if (LOG._debug) LOG.debug(`${this.label}: event batch of ${rows.length} keys applied`, outcome.statistics)
      return 'applied'
    } catch (error) {
      const failure = describeError(error, this.label)
      LOG.error(`${this.label}: event batch of ${rows.length} keys failed [correlation id ${failure.correlationId}]: ${failure.detail}`)
      span.fail(failure.message)
      return 'failed'
    }
  }
}
