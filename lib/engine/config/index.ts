/**
 * lib/engine/config — checking a pipeline's settings: settings.ts is the one table of every setting
 * (type, bounds, default, overridable, description, parser); rules.ts checks a value against its
 * entry (`checkSetting`) and serves the overridable ones' rules to the console; this module resolves
 * a config (`resolvePipeline`, errors naming the first offending key: the table's checks in order,
 * the cross-field checks between them); overrides.ts applies overrides, limits.ts and duration.ts
 * the bounds and duration strings every checker shares.
 *
 * Pipeline definitions: the shape users pass to `addPipeline`, the rules that infer
 * behaviour from that shape, validation with errors naming the offending key, and the
 * serialisation written to the tracker.
 */
import { DEFAULTS, ODATA_DELTA_SOURCE_KINDS, type ReplicationMode } from '../../constants.js'
import { invalidConfig } from '../../pipeline/errors.js'
import { isPlainObject } from '../../pipeline/json.js'
import type { PipelineConfig, ResolvedDeletes, ResolvedPipeline, SchemaDriftPolicy, SchemaDriftSetting, TargetConfig } from '../../pipeline/types.js'
import { resolveOnError } from '../records/index.js'
import { validateRestConfig } from '../../adapters/source/rest-config.js'
import { REMOTE_TARGET_KINDS } from '../../adapters/kinds.js'
import { parseSchedule } from '../schedule/spec.js'
import { parseDuration } from './duration.js'
import { checkFieldName } from './limits.js'
import { checkSetting, checkSettings } from './rules.js'

const DATABASE_KINDS = new Set(['sqlite', 'hana', 'postgres', 'sql', 'better-sqlite', 'legacy-sqlite'])
const KNOWN_SOURCE_KINDS = new Set(['odata', 'odata-v4', 'odata-v2', 'hcql', 'rest', 'cqn', 'db', 'sqlite', 'hana', 'postgres'])

/** Same check without narrowing, for typed config parts. */
const isObject = (value: unknown): boolean => isPlainObject(value)

/**
 * Validates a config and infers its behaviour. Throws a `PipelineError` (INVALID_CONFIG)
 * naming the first offending key.
 */
export interface ResolveOptions {
  /** Extra source kinds registered under `cds.requires.kinds`. */
  knownKinds?: Iterable<string>
  /** The configured kind of a required service, if any. */
  serviceKind?: (service: string) => string | undefined
}

export function resolvePipeline(config: PipelineConfig, options: ResolveOptions = {}): ResolvedPipeline {
  if (!isObject(config)) throw invalidConfig('config', 'must be an object')
  const { name, target } = config
  // the checks run in this order: the first offending key is the one an error names; each key's
  // own check is its entry in the settings table (settings.ts, through checkSetting), the
  // cross-field checks are code between them
  for (const key of ['name', 'source', 'target'] as const) checkSetting(key, config[key])
  const tgt: TargetConfig = target ?? {}
  const { shape, sourceKind } = resolveSource(config, options)
  checkSetting('source.batchSize', config.source.batchSize ?? undefined) // (null: the default, as before)
  const batchSize = config.source.batchSize ?? DEFAULTS.batchSize
  checkTarget(tgt, options)
  checkSetting('mode', config.mode)
  const mode: ReplicationMode = config.mode ?? (shape === 'query' ? 'full' : 'delta')
  if (shape === 'query' && mode === 'delta')
    throw invalidConfig('mode', "'delta' is not possible with source.query: a derived snapshot has no watermark; use 'full' (or partial-refresh per run)")
  const delta = resolveDelta(config, shape, sourceKind)
  const schedule = config.schedule === undefined || config.schedule === null ? undefined : parseSchedule(config.schedule, 'schedule')
  for (const key of ['enabled', 'transaction', 'description'] as const) checkSetting(key, config[key])
  const retry = resolveRetry(config)
  if (config.refresh?.slice !== undefined && shape !== 'query')
    throw invalidConfig('refresh.slice', 'applies to query-shape pipelines (source.query) only')
  const deletes = resolveDeletes(config, shape, sourceKind, tgt, options)
  const leaseDuration = config.leaseDuration ?? DEFAULTS.leaseDuration
  checkSetting('leaseDuration', leaseDuration)
  const parallel = config.parallel ?? DEFAULTS.parallel
  checkSetting('parallel', parallel) // most requests a full copy or a large delta reads at once, in key ranges
  const schemaDrift = config.schemaDrift === undefined || config.schemaDrift === null ? undefined : resolveSchemaDrift(config.schemaDrift, 'schemaDrift')
  const maxStaleness = resolveMaxStaleness(config.maxStaleness)
  const onError = resolveOnError(config.onError)
  checkSettings(config) // the table's entries of a simple type no step above checks (a new setting)

  return {
    name,
    config: { ...config, target: tgt },
    shape,
    mode,
    delta,
    batchSize,
    schedule,
    enabled: config.enabled ?? true,
    // the scope of the pipeline's own mode; a run in another mode follows run.ts's rule
    transaction: config.transaction ?? (mode === 'delta' ? 'batch' : 'run'),
    retry,
    leaseDuration,
    parallel,
    ...(schemaDrift ? { schemaDrift } : {}),
    onError,
    deletes,
    ...(maxStaleness === undefined ? {} : { maxStaleness }),
  }
}

/** `source`: entity or query (the pipeline's shape), kind or adapter, origin; the source kind the rest of the checks need. */
function resolveSource(config: PipelineConfig, options: ResolveOptions): { shape: ResolvedPipeline['shape']; sourceKind: string | undefined } {
  const { source } = config
  const hasRestPath = typeof config.rest?.path === 'string'
  if (source.entity !== undefined && source.query !== undefined)
    throw invalidConfig('source.query', 'cannot be combined with source.entity: use source.entity for replication or source.query for a derived snapshot')
  checkSetting('source.query', source.query)
  checkSetting('source.entity', source.entity)
  if (source.entity === undefined && source.query === undefined && !hasRestPath && !source.adapter)
    throw invalidConfig('source.entity', 'is required (or source.query for a query-shape pipeline, or rest.path for a REST source)')
  const shape: ResolvedPipeline['shape'] = source.query ? 'query' : 'entity'

  const kinds = new Set([...KNOWN_SOURCE_KINDS, ...(options.knownKinds ?? [])])
  checkSetting('source.kind', source.kind, { values: [...kinds] })
  checkSetting('source.adapter', source.adapter)
  const sourceKind = source.adapter ? undefined : source.kind ?? (hasRestPath ? 'rest' : source.service ? options.serviceKind?.(source.service) : undefined)
  if (sourceKind === 'rest') validateRestConfig(config)
  if (source.origin !== undefined) {
    checkSetting('source.origin', source.origin, { typeOnly: true })
    if (shape === 'query') throw invalidConfig('source.origin', 'cannot be combined with source.query (fan-in works for entity-shape pipelines)')
    checkSetting('source.origin', source.origin)
  }
  return { shape, sourceKind }
}

/** `target`: adapter, kind, entity, and a service that is a database or a remote target kind. */
function checkTarget(target: TargetConfig, options: ResolveOptions): void {
  checkSetting('target.adapter', target.adapter)
  checkSetting('target.kind', target.kind)
  if (!target.adapter) checkSetting('target.entity', target.entity) // (required unless a custom adapter)
  const serviceKind = target.service === undefined ? '' : options.serviceKind?.(target.service) ?? ''
  if (target.service !== undefined && target.service !== 'db' && !target.adapter && !target.kind && !DATABASE_KINDS.has(serviceKind) && !REMOTE_TARGET_KINDS.has(serviceKind))
    throw invalidConfig('target.service', `'${target.service}' is not a database service: set target.kind (odata, odata-v2, hcql) or a custom target.adapter`)
}

/** `delta`: its mode and fields (plain names: they reach the source's URL and queries), deleted rows, settle time. */
function resolveDelta(config: PipelineConfig, shape: ResolvedPipeline['shape'], sourceKind: string | undefined): ResolvedPipeline['delta'] {
  if (config.delta === undefined) return undefined
  checkSetting('delta', config.delta)
  if (shape === 'query') throw invalidConfig('delta', 'is not possible with source.query')
  checkSetting('delta.mode', config.delta.mode)
  const deltaMode = config.delta.mode ?? 'timestamp'
  if (deltaMode === 'odata-delta') checkODataDelta(config, sourceKind)
  if (deltaMode === 'datetime-fields') {
    if (!config.delta.dateField) throw invalidConfig('delta.dateField', "is required for delta.mode 'datetime-fields'")
    if (!config.delta.timeField) throw invalidConfig('delta.timeField', "is required for delta.mode 'datetime-fields'")
  } else checkSetting('delta.field', config.delta.field)
  const { deletedField, deletedAction } = config.delta
  checkSetting('delta.deletedField', deletedField)
  checkSetting('delta.deletedAction', deletedAction)
  if (deletedAction !== undefined && deletedField === undefined) throw invalidConfig('delta.deletedAction', 'needs delta.deletedField')
  // (the registry checks the names against the source entity)
  for (const key of ['field', 'dateField', 'timeField', 'deletedField'] as const) checkFieldName(config.delta[key], `delta.${key}`)
  const { settle } = config.delta
  if (settle !== undefined && typeof settle !== 'number' && typeof settle !== 'string') throw invalidConfig('delta.settle', "must be milliseconds or a duration such as '5m'")
  return { ...config.delta, mode: deltaMode, ...(settle === undefined ? {} : { settle: settle === 0 ? 0 : parseDuration(settle, 'delta.settle') }) }
}

/**
 * `delta.mode: 'odata-delta'` (OData V4 delta links, OData V2 delta tokens of SAP Gateway and ODP):
 * the source must be an OData service (the provider answers `Prefer: odata.track-changes`), read
 * entity by entity; the delta link replaces the watermark field.
 */
function checkODataDelta(config: PipelineConfig, sourceKind: string | undefined): void {
  const kinds: readonly string[] = ODATA_DELTA_SOURCE_KINDS
  if (config.source.adapter !== undefined || !sourceKind || !kinds.includes(sourceKind))
    throw invalidConfig('delta.mode', `'odata-delta' needs an OData source (source kind ${kinds.join(', ')}); source '${config.source.service ?? config.rest?.path ?? '?'}' is ${config.source.adapter ? 'a custom adapter' : sourceKind ? `of kind '${sourceKind}'` : 'of unknown kind'}`)
  if (config.source.entity === undefined) throw invalidConfig('delta.mode', "'odata-delta' needs an entity-shape pipeline (source.entity)")
  if (config.delta?.field !== undefined || config.delta?.dateField !== undefined || config.delta?.timeField !== undefined)
    throw invalidConfig('delta.mode', "'odata-delta' reads the provider's delta links: delta.field, delta.dateField and delta.timeField do not apply")
}

/** `retry`: checked by the rules (a delay beyond the longest timer would fire after 1 ms: the rule's max), defaults applied. */
function resolveRetry(config: PipelineConfig): ResolvedPipeline['retry'] {
  const retry = config.retry ?? {}
  checkSetting('retry', retry)
  for (const key of ['maxRetries', 'baseDelay', 'maxDelay'] as const) checkSetting(`retry.${key}`, retry[key])
  return {
    maxRetries: retry.maxRetries ?? DEFAULTS.maxRetries,
    baseDelay: retry.baseDelay ?? DEFAULTS.retryBaseDelay,
    maxDelay: retry.maxDelay ?? DEFAULTS.retryMaxDelay,
  }
}

/** `maxStaleness`: milliseconds or a duration such as '2h'; errors name the key. */
function resolveMaxStaleness(value: unknown): number | undefined {
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'number' && typeof value !== 'string') throw invalidConfig('maxStaleness', "must be milliseconds or a duration such as '2h'")
  return parseDuration(value, 'maxStaleness')
}

const DELETES_KEYS = ['sweep', 'maxShare', 'force']

/** `deletes`: checked shape, defaults applied; every error names its key. */
function resolveDeletes(config: PipelineConfig, shape: ResolvedPipeline['shape'], sourceKind: string | undefined, target: TargetConfig, options: ResolveOptions): ResolvedDeletes | undefined {
  const deletes: unknown = config.deletes
  if (deletes === undefined || deletes === null) return undefined
  if (!isPlainObject(deletes)) throw invalidConfig('deletes', "must be an object such as { sweep: 'always' } or { sweep: { every: 10 } }")
  for (const key of Object.keys(deletes)) if (!DELETES_KEYS.includes(key)) throw invalidConfig(`deletes.${key}`, `is not a deletes setting; expected one of ${DELETES_KEYS.join(', ')}`)
  if (shape === 'query') throw invalidConfig('deletes', 'is not possible with source.query (a derived snapshot is rebuilt by full or partial-refresh runs)')
  const { sweep, maxShare = 0.5, force = false } = deletes
  let when: ResolvedDeletes['sweep']
  if (sweep === 'always') when = { always: true }
  else if (isPlainObject(sweep) && Object.keys(sweep).length === 1 && sweep.every !== undefined) {
    const every = sweep.every
    if (typeof every === 'number') {
      if (!Number.isInteger(every) || every < 1) throw invalidConfig('deletes.sweep.every', 'must be a positive integer (every n-th delta run) or a duration such as 6h')
      when = { runs: every }
    } else if (typeof every === 'string') when = { interval: parseDuration(every, 'deletes.sweep.every') }
    else throw invalidConfig('deletes.sweep.every', 'must be a positive integer (every n-th delta run) or a duration such as 6h')
  } else throw invalidConfig('deletes.sweep', "must be 'always' or { every: <n runs | duration such as '6h'> }")
  checkSetting('deletes.maxShare', maxShare)
  checkSetting('deletes.force', force)
  if (sourceKind === 'rest' && !isPlainObject(config.rest?.keys))
    throw invalidConfig('rest.keys', 'is required for deletes.sweep with a REST source: { path } of a key listing in ascending key order')
  const targetKind = target.kind ?? (target.service && target.service !== 'db' ? options.serviceKind?.(target.service) : undefined)
  if (!target.adapter && targetKind && REMOTE_TARGET_KINDS.has(targetKind))
    throw invalidConfig('deletes', `key reconciliation needs a database target (or a custom target.adapter implementing readKeys/deleteKeys); target '${target.service}' is of kind ${targetKind}`)
  return { sweep: when, maxShare: maxShare as number, force: force as boolean }
}

/** Keys whose values are never written to the tracker, the API or logs. */
const SECRET_KEY = /(password|secret|token|authorization|api[-_]?key|credentials|headers|cookie)/i

/**
 * JSON-safe copy of a config part: functions become `[Function]`, classes `[Function]`,
 * secret-looking keys are dropped.
 */
export function serializable(value: unknown, depth = 0): unknown {
  if (typeof value === 'function') return '[Function]'
  if (value === undefined || value === null || typeof value !== 'object') return value ?? null
  if (depth > 8) return '[Object]'
  if (Array.isArray(value)) return value.map(each => serializable(each, depth + 1))
  const out: Record<string, unknown> = {}
  for (const [key, each] of Object.entries(value)) {
    if (SECRET_KEY.test(key) || each === undefined) continue
    out[key] = serializable(each, depth + 1)
  }
  return out
}

/** Stable string of the serializable part of a config, used to detect duplicate names with different configs. */
export function configFingerprint(config: PipelineConfig): string {
  return stableStringify(serializable({ ...config, description: undefined }))
}

export function stableStringify(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableStringify).join(',')}]`
  if (isPlainObject(value)) return `{${Object.keys(value).sort().map(k => `${JSON.stringify(k)}:${stableStringify(value[k])}`).join(',')}}`
  return JSON.stringify(value) ?? 'null'
}

export const SCHEMA_DRIFT_POLICIES: readonly SchemaDriftPolicy[] = ['warn', 'fail', 'ignore']

/** `schemaDrift` (or the app-wide default): checked, errors name the key. */
export function resolveSchemaDrift(value: unknown, key: string): SchemaDriftSetting {
  const policies = SCHEMA_DRIFT_POLICIES as readonly unknown[]
  if (typeof value === 'string') {
    if (!policies.includes(value)) throw invalidConfig(key, `'${value}' is invalid; expected one of ${SCHEMA_DRIFT_POLICIES.join(', ')} (or { policy, maxAge })`)
    return { policy: value as SchemaDriftPolicy }
  }
  if (!isPlainObject(value)) throw invalidConfig(key, `must be one of ${SCHEMA_DRIFT_POLICIES.join(', ')} or an object { policy, maxAge }`)
  for (const each of Object.keys(value)) if (each !== 'policy' && each !== 'maxAge') throw invalidConfig(`${key}.${each}`, 'is not a schemaDrift setting; expected policy or maxAge')
  const policy = value.policy ?? 'warn'
  if (!policies.includes(policy)) throw invalidConfig(`${key}.policy`, `'${String(policy)}' is invalid; expected one of ${SCHEMA_DRIFT_POLICIES.join(', ')}`)
  const setting: SchemaDriftSetting = { policy: policy as SchemaDriftPolicy }
  const { maxAge } = value
  if (maxAge !== undefined && maxAge !== null) {
    if (maxAge === 0) setting.maxAge = 0
    else if (typeof maxAge === 'number' || typeof maxAge === 'string') setting.maxAge = parseDuration(maxAge, `${key}.maxAge`)
    else throw invalidConfig(`${key}.maxAge`, 'must be milliseconds (0: every run) or a duration such as 30m')
  }
  return setting
}

