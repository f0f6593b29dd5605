/**
 * Ordered, stable paging shared by the OData and CQN sources: keyset continuation
 * (`after the last row`) instead of deep `$skip`, server-driven paging when the server
 * offers a next link, and an end detected by an empty page or by a count: the first page's,
 * confirmed by the page expected to be the last (the rows left from its start on).
 */
import type { DataRecord } from '../../pipeline/types.js'
import type { ReadSegment } from '../watermark.js'
import { after, and, type Predicate } from '../predicate.js'
import type { ReadProgress } from '../types.js'
import { currentRun, elapsed } from '../../runs/index.js'
import { PipelineError } from '../../pipeline/errors.js'

export interface PageRequest {
  filter?: Predicate
  order: string[]
  top: number
  /** Ask for the count of the rows matching this request's filter (a segment's first page, the page expected to be its last). */
  count: boolean
  /** Rows to skip (a partition boundary's sample; pages themselves never skip). */
  skip?: number
  /** Only these columns instead of the read's (a boundary sample needs its order columns only). */
  columns?: string[]
  /** Server-driven paging: the link the previous page returned. */
  nextLink?: string
}

export interface PageResult {
  records: DataRecord[]
  /** Rows matching the request's filter (from this page's start on), when asked and the server reports it. */
  count?: number
  nextLink?: string
  /** The source never returns fewer rows than asked unless it has no more (databases). */
  exact?: boolean
  /** HTTP status and bytes of the answer, where the transport tells (run events). */
  httpStatus?: number
  bytes?: number
}

export async function* pagesOf(
  segments: ReadSegment[],
  top: number,
  fetchPage: (request: PageRequest) => Promise<PageResult>,
  { progress, exhaustive }: Pick<SegmentOptions, 'progress' | 'exhaustive'> = {},
): AsyncGenerator<DataRecord[]> {
  for (const segment of segments) yield* segmentPages(segment, top, fetchPage, { progress, exhaustive })
}

export interface SegmentOptions {
  progress?: ReadProgress
  /** Its first page, when the caller already read it (a partitioned read asks for it before it knows whether to partition); its count is then already in `progress`. */
  first?: PageResult
  /** The rows it held when sampled (a key range sampled in order): no count before its last expected page, which confirms the end. */
  rows?: number
  /**
   * A key listing that proves keys missing (a deletes sweep): no count ends it, only an empty page
   * (or a short one from a database). A count ends a read early when rows were added before its
   * end meanwhile: the last keys would go unlisted, and the sweep would delete their replicas.
   */
  exhaustive?: boolean
}

/** The pages of one segment. */
export async function* segmentPages(
  segment: ReadSegment,
  top: number,
  fetchPage: (request: PageRequest) => Promise<PageResult>,
  { progress, first, rows, exhaustive = false }: SegmentOptions = {},
): AsyncGenerator<DataRecord[]> {
  if (rows === 0 && !exhaustive) return
  let last: DataRecord | undefined
  let nextLink: string | undefined
  let total: number | undefined = exhaustive ? undefined : rows
  let received = 0
  for (let initial = true; ; initial = false) {
    const since = performance.now()
    // the page expected to end the read asks how many rows are left from its start on: a row added
    // since the count (a late commit, an insert into a key range) would otherwise push the last row
    // out of the read, and a range's watermark would pass it for good
    const count = !exhaustive && !nextLink && ((initial && rows === undefined) || (total !== undefined && total - received <= top))
    const result = initial && first ? first : await fetchPage(nextLink
      ? { nextLink, order: segment.order, top, count: false }
      : { filter: and(segment.filter, last ? after(segment.order, last) : segment.from), order: segment.order, top, count })
    if (!(initial && first)) pageRead(result, since)
    // a next link repeats the first request's count: only a count asked for here tells the rows left
    const counted = !exhaustive && typeof result.count === 'number' && (count || (initial && first))
    if (counted) total = received + result.count!
    if (initial && progress && !first) countSegment(progress, total)
    const { records } = result
    if (records.length === 0) break
    const previous = !nextLink && last
    yield records
    received += records.length
    last = records[records.length - 1]
    // a page asked for the rows after `previous` that ends on it again would be asked for forever
    if (previous && segment.order.every(column => String(previous[column]) === String(last![column])))
      throw new PipelineError('SOURCE_FAILED', `the source answered a request for the rows after the last one read (in the order of ${segment.order.join(', ')}) with a page ending on that row again: the read cannot advance. Its values are finer than the filter can express (a V2 Edm.DateTime with fractions of a second is sent in whole seconds), or the source ignores $filter`)
    nextLink = result.nextLink
    if (nextLink) continue
    // ended by a count only on a page that counted: after a server's next links (offset pages, a row
    // added meanwhile may lie beyond them) one more keyset request counts what is left
    if (counted && received >= total!) break
    if (result.exact && records.length < top) break
  }
}

/** Adds a segment's count to the read's expected total (README "Progress and freshness"). */
export function countSegment(progress: ReadProgress, count: number | undefined): void {
  if (count === undefined || !Number.isFinite(count)) progress.uncounted = true
  else progress.expected = (progress.expected ?? 0) + count
}

/** A page read, as a run event (README "Run events"): records, status, bytes and the time it took, retries included. */
export function pageRead(result: Pick<PageResult, 'records' | 'httpStatus' | 'bytes'>, since: number): void {
  currentRun()?.event('page', { phase: 'source', rows: result.records.length, httpStatus: result.httpStatus, bytes: result.bytes, durationMs: elapsed(since) })
}
