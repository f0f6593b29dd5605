/**
 * Partitioned full reads (README "Performance", issue 24): over a real network a keyset read
 * costs pages × latency, as each page is asked for only once the previous one arrived. A full
 * read of a source with one key column is therefore split into `parallel` key ranges read at
 * once, their pages handed to the run's one writer as they arrive (the write path, and with it
 * a full refresh's one transaction, stays as it is).
 *
 * Boundaries come from the source: the first page asks for the count (as every read does);
 * with n rows and p ranges, the keys at positions k·n/p (one row each, `$skip` / CQN offset) are
 * the boundaries. Ranges are disjoint and cover every key after the first page whatever the
 * source answered (a row belongs to the range of the highest boundary at or below its key), so
 * rows changed while sampling are read once, never twice. A range pages on with keyset
 * continuation like a sequential read.
 *
 * Every page request of a range is retried on its own (retry.ts); the run fails once one range
 * gives up, and its other ranges stop sending. At most `parallel` requests of a run are in flight
 * (slots.ts), fewer while more would only queue (governor.ts), at most `maxParallelReads` of the
 * process; a 429 holds back all ranges of the run.
 */
import { performance } from 'node:perf_hooks'
import cds from '@sap/cds'
import { LOGGER } from '../../constants.js'
import { after, and, before, notBefore, type Predicate } from '../predicate.js'
import { RangeLedger, tagBatch } from '../ranges.js'
import { retryAfterOf, statusOf, withRetry } from '../retry.js'
import { currentRun } from '../../runs/index.js'
import { countSegment, pageRead, segmentPages, type PageRequest, type PageResult } from './pager.js'
import { RequestSlots, inProcessSlot } from './slots.js'
import { Concurrency } from './governor.js'
import { underway, watchRequests } from './on-the-wire.js'
import { inSourceOrder } from './boundary-order.js'
import type { ReadSegment } from '../watermark.js'
import type { ReadProgress } from '../types.js'
import type { DataRecord, RetryConfig } from '../../pipeline/types.js'

const LOG = cds.log(LOGGER.engine)

export interface PartitionedRead {
  /** Pipeline name, for the log. */
  name: string
  /** The read's one segment (a full read: no filter, ordered by the one key). */
  segment: ReadSegment
  top: number
  parallel: number
  /** One attempt at one page (retries, slots and back-off are added here). */
  fetchPage: (request: PageRequest) => Promise<PageResult>
  retry: Required<RetryConfig>
  progress?: ReadProgress
}

/** Thrown into a range's request once the read stopped (another range failed, the run ended): never retried. */
class ReadStopped extends Error {
  readonly status = 400
}

/** Why a read goes page after page although `parallel` > 1; undefined when it may partition. */
export function sequentialReason(segments: ReadSegment[]): string | undefined {
  // a first delta run reads the rows without a watermark value first, then the others
  if (segments.length !== 1) return `it reads ${segments.length} segments one after the other`
  return undefined
}

/** What the requests of one partitioned read share: its slots, its governor, its back-off and its stop. */
export interface PartitionSender {
  /**
   * One request with retries, a slot of the run and of the process; `timed`: a page whose time the
   * governor judges; `opening`: it goes out at once up to `parallel` in flight, whatever level the
   * pages are at (a boundary sample, a range's first page: see `openingFirst`).
   */
  send: (request: PageRequest, timed?: boolean, opening?: boolean) => Promise<PageResult>
  concurrency: Concurrency
  slots: RequestSlots
  /** Requests not yet sent fail (never retried): another range failed, or the read ended. */
  stop(): void
}

export function partitionSender(read: Pick<PartitionedRead, 'name' | 'top' | 'parallel' | 'fetchPage' | 'retry'>): PartitionSender {
  const { name, top } = read
  // requests of the run at once: from a quarter of `parallel` up, back down when answers slow (governor.ts)
  const concurrency = new Concurrency(read.parallel, ({ from, to, fromMs, toMs }) =>
    LOG.info(`pipeline '${name}': parallel reduced from ${from} to ${to} for the rest of the run: the source answered slower with more requests at once (median page ${Math.round(fromMs)} ms at ${from}, ${Math.round(toMs)} ms at ${to})`))
  let stopped = false
  const sender: PartitionSender = {
    concurrency,
    slots: new RequestSlots(() => concurrency.level),
    stop: () => { stopped = true },
    send: (request, timed = request.top === top, opening = false) => withRetry(() => {
      if (stopped) throw new ReadStopped(`pipeline '${name}': partitioned read stopped`)
      return sender.slots.run(() => inProcessSlot(async () => {
        const level = concurrency.level
        const timer = answerTimer()
        const page = await read.fetchPage(request)
        // pages only: a boundary sample (one row) or the first request (a cold start) is no page time;
        // a range's first page went out beside every other range's (more than the level), and may
        // count its range (at 1M rows those counts made the pages beside them look slow, and the read
        // stepped back for the rest of the run): not judged
        if (timed) concurrency.observe(level, request.count || opening ? undefined : timer())
        return page
      }), opening ? read.parallel : undefined)
    }, read.retry, (error, attempt, delay) => {
      // the provider asked to slow down: every range of the run waits, not only this one
      if (statusOf(error) === 429 || retryAfterOf(error) !== undefined) sender.slots.backOff(delay)
      LOG.warn(`pipeline '${name}': read failed (${(error as Error).message}); retry ${attempt} in ${delay} ms`)
    }),
  }
  return sender
}

/** One key range of a partitioned read: its lower bound (none for the first), upper bound (none for the last), and rows when known. */
export interface RangePlan {
  from?: Predicate
  to?: Predicate
  /** The rows it held when sampled, known when the boundaries are in order for certain: no count is asked before its last expected page. */
  rows?: number
}

/**
 * How long the source took to answer a request, in ms: its wall time less the time this process's
 * event loop was busy meanwhile. The governor judges the provider; a page that arrived while the
 * consumer's own writes held the event loop (node:sqlite writes synchronously, 15–20 ms a page) was
 * read late by the consumer, not answered late — counted, those waits made a busy consumer look like
 * a saturated provider, and the read stepped back (1M rows at 50 ms: from 4 to 2, 35 s instead of 16 s).
 */
export function answerTimer(): () => number {
  const since = performance.now()
  const busy = performance.eventLoopUtilization()
  return () => Math.max(0, performance.now() - since - performance.eventLoopUtilization(busy).active)
}

/**
 * The ranges of a segment after its first `start` rows (ending in `afterRow`, when read), of `count`:
 * the order columns of the rows at `positions` (see `boundaryPositions`) bound them, one row per
 * request, all sent at once; each boundary once. A sample selects its order columns only: the
 * source skips up to n rows for it, and need not read their other columns. When the boundaries
 * ascend for certain (boundary-order.ts) each range is bounded by the next boundary only and its
 * rows are known from the positions, so it asks for no count (a second query at the provider)
 * before its last expected page, and its URL stays short (CAP sends a GET over 1,028 characters
 * as a `$batch`); otherwise `rangeBounds`, each also after `afterRow`.
 */
export async function sampleRanges(sender: PartitionSender, segment: ReadSegment, positions: number[], start: number, count: number, afterRow?: DataRecord): Promise<{ boundaries: DataRecord[]; plans: RangePlan[] }> {
  const { order } = segment
  const rest = afterRow && after(order, afterRow)
  // skipped from after the rows read: the source seeks there instead of walking them (and, for a
  // delta, the rows tied at its watermark) again for every sample
  const within = and(segment.filter, rest ?? segment.from)
  const offset = rest ? start : 0
  const sampled = await Promise.all(positions.map(position => sender.send({ filter: within, order, top: 1, skip: position - offset, count: false, columns: order }, undefined, true)))
  const rows = sampled.map(page => page.records[0])
  const boundaries = distinct(order, rows)
  if (boundaries.length !== rows.length || !inSourceOrder(order, afterRow ? [afterRow, ...boundaries] : boundaries)) {
    return { boundaries, plans: rangeBounds(order, boundaries).map(({ from, to }) => ({ from: and(rest, from), to })) }
  }
  const edges = [start, ...positions, count]
  const plans = rangeBounds(order, boundaries, true).map(({ from, to }, k) => ({ from: from ?? rest, to, rows: Math.max(0, edges[k + 1] - edges[k]) }))
  return { boundaries, plans }
}

/**
 * A range's requests through `sender`, its first one as an opening request: every range starts at
 * once (up to `parallel` in flight), and the governor's level (from a quarter of `parallel` up)
 * paces the pages after them. A read of few pages per range (a 5 % delta: one each) would otherwise
 * read its ranges a quarter of them at a time, after paying the round trips of count and samples.
 */
export function openingFirst(sender: PartitionSender): (request: PageRequest) => Promise<PageResult> {
  let first = true
  return request => {
    const opening = first
    first = false
    return sender.send(request, undefined, opening)
  }
}

export async function* partitionedPages(read: PartitionedRead): AsyncGenerator<DataRecord[]> {
  const { segment, top, name } = read
  const sender = partitionSender(read)
  const { send, concurrency, slots } = sender
  const sent = performance.now()
  const first = await send({ filter: and(segment.filter, segment.from), order: segment.order, top, count: true }, false)
  pageRead(first, sent)
  const count = first.count
  // the ranges split the rows after the first page (already read)
  const ranges = count === undefined ? 1 : Math.min(read.parallel, Math.floor((count - top) / top))
  if (ranges < 2 || !first.records.length) {
    if (count === undefined) LOG.info(`pipeline '${name}': the source reports no count; the full read goes page after page`)
    yield* segmentPages(segment, top, request => send(request), { progress: read.progress, first: withCount(first, read.progress) })
    return
  }
  if (read.progress) countSegment(read.progress, count)
  const { order } = segment
  const last = first.records[first.records.length - 1]
  // boundaries: the key at each position, one row per request, all on the wire before the first
  // page is handed on (written while they travel; its write would hold back those not yet sent)
  // positions after the rows the first page holds (fewer than `top` when the server pages itself)
  const readFirst = first.records.length
  const positions = boundaryPositions(count!, ranges, top, readFirst)
  const wire = watchRequests(positions.length)
  const samples = sampleRanges(sender, segment, positions, readFirst, count!, last)
  samples.catch(() => undefined) // surfaced below
  await underway(samples, wire)
  const ledger = new RangeLedger()
  yield tagBatch(first.records, ledger, 0)
  ledger.end(0)
  const { plans } = await samples
  LOG.info(`pipeline '${name}': read of ${count} rows in ${plans.length} ranges of ${order.join(', ')}, up to ${read.parallel} requests at once (from ${concurrency.level})`)
  currentRun()?.event('partitions', { phase: 'source', rows: count, message: `read in ${plans.length} ranges, up to ${read.parallel} requests at once`, details: { ranges: plans.length, parallel: read.parallel, startLevel: concurrency.level } })
  // a range's lower bound for its first page only: later pages start after their last row
  const parts = plans.map(({ from, to, rows }) => segmentPages({ order, filter: and(segment.filter, to), from }, top, openingFirst(sender), { rows }))
  try {
    // range 0 is the first page (handed on above); the key ranges are 1…: a delta's watermark
    // moves only as far as the ranges below it are complete (ranges.ts)
    for await (const { index, value, last: ended } of merged(parts, () => concurrency.level)) {
      if (value) yield tagBatch(value, ledger, index + 1)
      if (ended) ledger.end(index + 1)
    }
  } finally {
    sender.stop()
    if (LOG._debug) LOG.debug(`pipeline '${name}': partitioned read ended at ${concurrency.level} requests at once (at most ${slots.peak} in flight)`)
  }
}

/**
 * Where the ranges start: near k·n/p of the rows after the first `start` (a partitioned read's
 * first page, read before the samples), on a multiple of the page size, so the ranges are made
 * of whole pages and a partitioned read writes as many batches as a sequential one. Each range
 * holds at least a page: none is empty by construction (a request answering nothing would take
 * one of the few slots a read starts with).
 */
export function boundaryPositions(count: number, ranges: number, top: number, start = 0): number[] {
  const positions = new Set<number>()
  for (let k = 1; k < ranges; k++) positions.add(start + top * Math.max(1, Math.round(k * (count - start) / ranges / top)))
  return [...positions].filter(position => position < count)
}

/** A first page whose count is already in the progress (partitioned or not, counted once). */
function withCount(first: PageResult, progress: ReadProgress | undefined): PageResult {
  if (progress) countSegment(progress, first.count)
  return first
}

/** The sampled boundaries' order columns, each once; rows lacking one (null) bound no range. */
function distinct(order: string[], rows: Array<DataRecord | undefined>): DataRecord[] {
  const seen = new Set<string>()
  const out: DataRecord[] = []
  for (const row of rows) {
    if (!row || order.some(column => row[column] === null || row[column] === undefined)) continue
    const bound = Object.fromEntries(order.map(column => [column, row[column]]))
    const text = JSON.stringify(bound)
    if (seen.has(text)) continue
    seen.add(text)
    out.push(bound)
  }
  return out
}

/**
 * The ranges of the boundaries in the read's order (one key, composite keys, or a delta's watermark
 * columns then keys): range k holds the rows at or after boundary k-1 (`from`, none for the first)
 * and before every later boundary (`to`, none for the last): disjoint and complete even if the
 * sampled boundaries came back out of order. `ascending`: they are in order for certain
 * (boundary-order.ts), and the next boundary alone bounds a range.
 */
export function rangeBounds(order: string[], boundaries: DataRecord[], ascending = false): RangePlan[] {
  return Array.from({ length: boundaries.length + 1 }, (_, k) => ({
    from: k > 0 ? notBefore(order, boundaries[k - 1]) : undefined,
    to: and(...boundaries.slice(k, ascending ? k + 1 : undefined).map(bound => before(order, bound))),
  }))
}

/**
 * The items of several async iterables as they arrive, each with the index of its source; an
 * item with `last` (and no value) once a source ended. Each source's first item is asked for at
 * once; after that at most `limit()` of them have a request (their next page) under way or waiting
 * to be taken, the others queue in turn, so memory holds at most that many pages (and, at the start,
 * one per source) besides the one being written. The first failure ends the whole; the
 * others are closed once their request settles.
 */
export async function* merged<T>(sources: Array<AsyncIterable<T>>, limit: () => number = () => sources.length): AsyncGenerator<{ index: number; value?: T; last?: true }> {
  const iterators = sources.map(source => source[Symbol.asyncIterator]())
  const pending = new Map<number, Promise<{ index: number; result: IteratorResult<T> }>>()
  const waiting = iterators.map((_, index) => index) // ranges whose next page nobody asked for yet
  const opened = new Set<number>()
  const pull = () => {
    while (waiting.length && (pending.size < Math.max(1, limit()) || !opened.has(waiting[0]))) {
      const index = waiting.shift()!
      opened.add(index)
      const next = iterators[index].next().then(result => ({ index, result }))
      next.catch(() => undefined) // surfaced through the race; avoids an unhandled rejection after a stop
      pending.set(index, next)
    }
  }
  try {
    pull()
    while (pending.size) {
      const { index, result } = await Promise.race(pending.values())
      pending.delete(index)
      if (!result.done) waiting.push(index)
      pull() // the next page goes out before this one is written
      yield result.done ? { index, last: true } : { index, value: result.value }
    }
  } finally {
    for (const [index, next] of pending) void next.then(() => iterators[index].return?.(), () => undefined).catch(() => undefined)
    for (const index of waiting) void iterators[index].return?.()?.catch(() => undefined)
  }
}
