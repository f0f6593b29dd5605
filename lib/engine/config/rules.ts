/**
 * The rules of the settings (issue 25, point 3; issue 35, point 4), derived from the one settings
 * table (settings.ts). `resolvePipeline` checks a setting with {@link checkSetting} (so a rule is what
 * the server enforces), and `configView()` serves the overridable settings' rules to the console,
 * which validates as the user types. Checks that need the whole config (delta with a query-shape
 * source, cron gaps, durations) stay in the validator and are reached through the validate-only call.
 */
import { invalidConfig } from '../../pipeline/errors.js'
import { isPlainObject } from '../../pipeline/json.js'
import { minInterval } from './limits.js'
import { SETTINGS, pathsWhere, ruleOf, type SettingEntry, type SettingRule } from './settings.js'

export type { SettingRule, SettingType } from './settings.js'

/** The served rules of the overridable settings; `schedule` bounds depend on the app's minimum interval (settingRules()). */
function overridableRules(): Record<string, SettingRule> {
  return Object.fromEntries(pathsWhere(entry => entry.overridable).map(path => [path, ruleOf(SETTINGS[path])]))
}

/** Every overridable setting's rule, as served by `configView()`. */
export function settingRules(): Record<string, SettingRule> {
  const rules = overridableRules()
  return { ...rules, schedule: { ...rules.schedule, min: minInterval() } }
}

export function settingRule(path: string): SettingRule | undefined {
  const entry = SETTINGS[path]
  return entry?.overridable ? ruleOf(entry) : undefined
}

/** Types checkSetting checks by itself (the others are parsed by the entry's parser). */
export const SIMPLE_TYPES: ReadonlySet<string> = new Set(['enum', 'integer', 'number', 'boolean', 'text', 'object', 'function'])

export interface CheckOptions {
  /** enum: the allowed values where they are known at run time only (`source.kind`). */
  values?: readonly string[]
  /** Check the type only, not the stored length (a cross-field check comes between). */
  typeOnly?: boolean
}

const characters = (value: string) => value.length - (value.match(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g)?.length ?? 0)

/**
 * Checks one value against its setting's entry (undefined: not set, nothing to check, unless the
 * entry is `required`); throws INVALID_CONFIG naming the path, with the entry's `message` where it
 * has one. For enum, integer, number, boolean, text, object and function settings this is the
 * validator's check; the other types are parsed by their own parsers (the entry's `parser`).
 */
export function checkSetting(path: string, value: unknown, options: CheckOptions = {}): void {
  const entry: SettingEntry | undefined = SETTINGS[path]
  if (!entry) throw new Error(`checkSetting: '${path}' is not in the settings table (lib/engine/config/settings.ts)`)
  const rule: SettingRule = options.values ? { ...entry, values: options.values } : entry
  const fail = (generic: string) => invalidConfig(path, typeof entry.message === 'function' ? entry.message(value, rule) : entry.message ?? generic)
  if (value === undefined) {
    if (entry.required) throw fail('is required')
    return
  }
  switch (rule.type) {
    case 'enum':
      if (typeof value !== 'string' || !rule.values!.includes(value)) throw fail(`'${String(value)}' is invalid; expected one of ${rule.values!.join(', ')}`)
      return
    case 'integer':
      if (!Number.isInteger(value) || (value as number) < rule.min!) throw fail(rule.min === 0 ? 'must be a non-negative integer' : `must be an integer between ${rule.min} and ${rule.max}`)
      if ((value as number) > rule.max!) throw fail(rule.unit === 'ms' ? `must be at most ${rule.max} ms` : `must be an integer between ${rule.min} and ${rule.max}`)
      return
    case 'number': {
      const low = rule.minExclusive ? (value as number) > rule.min! : (value as number) >= rule.min!
      if (typeof value !== 'number' || !low || value > rule.max!)
        throw fail(`must be a number ${rule.minExclusive ? 'greater than' : 'at least'} ${rule.min} and at most ${rule.max}`)
      return
    }
    case 'boolean':
      if (typeof value !== 'boolean') throw fail('must be a boolean')
      return
    case 'text':
      if (typeof value !== 'string' || (entry.nonEmpty && !(entry.nonEmpty === 'trim' ? value.trim() : value))) throw fail(entry.nonEmpty ? 'must be a non-empty string' : 'must be a string')
      if (rule.maxLength !== undefined && !options.typeOnly && characters(value) > rule.maxLength)
        throw invalidConfig(path, `is ${characters(value)} characters long; at most ${rule.maxLength} are stored`)
      return
    case 'object':
      if (!isPlainObject(value)) throw fail('must be an object')
      return
    case 'function':
      if (typeof value !== 'function') throw fail('must be a function')
      return
    default:
      return
  }
}

/** A setting's value in a config, by its dotted path (undefined where a step is not an object). */
export function valueAt(config: unknown, path: string): unknown {
  let node = config
  for (const part of path.split('.')) {
    if (node === null || typeof node !== 'object') return undefined
    node = (node as Record<string, unknown>)[part]
  }
  return node
}

/**
 * The table walk: every entry of a simple type that no ordered step of `resolvePipeline` checks
 * (no `checkedBy`) is checked against the config here, so a new entry is enforced without code.
 * Unset and null values are not checked (null: the default).
 */
export function checkSettings(config: unknown): void {
  for (const [path, entry] of Object.entries(SETTINGS)) {
    if (entry.checkedBy || !SIMPLE_TYPES.has(entry.type)) continue
    const value = valueAt(config, path)
    if (value === null) continue
    checkSetting(path, value)
  }
}
