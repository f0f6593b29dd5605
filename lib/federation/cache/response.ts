/**
 * The `response` cache of `@federation.delegate: { cache: { ttl } }`: the outbound remote call
 * of a delegated read — rows after server paging, expand payload of the same remote included —
 * keyed by the full query shape (entity, columns, filter, order, paging, expand, `$count`,
 * `$search`) plus tenant, locale and, when the remote answer can depend on the caller (the
 * binding forwards the user's identity, `$user` in a where or `@restrict`: scope.ts), user and tenant.
 *
 * Concurrent misses for one key share a single remote load (single flight). Every caller gets
 * its own copy, so stitching local data into a result never changes what is cached. Entries
 * are tagged `<tenant>|<entity>` so writes through the proxy drop them; the cache holds at most
 * `cacheEntries` entries (least recently used evicted first).
 */
import type { CacheOptions, DelegateInfo } from '../delegate/model.js'
import type { RemoteResult } from '../delegate/remote.js'
import { delegateSettings } from '../delegate/keys.js'
import { callerKey, callerScope } from './scope.js'
import { currentContext } from '../../cap/index.js'

interface Entry {
  value: RemoteResult
  expires: number
  tag: string
}

export interface CacheStats {
  hits: number
  misses: number
  /** Requests that waited for a load already in flight (single flight). */
  shared: number
  loads: number
}

interface Context {
  tenant?: string
  locale?: string
  user?: { id?: string }
}

function context(): Context {
  return currentContext() ?? {}
}

/** The tenant part of cache keys and tags: '' when unscoped or without tenant. */
export function tenantPart(options: CacheOptions): string {
  return options.tenantScoped ? (context().tenant ?? '') : '*'
}

export class ResponseCache {
  private entries = new Map<string, Entry>()
  private inflight = new Map<string, Promise<RemoteResult>>()
  readonly stats: CacheStats = { hits: 0, misses: 0, shared: 0, loads: 0 }

  keyOf(info: DelegateInfo, options: CacheOptions, select: unknown): { key: string; tag: string } {
    const ctx = context()
    const tenant = tenantPart(options)
    // per user and tenant when the remote answer can depend on the caller (scope.ts)
    const caller = callerScope(info).perUser ? callerKey() : null
    const tag = `${tenant}|${info.entity}`
    return { key: JSON.stringify([tag, ctx.locale ?? '', caller, select]), tag }
  }

  async get(info: DelegateInfo, options: CacheOptions, select: unknown, load: () => Promise<RemoteResult>): Promise<RemoteResult> {
    const { key, tag } = this.keyOf(info, options, select)
    const now = Date.now()
    const hit = this.entries.get(key)
    if (hit && hit.expires > now) {
      this.stats.hits++
      this.entries.delete(key) // keep recently used entries last
      this.entries.set(key, hit)
      return structuredClone(hit.value)
    }
    if (hit) this.entries.delete(key)
    const pending = this.inflight.get(key)
    if (pending) {
      this.stats.shared++
      return structuredClone(await pending)
    }
    this.stats.misses++
    const promise = (async () => {
      this.stats.loads++
      const value = await load()
      this.store(key, { value: structuredClone(value), expires: Date.now() + options.ttl, tag })
      return value
    })()
    this.inflight.set(key, promise)
    try {
      return structuredClone(await promise)
    } finally {
      this.inflight.delete(key)
    }
  }

  private store(key: string, entry: Entry): void {
    this.entries.set(key, entry)
    const { cacheEntries } = delegateSettings()
    while (this.entries.size > cacheEntries) this.entries.delete(this.entries.keys().next().value!)
  }

  /** Drops the entries of an entity for the current tenant (all tenants' shared entries when not tenant-scoped). */
  invalidate(info: DelegateInfo, options: CacheOptions): void {
    this.invalidateTag(`${tenantPart(options)}|${info.entity}`)
  }

  invalidateTag(tag: string): void {
    for (const [key, entry] of this.entries) if (entry.tag === tag) this.entries.delete(key)
  }

  /** Drops everything of one tenant (e.g. on unsubscribe). */
  flushTenant(tenant: string): void {
    // the tenant is everything before the last '|' (entity names have none; a tenant id may)
    for (const [key, entry] of this.entries) if (entry.tag.slice(0, entry.tag.lastIndexOf('|')) === tenant) this.entries.delete(key)
  }

  clear(): void {
    this.entries.clear()
    this.stats.hits = this.stats.misses = this.stats.shared = this.stats.loads = 0
  }

  get size(): number {
    return this.entries.size
  }
}

export const responseCache = new ResponseCache()
