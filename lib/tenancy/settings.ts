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
 *   }
 */
import cds from '@sap/cds'
import { LOGGER, MULTITENANCY, SERVICE_NAME } from '../constants.js'
import type { Overrides } from '../engine/overrides.js'

const LOG = cds.log(LOGGER.tenancy)

export interface TenancySettings {
  active: boolean
  fanOutScheduledRuns: boolean
  parallel: number
  syncOnSubscribe: boolean
  flushOnUnsubscribe: boolean
  tenants: Record<string, { replicate?: Record<string, Overrides> } | undefined>
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
  }
}

/** CAP's technical (provider) tenant, `cds.requires.multitenancy.t0` (default `t0`). */
export function technicalTenant(): string {
  const mt = (cds.env.requires as Record<string, unknown>).multitenancy as { t0?: string } | boolean | undefined
  return (typeof mt === 'object' && mt?.t0) || 't0'
}

/**
 * A tenant's own settings of one pipeline (`multitenancy.tenants.<tenant>.replicate.<pipeline>`):
 * `mode` and `schedule` only; undefined when the tenant has none.
 */
export function tenantOverrides(tenant: string | undefined, pipeline: string, settings = tenancySettings()): Overrides | undefined {
  if (!tenant || !settings.active) return undefined
  const own = settings.tenants[tenant]?.replicate?.[pipeline]
  if (own === null || typeof own !== 'object') return undefined
  const out: Overrides = {}
  for (const [key, value] of Object.entries(own)) {
    if ((MULTITENANCY.tenantOverridable as readonly string[]).includes(key)) out[key] = value
    else if (!warnedKeys.has(`${tenant}|${pipeline}|${key}`)) {
      warnedKeys.add(`${tenant}|${pipeline}|${key}`)
      LOG.warn(`multitenancy.tenants.${tenant}.replicate['${pipeline}'].${key} is ignored: a tenant may override ${MULTITENANCY.tenantOverridable.join(' and ')} only`)
    }
  }
  return Object.keys(out).length ? out : undefined
}
