/**
 * Subscribe, upgrade and unsubscribe of tenants through CAP's `cds.xt.DeploymentService`
 * (`@sap/cds-mtxs` in the app's process): the engine's per-tenant state follows the tenant's
 * lifecycle.
 *
 * - subscribe: tracker rows in the tenant's database, its schedules (fan-out: queued tasks in
 *   its database), and with `syncOnSubscribe` one run of every replicate pipeline for it. A
 *   repeated subscribe is harmless: rows are upserted, tasks kept, a sync that is still
 *   running is not started twice.
 * - upgrade: the tenant's database may have been recreated (SQLite and HANA redeploy by
 *   drop-create without schema evolution): tracker rows and tasks are written again, and a
 *   watermark whose target table is empty is reset, so the next run reads everything.
 * - unsubscribe: its queued tasks and timers end, its event batchers stop (its messages are
 *   dropped from then on, with a warning); with `flushOnUnsubscribe` its entity cache
 *   (file and connection) and its delegate response cache entries are dropped, so a later
 *   subscribe of the same tenant starts clean.
 */
import cds from '@sap/cds'
import { LOGGER, MULTITENANCY } from '../constants.js'
import { tenancySettings, technicalTenant } from './settings.js'
import { inTenant, isUnsubscribed, markSubscribed, markUnsubscribed } from './context.js'
import { afterCurrentTransaction } from '../engine/registry/after-transaction.js'
import { connectEngine } from '../engine/registry/port.js'
import { tenantWorkCount, tenantWorkEnded } from '../engine/tenancy/tenant-work.js'
import { replicatedEntities, type FederationCsn } from '../federation/annotations.js'
import { entityCache } from '../federation/cache/entity.js'
import { responseCache } from '../federation/cache/response.js'
import { findEntity } from '../model/csn.js'
import { ql } from '../model/ql.js'
import { invalidTenantId, shownTenant } from '../security/tenant-id.js'
import { PipelineError } from '../pipeline/errors.js'
import { connectTo, primaryDatabase, servedModel, type QueryRunner } from '../cap/index.js'

const LOG = cds.log(LOGGER.tenancy)

interface Request { data: { tenant?: string }; reject?(status: number, message: string, target?: string): never }
interface DeploymentService {
  before(event: string | string[], handler: (req: Request) => unknown): unknown
  after(event: string, handler: (result: unknown, req: Request) => unknown): unknown
}

/** The tenant of a lifecycle request, unless it is the technical tenant or the engine is single-tenant. */
function tenantOf(req: Request): string | undefined {
  const tenant = req.data?.tenant
  if (!tenant || tenant === technicalTenant() || !tenancySettings().active || invalidTenantId(tenant)) return undefined
  return tenant
}

/** After a subscribe: tracker rows and schedules in the tenant's database; the initial sync in the background. */
export async function onSubscribe(tenant: string): Promise<void> {
  const started = Date.now()
  const { registry } = await connectEngine()
  registry.forgetTenant(tenant) // a repeated subscribe may have recreated its database
  await registry.ensureTenant(tenant)
  await registry.installTenantSchedules(tenant)
  LOG.info(`tenant '${tenant}' subscribed: ${registry.names().length} pipeline(s) ready in ${Date.now() - started} ms`)
  if (tenancySettings().syncOnSubscribe) setImmediate(() => { void syncTenant(tenant) })
}

/** Runs every replicate pipeline once for the tenant (`syncOnSubscribe`); a running one is left alone. */
export async function syncTenant(tenant: string): Promise<void> {
  const srv = await connectEngine()
  const model = servedModel<FederationCsn>()
  const names = model ? replicatedEntities(model).filter(name => srv.registry.has(name)) : []
  await Promise.all(names.map(name => srv.registry.fanOut.run(name, [tenant], each => inTenant(each, async () => {
    try {
      const { done } = await srv.execute(name, { tenant: each, trigger: MULTITENANCY.subscribeTrigger, async: true })
      const outcome = await done
      LOG.info(`tenant '${each}': initial sync of '${name}' ${outcome?.status ?? 'done'}`)
    } catch (error) {
      if ((error as { code?: string }).code === 'PIPELINE_RUNNING') LOG.info(`tenant '${each}': initial sync of '${name}' skipped, a run is active`)
      else LOG.error(`tenant '${each}': initial sync of '${name}' failed: ${(error as Error).message}`)
    }
  }))))
}

/**
 * After an upgrade: rows and tasks written again (a recreated database lost them), and a
 * watermark (lastSync, lastKey, checkpoint) whose database target is empty is reset: the
 * next run is a full read instead of a delta past rows the tenant no longer has.
 */
export async function onUpgrade(tenant: string): Promise<string[]> {
  const { registry } = await connectEngine()
  registry.forgetTenant(tenant)
  await registry.ensureTenant(tenant)
  const reset: string[] = []
  for (const name of registry.names()) {
    try {
      const { config } = registry.effectiveFor(name, tenant)
      const target = config.target
      if (target.adapter || (target.service && target.service !== 'db') || !target.entity) continue
      const row = await inTenant(tenant, () => registry.tracker.read(name))
      if (!row || row.status === 'running' || !(row.lastSync || row.lastKey || row.checkpoint)) continue
      const entity = findEntity(target.entity)?.name ?? target.entity
      const found = await inTenant(tenant, async () => {
        const db = await connectTo<QueryRunner>('db')
        return db.run(ql.SELECT.one.from(entity).columns('1 as one'))
      })
      if (found) continue
      await inTenant(tenant, () => registry.tracker.update(name, { lastSync: null, lastKey: null, checkpoint: null }))
      reset.push(name)
      LOG.warn(`tenant '${tenant}': pipeline '${name}' had a watermark, but its target ${entity} is empty after the upgrade: tracker reset, the next run reads everything`)
    } catch (error) {
      LOG.error(`tenant '${tenant}': pipeline '${name}' could not be checked after the upgrade: ${(error as Error).message}`)
    }
  }
  await registry.installTenantSchedules(tenant)
  return reset
}

/**
 * Before an unsubscribe (the tenant's database still exists): its queued tasks and timers end,
 * and the runs underway in it end before MTX deletes its database (no new ones start: the tenant
 * is marked unsubscribed) — one still running would open the deleted database again.
 */
export async function beforeUnsubscribe(tenant: string): Promise<void> {
  const { registry, eventReplication } = await connectEngine()
  // its event batchers stop before the wait: a step under way ends, no new one starts
  eventReplication.stopTenant(tenant)
  // first: removing the tasks writes to the tenant's database, in the request's transaction, whose
  // lock a run underway would then wait for
  if (!(await tenantWorkEnded(tenant, MULTITENANCY.unsubscribeDrain)))
    LOG.warn(`tenant '${tenant}': ${tenantWorkCount(tenant)} run(s) still underway ${MULTITENANCY.unsubscribeDrain} ms after its unsubscribe began; the unsubscribe goes on`)
  await registry.removeTenantSchedules(tenant)
}

/**
 * Closes this process's connection pool of the tenant's database. MTX's unsubscribe disconnects
 * it before deleting the database, but a query in that tenant in between (CAP's task queue, a
 * request finishing) opens a new pool on the database being deleted; on SQLite that pool keeps
 * the unlinked file open, and after a re-subscribe the app would read and write the deleted
 * database instead of the new one (seen on a loaded machine: the re-subscribed tenant's task
 * written where no one else could see it). Not awaited: closing waits for borrowed connections.
 */
function dropTenantPool(tenant: string): void {
  const db = primaryDatabase()
  void db?.disconnect?.(tenant)?.catch(error => LOG.debug(`tenant '${tenant}': closing its connection pool failed: ${(error as Error).message}`))
}

/** After an unsubscribe: nothing of the tenant stays in this process; with `flushOnUnsubscribe` its entity cache goes. */
export async function onUnsubscribe(tenant: string): Promise<void> {
  const { registry } = await connectEngine()
  registry.forgetTenant(tenant)
  dropTenantPool(tenant)
  if (tenancySettings().flushOnUnsubscribe) {
    await entityCache.flushTenant(tenant)
    responseCache.flushTenant(tenant)
    LOG.info(`tenant '${tenant}' unsubscribed: its entity cache and delegate response cache entries were flushed`)
  }
}

/** Work done for each tenant after its lifecycle request, in order (tests and logs wait on it). */
const pending = new Map<string, Promise<void>>()

/** Resolves once the engine has handled the tenant's last subscribe, upgrade or unsubscribe. */
export function tenantSettled(tenant: string): Promise<void> {
  return pending.get(tenant) ?? Promise.resolve()
}

/** Registers the lifecycle handlers on CAP's DeploymentService (served in this process). */
export function attachDeploymentHooks(ds: DeploymentService): void {
  // a tenant id names its database and the engine's files: an unsafe one is refused before MTX creates anything
  ds.before(['subscribe', 'upgrade', 'unsubscribe'], req => {
    const tenant = req.data?.tenant
    if (tenant === undefined || !invalidTenantId(tenant)) return
    const error = new PipelineError('INVALID_PARAMETER', `tenant: ${shownTenant(tenant)} is not a valid tenant id: ${invalidTenantId(tenant)}`, { target: 'tenant' })
    LOG.warn(`tenant lifecycle refused: ${error.message}`)
    if (req.reject) req.reject(error.status, error.message, 'tenant')
    throw error
  })
  const handle = async (what: string, tenant: string, fn: (tenant: string) => Promise<unknown>) => {
    try {
      await fn(tenant)
    } catch (error) {
      // the tenant's lifecycle goes on; the engine catches up on first use in that tenant
      LOG.error(`tenant '${tenant}': ${what} handling failed: ${(error as Error).message}`)
    }
  }
  const later = (what: string, fn: (tenant: string) => Promise<unknown>) => (_result: unknown, req: Request) => {
    const tenant = tenantOf(req)
    if (!tenant) return
    const previous = pending.get(tenant) ?? Promise.resolve()
    // the tenant's deployment runs in the request's transaction, which holds its connection until the request ends
    const next = new Promise<void>(resolve => afterCurrentTransaction(() => { void previous.then(() => handle(what, tenant, fn)).then(resolve) }, MULTITENANCY.lifecycleFallback))
    pending.set(tenant, next)
  }
  ds.before('subscribe', req => {
    const tenant = tenantOf(req)
    if (!tenant) return
    // a pool opened while the tenant was gone may still point at its deleted database
    if (isUnsubscribed(tenant)) dropTenantPool(tenant)
    markSubscribed(tenant)
  })
  ds.after('subscribe', later('subscribe', onSubscribe))
  ds.after('upgrade', later('upgrade', onUpgrade))
  // while its database still exists; the request has not touched it yet
  ds.before('unsubscribe', async req => {
    const tenant = tenantOf(req)
    if (!tenant) return
    markUnsubscribed(tenant)
    await handle('unsubscribe', tenant, beforeUnsubscribe)
  })
  ds.after('unsubscribe', later('unsubscribe', onUnsubscribe))
}
