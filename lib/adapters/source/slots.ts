/**
 * Request slots of partitioned reads (README "Performance"): at most `parallel` page requests
 * of one run in flight, at most `maxParallelReads` over all runs and tenants of the process, and
 * one back-off shared by a run's partitions: a provider answering 429 (or with `Retry-After`)
 * slows every partition of the run down, not only the one that was told.
 */
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

  /** Runs `send` once a slot is free and any back-off is over; frees the slot when it settles. */
  async run<T>(send: () => Promise<T>): Promise<T> {
    await this.acquire()
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

  private async acquire(): Promise<void> {
    for (;;) {
      const wait = this.pausedUntil - Date.now()
      if (wait > 0) await new Promise(resolve => setTimeout(resolve, wait))
      if (this.active < this.max()) break
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
