/**
 * lib/engine/tenancy — multitenancy on the engine's side: this module (the port below);
 * tenant-work.ts counts work under way per tenant (unsubscribe waits for it); fanout.ts runs one
 * pipeline for many tenants. CAP MTX's side is lib/tenancy.
 *
 * Multitenancy as the engine sees it: the tenant of the current context, and the port
 * (`TenantSupport`) through which the engine reaches everything else of multitenancy — the
 * settings, a tenant's own pipeline settings, the subscribed tenants, running code in a
 * tenant's context. lib/tenancy implements the port and plugs it in (`registerTenancy`, called
 * by the plugin at load); until then the engine runs single-tenant.
 */
import cds from '@sap/cds'
import { MULTITENANCY } from '../../constants.js'
import type { Overrides } from '../config/overrides.js'

/** The part of the multitenancy settings (SPEC "Multi-tenancy settings") the engine acts on. */
export interface EngineTenancySettings {
  /** The engine works per tenant. */
  active: boolean
  /** Ticks and tenant-less triggers run once per subscribed tenant. */
  fanOutScheduledRuns: boolean
  /** Tenant runs at once in this process. */
  parallel: number
}

export interface TenantSupport {
  settings(): EngineTenancySettings
  /**
   * A tenant's own settings of one pipeline: the provider's `multitenancy.tenants` with what the
   * tenant's admin stored (`stored`, kept within the provider's bounds) on top; undefined when it
   * has none (or multitenancy is off).
   */
  overrides(tenant: string | undefined, pipeline: string, stored?: Overrides): Overrides | undefined
  /** The tenants subscribed to the application. */
  subscribedTenants(): Promise<string[]>
  /** Runs `fn` in a context of `tenant`, on that tenant's database. */
  inTenant<T>(tenant: string, fn: () => Promise<T>): Promise<T>
}

const SINGLE_TENANT: TenantSupport = {
  settings: () => ({ active: false, fanOutScheduledRuns: false, parallel: MULTITENANCY.parallel }),
  overrides: () => undefined,
  subscribedTenants: () => Promise.resolve([]),
  inTenant: (_tenant, fn) => fn(),
}

let support: TenantSupport = SINGLE_TENANT

/** Plugs in the multitenancy implementation (lib/tenancy). */
export function useTenancy(implementation: TenantSupport): void {
  support = implementation
}

/** The multitenancy implementation in use. */
export function tenancy(): TenantSupport {
  return support
}

/** The tenant of the current request or job, if any. */
export function contextTenant(): string | undefined {
  return (cds.context as { tenant?: string } | undefined)?.tenant || undefined
}

/** Key of per-process state of a pipeline in the current tenant (`<tenant>|<name>`). */
export function tenantKey(name: string): string {
  return `${contextTenant() ?? ''}|${name}`
}
