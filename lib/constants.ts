/** Names shared across the plugin: service, loggers, events, enums and defaults. */

export const SERVICE_NAME = 'data-pipeline' as const
export const TRACKER_NAMESPACE = 'plugin.data_pipeline' as const
export const PIPELINES_ENTITY = `${TRACKER_NAMESPACE}.Pipelines` as const
export const RUNS_ENTITY = `${TRACKER_NAMESPACE}.PipelineRuns` as const
export const RUN_EVENTS_ENTITY = `${TRACKER_NAMESPACE}.PipelineRunEvents` as const
/** The database table name users see in "no such table" errors. */
export const PIPELINES_TABLE = 'plugin_data_pipeline_Pipelines' as const

export const LOGGER = {
  engine: 'data-pipeline',
  odata: 'data-pipeline|odata',
  rest: 'data-pipeline|rest',
  cqn: 'data-pipeline|cqn',
  hcql: 'data-pipeline|hcql',
  db: 'data-pipeline|db',
  schedule: 'data-pipeline|schedule',
  tenancy: 'data-pipeline|tenancy',
  federation: 'federation',
  emit: 'data-pipeline|emit',
  retention: 'data-pipeline|retention',
} as const

export const EVENTS = {
  START: 'PIPELINE.START',
  READ: 'PIPELINE.READ',
  MAP: 'PIPELINE.MAP',
  WRITE: 'PIPELINE.WRITE',
  DONE: 'PIPELINE.DONE',
} as const
export type PipelineEvent = (typeof EVENTS)[keyof typeof EVENTS]

export const REPLICATION_MODES = ['delta', 'full'] as const
export type ReplicationMode = (typeof REPLICATION_MODES)[number]
export const RUN_MODES = ['full', 'delta', 'partial-refresh'] as const
export type RunMode = (typeof RUN_MODES)[number]
export const RUN_STATUSES = ['idle', 'running', 'failed'] as const
export type RunStatus = (typeof RUN_STATUSES)[number]
export const RUN_TRIGGERS = ['manual', 'scheduled', 'external', 'event'] as const
export type RunTrigger = (typeof RUN_TRIGGERS)[number]
export const DELTA_MODES = ['timestamp', 'key', 'datetime-fields', 'odata-delta'] as const
/** OData source kinds read by delta links (`delta.mode: 'odata-delta'`): V4 delta links, V2 delta tokens (SAP Gateway, ODP). */
export const ODATA_DELTA_SOURCE_KINDS = ['odata', 'odata-v4', 'odata-v2'] as const
/**
 * SAP ODP over OData V2 (SEGW "Redefine ODP"): the delta queue's fields on every row of a
 * `FactsOf…`/`AttrOf…` entity set, and the function import that ends a subscriber's deltas.
 */
export const ODP = {
  /** `C` created, `U` updated, `D` deleted, blank in the initial load. */
  changeMode: 'ODQ_CHANGEMODE',
  /** Fields of the delta queue, not of the entity: left out of replicas unless mapped. */
  fieldPrefix: 'ODQ_',
  /** `TerminateDeltasFor<EntitySet>` */
  terminatePrefix: 'TerminateDeltasFor',
} as const
export type DeltaMode = (typeof DELTA_MODES)[number]
export const SCHEDULE_ENGINES = ['spawn', 'queued'] as const
export type ScheduleEngine = (typeof SCHEDULE_ENGINES)[number]
/**
 * The `queued` schedule engine on CAP's persistent task queue (`cds.outbox.Messages`): task
 * names, the events the engine service handles for it, and where the queue's model comes from.
 */
export const QUEUE = {
  /** Task name prefix: `data-pipeline/<pipeline>` (`data-pipeline/<tenant>/<pipeline>` per tenant). */
  taskPrefix: 'data-pipeline/',
  /** Event of a scheduled tick, handled by the engine service. */
  tickEvent: 'PIPELINE.TICK',
  /** Event of a one-off run enqueued by `execute(name, { async: true, engine: 'queued' })`. */
  runEvent: 'PIPELINE.ENQUEUED_RUN',
  entity: 'cds.outbox.Messages',
  table: 'cds_outbox_Messages',
  model: '@sap/cds/srv/outbox',
  /** First `@sap/cds` major whose queued schedules change live (SPEC "Versioning"). */
  liveChangeMajor: 10,
  /** Each instance checks a pipeline's task this long after it is due (ms) and flushes the queue if it still waits. */
  watchGrace: 250,
  /** Re-check interval of the watchdog after a flush or an error (ms). */
  watchRetry: 1000,
} as const
/** Multitenancy (`cds.requires['data-pipeline'].multitenancy`, lib/tenancy). */
export const MULTITENANCY = {
  /** Default of `multitenancy.parallel`: tenant runs at once per process in a fan-out. */
  parallel: 4,
  /** The trigger recorded for runs started by a subscription (`syncOnSubscribe`). */
  subscribeTrigger: 'event',
  /** The engine handles a subscribe/upgrade/unsubscribe at the latest this long after the request (ms), should CAP not report its end. */
  lifecycleFallback: 30_000,
  /** An unsubscribe waits at most this long (ms) for the runs underway in the tenant to end before MTX deletes its database. */
  unsubscribeDrain: 30_000,
  /** tenantsOverview(): a tenant whose tracker gives no answer within this long (ms) shows as an error row. */
  overviewTimeout: 10_000,
} as const
export const TRANSACTION_SCOPES = ['batch', 'run'] as const
export type TransactionScope = (typeof TRANSACTION_SCOPES)[number]

export const DEFAULTS = {
  batchSize: 1000,
  scheduleEvery: 10 * 60 * 1000,
  maxRetries: 3,
  retryBaseDelay: 500,
  retryMaxDelay: 30_000,
  leaseDuration: 60_000,
  /**
   * Key ranges a full copy reads at once (README "Performance"); 1 = one page after the other.
   * 1 until measured on a quiet machine: on the shared 2-core bench machine, 4–8 ranges were faster
   * from 50 ms round trips on, but peak RSS grew by 12–26 MB and 0 ms was within noise (issue 24).
   */
  parallel: 1,
  /** Partitioned page requests in flight per process, over all runs and tenants (`cds.requires['data-pipeline'].maxParallelReads`). */
  maxParallelReads: 16,
  lastErrorLength: 1000,
} as const

/** Federation annotations (SPEC "Federation annotations") and the CAP annotations they imply. */
export const ANNOTATIONS = {
  replicate: '@federation.replicate',
  delegate: '@federation.delegate',
  /** CAP's own intent annotation (guide "CAP-level Data Federation"): replicate with FEDERATED_DEFAULTS. */
  federated: '@federated',
  /** Set on the model (`csn.meta`) once the federation model hook ran. */
  enhanced: '@federation.$enhanced',
  persistenceTable: '@cds.persistence.table',
  persistenceSkip: '@cds.persistence.skip',
  /** Provider side of event-driven replication: emit `<entity>.<Created|Updated|Deleted>` with the keys (lib/publish). */
  emit: '@federation.emit',
} as const
/** `@federation.emit`: the messaging service of a bare annotation, and the topic suffixes per change. */
export const EMIT = {
  defaultService: 'messaging',
  created: 'Created',
  updated: 'Updated',
  deleted: 'Deleted',
  /** Keys per existence check / key read of a bulk change. */
  keyChunk: 500,
  /** Default of `emit.keysPerMessage`: most keys one message carries (a transaction's changes of one topic). */
  keysPerMessage: 500,
} as const
/**
 * What `@federated` alone means: `@federation.replicate` with these options (override under
 * `cds.requires['data-pipeline'].federation.federated`); delta on `modifiedAt` when the
 * projection has that element, full refreshes otherwise.
 */
export const FEDERATED_DEFAULTS = {
  schedule: DEFAULTS.scheduleEvery,
  preload: true,
  deltaField: 'modifiedAt',
} as const
/** Kinds of `cds.requires` entries that are remote services (the sources `@federated` replicates from). */
export const REMOTE_KINDS = ['odata', 'odata-v4', 'odata-v2', 'hcql', 'rest'] as const
/** Keys `@federation.replicate` accepts. */
export const REPLICATE_KEYS = ['schedule', 'preload', 'delta', 'events', 'parallel'] as const

/** Delegation defaults (SPEC "Read behaviour on federated entities"); override under `cds.requires['data-pipeline'].federation`. */
export const DELEGATE_DEFAULTS = {
  /** Keys per remote call when stitching expands and navigations (bounded URL or $batch body). */
  keyChunkSize: 100,
  /** Most keys a `$filter` through an association may turn into before the request fails with 400. */
  maxFilterKeys: 1000,
  /** Response cache entries kept per process (least recently used are evicted). */
  cacheEntries: 1000,
  /** Cache TTL when `cache` is given without `ttl` (ms). */
  cacheTtl: 60_000,
} as const
export const DELEGATE_CACHE_STRATEGIES = ['response', 'entity'] as const
export type DelegateCacheStrategy = (typeof DELEGATE_CACHE_STRATEGIES)[number]
