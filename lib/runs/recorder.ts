/**
 * What a run records about itself (README "Run events"): its event log and where it failed. The
 * recorder of the run under way is reachable from anywhere in the run's async context
 * (`currentRun()`), so the pager, retries, the sweep and the drift check add their events without
 * being handed it through every signature.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import { RunEventLog, type RunEventFields, type RunEventKind, type RunPhase } from './log.js'

const scope = new AsyncLocalStorage<RunRecorder>()

interface Counts { created: number; updated: number; deleted: number; unchanged?: number; skipped?: number }

/** Whole milliseconds since a `performance.now()` reading. */
export const elapsed = (since: number): number => Math.round(performance.now() - since)

/** The recorder of the run in whose async context the caller runs, if any. */
export function currentRun(): RunRecorder | undefined {
  return scope.getStore()
}

export class RunRecorder {
  /** undefined: run events are switched off (`runEvents: false`); failures are still located. */
  readonly log?: RunEventLog
  /** The part of the run under way: where an error no part claimed happened. */
  private phase: RunPhase = 'guard'
  private readonly claimed = new WeakMap<object, RunPhase>()
  private firstClaim?: RunPhase

  constructor(max: number) {
    if (max > 0) this.log = new RunEventLog(max)
  }

  /** Runs `fn` (and everything it starts) with this recorder as `currentRun()`. */
  within<T>(fn: () => T): T {
    return scope.run(this, fn)
  }

  event(kind: RunEventKind, fields?: RunEventFields): void {
    this.log?.add(kind, fields)
  }

  /** The run starts (before it takes the guard). */
  started(request: { mode: string; trigger: string; replay?: boolean }, readAhead: boolean): void {
    this.event('start', { message: `${request.replay ? 'replay of rejects' : `${request.mode} run`}, trigger ${request.trigger}${readAhead ? ', first page requested before the guard' : ''}` })
  }

  /** The guard holds: how long taking it took, and whether it took over from a dead run. */
  guardTaken(since: number, staleRun: string | null, leaseMs: number): void {
    this.event('lease', {
      phase: 'guard', durationMs: elapsed(since),
      message: staleRun ? `guard taken over from run ${staleRun}, whose lease had expired; lease ${leaseMs} ms` : `guard taken; lease ${leaseMs} ms`,
    })
  }

  /** A batch committed (or, in one transaction, written): its records and what they changed. */
  batchWritten(index: number, rows: number, since: number, before: Counts, after: Counts): void {
    if (!this.log) return
    const details: Record<string, number> = {}
    for (const key of ['created', 'updated', 'unchanged', 'deleted', 'skipped'] as const) {
      const delta = (after[key] ?? 0) - (before[key] ?? 0)
      if (delta) details[key] = delta
    }
    this.event('batch', { phase: 'target', attempt: index, rows, durationMs: elapsed(since), details })
  }

  /**
   * Rows a full or partial refresh deleted before writing (its target emptied, or its slice) where
   * no count by key follows: a `sweep` event, so the events add up to the run's counts.
   */
  cleared(what: 'full refresh' | 'partial refresh', deleted: number, since: number): void {
    if (!deleted) return
    this.event('sweep', { phase: 'target', rows: deleted, durationMs: elapsed(since), message: `${what}: deleted ${deleted} rows before writing the source's rows again`, details: { deleted } })
  }

  /**
   * A full refresh counted by key at its end (`reconciled`) after its batches reported `batches`:
   * the rows gone from the source, and any figure the batches could not count by key (a key
   * written twice, a key type bound differently), as one `sweep` event carrying the difference —
   * the batches and it add up to the run's counts. Nothing when there is no difference.
   */
  refreshReconciled(batches: Counts, reconciled: Counts, since: number): void {
    const details: Record<string, number> = {}
    for (const key of ['created', 'updated', 'unchanged', 'deleted'] as const) {
      const delta = (reconciled[key] ?? 0) - (batches[key] ?? 0)
      if (delta) details[key] = delta
    }
    if (!Object.keys(details).length) return
    const { deleted = 0, ...corrected } = details
    const parts = [`full refresh counted by key: ${reconciled.deleted} rows gone from the source deleted`]
    if (Object.keys(corrected).length) parts.push(`batch figures corrected by ${Object.entries(corrected).map(([key, delta]) => `${key} ${delta > 0 ? '+' : ''}${delta}`).join(', ')}`)
    this.event('sweep', { phase: 'target', rows: deleted, durationMs: elapsed(since), message: parts.join('; '), details })
  }

  /** The run failed: where, recorded as its first error event; returns the phase. */
  failed(error: unknown, shown: { code?: string; status?: number; message: string }): RunPhase {
    const phase = this.failedAt(error)
    this.event('error', { phase, httpStatus: shown.status, message: shown.code ? `${shown.code}: ${shown.message}` : shown.message })
    return phase
  }

  /** The run ended: the records set aside, then the end event (after a roll-up, if any). */
  ended(status: 'completed' | 'failed', durationMs: number, processed: number, statistics: Counts): void {
    if (!this.log) return
    if (statistics.skipped) this.event('rejects', { phase: 'mapping', rows: statistics.skipped, message: `${statistics.skipped} records set aside (onError: skip)` })
    this.log.end({ rows: processed, durationMs, message: status, details: { ...statistics } })
  }

  /** The run enters a part: errors nothing claimed count as failed there. */
  enter(phase: RunPhase): void {
    this.phase = phase
  }

  /** Errors of `fn` count as failed in `phase` (the innermost claim wins). */
  async during<T>(phase: RunPhase, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn()
    } catch (error) {
      this.claim(error, phase)
      throw error
    }
  }

  /** The records of `stream`; its errors count as failed in `phase`. */
  async *claimStream<T>(stream: AsyncIterable<T>, phase: RunPhase): AsyncGenerator<T> {
    try {
      yield* stream
    } catch (error) {
      this.claim(error, phase)
      throw error
    }
  }

  /** Where the run failed with `error`. */
  failedAt(error: unknown): RunPhase {
    const claimed = error && typeof error === 'object' ? this.claimed.get(error) : undefined
    if (claimed) return claimed
    if ((error as { code?: unknown } | undefined)?.code === 'LEASE_EXPIRED') return 'guard'
    return this.firstClaim ?? this.phase
  }

  private claim(error: unknown, phase: RunPhase): void {
    this.firstClaim ??= phase
    if (error && typeof error === 'object' && !this.claimed.has(error)) this.claimed.set(error, phase)
  }
}
