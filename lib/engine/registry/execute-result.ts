/**
 * What `execute` accepts and returns (part of the package's public typings, lib/index.ts).
 */
import type { RunMode, ScheduleEngine } from '../../constants.js'
import type { RunOutcome } from '../run/types.js'

export interface ExecuteOptions {
  mode?: RunMode
  trigger?: string
  async?: boolean
  /** Run in this tenant's context (multitenancy must be active). */
  tenant?: string
  /**
   * With `async: true`: `spawn` (default) starts the run in this process; `queued` enqueues one
   * run on CAP's persistent task queue (any instance runs it). Ignored for synchronous calls.
   */
  engine?: ScheduleEngine
}

/**
 * What `execute` returns. Four shapes, told apart by `tenants` (an array only for a fan-out over
 * tenants) and `done` (absent when the work was enqueued on CAP's task queue):
 *
 * | shape | when | `runId` | `tenants` | `done` |
 * |---|---|---|---|---|
 * | `StartedRun` | one run in this process (a tenant given, or no fan-out) | the run's ID | — | `Promise<RunOutcome>` |
 * | `EnqueuedRun` | `{ async: true, engine: 'queued' }`, one run | — | — | — |
 * | `FanOutRun` | no tenant while fan-out is active (`multitenancy.fanOutScheduledRuns`), provider context | — | the subscribed tenants | `Promise<FanOutOutcome>` |
 * | `EnqueuedFanOut` | the same with `{ async: true, engine: 'queued' }`: one queued run per tenant | — | the subscribed tenants | — |
 *
 * ```ts
 * const result = await engine.execute('books')
 * if (result.tenants) (await result.done).runs      // fan-out: one entry per tenant
 * else console.log(result.runId, await result.done) // one run
 * ```
 */
export type ExecuteResult = StartedRun | EnqueuedRun | FanOutRun | EnqueuedFanOut

/** One run started in this process: its ID and outcome are known. */
export interface StartedRun {
  name: string
  runId: string
  /** Settles when the run ends: resolves with the outcome, rejects with the failure (already settled unless `async: true`). */
  done: Promise<RunOutcome>
  tenants?: undefined
}

/** One run enqueued on CAP's task queue: only the pipeline name is known; the outcome lands in PipelineRuns. */
export interface EnqueuedRun {
  name: string
  runId?: undefined
  done?: undefined
  tenants?: undefined
}

/** One run per subscribed tenant (`parallel` at once); there is no single run ID. */
export interface FanOutRun {
  name: string
  /** The subscribed tenants the pipeline runs for. */
  tenants: string[]
  /** Settles once all tenants' runs ended: the summed statistics and each tenant's outcome, or rejects naming the failed tenants. */
  done: Promise<FanOutOutcome>
  runId?: undefined
}

/** One queued run enqueued per subscribed tenant. */
export interface EnqueuedFanOut {
  name: string
  tenants: string[]
  runId?: undefined
  done?: undefined
}

/** Options that start the run in this process (no queued engine). */
export type InProcessExecuteOptions = ExecuteOptions & { engine?: 'spawn' }
/** Options that enqueue the run on CAP's task queue. */
export type QueuedExecuteOptions = ExecuteOptions & { async: true; engine: 'queued' }

/** The outcome of a fan-out: summed statistics, one entry per tenant; `runId` is '' (no single run). */
export interface FanOutOutcome extends RunOutcome {
  runId: ''
  runs: Array<{ tenant: string; runId?: string; status: 'completed' | 'failed' | 'skipped'; statistics?: RunOutcome['statistics']; error?: string }>
}
