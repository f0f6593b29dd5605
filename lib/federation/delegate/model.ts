/**
 * What the delegate proxy reads from the linked model: which entities are `@federation.delegate`
 * proxies (or project one), which remote service and entity they end at, the element renames
 * along the projection chain, and how associations join across the local/remote boundary.
 *
 * The rename registry (SPEC rule 8) keeps one entry per consumer entity (full name) and one
 * per remote source (the last registration wins there); lookups by full entity name are
 * preferred, so several consumer views of one remote entity never borrow each other's names.
 */
import { ANNOTATIONS, DELEGATE_CACHE_STRATEGIES, DELEGATE_DEFAULTS, type DelegateCacheStrategy } from '../../constants.js'
import { annotationValue } from '../annotations.js'
import { projectionSource } from '../../model/csn.js'
import { compileViewWhere, levelWhere, mapLevel, type LevelWhere } from './where.js'
import type { Token } from './keys.js'
import { allRequires } from '../../cap/settings.js'
import { servedModel } from '../../cap/index.js'
import type { LinkedElement, LinkedEntity, DelegateOptions, DelegateInfo, JoinPair } from './types.js'

export type { LinkedElement, LinkedEntity, CacheOptions, DelegateOptions, DelegateInfo, JoinPair } from './types.js'

const REMOTE_KINDS = new Set(['odata', 'odata-v2', 'odata-v4', 'rest', 'hcql'])

type Requires = Record<string, { kind?: string | Record<string, unknown>; service?: string; credentials?: Record<string, unknown> } | boolean | undefined>

function requires(): Requires {
  return allRequires() as Requires
}

function model(): { definitions: Record<string, LinkedEntity & { kind?: string }> } | undefined {
  return servedModel<{ definitions: Record<string, LinkedEntity & { kind?: string }> }>()
}

export function entityNamed(name: string | undefined): LinkedEntity | undefined {
  if (!name) return undefined
  const def = model()?.definitions[name]
  return def && def.kind === 'entity' ? def : undefined
}

/** The service a definition belongs to (longest dotted prefix that is a service). */
function serviceNameOf(def: LinkedEntity): string | undefined {
  if (def._service?.name) return def._service.name
  const defs = model()?.definitions ?? {}
  let name = def.name
  while (name.includes('.')) {
    name = name.slice(0, name.lastIndexOf('.'))
    if (defs[name]?.kind === 'service') return name
  }
  return undefined
}

/** The `cds.requires` entry a remote service definition is bound by, if it is remote. */
export function remoteBindingOf(serviceName: string): string | undefined {
  const entries = requires()
  for (const [key, conf] of Object.entries(entries)) {
    if (!conf || typeof conf !== 'object') continue
    if (key !== serviceName && conf.service !== serviceName) continue
    const kind = typeof conf.kind === 'object' ? Object.keys(conf.kind).find(k => REMOTE_KINDS.has(k)) : conf.kind
    if (kind && REMOTE_KINDS.has(kind)) return key
  }
  const def = model()?.definitions[serviceName] as Record<string, unknown> | undefined
  return def?.['@cds.external'] ? serviceName : undefined
}

/** The kind of a remote binding (`odata`, `odata-v2`, `hcql`, …). */
function bindingKind(binding: string): string | undefined {
  const conf = requires()[binding]
  if (!conf || typeof conf !== 'object') return undefined
  const kind = typeof conf.kind === 'object' ? Object.keys(conf.kind).find(k => REMOTE_KINDS.has(k)) : conf.kind
  return kind === 'odata-v4' ? 'odata' : kind
}

/** A projection's own where (refs in its source's names), with the alias its refs may carry. */
function ownWhere(def: LinkedEntity): { tokens: Token[]; alias: string | undefined } | undefined {
  const select = def.projection ?? def.query?.SELECT
  if (!Array.isArray(select?.where) || !select.where.length) return undefined
  const source = projectionSource(def)
  return { tokens: select.where, alias: select.from?.as ?? source?.slice(source.lastIndexOf('.') + 1) }
}

/** The entity a projection selects from (single source only). */
export function sourceOf(def: LinkedEntity): LinkedEntity | undefined {
  if (def.query?._target && def.query._target !== def) return def.query._target
  const source = projectionSource(def)
  return source === undefined ? undefined : entityNamed(source)
}

/** consumer element → element of the source it projects (null: computed, a path, or added here). */
function columnSources(def: LinkedEntity): Map<string, string | null> {
  const select = def.projection ?? def.query?.SELECT
  const columns = select?.columns
  const explicit = new Map<string, string | null>()
  const star = !columns || columns.some(c => c === '*')
  for (const column of columns ?? []) {
    if (column === '*') continue
    const ref = column.ref
    const name = column.as ?? (ref ? String(ref[ref.length - 1]) : undefined)
    if (!name) continue
    explicit.set(name, ref?.length === 1 && typeof ref[0] === 'string' ? ref[0] : null)
  }
  const sources = new Map<string, string | null>()
  for (const name of Object.keys(def.elements)) {
    if (explicit.has(name)) sources.set(name, explicit.get(name)!)
    else if (star) sources.set(name, name)
    else {
      // a generated foreign key of a projected association: `author_ID` follows `author`
      const fk = def.elements[name]['@odata.foreignKey4'] as string | undefined
      const assocSource = fk ? explicit.get(fk) : undefined
      sources.set(name, fk && assocSource ? assocSource + name.slice(fk.length) : null)
    }
  }
  return sources
}

function parseOptions(value: unknown, entity: LinkedEntity): DelegateOptions {
  const record = value !== null && typeof value === 'object' ? (value as Record<string, unknown>) : {}
  const options: DelegateOptions = { readonly: record.readonly === true }
  const cache = record.cache
  if (cache !== undefined && cache !== false && cache !== null) {
    const conf = typeof cache === 'object' ? (cache as Record<string, unknown>) : {}
    const strategy = (conf.strategy ?? 'response') as DelegateCacheStrategy
    if (!DELEGATE_CACHE_STRATEGIES.includes(strategy))
      throw new Error(`[federation] ${entity.name}: ${ANNOTATIONS.delegate} cache.strategy must be one of ${DELEGATE_CACHE_STRATEGIES.join(', ')} (got '${String(strategy)}')`)
    const ttl = conf.ttl === undefined ? DELEGATE_DEFAULTS.cacheTtl : Number(conf.ttl)
    if (!Number.isFinite(ttl) || ttl <= 0) throw new Error(`[federation] ${entity.name}: ${ANNOTATIONS.delegate} cache.ttl must be a positive number of milliseconds`)
    options.cache = { ttl, strategy, tenantScoped: conf.tenantScoped !== false }
  }
  return options
}

function delegateAnnotation(def: LinkedEntity): unknown {
  const value = annotationValue(def, ANNOTATIONS.delegate)
  return value === undefined || value === null || value === false ? undefined : value
}

/**
 * Follows the projection chain of an entity down to an entity of a remote service. Returns
 * undefined unless some level carries `@federation.delegate` (annotations propagate to
 * projections, so a service entity on a delegated view carries it as well).
 */
function computeDelegation(entity: LinkedEntity): DelegateInfo | undefined {
  let annotation: unknown
  // the wheres met so far, in the current level's element names (where.ts)
  let wheres: LevelWhere[] = []
  const renames = new Map<string, string>()
  for (const name of Object.keys(entity.elements)) renames.set(name, name)
  let def: LinkedEntity | undefined = entity
  for (let depth = 0; def && depth < 32; depth++) {
    annotation ??= delegateAnnotation(def)
    const service = serviceNameOf(def)
    const binding = service && def !== entity ? remoteBindingOf(service) : undefined
    if (binding && service) {
      if (annotation === undefined) return undefined
      const inverse = new Map<string, string>()
      for (const [local, remote] of renames) inverse.set(remote, local)
      return {
        entity: entity.name,
        remoteService: binding,
        remoteEntity: def.name,
        entitySet: def.name.slice(service.length + 1),
        renames,
        inverse,
        options: parseOptions(annotation, entity),
        where: compileViewWhere(entity.name, wheres, bindingKind(binding)),
      }
    }
    const source = sourceOf(def)
    if (!source) return undefined
    const sources = columnSources(def)
    wheres = wheres.map(level => mapLevel(level, name => sources.get(name)))
    const own = ownWhere(def)
    if (own) wheres.push(levelWhere(def.name, own.tokens, own.alias))
    for (const [local, current] of renames) {
      const next = sources.get(current)
      if (next) renames.set(local, next)
      else renames.delete(local)
    }
    def = source
  }
  return undefined
}

/** The rename registry of SPEC rule 8. */
class DelegateRegistry {
  private byEntity = new Map<string, DelegateInfo | null>()
  private bySource = new Map<string, DelegateInfo>()

  register(info: DelegateInfo): void {
    this.byEntity.set(info.entity, info)
    this.bySource.set(info.remoteEntity, info)
  }

  /** By full consumer entity name first; a remote source name falls back to its last registration. */
  lookup(name: string): DelegateInfo | undefined {
    if (this.byEntity.has(name)) return this.byEntity.get(name) ?? this.bySource.get(name)
    const entity = entityNamed(name)
    const info = entity ? computeDelegation(entity) : undefined
    if (info) this.register(info)
    else if (entity) this.byEntity.set(name, null)
    return info ?? this.bySource.get(name)
  }

  /** The registration for a remote source: the last consumer entity registered for it. */
  bySourceName(remoteEntity: string): DelegateInfo | undefined {
    return this.bySource.get(remoteEntity)
  }

  clear(): void {
    this.byEntity.clear()
    this.bySource.clear()
  }
}

export const registry = new DelegateRegistry()

/** Delegation facts of a consumer entity, or undefined for a local one. */
export function delegationOf(entity: string | LinkedEntity | undefined): DelegateInfo | undefined {
  if (!entity) return undefined
  const name = typeof entity === 'string' ? entity : entity.name
  const info = registry.lookup(name)
  return info && info.entity === name ? info : undefined
}

/**
 * Whether an entity is a delegate with a where of its own: a path, expand or filter through an
 * association into it is resolved through the application service (so its where applies), never
 * left to CAP's resolution at the remote, which would drop the where.
 */
export function fenced(entity: string | LinkedEntity | undefined): boolean {
  return Boolean(delegationOf(entity)?.where)
}

/** Where an entity's rows live: `local` or the name of the remote service binding. */
export function sideOf(entity: string | LinkedEntity | undefined): string {
  return delegationOf(entity)?.remoteService ?? 'local'
}

export function isToMany(element: LinkedElement): boolean {
  return Boolean(element.is2many ?? (element.cardinality?.max === '*' || (typeof element.cardinality?.max === 'number' && element.cardinality.max > 1)))
}

export function isAssociationElement(element: LinkedElement | undefined): boolean {
  return Boolean(element && (element.isAssociation || element.target || element.type === 'cds.Association' || element.type === 'cds.Composition'))
}

export function targetOf(element: LinkedElement): LinkedEntity | undefined {
  return element._target ?? entityNamed(element.target)
}

/** Key element names of an entity (scalar ones; keys that are associations count by their foreign keys). */
export function keyFields(entity: LinkedEntity): string[] {
  const keys: string[] = []
  for (const [name, el] of Object.entries(entity.elements)) {
    if (!el.key || el.virtual) continue
    if (isAssociationElement(el)) {
      for (const k of el.keys ?? []) keys.push(`${name}_${k.as ?? k.ref.join('_')}`)
    } else keys.push(name)
  }
  return [...new Set(keys)]
}

function refOf(token: unknown): string[] | undefined {
  const ref = (token as { ref?: unknown[] } | undefined)?.ref
  return Array.isArray(ref) && ref.every(s => typeof s === 'string') ? (ref as string[]) : undefined
}

/**
 * How an association joins its parent to its target, as element pairs. Managed associations
 * join their generated foreign keys to the target keys; unmanaged ones are read from their
 * `on` condition (conjunctions of equalities, including `$self` backlinks). Undefined when
 * the condition is anything else.
 */
export function joinPairs(assoc: LinkedElement): JoinPair[] | undefined {
  if (assoc.keys?.length) {
    return assoc.keys.map(k => ({ source: `${assoc.name}_${k.as ?? k.ref.join('_')}`, target: k.ref.join('_') }))
  }
  const on = assoc.on
  if (!Array.isArray(on) || !on.length) return undefined
  const pairs: JoinPair[] = []
  const target = targetOf(assoc)
  for (let i = 0; i < on.length; i += 4) {
    const [left, op, right, conj] = [on[i], on[i + 1], on[i + 2], on[i + 3]]
    if (op !== '=' || (conj !== undefined && conj !== 'and')) return undefined
    const l = refOf(left)
    const r = refOf(right)
    if (!l || !r) return undefined
    const [mine, theirs] = l[0] === assoc.name ? [r, l] : r[0] === assoc.name ? [l, r] : [undefined, undefined]
    if (!mine || !theirs) return undefined
    const targetPath = theirs.slice(1)
    const sourcePath = mine[0] === '$self' || mine[0] === '$projection' ? mine.slice(1) : mine
    if (!sourcePath.length) {
      // backlink: `children.parent = $self` joins the target's association to this entity's keys
      const back = target?.elements[targetPath.join('_')] ?? target?.elements[targetPath[0]]
      if (!back || !isAssociationElement(back) || !back.keys?.length) return undefined
      for (const k of back.keys) pairs.push({ source: k.ref.join('_'), target: `${back.name}_${k.as ?? k.ref.join('_')}` })
      continue
    }
    pairs.push({ source: sourcePath.join('_'), target: targetPath.join('_') })
  }
  return pairs.length ? pairs : undefined
}
