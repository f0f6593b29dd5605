/**
 * Keys in the order databases keep them: the comparator of key tuples (numeric key types as numbers,
 * beyond 2^53 too; other types as text) and the cursor that reads one side's keys as key-only keyset
 * pages, checked to come in that order. The sweep (index.ts) merges two of them.
 */
import { PipelineError } from '../../pipeline/errors.js'
import type { DataRecord } from '../../pipeline/types.js'
import { builtinType, type CsnEntity } from '../../model/csn.js'

export type KeyTuple = unknown[]
/** A key range of a partitioned sweep: from (inclusive) to (exclusive), open where undefined. */
export interface KeyBounds { from?: KeyTuple; to?: KeyTuple }
export type Compare = (a: KeyTuple, b: KeyTuple) => number

const NUMERIC_TYPES = new Set(['cds.Integer', 'cds.Int16', 'cds.Int32', 'cds.Int64', 'cds.UInt8', 'cds.Integer64', 'cds.Decimal', 'cds.Double', 'cds.DecimalFloat'])

/**
 * Orders key tuples as databases order them: numeric key types numerically (integers beyond
 * 2^53 and numbers sent as text exactly, via BigInt), other types by their text.
 */
export function comparator(columns: string[], entity: CsnEntity | undefined): Compare {
  const numeric = columns.map(c => NUMERIC_TYPES.has(builtinType(entity?.elements[c]) ?? ''))
  return (a, b) => {
    for (let i = 0; i < a.length; i++) {
      const order = numeric[i] ? compareNumbers(a[i], b[i]) : compareText(a[i], b[i])
      if (order) return order
    }
    return 0
  }
}

const INTEGER = /^-?\d+$/

function compareNumbers(a: unknown, b: unknown): number {
  if (a === null || a === undefined || b === null || b === undefined) return compareText(a, b)
  const [x, y] = [String(a), String(b)]
  if (INTEGER.test(x) && INTEGER.test(y)) {
    const [p, q] = [BigInt(x), BigInt(y)]
    return p === q ? 0 : p < q ? -1 : 1
  }
  const [p, q] = [Number(x), Number(y)]
  return p === q ? 0 : p < q ? -1 : 1
}

/** Nulls first (as SQLite and CAP's ascending order put them), then text by code points. */
function compareText(a: unknown, b: unknown): number {
  const [x, y] = [a ?? null, b ?? null]
  if (x === null || y === null) return x === y ? 0 : x === null ? -1 : 1
  const [s, t] = [String(x), String(y)]
  return s === t ? 0 : s < t ? -1 : 1
}

/** One side of the merge: the current key of a stream of key pages, checked to ascend. */
export class KeyCursor {
  count = 0
  private page: DataRecord[] = []
  private index = 0
  private ended = false
  private tuple?: KeyTuple
  private previous?: KeyTuple

  constructor(
    private readonly pages: AsyncIterator<DataRecord[]>,
    private readonly columns: string[],
    private readonly compare: Compare,
    private readonly side: 'source' | 'target',
    private readonly bounds?: KeyBounds,
  ) {}

  /** The current key, or undefined at the end of the stream. */
  async current(): Promise<KeyTuple | undefined> {
    if (this.tuple) return this.tuple
    while (this.index >= this.page.length) {
      if (this.ended) return undefined
      const next = await this.pages.next()
      if (next.done) {
        this.ended = true
        return undefined
      }
      this.page = next.value
      this.index = 0
    }
    const record = this.page[this.index]
    const tuple = this.columns.map(c => record[c] ?? null)
    if (this.previous && this.compare(this.previous, tuple) > 0)
      throw new PipelineError('SOURCE_FAILED',
        `deletes sweep stopped: the ${this.side} returned key (${tuple.join(', ')}) after (${this.previous.join(', ')}), not in ascending key order` +
        (this.side === 'source' ? ' (a REST key listing must list keys in ascending order)' : ' (the database collation orders keys differently)') + '; nothing was deleted')
    // each side filtered the range in its own database's order: a key outside it by ours means the two
    // order keys differently (collations), and the merge could take a key present on both sides for missing
    const { from, to } = this.bounds ?? {}
    if ((from && this.compare(tuple, from) < 0) || (to && this.compare(tuple, to) >= 0))
      throw new PipelineError('SOURCE_FAILED',
        `deletes sweep stopped: the ${this.side} returned key (${tuple.join(', ')}) outside its key range ` +
        `[${from ? `(${from.join(', ')})` : 'start'}, ${to ? `(${to.join(', ')})` : 'end'}): source and replica order keys differently ` +
        '(database collations); nothing was deleted — use parallel: 1 for this pipeline')
    this.tuple = tuple
    return tuple
  }

  advance(): void {
    this.previous = this.tuple
    this.tuple = undefined
    this.index++
    this.count++
  }

  async close(): Promise<void> {
    if (!this.ended) await this.pages.return?.().catch(() => undefined)
  }
}
