/**
 * Request slots of partitioned reads (README "Performance"): at most `parallel` page requests
 * of one run in flight, at most `maxParallelReads` over all runs and tenants of the process, and
 * one back-off shared by a run's partitions: a provider answering 429 (or with `Retry-After`)
 * slows every partition of the run down, not only the one that was told.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import cds from '@sap/cds'
import { DEFAULTS, LOGGER, SERVICE_NAME } from '../../constants.js'

const LOG = cds.log(LOGGER.engine)
const MAX_SETTING = `cds.requires['${SERVICE_NAME}'].maxParallelReads`

export class RequestSlots {
  private active = 0
  private readonly waiting: Array<() => void> = []
  /** No request of these slots is sent before this time (ms since the epoch). */
  private pausedUntil = 0
  /** The most requests that were in flight at once (for tests and the run's log line). */
  peak = 0

  constructor(private readonly max: () => number) {}

  /**
   * Runs `send` once a slot is free and any back-off is over; frees the slot when it settles.
   * `max`: this request may go out while fewer than that many are in flight (instead of the slots' own limit).
   */
  async run<T>(send: () => Promise<T>, max?: number): Promise<T> {
    await this.acquire(max)
    try {
      return await send()
    } finally {
      this.release()
    }
  }

  /** Holds back every request of these slots for `ms` from now (a 429's `Retry-After`). */
  backOff(ms: number): void {
    this.pausedUntil = Math.max(this.pausedUntil, Date.now() + ms)
  }

  private async acquire(max?: number): Promise<void> {
    for (;;) {
      const wait = this.pausedUntil - Date.now()
      if (wait > 0) await new Promise(resolve => setTimeout(resolve, wait))
      if (this.active < (max ?? this.max())) break
      await new Promise<void>(resolve => this.waiting.push(resolve))
    }
    this.active++
    this.peak = Math.max(this.peak, this.active)
  }

  private release(): void {
    this.active--
    this.waiting.shift()?.()
  }
}

let warned = false

/** `maxParallelReads`: partitioned page requests in flight per process (default 16). */
export function maxParallelReads(): number {
  const value = (cds.env.requires as Record<string, { maxParallelReads?: unknown } | undefined>)[SERVICE_NAME]?.maxParallelReads
  if (value === undefined || value === null) return DEFAULTS.maxParallelReads
  if (Number.isInteger(value) && (value as number) >= 1) return value as number
  if (!warned) LOG.warn(`${MAX_SETTING} '${String(value)}' is not a positive integer: the default ${DEFAULTS.maxParallelReads} applies`)
  warned = true
  return DEFAULTS.maxParallelReads
}

/** The slots every partitioned read of this process shares. */
export const processSlots = new RequestSlots(maxParallelReads)

/** Set while a request holds a slot of the process. */
const holding = new AsyncLocalStorage<true>()

/**
 * Runs `send` in a slot of the process. A read started while its caller holds one (a delegated
 * read under a partitioned read of a federated entity) runs in the caller's slot: nested reads
 * never wait for slots their own callers hold.
 */
export function inProcessSlot<T>(send: () => Promise<T>): Promise<T> {
  if (holding.getStore()) return send()
  return processSlots.run(() => holding.run(true, send))
}

/**
 * Runs independent reads at once, each in a slot of the process (`maxParallelReads`, shared with
 * partitioned reads): the key-list chunks of a delegated read. Results in the order of `tasks`.
 */
export async function inProcessSlots<T>(tasks: Array<() => Promise<T>>): Promise<T[]> {
  if (!holding.getStore()) return Promise.all(tasks.map(task => inProcessSlot(task)))
  // nested in a caller's slot: bounded on their own, so one slot never sends a whole key list at once
  const nested = new RequestSlots(() => NESTED_READS)
  return Promise.all(tasks.map(task => nested.run(task)))
}

/** Reads at once below a caller that holds a slot of the process. */
const NESTED_READS = 4
