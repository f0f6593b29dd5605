/**
 * One execution over all subscribed tenants (multitenancy fan-out): each tenant's run through the
 * bounded `TenantFanOut`, summed into one outcome that names every tenant's result.
 */
import type { WriteStatistics } from '../../adapters/types.js'
import { PipelineError } from '../../pipeline/errors.js'
import type { TenantFanOut } from '../tenancy/fanout.js'
import { addStatistics } from '../run/statistics.js'
import { describeError } from '../run/support.js'
import type { FanOutOutcome, StartedRun } from './execute-result.js'

/**
 * Runs the pipeline for each tenant (`parallel` at once). Resolves with the summed statistics and
 * each tenant's outcome, or rejects naming the tenants whose run failed; a tenant whose run is
 * queued or active in this process counts as skipped, not failed.
 */
export function runForTenants(fanOut: TenantFanOut, name: string, tenants: string[], runOne: (tenant: string) => Promise<StartedRun>): Promise<FanOutOutcome> {
  const settled = fanOut.run(name, tenants, async tenant => {
    const { runId, done } = await runOne(tenant)
    return { runId, outcome: await done }
  })
  return settled.then(results => {
    const statistics: WriteStatistics = { created: 0, updated: 0, deleted: 0 }
    const runs: FanOutOutcome['runs'] = results.map(({ tenant, skipped, value, error }) => {
      if (value) {
        addStatistics(statistics, value.outcome.statistics ?? undefined)
        return { tenant, runId: value.runId, status: 'completed' as const, statistics: value.outcome.statistics }
      }
      if (skipped || (error as PipelineError)?.code === 'PIPELINE_RUNNING') return { tenant, status: 'skipped' as const, error: skipped ? 'a run is queued or active in this process' : (error as Error).message }
      return { tenant, status: 'failed' as const, error: describeError(error, `pipeline '${name}'`).message }
    })
    const failed = runs.filter(run => run.status === 'failed')
    if (failed.length) {
      throw Object.assign(new PipelineError('SOURCE_FAILED', `Pipeline '${name}' failed for tenant${failed.length > 1 ? 's' : ''} ${failed.map(run => `'${run.tenant}' (${run.error})`).join(', ')}`, { status: 502 }), { runs })
    }
    const outcome: FanOutOutcome = { runId: '', status: 'completed', statistics, runs }
    return outcome
  })
}
