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
 * (slots.ts), at most `maxParallelReads` of the process; a 429 holds back all ranges of the run.
 */
import cds from '@sap/cds'
import { LOGGER } from '../../constants.js'
import { after, and, type Predicate } from '../predicate.js'
import { retryAfterOf, statusOf, withRetry } from '../retry.js'
import { currentRun } from '../../runs/index.js'
import { countSegment, pageRead, segmentPages, type PageRequest, type PageResult } from './pager.js'
import { RequestSlots, processSlots } from './slots.js'
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

/** Why a source reads a full copy page after page although `parallel` > 1; undefined when it may partition. */
export function sequentialReason(keys: string[], segments: ReadSegment[]): string | undefined {
  if (keys.length !== 1) return `its key has ${keys.length} columns (partitioned reads need one key column)`
  if (segments.length !== 1 || segments[0].filter) return 'the read is not a full read'
  return undefined
}

export async function* partitionedPages(read: PartitionedRead): AsyncGenerator<DataRecord[]> {
  const { segment, top, name } = read
  /** Requests of the run at once: `parallel`, fewer where the round trip is short against the page (see `depth`). */
  let atOnce = read.parallel
  const slots = new RequestSlots(() => atOnce)
  let stopped = false
  const send = (request: PageRequest) => withRetry(() => {
    if (stopped) throw new ReadStopped(`pipeline '${name}': partitioned read stopped`)
    return slots.run(() => processSlots.run(() => read.fetchPage(request)))
  }, read.retry, (error, attempt, delay) => {
    // the provider asked to slow down: every range of the run waits, not only this one
    if (statusOf(error) === 429 || retryAfterOf(error) !== undefined) slots.backOff(delay)
    LOG.warn(`pipeline '${name}': read failed (${(error as Error).message}); retry ${attempt} in ${delay} ms`)
  })

  const sent = performance.now()
  const first = await send({ filter: segment.filter, order: segment.order, top, count: true })
  const firstMs = performance.now() - sent
  pageRead(first, sent)
  const count = first.count
  const ranges = count === undefined ? 1 : Math.min(read.parallel, Math.floor(count / top))
  if (ranges < 2 || !first.records.length) {
    if (count === undefined) LOG.info(`pipeline '${name}': the source reports no count; the full read goes page after page`)
    yield* segmentPages(segment, top, send, read.progress, withCount(first, read.progress))
    return
  }
  if (read.progress) countSegment(read.progress, count)
  const [key] = segment.order
  const last = first.records[first.records.length - 1]
  // boundaries: the key at each position, one row per request
  const sample = (skip: number) => send({ filter: segment.filter, order: segment.order, top: 1, skip, count: false })
  const [alone, ...others] = boundaryPositions(count!, ranges, top)
  // the first sample alone, before anything is written: its time is the round trip, undisturbed
  // by other requests or a synchronous write (see `depth`)
  const start = performance.now()
  const firstSample = await sample(alone)
  const roundTrip = performance.now() - start
  atOnce = depth(roundTrip, firstMs, read.parallel)
  // the other samples go out before the first page is handed on: written while they travel
  const samples = Promise.all(others.map(sample))
  samples.catch(() => undefined) // surfaced below
  yield first.records
  const boundaries = distinct([firstSample, ...await samples].map(page => page.records[0]?.[key]))
  LOG.info(`pipeline '${name}': full read of ${count} rows in ${boundaries.length + 1} key ranges, ${atOnce} at once (round trip ≈ ${Math.round(roundTrip)} ms, first page ${Math.round(firstMs)} ms)`)
  currentRun()?.event('partitions', { phase: 'source', rows: count, message: `full read in ${boundaries.length + 1} key ranges, ${atOnce} at once`, details: { ranges: boundaries.length + 1, atOnce, roundTripMs: Math.round(roundTrip) } })
  const rest = after(segment.order, last)
  const parts = rangesOf(key, boundaries).map(range => segmentPages({ order: segment.order, filter: and(segment.filter, rest, range) }, top, send))
  try {
    yield* merged(parts, () => atOnce)
  } finally {
    stopped = true
  }
}

/**
 * Where the ranges start: near k·n/p, on a multiple of the page size, so the ranges are made
 * of whole pages and a partitioned read writes as many batches as a sequential one.
 */
export function boundaryPositions(count: number, ranges: number, top: number): number[] {
  const positions = new Set<number>()
  for (let k = 1; k < ranges; k++) positions.add(top * Math.max(1, Math.round(k * count / ranges / top)))
  return [...positions].filter(position => position < count)
}

/**
 * How many requests keep the provider busy (Little's law): a one-row request's time is (almost)
 * the round trip, a page takes that plus the provider's time to produce and send it, so
 * (round trip + page) / page requests fill the pipe. With the round trip short against a page
 * (loopback, a provider next door) more requests at once would only compete for the provider's
 * and the consumer's CPU: two at most, one being served while the other's answer is processed;
 * with a long one, as many as fit into a round trip, at most `parallel`.
 */
export function depth(roundTripMs: number, pageMs: number, parallel: number): number {
  const serve = Math.max(1, pageMs - roundTripMs)
  return Math.min(parallel, Math.max(1, Math.ceil((roundTripMs + serve) / serve - 0.05)))
}

/** A first page whose count is already in the progress (partitioned or not, counted once). */
function withCount(first: PageResult, progress: ReadProgress | undefined): PageResult {
  if (progress) countSegment(progress, first.count)
  return first
}

function distinct(values: unknown[]): unknown[] {
  const seen = new Set<string>()
  return values.filter(value => {
    if (value === undefined || value === null) return false
    const text = JSON.stringify(value)
    if (seen.has(text)) return false
    seen.add(text)
    return true
  })
}

/**
 * The filters of the ranges: range k holds the keys at or above boundary k and below every later
 * boundary. Disjoint and complete even if the sampled boundaries came back out of order.
 */
export function rangesOf(key: string, boundaries: unknown[]): Array<Predicate | undefined> {
  return Array.from({ length: boundaries.length + 1 }, (_, k) => and(
    k > 0 ? { field: key, op: 'ge', value: boundaries[k - 1] } : undefined,
    ...boundaries.slice(k).map(value => ({ field: key, op: 'lt' as const, value })),
  ))
}

/**
 * The items of several async iterables as they arrive. At most `limit()` of them have a request
 * (their next page) under way or waiting to be taken, the others queue in turn, so memory holds
 * at most that many pages besides the one being written. The first failure ends the whole; the
 * others are closed once their request settles.
 */
export async function* merged<T>(sources: Array<AsyncIterable<T>>, limit: () => number = () => sources.length): AsyncGenerator<T> {
  const iterators = sources.map(source => source[Symbol.asyncIterator]())
  const pending = new Map<number, Promise<{ index: number; result: IteratorResult<T> }>>()
  const waiting = iterators.map((_, index) => index) // ranges whose next page nobody asked for yet
  const pull = () => {
    while (waiting.length && pending.size < Math.max(1, limit())) {
      const index = waiting.shift()!
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
      if (!result.done) yield result.value
    }
  } finally {
    for (const [index, next] of pending) void next.then(() => iterators[index].return?.(), () => undefined).catch(() => undefined)
    for (const index of waiting) void iterators[index].return?.()?.catch(() => undefined)
  }
}
