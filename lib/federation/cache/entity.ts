/**
 * The `entity` cache of `@federation.delegate: { cache: { strategy: 'entity', ttl } }`: the
 * delegated entity's rows (all of them, its scalar elements under their local names) are
 * copied into a local datastore and refreshed when the TTL expired; a direct read of the
 * entity (no expand, no navigation) then runs there — any `$filter`, `$orderby`, `$top/$skip`,
 * `$count` or `$search`.
 *
 * One store per tenant; cache tables carry no tenant column (SPEC "Multi-tenancy settings").
 * By default a store is an in-memory SQLite database; declaring
 * `cds.requires['data-federation-cache'] = { kind: 'sqlite' }` moves each tenant's store to a
 * file (`entityCache.urlTemplate`, default `data-federation-cache-{tenant}.sqlite`, in
 * `entityCache.baseDir`, default the project root). Requests without a tenant use
 * `entityCache.defaultTenant` (`default`). Loads are single flight per tenant and entity.
 *
 * When the remote answer can depend on the caller (scope.ts: a forwarded token, `$user` in a
 * where or `@restrict`), each user of each tenant gets a copy of its own (a table per caller in
 * the store); otherwise one copy serves every user of the store.
 *
 * A tenant id becomes part of a file name only after it was checked (`storeFile`) by the one
 * validator of tenant ids (lib/security/tenant-id.ts) — anything else (`../x`, `/`, `\`, NUL,
 * `.`, `..`, empty, overlong) is rejected, never rewritten (a rewrite could make two tenants
 * share one file). The resolved path must also stay inside
 * `baseDir`. A request whose tenant is rejected fails with 400 naming the tenant; a
 * configuration that cannot give each tenant its own file inside `baseDir` (an invalid
 * `defaultTenant`, a `urlTemplate` without `{tenant}` or leading out of `baseDir`) with 500.
 */
import cds from '@sap/cds'
import path from 'node:path'
import fs from 'node:fs'
import { LOGGER } from '../../constants.js'
import { isAssociationElement, entityNamed, type CacheOptions, type DelegateInfo, type LinkedElement } from '../delegate/model.js'
import type { RemoteResult, Row } from '../delegate/remote.js'
import { FederationRequestError } from '../delegate/expand.js'
import { callerKey, callerScope } from './scope.js'
import { invalidTenantId, shownTenant as shown } from '../../security/tenant-id.js'
import { allRequires } from '../../cap/settings.js'
import { appRoot, connectTo, currentContext, linkedModel, sqlDdl } from '../../cap/index.js'
import { ql } from '../../model/ql.js'

export { invalidTenantId, MAX_TENANT_ID_LENGTH } from '../../security/tenant-id.js'

const LOG = cds.log(LOGGER.federation)

interface Database {
  model: unknown
  run(query: unknown): Promise<unknown>
  tx<T>(fn: (tx: Database) => Promise<T>): Promise<T>
  disconnect?(): Promise<void>
}

export interface EntityCacheSettings {
  files: boolean
  urlTemplate: string
  defaultTenant: string
  baseDir: string
}

export function entityCacheSettings(): EntityCacheSettings {
  const requires = allRequires<Record<string, unknown>>()
  const files = requires['data-federation-cache']
  const merged: Record<string, unknown> = {
    ...(requires['data-pipeline']?.entityCache as object | undefined),
    ...(files?.entityCache as object | undefined),
  }
  for (const key of ['urlTemplate', 'defaultTenant', 'baseDir']) if (files?.[key] !== undefined) merged[key] = files[key]
  return {
    files: files?.kind === 'sqlite',
    urlTemplate: typeof merged.urlTemplate === 'string' ? merged.urlTemplate : 'data-federation-cache-{tenant}.sqlite',
    defaultTenant: typeof merged.defaultTenant === 'string' ? merged.defaultTenant : 'default',
    baseDir: typeof merged.baseDir === 'string' ? merged.baseDir : appRoot(),
  }
}

/**
 * The file of a tenant's store, inside `baseDir`. Throws a 400 error for a tenant id that cannot
 * be a file name (`origin: 'request'`, the default) and a 500 error for a configuration that
 * cannot give the tenant a file of its own inside `baseDir` (`origin: 'config'`: the tenant is
 * `defaultTenant`).
 */
export function storeFile(tenant: string, settings = entityCacheSettings(), origin: 'request' | 'config' = 'request'): string {
  const reason = invalidTenantId(tenant)
  if (reason) {
    if (origin === 'config') throw new FederationRequestError(500, `entityCache.defaultTenant ${shown(String(tenant))} cannot name an entity cache file: ${reason}`)
    throw new FederationRequestError(400, `Tenant ${shown(tenant)} cannot have an entity cache file: ${reason}`)
  }
  if (!settings.urlTemplate.includes('{tenant}'))
    throw new FederationRequestError(500, `entityCache.urlTemplate '${settings.urlTemplate}' has no '{tenant}': all tenants would share one cache file`)
  const base = path.resolve(settings.baseDir)
  const file = path.resolve(base, settings.urlTemplate.replaceAll('{tenant}', tenant))
  const relative = path.relative(base, file)
  if (!relative || relative === '..' || relative.startsWith(`..${path.sep}`) || path.isAbsolute(relative))
    throw new FederationRequestError(500, `entityCache.urlTemplate '${settings.urlTemplate}' leads out of entityCache.baseDir '${base}' for tenant ${shown(tenant)}; name the directory in baseDir`)
  return file
}

function scalarElements(entityName: string): Record<string, LinkedElement> {
  const entity = entityNamed(entityName)
  const out: Record<string, LinkedElement> = {}
  for (const [name, el] of Object.entries(entity?.elements ?? {})) {
    if (isAssociationElement(el) || el.virtual || el.value !== undefined || el.elements) continue
    out[name] = el
  }
  return out
}

function cacheDefinition(entityName: string): object {
  const elements: Record<string, object> = {}
  for (const [name, el] of Object.entries(scalarElements(entityName))) {
    const builtin = el.type?.startsWith('cds.') ? el.type : ((el as { _type?: string })._type ?? 'cds.String')
    const def: Record<string, unknown> = { type: builtin }
    if (el.key) def.key = true
    for (const facet of ['length', 'precision', 'scale'] as const) if (el[facet] !== undefined) def[facet] = el[facet]
    elements[name] = def
  }
  return { kind: 'entity', elements }
}

/** OData `$search` terms (with and/or/not) as case-insensitive `contains` over `columns`. */
function searchFilter(search: unknown[], columns: string[]): unknown[] {
  const term = (value: unknown): unknown => {
    if (!columns.length) return { xpr: [{ val: 1 }, '=', { val: 0 }] }
    const ors: unknown[] = []
    for (const column of columns) {
      if (ors.length) ors.push('or')
      ors.push({ func: 'contains', args: [{ func: 'tolower', args: [{ ref: [column] }] }, { val: String(value).toLowerCase() }] })
    }
    return { xpr: ors }
  }
  return search.map(token => {
    if (token && typeof token === 'object' && 'val' in token) return term((token as { val: unknown }).val)
    if (token && typeof token === 'object' && Array.isArray((token as { xpr?: unknown[] }).xpr)) return { xpr: searchFilter((token as { xpr: unknown[] }).xpr, columns) }
    return token
  })
}

interface Store {
  db: Database
  definitions: Record<string, object>
}

export interface EntityCacheStats {
  loads: number
  hits: number
}

/** Marks the table of one caller's copy: `<entity>.__caller_<hash of tenant and user>`. */
const CALLER_TABLE = '.__caller_'

/** The cache table of the current request: the shared copy, or the caller's own (scope.ts). */
function tableOf(info: DelegateInfo): string {
  return callerScope(info).perUser ? `${info.entity}${CALLER_TABLE}${callerKey()}` : info.entity
}

export class EntityCache {
  private stores = new Map<string, Promise<Store>>()
  private expires = new Map<string, number>()
  private loading = new Map<string, Promise<void>>()
  readonly stats: EntityCacheStats = { loads: 0, hits: 0 }

  /** The tenant whose store serves the current request. */
  tenantOf(options: CacheOptions): string {
    return this.tenantOfRequest(options).tenant
  }

  private tenantOfRequest(options: CacheOptions): { tenant: string; origin: 'request' | 'config' } {
    const tenant = currentContext()?.tenant
    return options.tenantScoped && tenant ? { tenant, origin: 'request' } : { tenant: entityCacheSettings().defaultTenant, origin: 'config' }
  }

  private store(tenant: string, origin: 'request' | 'config'): Promise<Store> {
    let store = this.stores.get(tenant)
    if (!store) {
      const settings = entityCacheSettings()
      // checked before anything is opened or created: an invalid tenant never touches the disk
      const url = settings.files ? storeFile(tenant, settings, origin) : ':memory:'
      store = (async () => {
        if (settings.files) fs.mkdirSync(path.dirname(url), { recursive: true })
        const definitions: Record<string, object> = {}
        const db = await connectTo<Database>(`data-federation-cache-${tenant}`, {
          kind: 'sqlite',
          credentials: { url },
          // one store per tenant already: CAP's multitenancy must not add a tenant suffix to the file
          multiTenant: false,
          model: linkedModel({ definitions }),
          silent: true,
        })
        if (LOG._debug) LOG.debug(`entity cache store for tenant '${tenant}' at ${url}`)
        return { db, definitions }
      })()
      store.catch(() => this.stores.delete(tenant))
      this.stores.set(tenant, store)
    }
    return store
  }

  /** Creates the cache table of an entity in a store (dropping one left by an earlier process). */
  private async ensureTable(store: Store, entity: string, table = entity): Promise<void> {
    if (store.definitions[table]) return
    const definition = cacheDefinition(entity)
    const ddl = sqlDdl({ definitions: { [table]: definition } })
    await store.db.tx(async tx => {
      await tx.run(`DROP TABLE IF EXISTS ${table.replace(/\./g, '_')}`)
      for (const statement of ddl) await tx.run(statement)
    })
    store.definitions[table] = definition
    store.db.model = linkedModel({ definitions: { ...store.definitions } })
  }

  private async refresh(store: Store, tenant: string, table: string, info: DelegateInfo, options: CacheOptions, loadAll: (columns: string[]) => Promise<Row[]>): Promise<void> {
    const id = `${tenant}|${table}`
    if ((this.expires.get(id) ?? 0) > Date.now()) return
    let pending = this.loading.get(id)
    if (!pending) {
      pending = (async () => {
        this.stats.loads++
        await this.ensureTable(store, info.entity, table)
        const columns = Object.keys(scalarElements(info.entity))
        const rows = await loadAll(columns)
        const entries = rows.map(row => Object.fromEntries(columns.map(c => [c, row[c] ?? null])))
        const { DELETE, INSERT } = ql
        await store.db.tx(async tx => {
          await tx.run(DELETE.from(table))
          if (entries.length) await tx.run(INSERT.into(table).entries(entries))
        })
        this.expires.set(id, Date.now() + options.ttl)
        if (LOG._debug) LOG.debug(`entity cache of '${info.entity}' (tenant '${tenant}'${table === info.entity ? '' : ', one caller'}) loaded: ${entries.length} rows`)
      })().finally(() => this.loading.delete(id))
      this.loading.set(id, pending)
    }
    await pending
  }

  /** Runs a direct read (`select` without expands) on the tenant's copy, loading it first when stale. */
  async read(info: DelegateInfo, options: CacheOptions, select: Record<string, unknown>, loadAll: (columns: string[]) => Promise<Row[]>): Promise<RemoteResult> {
    const { tenant, origin } = this.tenantOfRequest(options)
    const store = await this.store(tenant, origin)
    const table = tableOf(info)
    const fresh = (this.expires.get(`${tenant}|${table}`) ?? 0) > Date.now()
    await this.refresh(store, tenant, table, info, options, loadAll)
    if (fresh) this.stats.hits++
    const local = JSON.parse(JSON.stringify(select)) as Record<string, unknown>
    local.from = { ref: [table] }
    if (Array.isArray(local.search)) {
      // $search as a filter on the string elements: the database's own search would look the
      // entity up in the application's model, not in the store's
      const matching = searchFilter(local.search as unknown[], Object.entries(scalarElements(info.entity)).filter(([, el]) => (el.type ?? (el as { _type?: string })._type) === 'cds.String').map(([name]) => name))
      local.where = Array.isArray(local.where) && local.where.length ? [{ xpr: local.where }, 'and', { xpr: matching }] : matching
      delete local.search
    }
    // always an own transaction: the request's would hold the store's only connection
    const result = await store.db.tx(tx => tx.run({ SELECT: local }))
    if (local.one || !Array.isArray(result)) return { rows: result == null ? [] : [result as Row], one: true }
    const count = (result as { $count?: number }).$count
    return { rows: result as Row[], count, one: false }
  }

  /** Marks an entity's copy stale in the current tenant's store (after a write through the proxy). */
  invalidate(info: DelegateInfo, options: CacheOptions): void {
    const prefix = `${this.tenantOf(options)}|${info.entity}`
    // the shared copy and every caller's copy of the entity
    for (const id of this.expires.keys()) if (id === prefix || id.startsWith(`${prefix}${CALLER_TABLE}`)) this.expires.delete(id)
  }

  /** Drops a tenant's store and, with file stores, its file (e.g. on unsubscribe). */
  async flushTenant(tenant: string): Promise<void> {
    const store = this.stores.get(tenant)
    this.stores.delete(tenant)
    for (const id of this.expires.keys()) if (id.slice(0, id.lastIndexOf('|')) === tenant) this.expires.delete(id)
    if (store) await store.then(each => each.db.disconnect?.(), () => undefined).catch(() => undefined)
    const settings = entityCacheSettings()
    if (!settings.files) return
    let file: string
    try {
      file = storeFile(tenant, settings)
    } catch (error) {
      // no file was ever created for it: nothing to remove, and nothing outside baseDir is touched
      LOG.warn(`entity cache of tenant ${shown(tenant)} not flushed: ${(error as Error).message}`)
      return
    }
    for (const each of [file, `${file}-wal`, `${file}-shm`]) fs.rmSync(each, { force: true })
  }

  async clear(): Promise<void> {
    for (const tenant of this.stores.keys()) {
      const store = this.stores.get(tenant)
      this.stores.delete(tenant)
      if (store) await store.then(each => each.db.disconnect?.(), () => undefined).catch(() => undefined)
    }
    this.expires.clear()
    this.stats.loads = this.stats.hits = 0
  }
}

export const entityCache = new EntityCache()
