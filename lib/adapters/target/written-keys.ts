/**
 * The keys a full refresh has written since its truncate, as disjoint key intervals (one per
 * batch, overlapping ones joined): a batch whose keys lie outside all of them cannot meet an
 * existing row and is a plain INSERT (db.ts `onlyNewKeys`). A sequential keyset read delivers
 * ascending batches; a partitioned read (source/partitions.ts) delivers several ascending runs
 * interleaved — a single "highest key so far" would send every batch of a lower range down the
 * counted UPSERT path.
 */
export type KeyTuple = unknown[]
export type CompareKeys = (a: KeyTuple, b: KeyTuple) => number

export class WrittenKeys {
  /** Disjoint intervals sorted by their low end. */
  private readonly intervals: Array<{ low: KeyTuple; high: KeyTuple }> = []

  constructor(private readonly compare: CompareKeys) {}

  /** Records the batch's interval; true when it overlapped none written before (every key new). */
  add(low: KeyTuple, high: KeyTuple): boolean {
    const { intervals, compare } = this
    // the first interval whose high end is not below `low`: the only candidates for an overlap start there
    let lo = 0
    let hi = intervals.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (compare(intervals[mid].high, low) < 0) lo = mid + 1
      else hi = mid
    }
    let end = lo
    while (end < intervals.length && compare(intervals[end].low, high) <= 0) end++
    if (end === lo) {
      intervals.splice(lo, 0, { low, high })
      return true
    }
    // overlaps: one interval covering them all (keys in between count as written: only ever the safe path)
    const joined = { low: compare(intervals[lo].low, low) < 0 ? intervals[lo].low : low, high: compare(intervals[end - 1].high, high) > 0 ? intervals[end - 1].high : high }
    intervals.splice(lo, end - lo, joined)
    return false
  }
}
