/**
 * Key ranges of a deletes sweep (README "Deletes in delta mode", issue 24): with `parallel` > 1
 * the source's keys are listed in `parallel` key ranges at once instead of page after page.
 *
 * The sweep merges each range's source keys with the replica's keys of the same range (both
 * ascending), so a range proves a key missing only against its own complete listing: the ranges
 * are disjoint and cover every key (partitions.ts `rangeBounds`), and the merges of all ranges
 * together decide exactly what one merge over all keys would. Boundaries are sampled as in a
 * partitioned full read (the count, then one row at each k·n/p); requests share the run's slots,
 * governor and 429 back-off, and the process cap.
 */
import cds from '@sap/cds'
import { LOGGER } from '../../constants.js'
import { currentRun } from '../../runs/index.js'
import { boundaryPositions, openingFirst, partitionSender, sampleRanges, type PartitionedRead, type RangePlan } from './partitions.js'
import { segmentPages } from './pager.js'
import type { DataRecord } from '../../pipeline/types.js'

const LOG = cds.log(LOGGER.engine)

export interface KeyRanges {
  /** Range k holds the keys at or after `boundaries[k-1]` and before `boundaries[k]` (source names, in key order). */
  boundaries: DataRecord[]
  /** The keys of range k (key columns only), ascending, in pages. */
  keys(k: number): AsyncIterable<DataRecord[]>
  /** Requests of the ranges not yet sent fail from now on (the sweep failed or ended). */
  close(): void
  /** The most requests that were in flight at once. */
  readonly peak: number
}

/**
 * The key ranges of a source read by `fetchPage` (key columns only, ordered by `order`).
 * One range (no boundaries) when the source is too small to split or reports no count.
 */
export async function keyRanges(read: Pick<PartitionedRead, 'name' | 'top' | 'parallel' | 'fetchPage' | 'retry'> & { order: string[] }): Promise<KeyRanges> {
  const { order, top, name } = read
  const sender = partitionSender(read)
  const head = await sender.send({ order, top: 1, count: true }, false)
  const count = head.count
  const split = count === undefined ? 1 : Math.min(read.parallel, Math.floor(count / top))
  const { boundaries, plans: ranges } = split < 2 ? { boundaries: [], plans: [{}] as RangePlan[] } : await sampleRanges(sender, { order }, boundaryPositions(count!, split, top), 0, count!)
  if (boundaries.length) {
    LOG.info(`pipeline '${name}': deletes sweep lists ${count} source keys in ${ranges.length} ranges of ${order.join(', ')}, up to ${read.parallel} requests at once`)
    currentRun()?.event('partitions', { phase: 'target', rows: count, message: `source keys listed in ${ranges.length} ranges, up to ${read.parallel} requests at once`, details: { ranges: ranges.length, parallel: read.parallel } })
  } else if (count === undefined) LOG.info(`pipeline '${name}': the source reports no count; the deletes sweep lists its keys page after page`)
  return {
    boundaries,
    // a range's start for its first page only (pager.ts); the ranges' first pages go out at once
    keys: k => segmentPages({ order, filter: ranges[k].to, from: ranges[k].from }, top, openingFirst(sender), { exhaustive: true }),
    close: () => sender.stop(),
    get peak() {
      return sender.slots.peak
    },
  }
}
