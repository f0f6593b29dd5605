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
import { ANNOTATIONS, LOGGER, REMOTE_KINDS } from '../constants.js'
import { projectionSource } from '../model/csn.js'
import { excludeDeltaQueueFields } from './delta-queue.js'

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

/**
 * How an entity takes part in federation. `own`: annotated itself, not merely derived from an
 * annotated projection. `federated`: replicated because of CAP's `@federated` alone (defaults apply).
 */
export interface FederationRole {
  kind: FederationKind
  own: boolean
  federated?: boolean
}

/** Options of `classify`: which services count as remote (default: a remote kind in `cds.requires`). */
export interface ClassifyOptions {
  isRemoteService?: (service: string) => boolean
}

/** Whether `cds.requires.<service>` binds a remote service (OData, HCQL, REST). */
export function isRemoteService(service: string): boolean {
  const entry = (cds.env.requires as Record<string, { kind?: unknown } | undefined>)[service]
  return typeof entry?.kind === 'string' && (REMOTE_KINDS as readonly string[]).includes(entry.kind)
}

/** The service whose definition contains `entity` (the longest matching service name). */
export function serviceOf(entity: string, csn: FederationCsn): string | undefined {
  let found: string | undefined
  for (const name in csn.definitions ?? {}) {
    if (csn.definitions![name].kind !== 'service' || !entity.startsWith(`${name}.`)) continue
    if (!found || name.length > found.length) found = name
  }
  return found
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
export function classify(csn: FederationCsn, options: ClassifyOptions = {}): Map<string, FederationRole> {
  const roles = new Map<string, FederationRole>()
  const defs = csn.definitions ?? {}
  const remote = options.isRemoteService ?? isRemoteService
  const names = new Set([...Object.keys(defs), ...(csn.extensions ?? []).map(ext => ext.annotate).filter((n): n is string => typeof n === 'string')])
  const annotated = (name: string, annotation: string) => isAnnotated(annotationsOf(csn, name), annotation)
  const own = (name: string, annotation: string) =>
    annotated(name, annotation) && !sourcesOf(defs[name]).some(source => annotated(source, annotation))
  // `@federated` (CAP's intent annotation) on a projection of a remote service's entity replicates it
  const federatedOnly = (name: string) => {
    if (!own(name, ANNOTATIONS.federated) || annotated(name, ANNOTATIONS.delegate) || annotated(name, ANNOTATIONS.replicate)) return false
    const source = projectionSource(defs[name])
    const service = source && serviceOf(source, csn)
    return !!service && remote(service)
  }

  for (const name of names) {
    if (defs[name] && defs[name].kind !== undefined && defs[name].kind !== 'entity') continue
    const replicate = own(name, ANNOTATIONS.replicate)
    if (replicate && own(name, ANNOTATIONS.delegate))
      throw new Error(`[federation] '${name}' is annotated with both ${ANNOTATIONS.replicate} and ${ANNOTATIONS.delegate}; choose one (replicate keeps a local copy, delegate reads live)`)
    if (replicate) roles.set(name, { kind: 'replicate', own: true })
    else if (federatedOnly(name)) roles.set(name, { kind: 'replicate', own: true, federated: true })
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
  // projections on replicas read the local tables
  const derivedReplica = (name: string) => annotated(name, ANNOTATIONS.replicate) || sourcesOf(defs[name]).some(source => roles.get(source)?.federated)
  for (const name of names) {
    if (roles.has(name) || !derivedReplica(name)) continue
    if (defs[name] && defs[name].kind !== undefined && defs[name].kind !== 'entity') continue
    roles.set(name, { kind: 'replicate', own: false })
  }
  return roles
}

/** Fully qualified names of the entities replicated in their own right (`@federation.replicate` or `@federated`). */
export function replicatedEntities(csn: FederationCsn): string[] {
  return [...classify(csn)].filter(([, role]) => role.kind === 'replicate' && role.own).map(([name]) => name)
}

/** Fully qualified names of all entities served by delegation (own and derived). */
export function delegatedEntities(csn: FederationCsn): string[] {
  return [...classify(csn)].filter(([, role]) => role.kind === 'delegate').map(([name]) => name)
}

function hasFederationAnnotation(record: Record<string, unknown>): boolean {
  for (const key in record) if (key.startsWith(ANNOTATIONS.replicate) || key.startsWith(ANNOTATIONS.delegate) || key === ANNOTATIONS.federated) return true
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

  const defs = csn.definitions
  const roles = classify(csn)
  const targetOf = (name: string) => (defs[name] as Record<string, unknown> | undefined) ?? (csn.extensions ?? []).find(ext => ext.annotate === name)
  // Annotations the compiler copied from the entity a projection selects from (`cds import`
  // puts @cds.persistence.skip on every imported entity) are not the user's: decided for all
  // entities before any is changed, since a change would hide where the next one got its value.
  const inherited = new Set<string>()
  for (const [name, role] of roles) {
    const conflicting = role.kind === 'replicate' ? ANNOTATIONS.persistenceSkip : ANNOTATIONS.persistenceTable
    if (targetOf(name)?.[conflicting] === true && sourcesOf(defs[name]).some(source => (defs[source] as Record<string, unknown> | undefined)?.[conflicting] === true))
      inherited.add(name)
  }

  let changed = false
  const assign = (target: Record<string, unknown>, annotation: string, value: boolean) => {
    if (target[annotation] === value) return
    target[annotation] = value
    changed = true
  }
  const set = (name: string, annotation: string, conflicting: string, own: boolean, strict: boolean) => {
    const target = targetOf(name)
    if (!target) return
    if (target[conflicting] === true) {
      // an inherited value is switched off explicitly, so that a later compile does not propagate it again
      if (inherited.has(name)) assign(target, conflicting, false)
      else if (strict)
        throw new Error(`[federation] '${name}' is ${annotation === ANNOTATIONS.persistenceTable ? `annotated ${ANNOTATIONS.replicate} (a local table)` : `served by ${ANNOTATIONS.delegate} (no local storage)`} but carries ${conflicting} itself: remove one of them`)
      else return // a view on a replica that its author chose not to persist
    }
    if (own || annotation === ANNOTATIONS.persistenceSkip) assign(target, annotation, true)
  }
  for (const [name, role] of roles) {
    if (role.kind === 'replicate') set(name, ANNOTATIONS.persistenceTable, ANNOTATIONS.persistenceSkip, role.own, role.own)
    else set(name, ANNOTATIONS.persistenceSkip, ANNOTATIONS.persistenceTable, role.own, true)
    if (role.kind === 'replicate' && role.own && excludeDeltaQueueFields(csn, name)) changed = true
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
