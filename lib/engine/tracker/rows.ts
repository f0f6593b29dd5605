/**
 * The tracker's rows as the engine reads and writes them: the pipeline row, a run's start and
 * progress, the registration row; the lease owner of this process; triggers and stored texts.
 */
import { hostname } from 'node:os'
import { randomUUID } from 'node:crypto'
import { DEFAULTS, RUN_TRIGGERS, type ReplicationMode, type RunStatus, type RunTrigger } from '../../constants.js'

/** The tracker row as stored (structured `statistics` flattened by CAP). */
export interface PipelineRow {
  name: string
  description: string | null
  source: string | null
  target: string | null
  mode: ReplicationMode | null
  enabled: boolean | null
  baseConfig: string | null
  overrides: string | null
  schedule: string | null
  origin: string | null
  lastSync: string | null
  lastKey: string | null
  status: RunStatus | null
  errorCount: number | null
  lastError: string | null
  statistics_created: number | null
  statistics_updated: number | null
  statistics_deleted: number | null
  statistics_unchanged?: number | null
  statistics_skipped?: number | null
  leaseOwner: string | null
  leaseUntil: string | null
  currentRun: string | null
  checkpoint: string | null
  lastSuccess?: string | null
}

/** Progress columns of a run row (README "Progress and freshness"); null: unknown. */
export interface RunProgress {
  processed: number
  expected: number | null
  percent: number | null
  rowsPerSecond: number
  remainingMs: number | null
  eta: string | null
}

/** The history row of a run starting with the guard. */
export interface RunStart {
  trigger: RunTrigger
  mode: ReplicationMode
  startTime: string
}

export interface RegistrationRow {
  name: string
  description: string | null
  source: string
  target: string
  mode: ReplicationMode
  baseConfig: string
  schedule: string | null
  origin: string | null
}

/** Identifies this process as lease holder. */
export const LEASE_OWNER = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`

export function whitelistTrigger(trigger: unknown): RunTrigger {
  return (RUN_TRIGGERS as readonly unknown[]).includes(trigger) ? (trigger as RunTrigger) : 'manual'
}

export function truncateText(text: string, length: number = DEFAULTS.lastErrorLength): string {
  return text.length <= length ? text : `${text.slice(0, length - 1)}…`
}

/** The part of a tracker row a delta run's read starts from. */
export type ReadPosition = Pick<PipelineRow, 'lastSync' | 'lastKey' | 'checkpoint'>

