/**
 * The pipelines as each tenant sees them (multitenancy, lib/tenancy): the tracker rows in the
 * tenant's database, written on first use there, and what the tenant's admin set for its tenant.
 */
import type { ResolvedPipeline } from '../../pipeline/types.js'
import { resolvePipeline } from '../config/index.js'
import { applyOverrides, parseStoredOverrides, type Overrides } from '../config/overrides.js'
import { scheduleLabel } from '../schedule/spec.js'
import type { Tracker } from '../tracker/index.js'
import { requiredKind } from '../../adapters/factory.js'
import { tenancy } from '../tenancy/index.js'
import type { PipelineDefinitions } from './definitions.js'

export class TenantDefinitions {
  /** `<tenant>\0<pipeline>`: tracker rows known to exist in that tenant's database. */
  private readonly registeredIn = new Set<string>()

  constructor(private readonly definitions: PipelineDefinitions, private readonly tracker: Tracker) {}

  /** Makes sure the pipeline's tracker row exists in the tenant's database (once per process, again after `forget`). */
  async ensureInTenant(name: string, tenant: string): Promise<void> {
    const key = `${tenant}\u0000${name}`
    if (this.registeredIn.has(key)) return
    const definition = this.definitions.definition(name)
    const registration = definition.registration
    if (!registration) return
    const effective = this.definitions.effectiveFor(name, tenant)
    const row = await tenancy().inTenant(tenant, () => this.tracker.register({ ...registration.row, mode: effective.mode, schedule: scheduleLabel(effective.schedule) }, registration.enabled))
    const stored = parseStoredOverrides(row.overrides)
    if (Object.keys(stored).length) {
      // the tenant's admin set its own mode or schedule (before a restart): the row shows them
      ;(definition.tenantOwn ??= new Map()).set(tenant, stored)
      definition.tenants?.delete(tenant)
      const own = this.definitions.effectiveFor(name, tenant)
      await tenancy().inTenant(tenant, () => this.tracker.update(name, { mode: own.mode, schedule: scheduleLabel(own.schedule) }))
    }
    this.registeredIn.add(key)
  }

  /** Tracker rows of all pipelines in the tenant's database. */
  async ensureTenant(tenant: string): Promise<void> {
    for (const name of this.definitions.names()) await this.ensureInTenant(name, tenant)
  }

  /** What the tenant's admin set for the tenant (management API), as stored. */
  storedTenantOverrides(name: string, tenant: string): Overrides {
    return { ...this.definitions.definition(name).tenantOwn?.get(tenant) }
  }

  /**
   * Puts what the tenant's admin chose for the tenant into effect (the caller checked the
   * provider's bounds): validated like any override, stored in the tenant's tracker row.
   * Returns the tenant's effective config and its own settings as they apply.
   */
  async putTenantOverrides(name: string, tenant: string, overrides: Overrides): Promise<{ effective: ResolvedPipeline; own: Overrides }> {
    const definition = this.definitions.definition(name)
    await this.ensureInTenant(name, tenant)
    const own = tenancy().overrides(tenant, name, overrides) ?? {}
    const effective = resolvePipeline(applyOverrides(definition.coded, { ...definition.overrides, ...own }), { serviceKind: requiredKind })
    this.definitions.checkCapabilities(effective)
    await tenancy().inTenant(tenant, () => this.tracker.update(name, {
      overrides: Object.keys(overrides).length ? JSON.stringify(overrides) : null, mode: effective.mode, schedule: scheduleLabel(effective.schedule),
    }))
    ;(definition.tenantOwn ??= new Map()).set(tenant, overrides)
    definition.tenants?.delete(tenant)
    return { effective, own }
  }

  /** Forgets which tracker rows exist in the tenant's database (unsubscribed, or recreated by an upgrade). */
  forget(tenant: string): void {
    for (const key of this.registeredIn) if (key.startsWith(`${tenant}\u0000`)) this.registeredIn.delete(key)
  }
}
