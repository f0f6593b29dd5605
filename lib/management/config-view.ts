/**
 * The configuration as coded, overridden and effective, field by field, for `configView()`
 * and the console.
 */
import { DEFAULTS } from '../constants.js'
import { TENANT_PATHS } from '../engine/config/settings.js'
import { serializable } from '../engine/config/index.js'
import type { PipelineConfig, ResolvedPipeline } from '../pipeline/types.js'
import { OVERRIDABLE_PATHS, type Overrides } from '../engine/config/overrides.js'
import { scheduleLabel } from '../engine/schedule/index.js'
import { eventsOf, type ResolvedEvents } from '../events/config.js'
import { settingRules, type SettingRule } from '../engine/config/rules.js'
import { isStoredDeltaLink } from '../adapters/source/delta-links.js'

export interface ConfigField {
  path: string
  coded: unknown
  override: unknown
  effective: unknown
  /** Where the effective value comes from (`tenant`: the tenant's own setting, `multitenancy.tenants`). */
  source: 'override' | 'coded' | 'default' | 'tenant'
  /** The tenant's own value (`multitenancy.tenants.<tenant>.replicate.<pipeline>`), when the view is a tenant's. */
  tenantOverride?: unknown
  overridable: boolean
  /** An overridable setting's rule (type, values, bounds): what the server checks, for the console's inline validation. */
  rule?: SettingRule
}

export interface ConfigView {
  base: unknown
  overrides: Overrides
  effective: unknown
  fields: ConfigField[]
  meta: { scheduleLiveChangeSupported: boolean; overridablePaths: string[]; tenant?: string; tenantOverridablePaths?: string[] }
  /** The tenant's own settings of this pipeline, when the view is a tenant's. */
  tenantOverrides?: Overrides
  /** The effective `events` (defaults filled in), read-only; only for a pipeline with events. */
  events?: EventsView
  /** `delta.mode: 'odata-delta'` only: whether the tracker holds a delta link (a tracked initial read happened). */
  changeTracking?: 'initialised' | 'not initialised'
  /** `delta.mode: 'odata-delta'` only: the stored link, relative to the service root (no host, no credentials), or null. */
  deltaLink?: string | null
}

/** The effective `events` as shown: a single key as its payload field name, as written in the config. */
export type EventsView = Omit<ResolvedEvents, 'topics'> & { topics?: Array<{ topic: string; action: string; key?: string | Record<string, string> }> }

/** `events` as the engine resolved it (service, topics, window and maxBatch with their defaults); null without events. */
export function eventsView(config: PipelineConfig): EventsView | null {
  try {
    const events = eventsOf(config)
    if (!events) return null
    // a single key is written as its payload field, as in the config (internally keyed by '')
    const topics = events.topics?.map(({ key, ...topic }) => ({ ...topic, ...(key ? { key: Object.keys(key).length === 1 && '' in key ? key[''] : key } : {}) }))
    return { ...events, ...(topics ? { topics } : {}) }
  } catch {
    return null // (registered configs were checked at addPipeline)
  }
}

/** Dotted paths of a JSON value's leaves. */
export function flatten(value: unknown, prefix = '', out: Record<string, unknown> = {}): Record<string, unknown> {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    for (const [key, each] of Object.entries(value)) flatten(each, prefix ? `${prefix}.${key}` : key, out)
  } else if (prefix) out[prefix] = value
  return out
}

/** Effective values of settings that have defaults, as the engine resolved them. */
export function resolvedValues(pipeline: ResolvedPipeline): Record<string, unknown> {
  return {
    mode: pipeline.mode,
    enabled: pipeline.enabled,
    schedule: pipeline.schedule
      ? { ...(pipeline.schedule.cron ? { cron: pipeline.schedule.cron } : { every: pipeline.schedule.every }), engine: pipeline.schedule.engine }
      : null,
    transaction: pipeline.transaction,
    'source.batchSize': pipeline.batchSize,
    parallel: pipeline.parallel,
    'retry.maxRetries': pipeline.retry.maxRetries,
    'retry.baseDelay': pipeline.retry.baseDelay,
    'retry.maxDelay': pipeline.retry.maxDelay,
    'delta.mode': pipeline.delta?.mode,
    'delta.field': pipeline.delta?.field,
    leaseDuration: pipeline.leaseDuration,
  }
}

/** Settings whose effective value differs from the built-in default (shown in orange). */
export function deviations(pipeline: ResolvedPipeline): Array<{ path: string; value: unknown; default: unknown }> {
  const defaults: Record<string, unknown> = {
    mode: pipeline.shape === 'query' ? 'full' : 'delta',
    'source.batchSize': DEFAULTS.batchSize,
    transaction: pipeline.mode === 'delta' ? 'batch' : 'run',
    'retry.maxRetries': DEFAULTS.maxRetries,
    leaseDuration: DEFAULTS.leaseDuration,
    enabled: true,
  }
  const values = resolvedValues(pipeline)
  return Object.entries(defaults)
    .filter(([path, value]) => values[path] !== value)
    .map(([path, value]) => ({ path, value: values[path], default: value }))
}

export interface ConfigViewOptions {
  /** Whether schedule changes take effect live (SPEC "Versioning"); the engine decides (default true). */
  scheduleLiveChangeSupported?: boolean
  /** The tenant whose view this is (multitenancy); `effective` then is that tenant's. */
  tenant?: string
  /** The tenant's own `mode`/`schedule` (`multitenancy.tenants.<tenant>.replicate.<pipeline>`). */
  tenantOverrides?: Overrides
  /** The pipeline's tracker row (of the view's tenant): its `lastKey` holds an OData delta link. */
  tracker?: { lastKey: string | null }
}

/**
 * The change tracking state of an `odata-delta` pipeline (its tracker's delta link); nothing for
 * other pipelines, nor without a tracker row (the provider's view in a multitenant app).
 */
export function changeTrackingView(effective: ResolvedPipeline, tracker: { lastKey: string | null } | undefined): Pick<ConfigView, 'changeTracking' | 'deltaLink'> {
  if (effective.delta?.mode !== 'odata-delta' || !tracker) return {}
  const link = isStoredDeltaLink(tracker?.lastKey) ? tracker.lastKey : null
  return { changeTracking: link ? 'initialised' : 'not initialised', deltaLink: link }
}

export function configView(coded: PipelineConfig, overrides: Overrides, effective: ResolvedPipeline, options: ConfigViewOptions = {}): ConfigView {
  const base = serializable(coded)
  const effectiveConfig = serializable(effective.config)
  const codedFlat = flatten(base)
  const effectiveFlat = { ...flatten(effectiveConfig), ...resolvedValues(effective) }
  const tenantOwn = options.tenant ? options.tenantOverrides : undefined
  const events = eventsView(effective.config)
  // the effective events settings, one field each (`events: true` codes none of them)
  if (events) Object.assign(effectiveFlat, { 'events.service': events.service, 'events.topics': events.topics ?? null, 'events.window': events.window, 'events.maxBatch': events.maxBatch })
  const eventPaths = events ? ['events.service', 'events.topics', 'events.window', 'events.maxBatch'] : []
  const paths = new Set<string>([...OVERRIDABLE_PATHS, ...Object.keys(codedFlat).filter(p => !p.startsWith('schedule.') && !(events && p === 'events')), ...eventPaths])
  const rules = settingRules()
  const fields: ConfigField[] = [...paths].map(path => {
    const coded = path === 'schedule' ? (base as Record<string, unknown>).schedule ?? null : codedFlat[path]
    const hasOverride = Object.prototype.hasOwnProperty.call(overrides, path)
    const ownTenant = tenantOwn !== undefined && Object.prototype.hasOwnProperty.call(tenantOwn, path)
    return {
      path,
      coded: coded ?? null,
      override: hasOverride ? overrides[path] : null,
      effective: effectiveFlat[path] ?? null,
      source: ownTenant ? 'tenant' : hasOverride ? 'override' : coded !== undefined && coded !== null ? 'coded' : 'default',
      overridable: OVERRIDABLE_PATHS.includes(path),
      ...(rules[path] ? { rule: rules[path] } : {}),
      ...(ownTenant ? { tenantOverride: tenantOwn[path] } : {}),
    }
  })
  return {
    base,
    overrides,
    effective: { ...(effectiveConfig as object), schedule: scheduleLabel(effective.schedule) },
    fields,
    meta: {
      scheduleLiveChangeSupported: options.scheduleLiveChangeSupported ?? true, overridablePaths: [...OVERRIDABLE_PATHS],
      ...(options.tenant ? { tenant: options.tenant, tenantOverridablePaths: [...TENANT_PATHS] } : {}),
    },
    ...(options.tenant ? { tenantOverrides: tenantOwn ?? {} } : {}),
    ...(events ? { events } : {}),
    ...changeTrackingView(effective, options.tracker),
  }
}
