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
/** Waits before a failed micro-batch (or a failing key) is tried again (doubling up to the maximum). */
const FAILED_FIRST = 1000
const FAILED_MAX = 30_000
/** Attempts of a failing micro-batch or key (about 95 s with the pauses) before its keys are dropped. */
const MAX_ATTEMPTS = 8
/** Failing keys held back for retries of their own, at most; beyond that a failing batch waits as a whole. */
const MAX_HELD = 100

/** A key that failed while the others of its batch applied: retried on its own, at its own pause. */
interface Held {
  attempts: number
  retryAt: number
}

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
  /** When the scheduled drain starts (ms). */
  private timerAt = 0
  private draining?: Promise<void>
  private again = false
  /** When the first key arrived during the drain under way. */
  private waitingSince = 0
  /** When the window of the oldest waiting key ends, as the last drain found it (0: nothing to wait for). */
  private dueAt = 0
  private stopped = false
  private failed = FAILED_FIRST
  private attempts = 0
  /** Failing keys (recordKey) left out of micro-batches until their retry. */
  private readonly held = new Map<string, Held>()

  /** How logs name the pipeline (and tenant). */
  private readonly label: string

  constructor(readonly name: string, private readonly settings: ResolvedEvents, private readonly host: BatcherHost, readonly tenant?: string) {
    this.label = labelOf(name, tenant)
  }

  /** Runs a step in the batcher's tenant (its database), or as it is without one. */
  private within<T>(fn: () => Promise<T>): Promise<T> {
    return withinTenant(this.tenant, fn)
  }

  /** Keys were stored: drain after the window (a drain under way goes on with them); an earlier drain already scheduled stays. */
  notify(delay = this.settings.window): void {
    if (this.stopped) return
    if (this.draining) {
      // the window of these keys starts now, not when the drain ends: under a steady stream a
      // micro-batch follows the previous one after max(window, drain), not window + drain
      if (!this.again) this.waitingSince = Date.now()
      this.again = true
      return
    }
    const at = Date.now() + delay
    if (this.timer) {
      if (this.timerAt <= at) return
      clearTimeout(this.timer)
    }
    this.timerAt = at
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
        // the oldest waiting key's window (another instance's drain took the keys before it), a held key's retry
        const next = Math.min(this.dueAt || Infinity, ...[...this.held.values()].map(h => h.retryAt))
        if (next !== Infinity) this.notify(Math.max(0, next - Date.now()))
      })
    }, delay)
    this.timer.unref?.()
  }

  /** Resolves once nothing is scheduled or under way (tests, shutdown); a held key's retry is scheduled too. */
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

  /** Keys whose retry is due. */
  private dueHeld(): string[] {
    const now = Date.now()
    return [...this.held].filter(([, h]) => h.retryAt <= now).map(([recordKey]) => recordKey)
  }

  /**
   * Applies waiting keys until none is due. A micro-batch starts once the oldest waiting key has
   * waited its window since this instance received it (or first saw it) — whichever instance's
   * drain finds that first takes the keys, and the others find the next oldest key younger than the
   * window and wait for it: several instances form the micro-batches one instance would (never one
   * per instance). Keys a previous process left wait one window from when the drain first sees them.
   */
  private async drain(): Promise<void> {
    let busy = BUSY_FIRST
    for (;;) {
      if (this.stopped) return
      this.dueAt = 0
      const retry = this.dueHeld()
      if (!retry.length) {
        const oldest = await this.within(() => this.host.keys.oldest(this.name, new Set(this.held.keys())))
        if (!oldest) return
        const due = this.host.keys.receivedAt(this.name, oldest.recordKey, this.tenant) + this.settings.window
        if (due > Date.now()) {
          this.dueAt = due
          return
        }
      }
      const { outcome, rows } = await this.within(() => this.applyGuarded(retry.length ? retry : undefined))
      if (outcome === 'busy') {
        // a run (or another instance's micro-batch) holds the pipeline: its keys wait for it to end
        await pause(busy)
        busy = Math.min(BUSY_MAX, busy * 2)
        continue
      }
      busy = BUSY_FIRST
      if (outcome === 'failed') {
        // the whole batch failed (the source or the database, not a key), or it could not be prepared or guarded (no rows)
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
      // held keys retried: now the others; a full batch: a backlog, go on at once; otherwise keys arriving meanwhile wait for a new window
      if (!retry.length && rows.length < this.settings.maxBatch) return
    }
  }

  /**
   * Takes the oldest waiting keys (or the held keys `retry`) while holding the guard, and applies
   * them. Taken before the guard, they could be keys another instance applied meanwhile (its batch
   * ran between this take and this acquire): each would be fetched and written again.
   */
  private async applyGuarded(retry?: string[]): Promise<{ outcome: 'applied' | 'busy' | 'failed'; rows: PendingKey[] }> {
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
    const status = before?.status === 'failed' ? 'failed' : 'idle'
    try {
      // a failing take (the database) fails the drain, which tries again after a pause
      const rows = retry ? await keys.takeKeys(this.name, retry) : await keys.take(this.name, this.settings.maxBatch, new Set(this.held.keys()))
      if (retry) {
        // applied or dropped by another instance meanwhile
        const waiting = new Set(rows.map(row => row.recordKey))
        for (const recordKey of retry) if (!waiting.has(recordKey)) this.held.delete(recordKey)
      }
      if (!rows.length) return { outcome: 'applied', rows }
      const { outcome, failed } = await this.applyIsolating(prepared, rows, batchId, before?.enabled === false, Boolean(retry))
      return { outcome, rows: outcome === 'failed' ? failed : rows }
    } finally {
      await tracker.release(this.name, batchId, { status }).catch(e => LOG.error(`${this.label}: event batch could not release the guard: ${(e as Error).message}`))
    }
  }

  /**
   * Applies a micro-batch; when it fails, its keys apart, so one key the source (or a handler, or
   * the target) fails for never holds the others back: one key alone, then another — when both
   * fail as the batch did, the source or the database fails, not a key, and the batch waits as a
   * whole (`failed`) — otherwise the rest in halves, each failing half halved again, down to the
   * failing keys (a bounded number of attempts). The failing keys are held back and retried on their
   * own at a growing pause; after MAX_ATTEMPTS each is dropped, counted as skipped.
   */
  private async applyIsolating(prepared: PreparedPipeline, rows: PendingKey[], batchId: string, disabled: boolean, retrying: boolean): Promise<{ outcome: 'applied' | 'failed'; failed: PendingKey[] }> {
    const error = await this.apply(prepared, rows, batchId, disabled)
    if (error === undefined) {
      for (const row of rows) this.held.delete(row.recordKey)
      return { outcome: 'applied', failed: [] }
    }
    const failures = new Map<PendingKey, unknown>()
    if (rows.length === 1) failures.set(rows[0], error)
    else {
      const head = rows[0]
      const tail = rows[rows.length - 1]
      const headError = await this.apply(prepared, [head], randomUUID(), disabled)
      const tailError = headError === undefined ? undefined : await this.apply(prepared, [tail], randomUUID(), disabled)
      if (headError !== undefined && tailError !== undefined && !retrying) {
        const failure = describeError(error, this.label)
        LOG.error(`${this.label}: event batch of ${rows.length} keys failed [correlation id ${failure.correlationId}]: ${failure.detail}`)
        return { outcome: 'failed', failed: rows }
      }
      if (headError !== undefined && tailError !== undefined) for (const row of rows) failures.set(row, error) // held keys: each counts its attempt
      else {
        if (headError !== undefined) failures.set(head, headError)
        const rest = headError === undefined ? rows.slice(1) : rows.slice(1, -1)
        // bounded: a few failing keys cost about 2·log2(n) attempts each
        const budget = { failures: 4 * Math.ceil(Math.log2(rows.length + 1)) + 4 }
        await this.bisect(prepared, rest, disabled, budget, failures)
      }
    }
    const failed = [...failures.keys()]
    const fresh = failed.filter(row => !this.held.has(row.recordKey)).length
    if (!retrying && this.held.size + fresh > MAX_HELD) {
      // too many failing keys to hold apart: they wait as one batch
      LOG.error(`${this.label}: an event batch of ${rows.length} keys failed for ${failed.length} of them (${rows.length - failed.length} applied); they are tried again as a batch`)
      return { outcome: 'failed', failed }
    }
    const applied = rows.length - failed.length
    for (const [row, cause] of failures) await this.hold(row, cause, applied)
    return { outcome: 'applied', failed }
  }

  /** Applies `part`; a failing part in halves, down to the failing keys (in `failures`), while the budget lasts. */
  private async bisect(prepared: PreparedPipeline, part: PendingKey[], disabled: boolean, budget: { failures: number }, failures: Map<PendingKey, unknown>): Promise<void> {
    if (!part.length) return
    const error = budget.failures > 0 ? await this.apply(prepared, part, randomUUID(), disabled) : new Error('not tried: too many failing keys in one batch')
    if (error === undefined) return
    budget.failures--
    if (part.length === 1 || budget.failures <= 0) {
      for (const row of part) failures.set(row, error)
      return
    }
    const middle = Math.ceil(part.length / 2)
    await this.bisect(prepared, part.slice(0, middle), disabled, budget, failures)
    await this.bisect(prepared, part.slice(middle), disabled, budget, failures)
  }

  /** A key failed: retried on its own after a pause growing per attempt; after MAX_ATTEMPTS dropped, counted as skipped. */
  private async hold(row: PendingKey, error: unknown, applied: number): Promise<void> {
    const held = this.held.get(row.recordKey) ?? { attempts: 0, retryAt: 0 }
    held.attempts++
    const failure = describeError(error, this.label)
    const others = applied ? `; the other ${applied} keys of its batch were applied` : ''
    if (held.attempts >= MAX_ATTEMPTS) {
      this.held.delete(row.recordKey)
      LOG.error(`${this.label}: an event batch failed for key ${row.recordKey} ${held.attempts} times; the key is dropped (counted as skipped; the next delta run catches its change) [correlation id ${failure.correlationId}]: ${failure.detail}`)
      await this.host.keys.remove(this.name, [row]).catch(e => LOG.error(`${this.label}: could not drop the failed key ${row.recordKey}: ${(e as Error).message}`))
      this.host.stats.applied(this.name, 0, 1, [], this.tenant)
      return
    }
    const wait = Math.min(FAILED_MAX, FAILED_FIRST * 2 ** (held.attempts - 1))
    held.retryAt = Date.now() + wait
    this.held.set(row.recordKey, held)
    LOG.error(`${this.label}: an event batch failed for key ${row.recordKey} (attempt ${held.attempts} of ${MAX_ATTEMPTS}${others}); the key is tried again on its own in ${wait / 1000} s [correlation id ${failure.correlationId}]: ${failure.detail}`)
  }

  /** Applies one micro-batch (or part of one); the error when it failed (nothing of it written). */
  private async apply(prepared: PreparedPipeline, rows: PendingKey[], batchId: string, disabled: boolean): Promise<unknown> {
    const { keys, stats } = this.host
    const span = batchSpan(this.name, rows.length)
    try {
      if (disabled) {
        // a disabled pipeline writes nothing: its keys are dropped and counted as skipped
        await keys.remove(this.name, rows)
        stats.applied(this.name, 0, rows.length, [], this.tenant)
        span.end({ skipped: rows.length })
        return undefined
      }
      const outcome = await applyBatch(prepared, rows, batchId, this.host.dispatch, tx => keys.remove(this.name, rows, tx))
      const now = Date.now()
      stats.applied(this.name, outcome.applied, outcome.skipped, rows.map(r => now - Date.parse(r.eventTime)), this.tenant)
      span.end({ applied: outcome.applied, skipped: outcome.skipped, created: outcome.statistics.created, updated: outcome.statistics.updated, deleted: outcome.statistics.deleted })
      if (LOG._debug) LOG.debug(`${this.label}: event batch of ${rows.length} keys applied`, outcome.statistics)
      return undefined
    } catch (error) {
      span.fail(describeError(error, this.label).message)
      if (LOG._debug) LOG.debug(`${this.label}: event batch of ${rows.length} keys not applied: ${(error as Error).message}`)
      return error ?? new Error('event batch failed')
    }
  }
}
