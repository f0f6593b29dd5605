/**
 * Multitenancy of the engine (SPEC "Multi-tenancy settings"): per-tenant tracker rows and
 * runs, fan-out of scheduled and tenant-less runs over CAP's subscribed tenants, per-tenant
 * schedules and overrides, and the subscribe/upgrade/unsubscribe hooks.
 */
import { attachDeploymentHooks } from './hooks.js'
import { useTenancy } from '../engine/tenancy/index.js'
import { tenancySettings, tenantOverrides } from './settings.js'
import { subscribedTenants } from './tenants.js'
import { inTenant } from './context.js'
import { onCds } from '../cap/index.js'

export { tenancySettings, tenantOverrides, technicalTenant, assertTenantMayOverride, type TenancySettings } from './settings.js'
export { subscribedTenants } from './tenants.js'
export { inTenant, isUnsubscribed } from './context.js'
export { onSubscribe, onUpgrade, onUnsubscribe, syncTenant } from './hooks.js'

let registered = false

/** Plugs multitenancy into the engine and hooks it into CAP's tenant lifecycle (`cds.xt.DeploymentService`, when served in this process). */
export function registerTenancy(): void {
  if (registered) return
  registered = true
  // the engine reaches multitenancy through this port only (it does not import lib/tenancy)
  useTenancy({ settings: tenancySettings, overrides: (tenant, pipeline, stored) => tenantOverrides(tenant, pipeline, undefined, stored), subscribedTenants, inTenant })
  onCds('serving:cds.xt.DeploymentService', (ds: Parameters<typeof attachDeploymentHooks>[0]) => attachDeploymentHooks(ds))
}
