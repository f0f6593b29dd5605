/** The progress columns of a run (README "Progress and freshness"). */
import type { RunProgress } from '../tracker/index.js'
import type { ReadProgress } from '../../adapters/types.js'

/**
 * Progress of one run: records read so far, the total the source expects (its count of the run's
 * filter, summed over the read segments as they start; unknown when the source cannot count),
 * the rate since the run started and the time left at that rate.
 */
export class ProgressMeter {
  processed = 0
  readonly read: ReadProgress = {}

  constructor(private readonly since: () => number) {}

  /** The progress columns, counting `pending` records of a batch not yet committed. */
  snapshot(pending = 0, end?: 'completed' | 'failed'): RunProgress {
    const now = Date.now()
    const processed = this.processed + pending
    const rowsPerSecond = round(processed * 1000 / Math.max(1, now - this.since()))
    const expected = this.read.uncounted || this.read.expected === undefined ? null : this.read.expected
    if (end === 'completed') return { processed, expected, percent: 100, rowsPerSecond, remainingMs: 0, eta: new Date(now).toISOString() }
    const percent = expected === null ? null : expected === 0 ? 100 : Math.min(100, round(processed * 100 / expected))
    if (end === 'failed') return { processed, expected, percent, rowsPerSecond, remainingMs: null, eta: null }
    const left = expected === null ? null : Math.max(0, expected - processed)
    const remainingMs = left === null || (left > 0 && rowsPerSecond <= 0) ? null : Math.round(left * 1000 / Math.max(rowsPerSecond, 0.01))
    return { processed, expected, percent, rowsPerSecond, remainingMs, eta: remainingMs === null ? null : new Date(now + remainingMs).toISOString() }
  }
}

function round(value: number): number {
  return Math.round(value * 100) / 100
}
