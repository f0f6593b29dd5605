/**
 * Overrides: a JSON delta layered on the coded config, persisted in `Pipelines.overrides`
 * so it survives restarts and is re-applied whenever the pipeline is registered again.
 */
import { invalidConfig } from '../../pipeline/errors.js'
import { isPlainObject } from '../../pipeline/json.js'
import type { PipelineConfig } from '../../pipeline/types.js'
import { pathsWhere } from './settings.js'

/**
 * The only config paths an override may set: the overridable entries of the settings table
 * (settings.ts). `onError`, `schemaDrift` and `deletes` are set as a whole (an object value replaces
 * the coded one; null restores the default); `deletes.*` one setting of the coded deletes, e.g.
 * `deletes.force: true` to let a known mass deletion through once.
 */
export const OVERRIDABLE_PATHS: readonly string[] = Object.freeze(pathsWhere(entry => entry.overridable))

export type Overrides = Record<string, unknown>

/** Flattens `{ source: { batchSize: 5 } }` and `{ 'source.batchSize': 5 }` alike into dotted paths. */
export function flattenOverrides(input: unknown, prefix = ''): Overrides {
  if (!isPlainObject(input)) throw invalidConfig('overrides', 'must be a JSON object')
  const out: Overrides = {}
  for (const [key, value] of Object.entries(input)) {
    const path = prefix ? `${prefix}.${key}` : key
    if (isPlainObject(value) && !OVERRIDABLE_PATHS.includes(path)) Object.assign(out, flattenOverrides(value, path))
    else out[path] = value
  }
  for (const path of Object.keys(out))
    if (!OVERRIDABLE_PATHS.includes(path))
      throw invalidConfig(path, `cannot be overridden; overridable paths are ${OVERRIDABLE_PATHS.join(', ')}`)
  return out
}

export function parseStoredOverrides(text: string | null | undefined): Overrides {
  if (!text) return {}
  try {
    const value = JSON.parse(text) as unknown
    return isPlainObject(value) ? value : {}
  } catch {
    return {}
  }
}

/** The coded config with overrides applied (a `null` schedule override removes the schedule). */
export function applyOverrides(config: PipelineConfig, overrides: Overrides): PipelineConfig {
  const effective = { ...config, source: { ...config.source }, target: { ...config.target }, delta: config.delta && { ...config.delta }, retry: config.retry && { ...config.retry }, ...(isPlainObject(config.deletes) ? { deletes: { ...config.deletes } } : {}) } as Record<string, unknown>
  for (const [path, value] of Object.entries(overrides)) {
    const parts = path.split('.')
    let node = effective
    for (const part of parts.slice(0, -1)) {
      if (!isPlainObject(node[part])) node[part] = {}
      node = node[part] as Record<string, unknown>
    }
    const leaf = parts[parts.length - 1]
    if (value === null && path !== 'schedule') delete node[leaf]
    else node[leaf] = value
  }
  if (effective.schedule === null) delete effective.schedule
  return effective as unknown as PipelineConfig
}
