/**
 * `cds.requires['data-pipeline'].retention` (README "Run retention"): how long the history of
 * runs (PipelineRuns with their events and rejects) is kept, per pipeline and tenant.
 *
 *   retention: { runs: { maxAge: '90d', maxCount: 1000, interval: '5m' } }  // the defaults
 *   retention: false  (or runs: false)                                      // keep every run
 *
 * `maxAge` / `maxCount` may each be `false` (no limit of that kind); `interval` is how often at
 * most this process prunes one pipeline's runs (after a run ended).
 */
import cds from '@sap/cds'
import { SERVICE_NAME } from '../constants.js'
import { invalidConfig } from '../pipeline/errors.js'
import { parseDuration } from '../engine/config/duration.js'
import { isPlainObject } from '../pipeline/json.js'

export const RETENTION_DEFAULTS = { maxAge: 90 * 86_400_000, maxCount: 1000, interval: 5 * 60_000 } as const
/** A shorter maxAge is most likely a number meant as days (durations as numbers are milliseconds). */
const MIN_AGE = 60_000

export interface RunRetentionSettings {
  /** Runs that started longer ago (ms) are pruned; undefined: no age limit. */
  maxAge?: number
  /** Runs beyond the newest `maxCount` of a pipeline are pruned; undefined: no count limit. */
  maxCount?: number
  /** Least time (ms) between two prunes of one pipeline's runs in this process. */
  interval: number
}


/** The settings; undefined: every run is kept. Throws INVALID_CONFIG naming the key. */
export function runRetentionSettings(): RunRetentionSettings | undefined {
  const entry = (cds.env.requires as Record<string, { retention?: unknown } | undefined>)[SERVICE_NAME]
  const setting = entry?.retention
  if (setting === false) return undefined
  if (setting !== undefined && setting !== null && setting !== true && !isPlainObject(setting)) throw invalidConfig('retention', 'must be false or an object { runs: { maxAge, maxCount, interval } }')
  const { runs, ...rest } = isPlainObject(setting) ? setting : {}
  const unknown = Object.keys(rest)[0]
  if (unknown) throw invalidConfig(`retention.${unknown}`, 'is unknown; retention has runs')
  if (runs === false) return undefined
  if (runs !== undefined && runs !== null && runs !== true && !isPlainObject(runs)) throw invalidConfig('retention.runs', 'must be false or an object { maxAge, maxCount, interval }')
  const { maxAge = RETENTION_DEFAULTS.maxAge, maxCount = RETENTION_DEFAULTS.maxCount, interval = RETENTION_DEFAULTS.interval, ...others } = isPlainObject(runs) ? runs : {}
  const other = Object.keys(others)[0]
  if (other) throw invalidConfig(`retention.runs.${other}`, 'is unknown; retention.runs has maxAge, maxCount and interval')
  return { maxAge: ageOf(maxAge), maxCount: countOf(maxCount), interval: durationOf(interval, 'retention.runs.interval') }
}

function ageOf(value: unknown): number | undefined {
  if (value === false) return undefined
  const ms = durationOf(value, 'retention.runs.maxAge')
  if (ms < MIN_AGE) throw invalidConfig('retention.runs.maxAge', `must be at least 1 minute (a number is milliseconds; write '30d' for 30 days), got ${String(value)}`)
  return ms
}

function countOf(value: unknown): number | undefined {
  if (value === false) return undefined
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) throw invalidConfig('retention.runs.maxCount', `must be false or a positive integer, got ${JSON.stringify(value)}`)
  return value
}

function durationOf(value: unknown, key: string): number {
  if (typeof value !== 'number' && typeof value !== 'string') throw invalidConfig(key, `must be a duration such as '30d', '12h' or '5m' (or milliseconds), got ${JSON.stringify(value)}`)
  return parseDuration(value, key)
}

