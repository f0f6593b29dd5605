/**
 * Multitenancy of the engine (SPEC "Multi-tenancy settings"): per-tenant tracker rows and
 * runs, fan-out of scheduled and tenant-less runs over CAP's subscribed tenants, per-tenant
 * schedules and overrides, and the subscribe/upgrade/unsubscribe hooks.
 */
import cds from '@sap/cds'
import { attachDeploymentHooks } from './hooks.js'

export { tenancySettings, tenantOverrides, technicalTenant, contextTenant, type TenancySettings } from './settings.js'
export { subscribedTenants } from './tenants.js'
export { inTenant } from './context.js'
export { onSubscribe, onUpgrade, onUnsubscribe, syncTenant } from './hooks.js'

let registered = false

/** Hooks the engine into CAP's tenant lifecycle (`cds.xt.DeploymentService`, when served in this process). */
export function registerTenancy(): void {
  if (registered) return
  registered = true
  const events = cds as unknown as { on(event: string, listener: (srv: unknown) => void): void }
  events.on('serving:cds.xt.DeploymentService', ds => attachDeploymentHooks(ds as Parameters<typeof attachDeploymentHooks>[0]))
}
