/**
 * The console's typed configuration editor (issue 25, point 3) asks the server before it saves:
 * `validateOverrides` checks edits with the registration rules without changing anything, and
 * `previewSchedule` answers the next fire times of a schedule. Both use the validator itself
 * (resolvePipeline through the registry, parseSchedule, nextCronTime), never a copy of it.
 */
import { PipelineError } from '../pipeline/errors.js'
import { flattenOverrides, type Overrides } from '../engine/config/overrides.js'
import { parseSchedule, scheduleLabel } from '../engine/schedule/spec.js'
import { nextCronTime } from '../engine/schedule/cron.js'
import { MAX_OVERRIDES_LENGTH } from '../engine/config/limits.js'
import type { ScheduleInput } from '../pipeline/types.js'

export interface SettingProblem {
  /** The setting (dotted path) the problem is about. */
  target: string
  message: string
}

export interface ValidationResult {
  valid: boolean
  problems: SettingProblem[]
}

/** The most fire times one preview answers. */
export const MAX_PREVIEW = 20

const INVALID_CONFIG_PREFIX = /^Invalid pipeline config: /

function problemOf(error: unknown, fallback: string): SettingProblem {
  if (!(error instanceof PipelineError) || (error.code !== 'INVALID_CONFIG' && error.code !== 'INVALID_PARAMETER')) throw error
  return { target: error.target ?? fallback, message: error.message.replace(INVALID_CONFIG_PREFIX, '') }
}

/**
 * Checks changed overrides (a JSON object, dotted or nested) on top of the current ones, naming
 * every bad setting. `check` resolves a whole override set and throws.
 */
export function validateOverrides(text: string, current: Overrides, check: (overrides: Overrides) => void): ValidationResult {
  if (text.length > MAX_OVERRIDES_LENGTH) return invalid('overrides', `${text.length} characters; at most ${MAX_OVERRIDES_LENGTH} are accepted`)
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return invalid('overrides', 'is not valid JSON')
  }
  let changes: Overrides
  try {
    changes = flattenOverrides(parsed)
  } catch (error) {
    return { valid: false, problems: [problemOf(error, 'overrides')] }
  }
  // all together, then again without each setting found bad, until the rest passes: every bad
  // setting is named, and settings that need each other (delta.mode with its fields) are checked together
  const problems: SettingProblem[] = []
  const remaining = { ...changes }
  for (let round = 0; round <= Object.keys(changes).length; round++) {
    try {
      check({ ...current, ...remaining })
      break
    } catch (error) {
      const problem = problemOf(error, 'overrides')
      problems.push(problem)
      const path = Object.keys(remaining).find(key => problem.target === key || problem.target.startsWith(`${key}.`))
      if (!path) break // (a setting not edited, e.g. a field delta.mode needs)
      delete remaining[path]
    }
  }
  return { valid: problems.length === 0, problems }
}

function invalid(target: string, message: string): ValidationResult {
  return { valid: false, problems: [{ target, message: `${target}: ${message}` }] }
}

export interface SchedulePreview {
  label: string | null
  engine: string
  every?: number
  cron?: string
  /** The next fire times (ISO 8601); for `every`, counted from now (a spawn timer starts when armed). */
  next: string[]
}

/**
 * Parses a schedule as an override gives it (ms, a duration, a cron string, or `{ every | cron, engine }`
 * as JSON text) and answers its next `count` fire times after `from`; bad input throws INVALID_PARAMETER
 * with target `schedule`.
 */
export function previewSchedule(text: unknown, count: unknown, from = new Date()): SchedulePreview {
  if (typeof text !== 'string' || !text.trim()) throw new PipelineError('INVALID_PARAMETER', 'schedule: is required', { target: 'schedule' })
  const n = count === undefined || count === null ? 5 : Number(count)
  if (!Number.isInteger(n) || n < 1 || n > MAX_PREVIEW) throw new PipelineError('INVALID_PARAMETER', `count: must be an integer between 1 and ${MAX_PREVIEW}`, { target: 'count' })
  // `{ "cron": … }` and plain milliseconds as JSON; durations (10m) and cron strings as text
  let input: ScheduleInput = text.trim()
  if (/^(\{|\d+$)/.test(input)) {
    try {
      input = JSON.parse(input) as ScheduleInput
    } catch {
      throw new PipelineError('INVALID_PARAMETER', 'schedule: is not valid JSON', { target: 'schedule' })
    }
  }
  let spec
  try {
    spec = parseSchedule(input, 'schedule')
  } catch (error) {
    const problem = problemOf(error, 'schedule')
    throw new PipelineError('INVALID_PARAMETER', problem.message, { target: 'schedule' })
  }
  const next: string[] = []
  let at = from
  for (let i = 0; i < n; i++) {
    at = spec.cron ? nextCronTime(spec.cron, at) : new Date(at.getTime() + spec.every!)
    next.push(at.toISOString())
  }
  return { label: scheduleLabel(spec), engine: spec.engine, ...(spec.cron ? { cron: spec.cron } : { every: spec.every }), next }
}
