/**
 * The parameters of the management actions that change a pipeline's settings: setSchedule's
 * `every` / `cron` / `engine`, and setOverrides' JSON text — checked and turned into overrides,
 * with errors naming the parameter (400).
 */
import { PipelineError } from '../pipeline/errors.js'
import { flattenOverrides, type Overrides } from '../engine/config/overrides.js'
import { parseCron, parseSchedule } from '../engine/schedule/index.js'
import { MAX_OVERRIDES_LENGTH } from '../engine/config/limits.js'
import { asOverride, asParameter, requiredString } from './parameters.js'

/** setSchedule: the schedule entry its parameters describe (cron needs the queued engine). */
export function scheduleParameter(data: Record<string, unknown>): { cron: string; engine: 'queued' } | { every?: number; engine: 'spawn' | 'queued' } {
  const { every, cron, engine } = data
  if (every !== undefined && every !== null && (!Number.isInteger(every) || (every as number) < 1))
    throw new PipelineError('INVALID_PARAMETER', 'every: must be a positive integer of milliseconds', { target: 'every' })
  if (engine !== undefined && engine !== null && engine !== 'spawn' && engine !== 'queued')
    throw new PipelineError('INVALID_PARAMETER', `engine: '${String(engine)}' is invalid; expected spawn or queued`, { target: 'engine' })
  const hasCron = cron !== undefined && cron !== null && cron !== ''
  if (hasCron && engine !== 'queued')
    throw new PipelineError('INVALID_PARAMETER', "cron: requires engine 'queued' (CAP's persistent task queue); pass engine: 'queued', or every with engine 'spawn'", { target: 'cron' })
  if (hasCron && every !== undefined && every !== null)
    throw new PipelineError('INVALID_PARAMETER', 'every: cannot be combined with cron; give either every or cron', { target: 'every' })
  const schedule = hasCron
    ? { cron: asParameter(() => parseCron(cron, 'cron'), 'cron'), engine: 'queued' as const }
    : { ...(every !== undefined && every !== null ? { every: every as number } : {}), engine: (engine ?? 'spawn') as 'spawn' | 'queued' }
  // the bounds every entry shares (lib/engine/config/limits.ts), naming this action's parameter
  asParameter(() => parseSchedule(schedule, 'schedule'), hasCron ? 'cron' : 'every')
  return schedule
}

/** setOverrides: the flat overrides of the `overrides` JSON text. */
export function overridesParameter(value: unknown): Overrides {
  const text = requiredString(value, 'overrides')
  if (text.length > MAX_OVERRIDES_LENGTH) throw new PipelineError('INVALID_PARAMETER', `overrides: ${text.length} characters; at most ${MAX_OVERRIDES_LENGTH} are accepted`, { target: 'overrides' })
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    throw new PipelineError('INVALID_PARAMETER', 'overrides: is not valid JSON', { target: 'overrides' })
  }
  return asOverride(() => flattenOverrides(parsed))
}
