/**
 * Whose database a message's keys belong to (multitenancy, lib/tenancy): CAP's messaging runs a
 * handler in the message's tenant context (`cds.context.tenant`: local-messaging in the emitter's
 * context, Event Mesh and Kafka from the message, an inbox in the task's tenant). With the engine's
 * multitenancy active, that tenant's keys, micro-batches and statistics live in its own database;
 * a message without a tenant (or a single-tenant app) stays in the provider's database, as before.
 */
import { contextTenant } from '../engine/tenancy/index.js'
import { inTenant, isUnsubscribed, tenancySettings } from '../tenancy/index.js'

/** Whether the engine works per tenant (its multitenancy is active). */
export function perTenant(): boolean {
  return tenancySettings().active
}

/** The tenant of the message being handled, when the engine works per tenant. */
export function messageTenant(): string | undefined {
  return perTenant() ? contextTenant() : undefined
}

/** Whether the tenant unsubscribed in this process (its messages are dropped). */
export function tenantGone(tenant: string | undefined): boolean {
  return tenant !== undefined && isUnsubscribed(tenant)
}

/** Runs `fn` in the tenant's context (its database), or as it is without a tenant. */
export function withinTenant<T>(tenant: string | undefined, fn: () => Promise<T>): Promise<T> {
  return tenant === undefined ? fn() : inTenant(tenant, fn)
}

/** Key of per-tenant state of a pipeline (`<tenant>\0<pipeline>`; the provider's: `\0<pipeline>`). */
export function slotOf(pipeline: string, tenant: string | undefined): string {
  return `${tenant ?? ''}\u0000${pipeline}`
}

/** How logs name a pipeline of a tenant. */
export function labelOf(pipeline: string, tenant: string | undefined): string {
  return tenant === undefined ? `pipeline '${pipeline}'` : `pipeline '${pipeline}' (tenant '${tenant}')`
}
