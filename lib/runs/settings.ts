/**
 * `cds.requires['data-pipeline'].runEvents` (README "Run events"): `false` records none, else
 * `{ max, flushInterval }` — events kept per run (default 200; what goes beyond is rolled up into
 * one event) and how often a running run writes its new events (ms, default 5000).
 */
import cds from '@sap/cds'
import { SERVICE_NAME } from '../constants.js'
import { invalidConfig } from '../pipeline/errors.js'

export const RUN_EVENTS_DEFAULT_MAX = 200
export const RUN_EVENTS_DEFAULT_FLUSH = 5000
/** Room for the first error, the roll-up and the end, plus a few detail events. */
export const RUN_EVENTS_MIN = 5
export const RUN_EVENTS_LIMIT = 10_000
const MIN_FLUSH = 100

export interface RunEventsSettings {
  /** Events kept per run; 0: none recorded. */
  max: number
  flushInterval: number
}

/** The settings; throws INVALID_CONFIG naming the key. */
export function runEventsSettings(): RunEventsSettings {
  const entry = (cds.env.requires as Record<string, { runEvents?: unknown } | undefined>)[SERVICE_NAME]
  const setting = entry?.runEvents
  if (setting === false) return { max: 0, flushInterval: RUN_EVENTS_DEFAULT_FLUSH }
  if (setting === undefined || setting === null || setting === true) return { max: RUN_EVENTS_DEFAULT_MAX, flushInterval: RUN_EVENTS_DEFAULT_FLUSH }
  if (typeof setting !== 'object' || Array.isArray(setting)) throw invalidConfig('runEvents', 'must be false or an object { max, flushInterval }')
  const { max = RUN_EVENTS_DEFAULT_MAX, flushInterval = RUN_EVENTS_DEFAULT_FLUSH, ...rest } = setting as { max?: unknown; flushInterval?: unknown }
  const unknown = Object.keys(rest)[0]
  if (unknown) throw invalidConfig(`runEvents.${unknown}`, 'is unknown; runEvents has max and flushInterval')
  if (typeof max !== 'number' || !Number.isInteger(max) || max < RUN_EVENTS_MIN || max > RUN_EVENTS_LIMIT)
    throw invalidConfig('runEvents.max', `must be an integer from ${RUN_EVENTS_MIN} to ${RUN_EVENTS_LIMIT}`)
  if (typeof flushInterval !== 'number' || !Number.isInteger(flushInterval) || flushInterval < MIN_FLUSH)
    throw invalidConfig('runEvents.flushInterval', `must be an integer of at least ${MIN_FLUSH} (ms)`)
  return { max, flushInterval }
}
