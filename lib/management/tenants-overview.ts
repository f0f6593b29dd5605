/**
 * The provider's view across tenants (issue 20, finding 12). With multitenancy, tracker rows and
 * runs live in each tenant's database; the provider (a request without tenant) has none of its
 * own. `tenantsOverview()` reads every subscribed tenant's tracker — `parallel` tenants at once,
 * each bounded in time — and answers one row per tenant and pipeline; a tenant that cannot be
 * read is one row with `error`, never a failed answer. A fan-out execute answers each tenant's
 * outcome beside the sums (`fanOutAnswer`).
 */
import cds from '@sap/cds'
import { LOGGER, MULTITENANCY, RUNS_ENTITY } from '../constants.js'
import { contextTenant, tenancy } from '../engine/tenancy/index.js'
import { connect, ql } from '../model/ql.js'
import { PipelineError } from '../pipeline/errors.js'
import { freshnessOf } from './metadata.js'
import type { PipelineRegistry, FanOutOutcome } from '../engine/registry/index.js'
import type { PipelineRow } from '../engine/tracker/index.js'
import { addStatistics } from '../engine/run/statistics.js'
import type { WriteStatistics } from '../adapters/types.js'

const LOG = cds.log(LOGGER.tenancy)

/** Info message of a provider's read of Pipelines/PipelineRuns/PipelineRejects (sap-messages). */
export const PROVIDER_HINT = "Pipelines and runs live in each tenant's database; the provider has none of its own. Call tenantsOverview() for every tenant's pipelines, or read as a user of the tenant."

export interface TenantPipelineRow {
  tenant: string
  pipeline: string | null
  enabled: boolean | null
  status: string | null
  mode: string | null
  schedule: string | null
  lastSync: string | null
  lastSuccess: string | null
  freshness: string | null
  errorCount: number | null
  lastError: string | null
  lastRunId: string | null
  lastRunStatus: string | null
  lastRunStart: string | null
  lastRunEnd: string | null
  /** Set when the tenant's tracker could not be read (then `pipeline` is null). */
  error: string | null
}

/** Whether the caller is the provider (no tenant) while the engine works per tenant. */
export function providerWithoutTenant(): boolean {
  return tenancy().settings().active && !contextTenant()
}

/**
 * What the provider (no tenant) gets of an operation of `/pipeline/` (issue 37): `answer` — it has
 * an answer of its own (its permissions, every tenant's pipelines, a schedule preview, a fan-out
 * `execute`/`start`); `hint` — the answer comes from the configuration all tenants share, without
 * any tenant's runs or state, so it carries PROVIDER_HINT as an info message. Any other operation
 * (also one added later) needs a tenant's pipeline and is refused: `providerRefusal`.
 */
export const PROVIDER_OPERATIONS: Readonly<Record<string, 'answer' | 'hint'>> = {
  permissions: 'answer', tenantsOverview: 'answer', previewSchedule: 'answer', execute: 'answer', start: 'answer',
  configView: 'hint', inspectCapabilities: 'hint', flowMetadata: 'hint', landscapeMetadata: 'hint',
}

/** Operations that change settings: as the provider they would change the shared configuration, which is not stored in multitenant mode. */
const SETTING_OPERATIONS = new Set(['setSchedule', 'clearSchedule', 'setOverrides', 'clearOverrides', 'setEnabled', 'validateOverrides'])

/**
 * The provider's answer to an operation or a single row that needs a tenant's pipelines or runs:
 * 404 (the provider's Pipelines and PipelineRuns are empty, so no pipeline or run is found),
 * `TENANT_REQUIRED`, the message naming what was asked and carrying PROVIDER_HINT.
 */
export function providerRefusal(what: string): PipelineError {
  const settings = SETTING_OPERATIONS.has(what)
    ? ' Settings all tenants share are set in code and multitenancy.tenants (the provider\'s overrides are not stored in multitenant mode); a tenant\'s admin sets its own tenant\'s.'
    : ''
  return new PipelineError('TENANT_REQUIRED', `${what}: needs a tenant. ${PROVIDER_HINT}${settings}`)
}

/** Every subscribed tenant's pipelines: status, freshness, last run and last error. Provider only. */
export async function tenantsOverview(registry: PipelineRegistry): Promise<TenantPipelineRow[]> {
  const own = contextTenant()
  if (own) throw new PipelineError('FORBIDDEN', `tenantsOverview: shows all tenants and is for the provider's operator; tenant '${own}' reads its own Pipelines and PipelineRuns`)
  if (!tenancy().settings().active) throw new PipelineError('NOT_SUPPORTED', 'tenantsOverview: multitenancy is not active (cds.requires.multitenancy and multitenancy.active); read Pipelines and PipelineRuns')
  const tenants = await tenancy().subscribedTenants()
  const out: TenantPipelineRow[][] = Array.from({ length: tenants.length }, () => [])
  let next = 0
  const worker = async () => {
    for (let index = next++; index < tenants.length; index = next++) out[index] = await oneTenant(registry, tenants[index])
  }
  await Promise.all(Array.from({ length: Math.min(tenancy().settings().parallel, tenants.length) }, worker))
  return out.flat()
}

async function oneTenant(registry: PipelineRegistry, tenant: string): Promise<TenantPipelineRow[]> {
  let timer: NodeJS.Timeout | undefined
  try {
    const timeout = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${MULTITENANCY.overviewTimeout} ms`)), MULTITENANCY.overviewTimeout)
    })
    return await Promise.race([tenancy().inTenant(tenant, () => readTenant(registry, tenant)), timeout])
  } catch (error) {
    // the SQL and the cause stay in the log; the operator sees which tenant and where to look
    LOG.error(`tenantsOverview: tenant '${tenant}' could not be read: ${(error as Error).message}`)
    return [{ ...EMPTY, tenant, error: `The pipelines of tenant '${tenant}' could not be read (see the application log)` }]
  } finally {
    clearTimeout(timer)
  }
}

const EMPTY: Omit<TenantPipelineRow, 'tenant'> = {
  pipeline: null, enabled: null, status: null, mode: null, schedule: null, lastSync: null, lastSuccess: null, freshness: null,
  errorCount: null, lastError: null, lastRunId: null, lastRunStatus: null, lastRunStart: null, lastRunEnd: null, error: null,
}

/** The tenant's tracker rows (and the registered pipelines without one yet) with each one's newest run. */
async function readTenant(registry: PipelineRegistry, tenant: string): Promise<TenantPipelineRow[]> {
  const rows = await registry.tracker.readAll()
  const byName = new Map<string, Partial<PipelineRow>>(rows.map(row => [row.name, row]))
  for (const name of registry.names()) if (!byName.has(name)) byName.set(name, {})
  const db = await connect('db')
  const answer: TenantPipelineRow[] = []
  for (const [name, row] of [...byName].sort(([a], [b]) => a.localeCompare(b))) {
    const run = (await db.run(ql.SELECT.one.from(RUNS_ENTITY).columns('ID', 'status', 'startTime', 'endTime').where({ pipeline_name: name }).orderBy('startTime desc'))) as
      { ID: string; status: string; startTime: string; endTime: string | null } | undefined
    let maxStaleness: number | undefined
    try {
      maxStaleness = registry.has(name) ? registry.effectiveFor(name, tenant).maxStaleness : undefined
    } catch {
      maxStaleness = undefined
    }
    answer.push({
      ...EMPTY, tenant, pipeline: name,
      enabled: row.enabled ?? null, status: row.status ?? null, mode: row.mode ?? null, schedule: row.schedule ?? null,
      lastSync: row.lastSync ?? null, lastSuccess: row.lastSuccess ?? null, freshness: freshnessOf(maxStaleness, row.lastSuccess),
      errorCount: row.errorCount ?? null, lastError: row.lastError ?? null,
      lastRunId: run?.ID ?? null, lastRunStatus: run?.status ?? null, lastRunStart: run?.startTime ?? null, lastRunEnd: run?.endTime ?? null,
    })
  }
  return answer
}

interface TenantOutcome { tenant: string; runId: string | null; status: string; statistics: Record<string, number> | null; error: string | null }

/**
 * The answer of a fan-out execute: the summed statistics (as before) and `tenants`, one entry
 * per tenant (`completed`, `failed`, `skipped`, or `running` for an async start). `status` is
 * `failed` when a tenant's run failed, else `completed` (`running` for an async start).
 */
export async function fanOutAnswer(name: string, tenants: string[], done: Promise<unknown> | undefined): Promise<object> {
  if (!done) return { runId: null, name, status: 'running', statistics: null, tenants: tenants.map(tenant => ({ tenant, runId: null, status: 'running', statistics: null, error: null })) }
  let runs: FanOutOutcome['runs']
  try {
    runs = ((await done) as FanOutOutcome).runs
  } catch (error) {
    const failed = (error as { runs?: FanOutOutcome['runs'] }).runs
    if (!failed) throw error
    runs = failed
  }
  const statistics: WriteStatistics = { created: 0, updated: 0, deleted: 0 }
  for (const run of runs) addStatistics(statistics, run.statistics ?? undefined)
  const outcomes: TenantOutcome[] = runs.map(run => ({
    tenant: run.tenant, runId: run.runId ?? null, status: run.status,
    statistics: (run.statistics as unknown as Record<string, number> | undefined) ?? null, error: run.error ?? null,
  }))
  return { runId: null, name, status: runs.some(run => run.status === 'failed') ? 'failed' : 'completed', statistics, tenants: outcomes }
}
