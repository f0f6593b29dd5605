/**
 * The rules of each overridable setting (issue 25, point 3): its type, allowed values and bounds.
 * One table serves two readers: `resolvePipeline` checks these settings with {@link checkSetting}
 * (so a rule is what the server enforces), and `configView()` serves the same table to the
 * console, which validates as the user types. Checks that need the whole config (delta with a
 * query-shape source, cron gaps, durations) stay in the validator and are reached through the
 * validate-only call.
 */
import { DELTA_MODES, REPLICATION_MODES, TRANSACTION_SCOPES } from '../../constants.js'
import { invalidConfig } from '../../pipeline/errors.js'
import { DURATION_PATTERN } from './duration.js'
import { FIELD_NAME, MAX_PARALLEL, MAX_TIMER_MS, STORED_LENGTHS, minInterval } from './limits.js'
import type { OVERRIDABLE_PATHS } from './overrides.js'

export type SettingType = 'enum' | 'integer' | 'number' | 'boolean' | 'text' | 'schedule' | 'duration' | 'json'

export interface SettingRule {
  type: SettingType
  /** enum: the allowed values. */
  values?: readonly string[]
  /** integer, number, schedule (ms of `every`): inclusive bounds, unless `minExclusive`. */
  min?: number
  max?: number
  minExclusive?: boolean
  /** text: the most characters stored. */
  maxLength?: number
  /** duration and the `every` of a schedule as text: what the parser accepts (a RegExp source). */
  pattern?: string
  /** Milliseconds (integer settings that are times). */
  unit?: 'ms'
}

type OverridablePath = (typeof OVERRIDABLE_PATHS)[number]

/** A source field's name, as checkFieldName accepts it. */
const fieldName: SettingRule = { type: 'text', pattern: FIELD_NAME.source }
const retryDelay: SettingRule = { type: 'integer', min: 0, max: MAX_TIMER_MS, unit: 'ms' }

/** The static part of the rules; `schedule` bounds depend on the app's minimum interval (settingRules()). */
const RULES: Record<OverridablePath, SettingRule> = {
  description: { type: 'text', maxLength: STORED_LENGTHS.description },
  mode: { type: 'enum', values: REPLICATION_MODES },
  enabled: { type: 'boolean' },
  schedule: { type: 'schedule', max: MAX_TIMER_MS, unit: 'ms', pattern: DURATION_PATTERN.source },
  transaction: { type: 'enum', values: TRANSACTION_SCOPES },
  maxStaleness: { type: 'duration', min: 1, unit: 'ms', pattern: DURATION_PATTERN.source },
  'source.batchSize': { type: 'integer', min: 1, max: 100_000 },
  parallel: { type: 'integer', min: 1, max: MAX_PARALLEL },
  'delta.field': fieldName,
  'delta.mode': { type: 'enum', values: DELTA_MODES },
  'delta.dateField': fieldName,
  'delta.timeField': fieldName,
  'retry.maxRetries': { type: 'integer', min: 0, max: Number.MAX_SAFE_INTEGER },
  'retry.baseDelay': retryDelay,
  'retry.maxDelay': retryDelay,
  onError: { type: 'json' },
  schemaDrift: { type: 'json' },
  deletes: { type: 'json' },
  'deletes.sweep': { type: 'json' },
  'deletes.maxShare': { type: 'number', min: 0, minExclusive: true, max: 1 },
  'deletes.force': { type: 'boolean' },
}

/** Every overridable setting's rule, as served by `configView()`. */
export function settingRules(): Record<string, SettingRule> {
  return { ...RULES, schedule: { ...RULES.schedule, min: minInterval() } }
}

export function settingRule(path: string): SettingRule | undefined {
  return (RULES as Record<string, SettingRule>)[path]
}

/**
 * Checks one value against its setting's rule (undefined: not set, nothing to check); throws
 * INVALID_CONFIG naming the path. For enum, integer, number, boolean and text settings this is the
 * validator's check; the other types are parsed by their own parsers.
 */
export function checkSetting(path: OverridablePath, value: unknown): void {
  if (value === undefined) return
  const rule = RULES[path]
  switch (rule.type) {
    case 'enum':
      if (typeof value !== 'string' || !rule.values!.includes(value)) throw invalidConfig(path, `'${String(value)}' is invalid; expected one of ${rule.values!.join(', ')}`)
      return
    case 'integer':
      if (!Number.isInteger(value) || (value as number) < rule.min!) throw invalidConfig(path, rule.min === 0 ? 'must be a non-negative integer' : `must be an integer between ${rule.min} and ${rule.max}`)
      if ((value as number) > rule.max!) throw invalidConfig(path, rule.unit === 'ms' ? `must be at most ${rule.max} ms` : `must be an integer between ${rule.min} and ${rule.max}`)
      return
    case 'number': {
      const low = rule.minExclusive ? (value as number) > rule.min! : (value as number) >= rule.min!
      if (typeof value !== 'number' || !low || value > rule.max!)
        throw invalidConfig(path, `must be a number ${rule.minExclusive ? 'greater than' : 'at least'} ${rule.min} and at most ${rule.max}`)
      return
    }
    case 'boolean':
      if (typeof value !== 'boolean') throw invalidConfig(path, 'must be a boolean')
      return
    case 'text':
      if (typeof value !== 'string') throw invalidConfig(path, 'must be a string')
      if (rule.maxLength !== undefined) {
        const characters = value.length - (value.match(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g)?.length ?? 0)
        if (characters > rule.maxLength) throw invalidConfig(path, `is ${characters} characters long; at most ${rule.maxLength} are stored`)
      }
      return
    default:
      return
  }
}
