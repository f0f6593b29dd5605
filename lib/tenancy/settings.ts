/**
 * The engine's multitenancy settings, `cds.requires['data-pipeline'].multitenancy`
 * (SPEC "Multi-tenancy settings"):
 *
 *   multitenancy: {
 *     active: true,               // the engine works per tenant (needs cds.requires.multitenancy)
 *     fanOutScheduledRuns: true,  // ticks and tenant-less triggers run once per subscribed tenant
 *     parallel: 4,                // tenant runs at once in this process (fan-out)
 *     syncOnSubscribe: true,      // run all replicate pipelines for a tenant once it subscribed
 *     flushOnUnsubscribe: true,   // drop the tenant's entity cache (file) once it unsubscribed
 *     tenants: { t1: { replicate: { 'my.Books': { mode: 'full', schedule: '30m' } } } },
 *     lockedSettings: ['schedule'], // what a tenant's PipelineAdmin may not set for its tenant
 *   }
 *
 * A tenant's PipelineAdmin sets its own tenant's `mode`, `schedule` and `enabled` through the
 * management API (stored in the tenant's tracker row, `overrides`); the provider's
 * `lockedSettings` are out of its reach, and so is every other setting (shared by all tenants).
 */
import cds from '@sap/cds'
import { LOGGER, MULTITENANCY, SERVICE_NAME } from '../constants.js'
import type { Overrides } from '../engine/config/overrides.js'
import { TENANT_PATHS } from '../engine/config/settings.js'
import { PipelineError } from '../pipeline/errors.js'

const LOG = cds.log(LOGGER.tenancy)

export interface TenancySettings {
  active: boolean
  fanOutScheduledRuns: boolean
  parallel: number
  syncOnSubscribe: boolean
  flushOnUnsubscribe: boolean
  tenants: Record<string, { replicate?: Record<string, Overrides> } | undefined>
  /** Settings a tenant's PipelineAdmin may not set for its tenant (of `mode`, `schedule`, `enabled`). */
  lockedSettings: string[]
}

let warnedInactive = false
const warnedKeys = new Set<string>()

/** The settings as configured; `active` only when CAP's multitenancy is on as well. */
export function tenancySettings(): TenancySettings {
  const requires = cds.env.requires as Record<string, unknown>
  const conf = ((requires[SERVICE_NAME] as { multitenancy?: Record<string, unknown> } | undefined)?.multitenancy ?? {}) as Record<string, unknown>
  let active = conf.active === true
  if (active && !requires.multitenancy) {
    if (!warnedInactive) LOG.warn(`cds.requires['${SERVICE_NAME}'].multitenancy.active is set, but CAP's multitenancy is off (cds.requires.multitenancy): the engine runs single-tenant`)
    warnedInactive = true
    active = false
  }
  const parallel = Number(conf.parallel ?? MULTITENANCY.parallel)
  return {
    active,
    fanOutScheduledRuns: active && conf.fanOutScheduledRuns === true,
    parallel: Number.isInteger(parallel) && parallel > 0 ? parallel : MULTITENANCY.parallel,
    syncOnSubscribe: active && conf.syncOnSubscribe === true,
    flushOnUnsubscribe: active && conf.flushOnUnsubscribe === true,
    tenants: (conf.tenants !== null && typeof conf.tenants === 'object' ? conf.tenants : {}) as TenancySettings['tenants'],
    lockedSettings: Array.isArray(conf.lockedSettings) ? conf.lockedSettings.filter((key): key is string => typeof key === 'string') : [],
  }
}

/** CAP's technical (provider) tenant, `cds.requires.multitenancy.t0` (default `t0`). */
export function technicalTenant(): string {
  const mt = (cds.env.requires as Record<string, unknown>).multitenancy as { t0?: string } | boolean | undefined
  return (typeof mt === 'object' && mt?.t0) || 't0'
}

/** What a tenant's PipelineAdmin may set for its own tenant. */
const TENANT_ADMIN_SETTABLE: readonly string[] = [...TENANT_PATHS, 'enabled']

/**
 * Throws FORBIDDEN (403) naming the first setting of `keys` (override paths) that a tenant's
 * PipelineAdmin may not set: one the provider locked (`lockedSettings`), or one all tenants share.
 */
export function assertTenantMayOverride(keys: string[], tenant: string, settings = tenancySettings()): void {
  for (const key of keys) {
    const setting = key.split('.')[0]
    if (settings.lockedSettings.includes(setting))
      throw new PipelineError('FORBIDDEN', `${setting}: is locked by the provider (multitenancy.lockedSettings); tenant '${tenant}' cannot change it`, { target: setting })
    if (!TENANT_ADMIN_SETTABLE.includes(setting))
      throw new PipelineError('FORBIDDEN', `${key}: is shared by all tenants and cannot be changed by tenant '${tenant}'; a tenant may set ${TENANT_ADMIN_SETTABLE.join(', ')}`, { target: key })
  }
}

/**
 * A tenant's own settings of one pipeline: the provider's `multitenancy.tenants.<tenant>.replicate.<pipeline>`
 * (`mode` and `schedule` only) with the ones the tenant's admin stored on top (`stored`; what the
 * provider locked or shares is left out); undefined when the tenant has none.
 */
export function tenantOverrides(tenant: string | undefined, pipeline: string, settings = tenancySettings(), stored?: Overrides): Overrides | undefined {
  if (!tenant || !settings.active) return undefined
  const configured = settings.tenants[tenant]?.replicate?.[pipeline]
  const own = { ...(configured !== null && typeof configured === 'object' ? configured : {}), ...ownStored(stored, settings) }
  const out: Overrides = {}
  for (const [key, value] of Object.entries(own)) {
    if (TENANT_PATHS.includes(key)) out[key] = value
    else if (!warnedKeys.has(`${tenant}|${pipeline}|${key}`)) {
      warnedKeys.add(`${tenant}|${pipeline}|${key}`)
      LOG.warn(`multitenancy.tenants.${tenant}.replicate['${pipeline}'].${key} is ignored: a tenant may override ${TENANT_PATHS.join(' and ')} only`)
    }
  }
  return Object.keys(out).length ? out : undefined
}

/** The stored settings of a tenant's admin within the provider's current bounds (a lock set later wins). */
function ownStored(stored: Overrides | undefined, settings: TenancySettings): Overrides {
  const out: Overrides = {}
  for (const [key, value] of Object.entries(stored ?? {}))
    if (TENANT_PATHS.includes(key) && !settings.lockedSettings.includes(key)) out[key] = value
  return out
}
