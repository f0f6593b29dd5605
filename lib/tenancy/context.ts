/** Running code in a tenant's context: CAP then uses that tenant's database (and model). */
import { assertTenantId } from '../security/tenant-id.js'
import { PipelineError } from '../pipeline/errors.js'
import { trackTenantWork } from '../engine/tenancy/tenant-work.js'
import { inContext, privilegedUser } from '../cap/index.js'

/**
 * Tenants unsubscribed in this process (from the start of their unsubscribe until they subscribe
 * again): no new work enters their context. A run that a tick had planned for such a tenant would
 * otherwise open its database after MTX deleted it, and SQLite would create an empty one.
 */
const unsubscribed = new Set<string>()

export function markUnsubscribed(tenant: string): void {
  unsubscribed.add(tenant)
}

/** Whether the tenant unsubscribed in this process (and has not subscribed again since). */
export function isUnsubscribed(tenant: string): boolean {
  return unsubscribed.has(tenant)
}

export function markSubscribed(tenant: string): void {
  unsubscribed.delete(tenant)
}

/**
 * Runs `fn` in a fresh context of `tenant` (no transaction; a privileged technical user), the
 * way CAP's own queue runs a tenant's tasks. Queries inside open their own transactions on the
 * tenant's database.
 */
export async function inTenant<T>(tenant: string, fn: () => Promise<T>): Promise<T> {
  // the tenant names a database: an unsafe id never reaches CAP's database service
  assertTenantId(tenant)
  if (unsubscribed.has(tenant)) throw new PipelineError('UNKNOWN_TENANT', `tenant: '${tenant}' is unsubscribed`, { target: 'tenant' })
  return await trackTenantWork(tenant, inContext({ tenant, user: privilegedUser() }, fn))
}
