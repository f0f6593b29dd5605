/**
 * How many page requests a partitioned read keeps in flight (README "Performance", issue 24).
 * `parallel` is a ceiling, not a promise: the read starts at a quarter of it and doubles while the
 * provider answers (almost) as fast with more requests at once as with fewer. Once the median
 * page time at a level is more than halfway to proportional to the extra requests (1.5 × the
 * median at half the level when doubling) the provider or the consumer is saturated — a
 * single-threaded provider, a CPU-bound database, the consumer's own writes —, more requests only
 * queue, and the read goes back to the lower level for the rest of the run and says so.
 *
 * Each level is judged by the median of its own pages (one round trip's worth, at least 3), sent
 * at that level and answered without error: retries and 429 back-offs are not page times.
 */
const MIN_WINDOW = 3

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
  private unjudged = 0

  constructor(private readonly ceiling: number, private readonly onReduce: (change: LevelChange) => void = () => undefined) {
    this.level = Math.max(1, Math.ceil(ceiling / 4))
  }

  /**
   * A page request sent while `level` requests were allowed took `ms`. Without `ms`: a request
   * answered at that level whose time says nothing about a page (a range's first page, which also
   * counts the range): it fills the level's window, so the read climbs as fast, but is not judged
   * (a window still needs one page time).
   */
  observe(level: number, ms?: number): void {
    if (level !== this.level) return // sent before the last change: says nothing about this level
    if (ms === undefined) this.unjudged++
    else this.samples.push(ms)
    // a window holds at least one page time: the next level is judged against this one
    if (!this.samples.length || this.samples.length + this.unjudged < Math.max(MIN_WINDOW, level)) return
    const samples = this.samples
    this.samples = []
    this.unjudged = 0
    const ms50 = median(samples)
    const lower = this.previous.get(level)
    const lowerMs = lower === undefined ? undefined : this.medians.get(lower)
    if (lower !== undefined && lowerMs !== undefined && ms50 > lowerMs * (1 + (level / lower - 1) / 2)) {
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
