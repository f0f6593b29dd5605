/**
 * The federation model hook: `@federation.replicate` makes a projection a local table
 * (`@cds.persistence.table`), `@federation.delegate` makes it a proxy without storage
 * (`@cds.persistence.skip`, as is every projection derived from it).
 *
 * `enhanceModel(csn)` is pure with respect to everything but `csn`, idempotent (a second call
 * changes nothing) and returns early when nothing is annotated. It runs on every path a model
 * takes into the runtime or the database: `loaded` (cds.load, also in an MTX sidecar),
 * `compile.for.runtime` (cds.compile.for.nodejs, e.g. of a tenant's extended model) and
 * `compile.to.dbx` (DDL for deploy, also of extended models).
 *
 * Annotation values are read the way the compiler writes them: a record such as
 * `@federation.replicate: { preload: { wait: true } }` arrives flattened as
 * `@federation.replicate.preload.wait: true`; `annotationValue()` folds it back.
 */
import cds from '@sap/cds'
import { ANNOTATIONS, LOGGER } from '../constants.js'

const LOG = cds.log(LOGGER.federation)

export type FederationKind = 'replicate' | 'delegate'

interface FromClause {
  ref?: Array<string | { id: string }>
  args?: FromClause[]
  SELECT?: QueryClause
  SET?: { args?: Array<{ SELECT?: QueryClause; SET?: unknown }> }
}
interface QueryClause {
  from?: FromClause
  where?: unknown[]
}
/** The parts of a CSN definition the hook reads; works on parsed, xtended, inferred and linked CSN. */
export interface FederationDefinition {
  kind?: string
  query?: { SELECT?: QueryClause; SET?: { args?: Array<{ SELECT?: QueryClause }> } }
  projection?: QueryClause
  [key: string]: unknown
}
export interface FederationCsn {
  definitions?: Record<string, FederationDefinition>
  extensions?: Array<Record<string, unknown>>
  meta?: Record<string, unknown>
}

/** How an entity takes part in federation. `own`: annotated itself, not merely derived from an annotated projection. */
export interface FederationRole {
  kind: FederationKind
  own: boolean
}

/**
 * The value of an annotation with its flattened record parts folded back in:
 * `undefined` when absent, `true` for a bare annotation, an object for a record.
 */
export function annotationValue(def: object | undefined, name: string): unknown {
  if (!def) return undefined
  const record = def as Record<string, unknown>
  let value: unknown = record[name]
  if (value !== null && typeof value === 'object') value = structuredClone(value)
  const prefix = `${name}.`
  const parts: Array<[string[], unknown]> = []
  for (const key in record) if (key.startsWith(prefix)) parts.push([key.slice(prefix.length).split('.'), record[key]])
  if (!parts.length) return value
  if (value === false || value === null) return value // switched off explicitly
  parts.sort((a, b) => a[0].length - b[0].length)
  const root: Record<string, unknown> = value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : {}
  for (const [path, each] of parts) {
    let node = root
    for (const step of path.slice(0, -1)) {
      const next = node[step]
      node = (node[step] = next !== null && typeof next === 'object' ? next : {}) as Record<string, unknown>
    }
    node[path[path.length - 1]] = each
  }
  return root
}

/** Whether an annotation is present and not switched off (`false` / `null`). */
export function isAnnotated(def: object | undefined, name: string): boolean {
  const value = annotationValue(def, name)
  return value !== undefined && value !== null && value !== false
}

function refName(from: FromClause | undefined): string | undefined {
  const first = from?.ref?.[0]
  return typeof first === 'string' ? first : first?.id
}

function collectSources(from: FromClause | undefined, into: string[]): void {
  if (!from) return
  const name = refName(from)
  if (name) into.push(name)
  for (const arg of from.args ?? []) collectSources(arg, into)
  if (from.SELECT) collectSources(from.SELECT.from, into)
  for (const arg of from.SET?.args ?? []) collectSources(arg as FromClause, into)
}

/** The definitions a view or projection selects from (joins and unions included). */
export function sourcesOf(def: FederationDefinition | undefined): string[] {
  const sources: string[] = []
  if (!def) return sources
  const select = def.projection ?? def.query?.SELECT
  collectSources(select?.from, sources)
  for (const arg of def.query?.SET?.args ?? []) collectSources(arg.SELECT?.from, sources)
  return sources
}

/** The single entity a projection selects from (`as projection on X`), if it is one. */
export function projectionSource(def: FederationDefinition | undefined): string | undefined {
  const select = def?.projection ?? def?.query?.SELECT
  return select?.from?.ref?.length === 1 ? refName(select.from) : undefined
}

/** Annotations of a definition together with those of `annotate` statements not yet applied (parsed CSN). */
function annotationsOf(csn: FederationCsn, name: string): Record<string, unknown> {
  const def = csn.definitions?.[name]
  const extensions = (csn.extensions ?? []).filter(ext => ext.annotate === name)
  if (!extensions.length) return (def ?? {}) as Record<string, unknown>
  const merged: Record<string, unknown> = {}
  for (const key in def ?? {}) if (key.startsWith('@')) merged[key] = (def as Record<string, unknown>)[key]
  for (const ext of extensions) for (const key in ext) if (key.startsWith('@')) merged[key] = ext[key]
  return merged
}

/**
 * Classifies every federated entity of a model. An entity annotated itself is `own`; one
 * that only carries the annotation because it projects an annotated entity (the compiler
 * propagates annotations to derived projections) is derived: a projection on a replicated
 * entity reads its local table, a projection on a delegated one has no storage either.
 * Throws when one entity is annotated with both.
 */
export function classify(csn: FederationCsn): Map<string, FederationRole> {
  const roles = new Map<string, FederationRole>()
  const defs = csn.definitions ?? {}
  const names = new Set([...Object.keys(defs), ...(csn.extensions ?? []).map(ext => ext.annotate).filter((n): n is string => typeof n === 'string')])
  const annotated = (name: string, annotation: string) => isAnnotated(annotationsOf(csn, name), annotation)
  const own = (name: string, annotation: string) =>
    annotated(name, annotation) && !sourcesOf(defs[name]).some(source => annotated(source, annotation))

  for (const name of names) {
    if (defs[name] && defs[name].kind !== undefined && defs[name].kind !== 'entity') continue
    const replicate = own(name, ANNOTATIONS.replicate)
    if (replicate && own(name, ANNOTATIONS.delegate))
      throw new Error(`[federation] '${name}' is annotated with both ${ANNOTATIONS.replicate} and ${ANNOTATIONS.delegate}; choose one (replicate keeps a local copy, delegate reads live)`)
    if (replicate) roles.set(name, { kind: 'replicate', own: true })
  }
  // delegation is transitive through views: a view on a proxy cannot be a database view
  const visiting = new Set<string>()
  const delegated = (name: string): FederationRole | undefined => {
    if (roles.has(name)) return roles.get(name)!.kind === 'delegate' ? roles.get(name) : undefined
    if (visiting.has(name) || (defs[name] && defs[name].kind !== undefined && defs[name].kind !== 'entity')) return undefined
    visiting.add(name)
    let role: FederationRole | undefined
    if (own(name, ANNOTATIONS.delegate)) role = { kind: 'delegate', own: true }
    else if (annotated(name, ANNOTATIONS.delegate) || sourcesOf(defs[name]).some(source => delegated(source))) role = { kind: 'delegate', own: false }
    visiting.delete(name)
    if (role) roles.set(name, role)
    return role
  }
  for (const name of names) delegated(name)
  for (const name of names) {
    if (roles.has(name) || !annotated(name, ANNOTATIONS.replicate)) continue
    if (defs[name] && defs[name].kind !== undefined && defs[name].kind !== 'entity') continue
    roles.set(name, { kind: 'replicate', own: false })
  }
  return roles
}

/** Fully qualified names of the entities annotated `@federation.replicate` themselves. */
export function replicatedEntities(csn: FederationCsn): string[] {
  return [...classify(csn)].filter(([, role]) => role.kind === 'replicate' && role.own).map(([name]) => name)
}

/** Fully qualified names of all entities served by delegation (own and derived). */
export function delegatedEntities(csn: FederationCsn): string[] {
  return [...classify(csn)].filter(([, role]) => role.kind === 'delegate').map(([name]) => name)
}

function hasFederationAnnotation(record: Record<string, unknown>): boolean {
  for (const key in record) if (key.startsWith(ANNOTATIONS.replicate) || key.startsWith(ANNOTATIONS.delegate)) return true
  return false
}

/**
 * Marks replicated entities as tables and delegated ones (and views on them) as skipped.
 * Returns whether this call changed the model. Idempotent: a model already enhanced
 * (`csn.meta['@federation.$enhanced']`) is returned untouched; a model without any
 * federation annotation is never touched (not even marked).
 */
export function enhanceModel(csn: FederationCsn | undefined): boolean {
  if (!csn?.definitions || csn.meta?.[ANNOTATIONS.enhanced]) return false
  let any = false
  for (const name in csn.definitions) if (hasFederationAnnotation(csn.definitions[name])) { any = true; break }
  if (!any) any = (csn.extensions ?? []).some(ext => typeof ext.annotate === 'string' && hasFederationAnnotation(ext))
  if (!any) return false

  let changed = false
  const set = (name: string, annotation: string, conflicting: string) => {
    const def = csn.definitions![name] as Record<string, unknown> | undefined
    const target = def ?? (csn.extensions ?? []).find(ext => ext.annotate === name)
    if (!target) return
    if (target[conflicting] === true)
      throw new Error(`[federation] '${name}' is ${annotation === ANNOTATIONS.persistenceTable ? `annotated ${ANNOTATIONS.replicate} (a local table)` : `served by ${ANNOTATIONS.delegate} (no local storage)`} but carries ${conflicting}: remove one of them`)
    if (target[annotation] !== true) {
      target[annotation] = true
      changed = true
    }
  }
  for (const [name, role] of classify(csn)) {
    if (role.kind === 'replicate' && role.own) set(name, ANNOTATIONS.persistenceTable, ANNOTATIONS.persistenceSkip)
    else if (role.kind === 'delegate') set(name, ANNOTATIONS.persistenceSkip, ANNOTATIONS.persistenceTable)
  }
  ;(csn.meta ??= {})[ANNOTATIONS.enhanced] = true
  if (changed && LOG._debug) LOG.debug('federation annotations applied to the model')
  return changed
}

let registered = false

/** Registers `enhanceModel` on all model paths (once per process). */
export function registerModelHooks(): void {
  if (registered) return
  registered = true
  const hook = (csn: unknown) => { enhanceModel(csn as FederationCsn) }
  cds.on('loaded', hook)
  cds.on('compile.for.runtime', hook)
  cds.on('compile.to.dbx', hook)
}
