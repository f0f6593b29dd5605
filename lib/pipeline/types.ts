/**
 * The pipeline definition as types: the config users pass to `addPipeline`, what the engine
 * resolves it to, and the records flowing through a pipeline. Shared by the adapters (which
 * read and write records for a resolved pipeline) and the engine (which resolves and runs it);
 * the rules and validation live in engine/config/index.ts, the adapters' contracts in adapters/types.ts.
 */
import type { DeltaMode, ReplicationMode, ScheduleEngine, TransactionScope } from '../constants.js'

/** A record as read from a source or written to a target. */
export type DataRecord = Record<string, unknown>

/** A CQN-style predicate object, e.g. `{ year: 2026 }` or `{ day: { '>=': '2026-01-01' } }`. */
export type SlicePredicate = Record<string, unknown>

export interface QueryContext {
  /** The run mode being executed. */
  mode: string
  /** For `partial-refresh`: the slice being rebuilt; the query may narrow itself to it. */
  slice?: SlicePredicate
}

/** Returns the CQN SELECT of a query-shape pipeline. */
export type QueryFactory = (context: QueryContext) => object

export interface SourceConfig {
  /** Name of the source service binding (`cds.requires.<service>`); `db` for the local database. */
  service?: string
  /** Entity-shape source: the entity (or REST collection) read in batches. */
  entity?: string
  /** Query-shape source: returns a CQN SELECT producing the rows of a derived snapshot. */
  query?: QueryFactory
  /** Explicit adapter routing: `odata`, `odata-v2`, `rest`, `cqn`, or a registered kind. */
  kind?: string
  /** Custom adapter class extending `BaseSourceAdapter`. */
  adapter?: ConfiguredSourceAdapter
  /** Multi-source fan-in label stamped into the target's `source` key column. */
  origin?: string
  /** Records per batch (default 1000). */
  batchSize?: number
}

export interface TargetConfig {
  /** `db` or unset: the database target. */
  service?: string
  entity?: string
  kind?: 'odata' | 'odata-v2' | 'hcql'
  adapter?: ConfiguredTargetAdapter
}

export interface DeltaConfig {
  mode?: DeltaMode
  /** Field carrying the modification watermark (timestamp mode) or the ascending key (key mode). */
  field?: string
  /** `datetime-fields` mode: the date part (Edm.Date / `cds.Date`). */
  dateField?: string
  /** `datetime-fields` mode: the time part (Edm.TimeOfDay / `cds.Time`), interpreted as UTC. */
  timeField?: string
  /** Soft-delete field of the source: a row read with it set (true, or any non-null value such as a deletion timestamp) is a delete. */
  deletedField?: string
  /** What a soft-deleted row does to the replica: `delete` (default) removes it, `flag` keeps it with the field set. */
  deletedAction?: 'delete' | 'flag'
  /**
   * Timestamp and datetime-fields modes: how long after a watermark value's period a read must
   * happen before rows sharing that value are no longer read again (ms or a duration such as '5m';
   * default 1 minute). Must exceed the clock skew between consumer and provider plus the longest write transaction.
   */
  settle?: number | string
}

/** Key reconciliation (README "Deletes in delta mode"): local rows whose key is gone at the source are deleted. */
export interface DeletesConfig {
  /** When a delta run sweeps: every run, every n-th run (`{ every: 10 }`), or at most once per interval (`{ every: '6h' }`). */
  sweep: 'always' | { every: number | string }
  /** Largest share of the replica's rows one sweep may delete (default 0.5); more fails the run, naming this setting. */
  maxShare?: number
  /** `true` lets a sweep delete more than `maxShare` (e.g. once, after a known mass deletion at the source). */
  force?: boolean
}

export interface ResolvedDeletes {
  sweep: { always: true } | { runs: number } | { interval: number }
  maxShare: number
  force: boolean
}

export interface RetryConfig {
  /** Retries after the first attempt; 0 disables retry. Default 3. */
  maxRetries?: number
  /** First backoff in ms (doubles each attempt, full jitter). Default 500. */
  baseDelay?: number
  maxDelay?: number
}

export interface RefreshConfig {
  /** `partial-refresh`: the target rows matching this predicate are deleted and rebuilt in one transaction. */
  slice?: SlicePredicate | (() => SlicePredicate)
}

export interface PipelineConfig {
  name: string
  description?: string
  source: SourceConfig
  target: TargetConfig
  mode?: ReplicationMode
  delta?: DeltaConfig
  /** REST source settings (SPEC "REST source adapter"): path, pagination, deltaParam, dataPath. */
  rest?: RestConfig
  schedule?: ScheduleInput
  enabled?: boolean
  retry?: RetryConfig
  /** Transaction scope: unset = per batch for delta, one transaction for full/partial refreshes; `run` or `batch` force one for every mode. */
  transaction?: TransactionScope
  refresh?: RefreshConfig
  /** Deletes in delta mode by key reconciliation (a soft-delete field is `delta.deletedField`). */
  deletes?: DeletesConfig
  /** Lease duration in ms for the run guard (default 60 s); the lease is renewed every third of it. */
  leaseDuration?: number
  /**
   * Most requests a full copy or a delta of at least two pages reads at once, in ranges of its order
   * (1–32, default 1 = sequential pages): OData V4/V2, HCQL and CQN entity sources. Started at a
   * quarter, doubled while the source answers as fast, reduced when it answers slower (governor.ts).
   */
  parallel?: number
  /** Schema drift check at run start (README "Schema drift"): `'warn'` (default), `'fail'`, `'ignore'`, or `{ policy, maxAge }`. */
  schemaDrift?: SchemaDriftInput
  /** Poison records: `fail` (default) fails the run; `skip` sets failing records aside in PipelineRejects (README "Rejected records"). */
  onError?: OnErrorConfig
  /** Freshness (README "Progress and freshness"): the pipeline is `stale` when its last successful run is older than this (ms or a duration such as `'2h'`). */
  maxStaleness?: number | string
  /** Event-driven replication (README "Event-driven replication"): subscriptions applied in micro-batches. */
  events?: EventsInput
}

/** What the engine derives from a config: the shape and effective settings. */
export interface ResolvedPipeline {
  name: string
  config: PipelineConfig
  shape: 'entity' | 'query'
  mode: ReplicationMode
  delta?: Required<Pick<DeltaConfig, 'mode'>> & DeltaConfig
  batchSize: number
  schedule?: ScheduleSpec
  enabled: boolean
  /** Transaction scope of runs in the pipeline's own mode. */
  transaction: TransactionScope
  retry: Required<RetryConfig>
  leaseDuration: number
  /** Key ranges a full copy reads at once (1: sequential). */
  parallel: number
  /** The pipeline's own `schemaDrift` setting; unset: the app's default (`cds.requires['data-pipeline'].schemaDrift`). */
  schemaDrift?: SchemaDriftSetting
  onError: ResolvedOnError
  deletes?: ResolvedDeletes
  /** `maxStaleness` in ms; unset: freshness is not watched (`unknown`). */
  maxStaleness?: number
}

/**
 * A custom adapter class as a config names it (`source.adapter`, `target.adapter`), described by
 * its shape: it extends `BaseSourceAdapter` / `BaseTargetAdapter`, which the adapter factory
 * checks when the pipeline is prepared.
 */
export type ConfiguredSourceAdapter = new (context: { pipeline: ResolvedPipeline }) => { readStream(...args: never[]): AsyncIterable<DataRecord[]> }
export type ConfiguredTargetAdapter = new (context: { pipeline: ResolvedPipeline }) => { writeBatch(...args: never[]): Promise<unknown> }

/** What a run does when the source's live schema differs from what the pipeline maps (README "Schema drift"). */
export type SchemaDriftPolicy = 'warn' | 'fail' | 'ignore'
export type SchemaDriftInput = SchemaDriftPolicy | { policy?: SchemaDriftPolicy; maxAge?: number | string }

export interface SchemaDriftSetting {
  policy: SchemaDriftPolicy
  /** How old (ms) a cached `$metadata`/`$csn` document may be; unset: the default (1 h). 0: fetched by every run. */
  maxAge?: number
}

/** `onError` as configured: a mode, or `{ mode, maxSkipped }`. */
export type OnErrorConfig = 'fail' | 'skip' | { mode?: 'fail' | 'skip'; maxSkipped?: number | string }

/** The resolved `onError`: `fail`, or `skip` with an optional limit per run. */
export interface ResolvedOnError {
  mode: 'fail' | 'skip'
  /** Largest number of records one run may skip; exceeded → the run fails. */
  maxCount?: number
  /** Largest share (0 < share < 1) of the records read by a run that it may skip. */
  maxShare?: number
  /** The limit as configured, for messages. */
  label?: string
}

export type ScheduleInput = number | string | { every?: number | string; engine?: ScheduleEngine; cron?: string }

/**
 * A parsed schedule: exactly one of `every` (ms) and `cron` (5 fields, `queued` only).
 */
export interface ScheduleSpec {
  /** Interval in ms (absent for cron schedules). */
  every?: number
  engine: ScheduleEngine
  /** 5-field cron expression (minute hour day-of-month month day-of-week), normalised spacing. */
  cron?: string
}

export type RestPaginationType = 'offset' | 'page' | 'cursor'

/** The `rest` block of a pipeline config (validated at registration). */
export interface RestConfig {
  /** Endpoint path, relative to the binding's URL. */
  path: string
  pagination: {
    type: RestPaginationType
    pageSize: number
    /** cursor: query parameter carrying the cursor. */
    cursorParam?: string
    /** cursor: dotted path of the next cursor in the response body. */
    cursorPath?: string
  }
  /** Query parameter carrying `lastSync` (ISO) after the first successful sync. */
  deltaParam?: string
  /** Dotted path of the record array in the response; omitted: the body is the array. */
  dataPath?: string
  /** Request timeout in ms (default 60 s). */
  timeout?: number
  /** Key listing for deletes sweeps: all keys in ascending order, paged like the collection unless `pagination` is given. */
  keys?: { path: string; dataPath?: string; pagination?: RestConfig['pagination'] }
}

/** What a message of a topic does (README "Event-driven replication"). */
export type EventAction = 'upsert' | 'delete' | 'payload'

/** One topic as configured: a plain string is `{ topic }` with the defaults. */
export interface EventTopicConfig {
  topic: string
  /** The payload field holding the single key, or `{ <key element>: '<payload path>' }`; default: payload fields named like the keys. */
  key?: string | Record<string, string>
  action?: EventAction
}

/** `events` of a pipeline: subscriptions to business events, applied in micro-batches. */
export interface EventsConfig {
  /** A CAP messaging service in `cds.requires` (default `messaging`). */
  service?: string
  /** Unset: the provider's `<entity>.Created|Updated|Deleted` topics (CAP to CAP, `@federation.emit`). */
  topics?: Array<string | EventTopicConfig>
  /** Coalescing window: ms or a duration such as `200ms` (default 200 ms). */
  window?: number | string
  /** Most keys per micro-batch (default 1000). */
  maxBatch?: number
}

/** `events` as users write it: an object, a messaging service name, or `true` (= `messaging`). */
export type EventsInput = EventsConfig | string | true
