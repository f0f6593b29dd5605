/**
 * `PipelineRuns(<ID>)/retry` (README "Run events"): what a retry of a failed run starts — the
 * same pipeline in the same mode (trigger `manual`: an operator started it). Only failed runs.
 */
import { RUNS_ENTITY, type ReplicationMode } from '../constants.js'
import { PipelineError } from '../pipeline/errors.js'
import { connect, ql } from '../model/ql.js'

export async function failedRun(key: unknown): Promise<{ name: string; mode: ReplicationMode }> {
  const ID = typeof key === 'object' && key !== null ? (key as { ID?: unknown }).ID : key
  if (typeof ID !== 'string' || !ID) throw new PipelineError('INVALID_PARAMETER', 'ID: the run to retry is missing', { target: 'ID' })
  const db = await connect('db')
  // its own transaction: the request's would take SQLite's only connection, which the run needs
  const run = (await db.tx(tx => tx.run(ql.SELECT.one.from(RUNS_ENTITY).columns('status', 'mode', 'pipeline_name').where({ ID })))) as { status?: string; mode?: ReplicationMode; pipeline_name?: string } | undefined
  if (!run?.pipeline_name) throw new PipelineError('INVALID_PARAMETER', `Run ${ID} does not exist`, { target: 'ID', status: 404 })
  if (run.status !== 'failed') throw new PipelineError('INVALID_PARAMETER', `Run ${ID} did not fail (status '${run.status}'); only failed runs are retried — start the pipeline instead`, { target: 'ID', status: 409 })
  return { name: run.pipeline_name, mode: run.mode === 'full' ? 'full' : 'delta' }
}
