/** Names shared across the plugin: service, loggers, events, enums and defaults. */

export const SERVICE_NAME = 'data-pipeline' as const
export const TRACKER_NAMESPACE = 'plugin.data_pipeline' as const
export const PIPELINES_ENTITY = `${TRACKER_NAMESPACE}.Pipelines` as const
export const RUNS_ENTITY = `${TRACKER_NAMESPACE}.PipelineRuns` as const
/** The database table name users see in "no such table" errors. */
export const PIPELINES_TABLE = 'plugin_data_pipeline_Pipelines' as const

export const LOGGER = {
  engine: 'data-pipeline',
  odata: 'data-pipeline|odata',
  cqn: 'data-pipeline|cqn',
  db: 'data-pipeline|db',
  schedule: 'data-pipeline|schedule',
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
export const DELTA_MODES = ['timestamp', 'key', 'datetime-fields'] as const
export type DeltaMode = (typeof DELTA_MODES)[number]
export const SCHEDULE_ENGINES = ['spawn', 'queued'] as const
export type ScheduleEngine = (typeof SCHEDULE_ENGINES)[number]
export const TRANSACTION_SCOPES = ['batch', 'run'] as const
export type TransactionScope = (typeof TRANSACTION_SCOPES)[number]

export const DEFAULTS = {
  batchSize: 1000,
  scheduleEvery: 10 * 60 * 1000,
  maxRetries: 3,
  retryBaseDelay: 500,
  retryMaxDelay: 30_000,
  leaseDuration: 60_000,
  lastErrorLength: 1000,
} as const
