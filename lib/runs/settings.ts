/**
 * `cds.requires['data-pipeline'].runEvents` (README "Run events"): `false` records none, else
 * `{ max }` — events kept per run (default 200); what goes beyond is rolled up into one event.
 */
import cds from '@sap/cds'
import { SERVICE_NAME } from '../constants.js'
import { invalidConfig } from '../pipeline/errors.js'

export const RUN_EVENTS_DEFAULT_MAX = 200
/** Room for the first error, the roll-up and the end, plus a few detail events. */
export const RUN_EVENTS_MIN = 5
export const RUN_EVENTS_LIMIT = 10_000

/** The events kept per run; 0 when switched off. Throws INVALID_CONFIG naming the key. */
export function runEventsMax(): number {
  const entry = (cds.env.requires as Record<string, { runEvents?: unknown } | undefined>)[SERVICE_NAME]
  const setting = entry?.runEvents
  if (setting === false) return 0
  if (setting === undefined || setting === null || setting === true) return RUN_EVENTS_DEFAULT_MAX
  if (typeof setting !== 'object' || Array.isArray(setting)) throw invalidConfig('runEvents', 'must be false or an object { max }')
  const max = (setting as { max?: unknown }).max
  if (max === undefined) return RUN_EVENTS_DEFAULT_MAX
  if (typeof max !== 'number' || !Number.isInteger(max) || max < RUN_EVENTS_MIN || max > RUN_EVENTS_LIMIT)
    throw invalidConfig('runEvents.max', `must be an integer from ${RUN_EVENTS_MIN} to ${RUN_EVENTS_LIMIT}`)
  return max
}
