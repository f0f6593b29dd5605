/**
 * Which key range of a partitioned read (source/partitions.ts) a batch came from, and which
 * ranges were read to their end: a delta's watermark (watermark.ts) only moves as far as the
 * ranges below it are written, never past a row another range has not handed on yet.
 */
import type { DataRecord } from '../pipeline/types.js'

export class RangeLedger {
  private readonly ended = new Set<number>()

  /** Range `index` handed on its last batch (range 0: the first page, read before the split). */
  end(index: number): void {
    this.ended.add(index)
  }

  /** The lowest range not read to its end: every range below it is complete. */
  frontier(): number {
    let index = 0
    while (this.ended.has(index)) index++
    return index
  }
}

const tags = new WeakMap<DataRecord[], { ledger: RangeLedger; index: number }>()

export function tagBatch(batch: DataRecord[], ledger: RangeLedger, index: number): DataRecord[] {
  tags.set(batch, { ledger, index })
  return batch
}

/** The range a batch belongs to; undefined for a batch of a sequential read. */
export function rangeOf(batch: DataRecord[]): { ledger: RangeLedger; index: number } | undefined {
  return tags.get(batch)
}
