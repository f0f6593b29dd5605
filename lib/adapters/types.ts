/** Contracts between the engine and its adapters. */
import type { DataRecord, ResolvedPipeline, SlicePredicate } from '../pipeline/types.js'

/** What a source adapter needs to know of the tracker to read incrementally. */
export interface TrackerState {
  name: string
  /** The mode of the run being executed. */
  mode: 'full' | 'delta' | 'partial-refresh'
  /** Timestamp / datetime-fields watermark (ISO, UTC) of the last successful run. */
  lastSync: string | null
  /** Key watermark of the last successful run; beside a timestamp watermark, its tie cursor (JSON, see watermark.ts). */
  lastKey: string | null
  /** For `partial-refresh`: the slice being rebuilt. */
  slice?: SlicePredicate
  /** Set by the engine for a run: the source reports there how many records the read will deliver. */
  progress?: ReadProgress
  /**
   * Set by a source read with `delta.mode: 'odata-delta'`: the delta link (relative to the service
   * root) the read ended with. The engine stores it in `lastKey` with the run's final tracker update.
   */
  deltaLink?: string
}

/**
 * What a source knows of a read's size (README "Progress and freshness"): the count of each read
 * segment's filter, added as the segment's first page reports it. A source that cannot count
 * (REST, custom adapters) leaves it untouched: the expected total is unknown.
 */
export interface ReadProgress {
  /** Sum of the counts of the segments started so far; undefined while none counted. */
  expected?: number
  /** A segment was read without a count: the total is unknown. */
  uncounted?: boolean
}

export interface TargetCapabilities {
  /** Upsert by key: re-writing a record updates it instead of duplicating it. */
  keyAddressableUpsert: boolean
  /** Delete everything (or everything of one origin). */
  truncate: boolean
  /** Delete the rows matching a predicate. */
  batchDelete: boolean
  /** Insert many rows at once. */
  batchInsert: boolean
}

export interface WriteStatistics {
  created: number
  updated: number
  deleted: number
  /** Rows present and identical, so not written (targets that can tell; present when counted). */
  unchanged?: number
  /** Records set aside by `onError: 'skip'` (present on such pipelines only). */
  skipped?: number
}

export interface WriteContext {
  runId: string
  mode: 'full' | 'delta' | 'partial-refresh'
  batchIndex: number
  /** The run writes in one transaction (its truncate and every batch). */
  atomic?: boolean
}

export interface AdapterContext {
  pipeline: ResolvedPipeline
}

export type { DataRecord }

/** A data-inspector page request: columns and filter in the adapter's own field names. */
export interface PreviewRequest {
  columns: string[]
  filter?: import('./predicate.js').Predicate
  top: number
  skip: number
}

export interface PreviewResult {
  rows: DataRecord[]
  hasMore: boolean
  /** Filters were applied in memory on a fetched page, not pushed to the source. */
  limitedSupport: boolean
}
