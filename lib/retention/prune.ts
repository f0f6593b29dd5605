/**
 * Run retention (README "Run retention"): after a run ended, the runs of its pipeline beyond
 * `retention.runs` are deleted through CAP, so their compositions (events, rejects) go with them.
 * Never deleted: a running run, the pipeline's last successful and last failed run, and a run with
 * open rejects (records awaiting replay). Deletes go by key in bounded chunks, each in its own
 * short transaction; several instances pruning at once delete the same keys, which is harmless.
 * Runs in the context of the run that ended, so in its tenant's database.
 */
import cds from '@sap/cds'
import { LOGGER, RUNS_ENTITY } from '../constants.js'
import { connect, ql, type QueryRunner } from '../model/ql.js'
import { contextTenant, tenantKey } from '../engine/tenancy/index.js'
import { trackTenantWork } from '../engine/tenancy/tenant-work.js'
import { detached } from '../engine/registry/background.js'
import { runRetentionSettings, type RunRetentionSettings } from './settings.js'

const LOG = cds.log(LOGGER.retention)

/** Runs deleted per statement (each with up to `runEvents.max` events). */
export const PRUNE_CHUNK = 50
/** Chunks per prune: a backlog (retention switched on for a long history) goes over several prunes. */
const MAX_CHUNKS = 20

/** When this process last pruned a pipeline (by tenant and name), and the prunes underway. */
const lastPruned = new Map<string, number>()
const underway = new Set<string>()
/** The app shuts down: no new prunes or chunks (its database may already be closed). */
let stopped = false

/** Called once the app shuts down. */
export function stopPruning(): void {
  stopped = true
}

/**
 * Prunes the pipeline's runs unless this process did so within `retention.runs.interval`;
 * never throws (a failure is logged, the run it follows is not affected).
 */
export function pruneAfterRun(pipeline: string): Promise<void> {
  let settings: RunRetentionSettings | undefined
  try {
    settings = runRetentionSettings()
  } catch (error) {
    LOG.warn(`runs of pipeline '${pipeline}' not pruned: ${(error as Error).message}`)
    return Promise.resolve()
  }
  if (stopped || !settings || (settings.maxAge === undefined && settings.maxCount === undefined)) return Promise.resolve()
  const key = tenantKey(pipeline)
  const last = lastPruned.get(key)
  if (underway.has(key) || (last !== undefined && Date.now() - last < settings.interval)) return Promise.resolve()
  lastPruned.set(key, Date.now())
  underway.add(key)
  // in a context of its own (the run's tenant, no transaction of the caller's)
  const work = detached(() => pruneRuns(pipeline, settings!), contextTenant()).then(
    deleted => { if (deleted) LOG.info(`pipeline '${pipeline}': ${deleted} run${deleted === 1 ? '' : 's'} pruned (retention.runs)`) },
    error => {
      // the database's message stays out of the log (it may quote the statement); the next prune tries again
      if (stopped) LOG.debug(`runs of pipeline '${pipeline}' not pruned: the app shuts down`)
      else LOG.warn(`runs of pipeline '${pipeline}' not pruned: ${(error as { code?: string }).code ?? (error as Error).name}; the next prune after a run tries again`)
    },
  ).finally(() => underway.delete(key))
  // an unsubscribe waits for it before the tenant's database goes
  return trackTenantWork(contextTenant(), work)
}

/** Deletes the pipeline's runs beyond the settings; returns how many. */
export async function pruneRuns(pipeline: string, settings: Pick<RunRetentionSettings, 'maxAge' | 'maxCount'>): Promise<number> {
  const db = await connect('db')
  const { keep, boundary } = await db.tx(async tx => ({ keep: await lastOutcomes(tx, pipeline), boundary: settings.maxCount ? await countBoundary(tx, pipeline, settings.maxCount) : undefined }))
  const cutoff = settings.maxAge ? new Date(Date.now() - settings.maxAge).toISOString() : undefined
  if (!cutoff && !boundary) return 0
  let deleted = 0
  for (let chunk = 0; chunk < MAX_CHUNKS && !stopped; chunk++) {
    const { found, removed } = await db.tx(async tx => {
      const rows = (await tx.run(candidates(pipeline, keep, cutoff, boundary))) as Array<{ ID: string }>
      if (!rows.length) return { found: 0, removed: 0 }
      // by key; a run that is running again is impossible (ended runs stay ended), checked anyway
      const removed = Number(await tx.run(ql.DELETE.from(RUNS_ENTITY).where({ ID: { in: rows.map(r => r.ID) }, status: { '!=': 'running' } })))
      return { found: rows.length, removed }
    })
    deleted += removed
    if (found < PRUNE_CHUNK) break
  }
  return deleted
}

/** The IDs of the pipeline's last successful and last failed run: always kept. */
async function lastOutcomes(tx: QueryRunner, pipeline: string): Promise<string[]> {
  const last = async (status: string) => ((await tx.run(ql.SELECT.one.from(RUNS_ENTITY).columns('ID').where({ pipeline_name: pipeline, status }).orderBy('startTime desc', 'ID desc'))) as { ID: string } | undefined)?.ID
  return [await last('idle'), await last('failed')].filter((id): id is string => Boolean(id))
}

/** The newest run beyond the newest `maxCount` (by start, then ID): it and older ones are beyond the count. */
async function countBoundary(tx: QueryRunner, pipeline: string, maxCount: number): Promise<{ startTime: string; ID: string } | undefined> {
  return (await tx.run(ql.SELECT.one.from(RUNS_ENTITY).columns('ID', 'startTime').where({ pipeline_name: pipeline }).orderBy('startTime desc', 'ID desc').limit(1, maxCount))) as { startTime: string; ID: string } | undefined
}

/** The oldest chunk of runs to delete: beyond the age or the count, and none that must stay (CQN: filters by path). */
function candidates(pipeline: string, keep: string[], cutoff: string | undefined, boundary: { startTime: string; ID: string } | undefined): unknown {
  const ref = (name: string) => ({ ref: [name] })
  const val = (value: unknown) => ({ val: value })
  const beyond: unknown[] = []
  if (cutoff) beyond.push(ref('startTime'), '<', val(cutoff))
  if (boundary) {
    if (beyond.length) beyond.push('or')
    beyond.push(ref('startTime'), '<', val(boundary.startTime), 'or', { xpr: [ref('startTime'), '=', val(boundary.startTime), 'and', ref('ID'), '<=', val(boundary.ID)] })
  }
  const where: unknown[] = [ref('pipeline_name'), '=', val(pipeline), 'and', ref('status'), '!=', val('running')]
  if (keep.length) where.push('and', 'not', { xpr: [ref('ID'), 'in', { list: keep.map(val) }] })
  where.push('and', 'not', 'exists', { ref: [{ id: 'rejects', where: [ref('status'), '=', val('open')] }] }, 'and', { xpr: beyond })
  return ql.SELECT.from(RUNS_ENTITY).columns('ID').where(where).orderBy('startTime', 'ID').limit(PRUNE_CHUNK)
}
