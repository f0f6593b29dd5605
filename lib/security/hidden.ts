/**
 * Fields hidden from the data inspector (`@HideFromDataInspector`) and sensitive personal data
 * (`@PersonalData.IsPotentiallySensitive`) of a pipeline, computed in this
 * one place for every path: the inspector (both sides), stored rejects, run errors, log lines and
 * the DONE event. An annotation counts wherever an app author puts it — on the source (imported)
 * element, on the target (replica) element, or on a view of the replica — and is carried through
 * the pipeline's mapping to the other side's name (`price` at the source, `salary` in the replica).
 */
import { currentModel, dataElementNames, projectionSource, type CsnEntity } from '../model/csn.js'
import { deriveMapping, type FieldMapping } from '../adapters/mapping.js'
import type { DataRecord } from '../pipeline/types.js'

export const HIDE_ANNOTATION = '@HideFromDataInspector'
export const SENSITIVE_ANNOTATION = '@PersonalData.IsPotentiallySensitive'

/** What hidden.ts needs of a prepared pipeline (PreparedPipeline fits). */
export interface PipelineFields {
  source: { entityDefinition(): CsnEntity | undefined; columns?: string[] }
  target: { entityDefinition(): CsnEntity | undefined }
  mapping?: FieldMapping[]
}

/** Element names per side (source names, target names). */
export interface SideNames {
  source: Set<string>
  target: Set<string>
}

export interface FieldPolicy {
  /** The whole entity is hidden (on either side): nothing of it is shown. */
  entityHidden: boolean
  hidden: SideNames
  /** Sensitive personal data: reads through the plugin are audited (SensitiveDataRead), as CAP's audit logging does for the app's own reads. */
  sensitive: SideNames
  /** The source columns the pipeline reads (the mapping's), or undefined when unknown (all). */
  sourceRead?: string[]
}

const cache = new WeakMap<object, FieldPolicy>()

/** The field policy of a prepared pipeline (cached per prepared pipeline object). */
export function fieldPolicy(prepared: PipelineFields): FieldPolicy {
  let policy = cache.get(prepared)
  if (!policy) cache.set(prepared, policy = compute(prepared))
  return policy
}

function compute(prepared: PipelineFields): FieldPolicy {
  const source = prepared.source.entityDefinition()
  const target = prepared.target.entityDefinition()
  const mapping = prepared.mapping
  const annotated = (annotations: string[]): SideNames => {
    const names: SideNames = { source: new Set(), target: new Set() }
    const has = (entity: CsnEntity, element: string) => annotations.some(a => entity.elements[element]?.[a as `@${string}`])
    for (const name of Object.keys(source?.elements ?? {})) if (has(source!, name)) names.source.add(name)
    for (const name of Object.keys(target?.elements ?? {})) if (has(target!, name)) names.target.add(name)
    if (target) for (const name of viewAnnotated(target, has)) names.target.add(name)
    // carried through the mapping: a target name to its source name and back
    for (const m of mapping ?? []) {
      if (names.target.has(m.target)) names.source.add(m.source)
      if (names.source.has(m.source)) names.target.add(m.target)
    }
    if (!mapping) for (const name of names.target) names.source.add(name) // unmapped: equal names
    return names
  }
  const entityHidden = Boolean(source?.[HIDE_ANNOTATION] || target?.[HIDE_ANNOTATION])
  const sourceRead = prepared.source.columns ?? mapping?.map(m => m.source)
  return { entityHidden, hidden: annotated([HIDE_ANNOTATION]), sensitive: annotated([SENSITIVE_ANNOTATION]), sourceRead }
}

/** Target element names annotated on views (projections) of the target, e.g. a service's projection of the replica. */
function viewAnnotated(target: CsnEntity, has: (entity: CsnEntity, element: string) => boolean): Set<string> {
  const found = new Set<string>()
  const definitions = currentModel()?.definitions ?? {}
  const visit = (base: CsnEntity, toTarget: (name: string) => string | undefined, seen: Set<string>) => {
    for (const def of Object.values(definitions) as CsnEntity[]) {
      if (!def?.elements || seen.has(def.name) || projectionSource(def) !== base.name) continue
      seen.add(def.name)
      const mapping = deriveMapping(def, base) ?? []
      const back = (name: string) => { const m = mapping.find(x => x.target === name); return m && toTarget(m.source) }
      for (const name of dataElementNames(def)) if (has(def, name)) { const t = back(name); if (t) found.add(t) }
      visit(def, back, seen)
    }
  }
  visit(target, name => name, new Set([target.name]))
  return found
}

/** A copy of a record without the named fields. */
export function withoutFields(record: DataRecord, names: Set<string>): DataRecord {
  if (!names.size) return record
  return Object.fromEntries(Object.entries(record).filter(([k]) => !names.has(k)))
}

const MASK = '***'

/**
 * The values of the named fields in records, as they may appear in a message. Booleans and
 * one-character values are left out: they would match everywhere and tell next to nothing.
 */
export function hiddenValues(records: Array<DataRecord | undefined>, names: Set<string>): string[] {
  const values = new Set<string>()
  if (!names.size) return []
  for (const record of records) for (const name of names) {
    const value = record?.[name]
    if (value === null || value === undefined || typeof value === 'boolean') continue
    const text = typeof value === 'object' ? JSON.stringify(value) : String(value)
    if (text.length > 1) values.add(text)
  }
  return [...values].sort((a, b) => b.length - a.length) // longest first: a value inside another is masked with it
}

/** A message with every hidden value replaced by `***` (also a value's first 20+ characters, as messages cut long values). */
export function redactValues(text: string, values: string[]): string {
  let out = text
  for (const value of values) {
    out = out.split(value).join(MASK)
    if (value.length > 24) out = out.split(value.slice(0, 20)).join(MASK)
  }
  return out
}

/** Masks hidden values in an error's message, in place (the error keeps its class, code and status). */
export function redactError<T>(error: T, values: string[]): T {
  const e = error as { message?: unknown }
  if (values.length && e && typeof e.message === 'string') {
    const message = redactValues(e.message, values)
    if (message !== e.message) try { e.message = message } catch { /* a frozen error: left as is */ }
  }
  return error
}

/** Hidden values in source records (source names) and mapped records (target names). */
export function hiddenValuesOf(policy: FieldPolicy, sources: Array<DataRecord | undefined>, targets: Array<DataRecord | undefined> = []): string[] {
  return [...new Set([...hiddenValues(sources, policy.hidden.source), ...hiddenValues(targets, policy.hidden.target)])].sort((a, b) => b.length - a.length)
}
