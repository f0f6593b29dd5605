/**
 * What the management service's operations share: starting runs and answering their outcome, saving
 * overrides (a tenant's admin its own tenant's), the freshness of a tracker row, and the facts the
 * flow and landscape metadata show. srv/management.ts wires them to the service's events.
 */
import cds from '@sap/cds'
import { LOGGER, PIPELINES_ENTITY } from '../constants.js'
import type { Overrides } from '../engine/config/overrides.js'
import { describeError } from '../engine/run/support.js'
import type { RunOutcome } from '../engine/run/types.js'
import type { PipelineEngine } from '../engine/registry/port.js'
import { connect, ql } from '../model/ql.js'
import { withCorrelation } from '../security/redact.js'
import { assertTenantMayOverride } from '../tenancy/settings.js'
import { asOverride } from './parameters.js'
import { latestRunDrift, publicRow } from './run-answers.js'
import { freshnessOf, type PipelineFacts } from './metadata.js'
import { ownTenant, type OperationRequest } from './requests.js'
import { fanOutAnswer } from './tenants-overview.js'

const LOG = cds.log(LOGGER.engine)

/** Starts a run (or one per tenant) and answers its outcome, 202 while it runs (`async`), 502 when it failed. */
export async function startRun(req: OperationRequest, engine: PipelineEngine, name: string, options: { mode?: string; trigger?: string; async?: boolean; tenant?: string }) {
  const { runId, done, tenants } = await engine.execute(name, { ...options, engine: 'spawn' } as Parameters<PipelineEngine['execute']>[1])
  if (tenants) LOG.info(`pipeline '${name}': ${options.async ? 'started' : 'ran'} for ${tenants.length} tenant(s): ${tenants.join(', ')}`)
  // a fan-out over tenants answers each tenant's outcome beside the sums
  if (tenants) {
    if (options.async) req.http?.res?.status(202)
    return fanOutAnswer(name, tenants, options.async ? undefined : done as Promise<unknown>)
  }
  if (options.async || !done) {
    req.http?.res?.status(202)
    done?.catch(() => undefined) // recorded in PipelineRuns; nothing to report here
    return { runId, name, status: 'running', statistics: null }
  }
  const outcome: RunOutcome | { status: 'failed'; statistics: null; error: string } = await done.catch((error: Error) => {
    const failure = describeError(error, `pipeline '${name}'`) // logged by the run under this correlation id
    return { status: 'failed' as const, statistics: null, error: withCorrelation(failure.message, failure.correlationId) }
  })
  if (outcome.status === 'failed') {
    const message = 'error' in outcome ? outcome.error : 'run failed'
    return req.reject(502, `Run ${runId} of pipeline '${name}' failed: ${message}`)
  }
  return { runId, name, status: outcome.status, statistics: outcome.statistics }
}

/** Saves an operation's overrides: the tenant's own ones for a tenant's admin (within the provider's bounds), else the shared ones. */
export async function saveOverrides(engine: PipelineEngine, name: string, overrides: Overrides) {
  // a tenant's admin sets its own tenant's settings, within the provider's bounds; the rest is shared by all tenants
  const tenant = ownTenant()
  if (tenant) {
    const before = engine.registry.storedTenantOverrides(name, tenant)
    assertTenantMayOverride(Object.keys(overrides).filter(key => JSON.stringify(overrides[key]) !== JSON.stringify(before[key])), tenant)
    await asOverride(() => engine.registry.applyTenantOverrides(name, tenant, overrides))
    return publicRow((await engine.registry.tracker.read(name))!)
  }
  await asOverride(() => engine.registry.applyOverrides(name, overrides))
  return publicRow((await engine.registry.tracker.read(name))!)
}

/** Sets `freshness` and `maxStaleness` (ms) of a tracker row from the effective config; a row without `lastSuccess` (a `$select`) reads it. */
export async function addFreshness(engine: PipelineEngine, row: Record<string, unknown>): Promise<Record<string, unknown>> {
  const name = row.name as string
  let maxStaleness: number | undefined
  try {
    maxStaleness = engine.registry.has(name) ? engine.registry.effectiveFor(name).maxStaleness : undefined
  } catch {
    maxStaleness = undefined
  }
  // in the request's transaction: a tracker transaction of its own would wait for SQLite's only connection
  const stored = async () => ((await (await connect('db')).run(ql.SELECT.one.from(PIPELINES_ENTITY).columns('lastSuccess').where({ name }))) as { lastSuccess?: string | null } | undefined)?.lastSuccess
  const lastSuccess = 'lastSuccess' in row ? row.lastSuccess as string | null : maxStaleness ? await stored() : null
  row.freshness = freshnessOf(maxStaleness, lastSuccess)
  row.maxStaleness = maxStaleness ?? null
  return row
}

/** What the flow and landscape metadata show of one pipeline. */
export async function pipelineFacts(engine: PipelineEngine, name: string): Promise<PipelineFacts> {
  const [row, drift] = await Promise.all([engine.registry.tracker.read(name).catch(() => undefined), latestRunDrift(name)])
  return { pipeline: engine.registry.get(name), hooks: engine.registeredHooks(name), overrides: engine.registry.overrides(name), status: row?.status, drift, lastSuccess: row?.lastSuccess ?? null }
}

/** The overrides an operation changes: the tenant's own ones for a tenant's admin, else the shared ones. */
export function currentOverrides(engine: PipelineEngine, name: string): Overrides {
  const tenant = ownTenant()
  engine.registry.get(name)
  return tenant ? engine.registry.storedTenantOverrides(name, tenant) : engine.registry.overrides(name)
}
