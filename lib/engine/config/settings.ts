/**
 * The one table of a pipeline's settings (issue 35, point 4): an entry per setting path with its
 * type, allowed values and bounds, default, whether it can be overridden at run time, a one-line
 * description, and — where a setting needs its own parser — a reference to that parser.
 *
 * What is derived from it: the overridable paths (`OVERRIDABLE_PATHS`, overrides.ts), the rules
 * served to the console (`settingRules()`, rules.ts, read by `configView()`), the checks of
 * `resolvePipeline` (`checkSetting`, rules.ts: every simple-typed entry is enforced, a new one with
 * no further code), the settings a tenant may set (`tenant`), the keys `@federation.replicate`
 * accepts (`annotation`), and the generated reference page (scripts/docs-reference.mjs).
 *
 * Adding a setting is one entry here (plus its field in `PipelineConfig`): an entry of a simple type
 * (enum, integer, number, boolean, text) is checked by `resolvePipeline` without further code.
 */
import { DEFAULTS, DELTA_MODES, REPLICATION_MODES, TRANSACTION_SCOPES } from '../../constants.js'
import { DURATION_PATTERN } from './duration.js'
import { FIELD_NAME, MAX_PARALLEL, MAX_TIMER_MS, STORED_LENGTHS } from './limits.js'

export type SettingType = 'enum' | 'integer' | 'number' | 'boolean' | 'text' | 'schedule' | 'duration' | 'json' | 'object' | 'function'

/** The part of an entry the console is served (`configView()`'s `rule`) and checks as the user types. */
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
  /** duration and the `every` of a schedule as text, field names: what the parser accepts (a RegExp source). */
  pattern?: string
  /** Milliseconds (integer settings that are times). */
  unit?: 'ms'
}

/** The keys of an entry that are its served rule. */
export const RULE_KEYS = ['type', 'values', 'min', 'max', 'minExclusive', 'maxLength', 'pattern', 'unit'] as const

export interface SettingEntry extends SettingRule {
  /** One line for the generated reference. */
  description: string
  /** The default when unset, as documented (a value, or words for a derived default). */
  default?: unknown
  /** Whether an override (`setOverrides`, the console) may set it. */
  overridable: boolean
  /** Whether a tenant's own settings (`multitenancy.tenants.<t>.replicate.<pipeline>`) may set it. */
  tenant?: boolean
  /** Whether `@federation.replicate` accepts it as a key. */
  annotation?: boolean
  /** The value must be given (checkSetting refuses undefined). */
  required?: boolean
  /** text: the empty string is refused (`trim`: blanks too). */
  nonEmpty?: boolean | 'trim'
  /** The message of a failed check where it is not checkSetting's generic one (kept as it always read). */
  message?: string | ((value: unknown, rule: SettingRule) => string)
  /** A setting with its own parser: the function (and module) that checks and resolves it. */
  parser?: string
  /**
   * The step of `resolvePipeline` that checks this setting in order, with its cross-field rules
   * (the first offending key is the one named). Entries without it of a simple type are checked
   * by the table walk at the end of `resolvePipeline` (`checkSettings`).
   */
  checkedBy?: string
}

/** A source field's name, as checkFieldName accepts it. */
const fieldName = { type: 'text', pattern: FIELD_NAME.source, parser: 'checkFieldName (lib/engine/config/limits.ts)' } as const
const retryDelay = { type: 'integer', min: 0, max: MAX_TIMER_MS, unit: 'ms', overridable: true, checkedBy: 'resolveRetry' } as const
const nonEmptyString = 'must be a non-empty string'

/**
 * Every setting of a pipeline config. The overridable ones are in the order `OVERRIDABLE_PATHS` lists
 * them (an error message and the console list them in this order); `resolvePipeline` checks in its
 * own order (`checkedBy`), so that the first offending key is the one named.
 */
export const SETTINGS: Record<string, SettingEntry> = {
  name: { type: 'text', required: true, nonEmpty: 'trim', maxLength: STORED_LENGTHS.name, message: 'is required and must be a non-empty string', overridable: false, checkedBy: 'resolvePipeline', description: 'The pipeline\'s unique name.' },
  description: { type: 'text', maxLength: STORED_LENGTHS.description, overridable: true, checkedBy: 'resolvePipeline', description: 'Free text shown in the console and the management API.' },
  mode: { type: 'enum', values: REPLICATION_MODES, default: "'delta' (entity), 'full' (source.query)", overridable: true, tenant: true, checkedBy: 'resolvePipeline', description: 'How a scheduled run replicates: changes since the watermark, or a full copy.' },
  enabled: { type: 'boolean', default: true, overridable: true, checkedBy: 'resolvePipeline', description: 'Whether scheduled runs start.' },
  schedule: { type: 'schedule', max: MAX_TIMER_MS, unit: 'ms', pattern: DURATION_PATTERN.source, parser: 'parseSchedule (lib/engine/schedule/spec.ts)', overridable: true, tenant: true, annotation: true, checkedBy: 'resolvePipeline', description: 'When runs start: an interval or a cron expression (none: runs on request only).' },
  transaction: { type: 'enum', values: TRANSACTION_SCOPES, default: "'batch' (delta), 'run' (full)", overridable: true, checkedBy: 'resolvePipeline', description: 'Transaction scope: one per batch or one per run.' },
  maxStaleness: { type: 'duration', min: 1, unit: 'ms', pattern: DURATION_PATTERN.source, parser: 'parseDuration (lib/engine/config/duration.ts)', overridable: true, checkedBy: 'resolvePipeline', description: 'The pipeline is stale when its last successful run is older than this.' },
  parallel: { type: 'integer', min: 1, max: MAX_PARALLEL, default: DEFAULTS.parallel, overridable: true, annotation: true, checkedBy: 'resolvePipeline', description: 'Most requests a full copy or a large delta reads at once, in key ranges.' },
  source: { type: 'object', required: true, message: 'is required and must be an object', overridable: false, checkedBy: 'resolvePipeline', description: 'Where the records come from.' },
  'source.query': { type: 'function', message: 'must be a function returning a CQN SELECT', overridable: false, checkedBy: 'resolveSource', description: 'A CQN SELECT factory: a query-shape pipeline (a derived snapshot); not with source.entity.' },
  'source.entity': { type: 'text', nonEmpty: true, message: nonEmptyString, overridable: false, checkedBy: 'resolveSource', description: 'The source entity (required unless source.query, rest.path or a custom source.adapter).' },
  'source.kind': { type: 'enum', overridable: false, checkedBy: 'resolveSource', message: (value, rule) => `'${String(value)}' is unknown; expected one of ${rule.values!.join(', ')} or a custom source.adapter`, description: 'The source kind (built-in kinds and those under cds.requires.kinds); default: the service\'s configured kind.' },
  'source.adapter': { type: 'function', message: 'must be a class extending BaseSourceAdapter', overridable: false, checkedBy: 'resolveSource', description: 'A custom source adapter class (extends BaseSourceAdapter).' },
  'source.service': { type: 'text', overridable: false, checkedBy: 'the registry (cds.requires)', description: 'The required service the source is read from.' },
  'source.origin': { type: 'text', nonEmpty: true, maxLength: STORED_LENGTHS.origin, message: nonEmptyString, overridable: false, checkedBy: 'resolveSource', description: 'Fan-in: the origin the rows of this pipeline are tagged with (entity-shape pipelines).' },
  'source.batchSize': { type: 'integer', min: 1, max: 100_000, default: DEFAULTS.batchSize, overridable: true, checkedBy: 'resolvePipeline', description: 'Records read per page and written per batch.' },
  rest: { type: 'json', overridable: false, parser: 'validateRestConfig (lib/adapters/source/rest-config.ts)', checkedBy: 'resolveSource', description: 'REST source settings: path, pagination, deltaParam, dataPath, keys.' },
  target: { type: 'object', message: 'must be an object', overridable: false, checkedBy: 'resolvePipeline', description: 'Where the records go (default: the database).' },
  'target.adapter': { type: 'function', message: 'must be a class extending BaseTargetAdapter', overridable: false, checkedBy: 'checkTarget', description: 'A custom target adapter class (extends BaseTargetAdapter).' },
  'target.kind': { type: 'enum', values: ['odata', 'odata-v2', 'hcql'], message: value => `'${String(value)}' is unknown; expected odata, odata-v2 or hcql`, overridable: false, checkedBy: 'checkTarget', description: 'A remote target\'s protocol.' },
  'target.entity': { type: 'text', required: true, nonEmpty: true, message: 'is required unless a custom target.adapter is given', overridable: false, checkedBy: 'checkTarget', description: 'The target entity (required unless a custom target.adapter).' },
  'target.service': { type: 'text', overridable: false, default: 'db', checkedBy: 'checkTarget', description: 'The target service: a database, or a remote service with target.kind.' },
  delta: { type: 'object', message: 'must be an object', overridable: false, annotation: true, checkedBy: 'resolveDelta', description: 'How changes are found (entity-shape pipelines).' },
  'delta.field': { ...fieldName, nonEmpty: true, overridable: true, checkedBy: 'resolveDelta', description: 'The watermark field (timestamp or key mode).' },
  'delta.mode': { type: 'enum', values: DELTA_MODES, default: 'timestamp', overridable: true, checkedBy: 'resolveDelta', description: 'The watermark: a timestamp field, a key, date and time fields, or OData delta links.' },
  'delta.dateField': { ...fieldName, overridable: true, checkedBy: 'resolveDelta', description: "The date field of delta.mode 'datetime-fields'." },
  'delta.timeField': { ...fieldName, overridable: true, checkedBy: 'resolveDelta', description: "The time field of delta.mode 'datetime-fields'." },
  'delta.deletedField': { ...fieldName, nonEmpty: true, message: 'must be a non-empty string (the source field marking deleted rows)', overridable: false, checkedBy: 'resolveDelta', description: 'The source field marking deleted rows (soft deletes).' },
  'delta.deletedAction': { type: 'enum', values: ['delete', 'flag'], message: value => `'${String(value)}' is invalid; expected delete or flag`, default: 'delete', overridable: false, checkedBy: 'resolveDelta', description: 'What a row marked deleted does to the target: delete it or flag it.' },
  'delta.settle': { type: 'duration', pattern: DURATION_PATTERN.source, unit: 'ms', parser: 'parseDuration (lib/engine/config/duration.ts)', overridable: false, checkedBy: 'resolveDelta', description: 'How long changes settle before the watermark passes them.' },
  retry: { type: 'object', message: 'must be an object', overridable: false, checkedBy: 'resolveRetry', description: 'Retries of a failed run.' },
  'retry.maxRetries': { type: 'integer', min: 0, max: Number.MAX_SAFE_INTEGER, default: DEFAULTS.maxRetries, overridable: true, checkedBy: 'resolveRetry', description: 'Retries of a failed run before it stays failed.' },
  'retry.baseDelay': { ...retryDelay, default: DEFAULTS.retryBaseDelay, description: 'The first retry\'s delay; doubled per retry.' },
  'retry.maxDelay': { ...retryDelay, default: DEFAULTS.retryMaxDelay, description: 'The longest delay between retries.' },
  onError: { type: 'json', parser: 'resolveOnError (lib/engine/records/index.ts)', default: 'fail', overridable: true, checkedBy: 'resolvePipeline', description: "Poison records: 'fail' the run, or 'skip' them into PipelineRejects ({ mode, maxSkipped })." },
  schemaDrift: { type: 'json', parser: 'resolveSchemaDrift (lib/engine/config/index.ts)', default: 'warn', overridable: true, checkedBy: 'resolvePipeline', description: "Schema drift check at run start: 'warn', 'fail', 'ignore' or { policy, maxAge }." },
  deletes: { type: 'json', parser: 'resolveDeletes (lib/engine/config/index.ts)', overridable: true, checkedBy: 'resolveDeletes', description: 'Deletes by key reconciliation: { sweep, maxShare, force }.' },
  'deletes.sweep': { type: 'json', parser: 'resolveDeletes (lib/engine/config/index.ts)', overridable: true, checkedBy: 'resolveDeletes', description: "When keys are reconciled: 'always' or { every: <n runs | duration> }." },
  'deletes.maxShare': { type: 'number', min: 0, minExclusive: true, max: 1, default: 0.5, overridable: true, checkedBy: 'resolveDeletes', description: 'The largest share of target rows one sweep may delete.' },
  'deletes.force': { type: 'boolean', default: false, overridable: true, checkedBy: 'resolveDeletes', description: 'Lets a sweep above maxShare through once.' },
  leaseDuration: { type: 'integer', min: 500, unit: 'ms', default: DEFAULTS.leaseDuration, message: 'must be an integer of at least 500 ms', overridable: false, checkedBy: 'resolvePipeline', description: 'The run guard\'s lease; renewed every third of it.' },
  'refresh.slice': { type: 'json', parser: 'resolveSlice (lib/engine/run/position.ts), at a partial-refresh run', overridable: false, checkedBy: 'resolvePipeline', description: 'Partial refresh of a query-shape pipeline: the slice (predicate or function) a run rebuilds.' },
  events: { type: 'json', parser: 'resolveEvents (lib/events/config.ts)', overridable: false, annotation: true, checkedBy: 'the registry (eventsOf)', description: 'Event-driven replication: subscriptions applied in micro-batches.' },
}

/** The paths of the entries that pass `test`, in the table's order. */
export function pathsWhere(test: (entry: SettingEntry) => boolean | undefined): string[] {
  return Object.entries(SETTINGS).filter(([, entry]) => test(entry)).map(([path]) => path)
}

/** The served rule of an entry: its type, values and bounds only. */
export function ruleOf(entry: SettingEntry): SettingRule {
  const { type, values, min, max, minExclusive, maxLength, pattern, unit } = entry
  const rule: SettingRule = { type, values, min, max, minExclusive, maxLength, pattern, unit }
  for (const key of RULE_KEYS) if (key !== 'type' && rule[key] === undefined) delete rule[key]
  return rule
}

/** What a tenant's own settings (`multitenancy.tenants.<tenant>.replicate.<pipeline>`, its admin's overrides) may set. */
export const TENANT_PATHS: readonly string[] = Object.freeze(pathsWhere(entry => entry.tenant))
