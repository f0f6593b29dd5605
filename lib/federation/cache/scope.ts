/**
 * Who may share a delegate's cached rows. A cache is shared by all users (of a tenant, or of
 * all tenants with `tenantScoped: false`) — that is its point — unless the remote answer can
 * depend on the caller:
 *
 * - the binding forwards the user's identity (`forwardAuthToken: true` in its credentials or
 *   configuration, or a BTP destination, which CAP looks up with the user's token): the remote
 *   applies that user's authorization;
 * - `$user` (or `$tenant`) appears in a `where` or `@restrict` along the projection chain from
 *   the consumer entity to the remote entity: the rows asked for differ per user.
 *
 * Then both caches keep one copy per user and tenant (the tenant even with `tenantScoped:
 * false`: one user id may exist in several tenants).
 */
import cds from '@sap/cds'
import { createHash } from 'node:crypto'
import { LOGGER } from '../../constants.js'
import { entityNamed, sourceOf, type DelegateInfo, type LinkedEntity } from '../delegate/model.js'
import { requiredService } from '../../cap/settings.js'
import { currentContext } from '../../cap/index.js'

const LOG = cds.log(LOGGER.federation)

export interface CallerScope {
  perUser: boolean
  /** Why the cache is per user (empty when shared). */
  reasons: string[]
}

interface Binding {
  forwardAuthToken?: unknown
  credentials?: { forwardAuthToken?: unknown; destination?: unknown }
}

function bindingReasons(info: DelegateInfo): string[] {
  const conf = requiredService<Binding>(info.remoteService)
  const credentials = conf?.credentials ?? {}
  const reasons: string[] = []
  if (credentials.forwardAuthToken === true || conf?.forwardAuthToken === true) reasons.push(`its binding ${info.remoteService} forwards the user's token (forwardAuthToken)`)
  if (typeof credentials.destination === 'string') reasons.push(`its binding ${info.remoteService} is a destination, looked up with the user's token`)
  return reasons
}

/** Whether a model fragment mentions `$user` or `$tenant` (in a `ref` or an annotation's where text). */
function mentionsUser(value: unknown, seen = new WeakSet<object>(), depth = 0): boolean {
  if (typeof value === 'string') return /\$(user|tenant)\b/.test(value)
  if (!value || typeof value !== 'object' || seen.has(value) || depth > 16) return false
  seen.add(value)
  for (const [key, child] of Object.entries(value)) {
    if (key.startsWith('_')) continue // linked back references
    if (mentionsUser(child, seen, depth + 1)) return true
  }
  return false
}

function modelReasons(info: DelegateInfo): string[] {
  const reasons: string[] = []
  let def: LinkedEntity | undefined = entityNamed(info.entity)
  for (let depth = 0; def && depth < 32; depth++) {
    const query = (def as { query?: unknown; projection?: unknown }).projection ?? (def as { query?: unknown }).query
    if (mentionsUser((query as { SELECT?: { where?: unknown; having?: unknown } } | undefined)?.SELECT?.where) || mentionsUser((def as { projection?: { where?: unknown } }).projection?.where))
      reasons.push(`the where of ${def.name} uses $user`)
    if (mentionsUser(def['@restrict'])) reasons.push(`@restrict of ${def.name} uses $user`)
    if (def.name === info.remoteEntity) break
    def = sourceOf(def)
  }
  return reasons
}

const modelScopes = new WeakMap<DelegateInfo, string[]>()

/** Whether the delegate's cached rows must be kept per user and tenant, and why. */
export function callerScope(info: DelegateInfo): CallerScope {
  let fromModel = modelScopes.get(info)
  if (!fromModel) modelScopes.set(info, (fromModel = modelReasons(info)))
  const reasons = [...bindingReasons(info), ...fromModel]
  return { perUser: reasons.length > 0, reasons }
}

interface Context {
  tenant?: string
  user?: { id?: string }
}

/** The caller part of a per-user cache key: tenant and user, hashed (fit for a table name). */
export function callerKey(): string {
  const ctx: Context = currentContext() ?? {}
  return createHash('sha256').update(`${ctx.tenant ?? ''}\u0000${ctx.user?.id ?? ''}`).digest('hex').slice(0, 24)
}

const logged = new Set<string>()

/** Logs once per entity which delegate caches are kept per user, and why. */
export function logCacheScope(info: DelegateInfo): void {
  const cache = info.options.cache
  if (!cache || logged.has(info.entity)) return
  logged.add(info.entity)
  const scope = callerScope(info)
  if (scope.perUser) LOG.info(`${info.entity}: the ${cache.strategy} cache is kept per user and tenant: ${scope.reasons.join('; ')}`)
}
