/**
 * How many page requests a partitioned read keeps in flight (README "Performance", issue 24).
 * `parallel` is a ceiling, not a promise: the read starts at a quarter of it and doubles while the
 * provider answers (almost) as fast with more requests at once as with fewer. Once the median
 * page time at a level is nearly proportional to the extra requests (1.75 × the median at half
 * the level when doubling, see SATURATED) the provider or the consumer is saturated — a
 * single-threaded provider, a CPU-bound database, the consumer's own writes —, more requests only
 * queue, and the read goes back to the lower level for the rest of the run and says so.
 *
 * Each level is judged by the median of its own pages (one round trip's worth, at least 4), sent
 * at that level and answered without error: retries and 429 back-offs are not page times.
 */
const MIN_WINDOW = 4

/**
 * How close to proportional the page time must grow with the level before the read steps back:
 * 0.75 of the way (1.75 × per doubling, i.e. less than 1/7 more pages per second). A provider
 * serving one request at a time behind a round trip gains until its queue alone outlasts the round
 * trip, and near that point doubling still adds 15–25 % throughput at 1.5–1.7 × the page time (1M
 * rows at 50 ms: stepping back there from 4 to 2 took the copy from 16 s to 38 s).
 */
const SATURATED = 0.75

export interface LevelChange {
  from: number
  to: number
  /** Median page time (ms) at `from` and at `to` (`to`'s measured before). */
  fromMs: number
  toMs: number
}

export class Concurrency {
  /** Requests allowed in flight now. */
  level: number
  /** Set once the read went back to a lower level: it never climbs again. */
  reduced = false
  private readonly medians = new Map<number, number>()
  private readonly previous = new Map<number, number>()
  private samples: number[] = []

  constructor(private readonly ceiling: number, private readonly onReduce: (change: LevelChange) => void = () => undefined) {
    this.level = Math.max(1, Math.ceil(ceiling / 4))
  }

  /**
   * A page request sent while `level` requests were allowed took `ms`. Without `ms`: a request
   * answered at that level whose time says nothing about a page (a range's first page, sent beside
   * every other range's, or counting its range): not judged, and no part of the window. A window is
   * a round trip's worth of page times, at least MIN_WINDOW: the read steps back for the rest of
   * the run on its median, so one slow moment (a garbage collection, a write holding the event loop)
   * must not decide it.
   */
  observe(level: number, ms?: number): void {
    if (level !== this.level || ms === undefined) return // sent before the last change: says nothing about this level
    this.samples.push(ms)
    if (this.samples.length < Math.max(MIN_WINDOW, level)) return
    const samples = this.samples
    this.samples = []
    const ms50 = median(samples)
    const lower = this.previous.get(level)
    const lowerMs = lower === undefined ? undefined : this.medians.get(lower)
    if (lower !== undefined && lowerMs !== undefined && ms50 > lowerMs * (1 + (level / lower - 1) * SATURATED)) {
      this.level = lower
      this.reduced = true
      this.onReduce({ from: level, to: lower, fromMs: ms50, toMs: lowerMs })
      return
    }
    if (!this.medians.has(level)) this.medians.set(level, ms50)
    this.climb(level)
  }

  private climb(level: number): void {
    if (this.reduced || level >= this.ceiling) return
    const next = Math.min(this.ceiling, level * 2)
    this.previous.set(next, level)
    this.level = next
  }
}

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}
