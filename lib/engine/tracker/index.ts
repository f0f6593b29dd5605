/**
 * lib/engine/tracker — the tracker tables: this module (the Tracker); rows.ts holds the rows' shapes,
 * support.ts what its statements share, rendered-update.ts renders its frequent UPDATEs once per
 * statement shape.
 *
 * The tracker tables: registration rows, the run guard (one conditional UPDATE plus a lease
 * renewed by a heartbeat), run history rows and cumulative statistics.
 *
 * Every method runs in its own root transaction, so guard decisions are visible to other
 * triggers and instances at once, whatever transaction the caller is in.
 */
import { PIPELINES_ENTITY, RUNS_ENTITY, RUN_EVENTS_ENTITY } from '../../constants.js'
import { PipelineError } from '../../pipeline/errors.js'
import { toCqn, type Predicate } from '../../adapters/predicate.js'
import { connect, forUpdate, ql, type QueryRunner } from '../../model/ql.js'
import type { WriteStatistics } from '../../adapters/types.js'
import { tenantKey } from '../tenancy/index.js'
import { RenderedUpdates } from './rendered-update.js'
import { chooseWritePath, type WritePath } from '../../adapters/target/write-path.js'
import type { SqlService } from '../../adapters/target/prepared-writer.js'
import { sqlInternals } from '../../cap/index.js'
import { BUSY_ATTEMPTS, GUESS_PAUSE, asTrackerError, cumulative, isBusy, skipped } from './support.js'
import { LEASE_OWNER, truncateText, type PipelineRow, type ReadPosition, type RegistrationRow, type RunProgress, type RunStart } from './rows.js'

export { asTrackerError, assertConnectionAvailable } from './support.js'
export { LEASE_OWNER, truncateText, whitelistTrigger, type PipelineRow, type ReadPosition, type RegistrationRow, type RunProgress, type RunStart } from './rows.js'

export class Tracker {
  private dbPromise?: Promise<QueryRunner>
  /** The read position each pipeline's last successful run in this process left (by tenant and name). */
  private readonly positions = new Map<string, ReadPosition>()
  /** Runs to go before a pipeline whose guess was stale is guessed again (by tenant and name). */
  private readonly guessPaused = new Map<string, number>()
  private readonly updates = new RenderedUpdates()
  private runWritePath?: WritePath

  private db(): Promise<QueryRunner> {
    return (this.dbPromise ??= connect('db'))
  }

  /** Runs `fn` in a fresh root transaction and turns a missing tracker table into a named error. */
  private async tx<T>(fn: (tx: QueryRunner) => Promise<T>): Promise<T> {
    const db = await this.db()
    for (let attempt = 1; ; attempt++) {
      try {
        return await db.tx(fn)
      } catch (error) {
        // SQLite files answer a concurrent writer with "database is locked" at once
        if (isBusy(error) && attempt < BUSY_ATTEMPTS) {
          await new Promise(resolve => setTimeout(resolve, 20 * attempt))
          continue
        }
        throw asTrackerError(error)
      }
    }
  }

  async read(name: string): Promise<PipelineRow | undefined> {
    return this.tx(async tx => (await tx.run(ql.SELECT.one.from(PIPELINES_ENTITY).where({ name }))) as PipelineRow | undefined)
  }

  async readAll(): Promise<PipelineRow[]> {
    return this.tx(async tx => (await tx.run(ql.SELECT.from(PIPELINES_ENTITY))) as PipelineRow[])
  }

  /**
   * Inserts or refreshes the registration; state, watermarks and overrides are kept.
   * Several instances starting together on one database (PostgreSQL) register the same new
   * pipeline at once: all see no row, one INSERT wins, the others fail on the primary key. The
   * row exists then, and the second attempt refreshes it like any restart does.
   */
  async register(row: RegistrationRow, enabledDefault: boolean): Promise<PipelineRow> {
    try {
      return await this.registerOnce(row, enabledDefault)
    } catch (error) {
      if (!(await this.read(row.name).catch(() => undefined))) throw error
      return this.registerOnce(row, enabledDefault)
    }
  }

  private registerOnce(row: RegistrationRow, enabledDefault: boolean): Promise<PipelineRow> {
    return this.tx(async tx => {
      const existing = (await tx.run(ql.SELECT.one.from(PIPELINES_ENTITY).where({ name: row.name }))) as PipelineRow | undefined
      if (existing) {
        await tx.run(ql.UPDATE.entity(PIPELINES_ENTITY).set({ ...row }).where({ name: row.name }))
        return { ...existing, ...row }
      }
      const fresh = { ...row, enabled: enabledDefault, status: 'idle', errorCount: 0, statistics_created: 0, statistics_updated: 0, statistics_deleted: 0 }
      await tx.run(ql.INSERT.into(PIPELINES_ENTITY).entries([fresh]))
      return (await tx.run(ql.SELECT.one.from(PIPELINES_ENTITY).where({ name: row.name }))) as PipelineRow
    })
  }

  async update(name: string, data: Partial<PipelineRow>): Promise<void> {
    await this.tx(tx => tx.run(ql.UPDATE.entity(PIPELINES_ENTITY).set(data).where({ name })))
  }

  /**
   * The guard: one conditional UPDATE that succeeds only while no live run holds the lease.
   * A `running` row whose lease expired belongs to a dead holder: it is taken over and the dead
   * run is closed as failed. With `run`, its history row is inserted in the same transaction.
   * Returns the tracker row as the new holder sees it, or throws PIPELINE_RUNNING.
   *
   * Several instances on one database (PostgreSQL, READ COMMITTED): the row is read with
   * SELECT … FOR UPDATE, so the state the guard decides on (the dead run to close, the watermark
   * the run starts from) is the current one, not a snapshot another instance's run has moved on
   * from meanwhile. SQLite has a single writer and no FOR UPDATE; CAP leaves the clause out there.
   */
  async acquire(name: string, runId: string, leaseDuration: number, run?: RunStart): Promise<{ row: PipelineRow; staleRun: string | null; startTime: string | null }> {
    return this.tx(async tx => {
      const before = (await tx.run(forUpdate(ql.SELECT.one.from(PIPELINES_ENTITY).where({ name })))) as PipelineRow | undefined
      if (!before) throw new PipelineError('UNKNOWN_PIPELINE', `Pipeline '${name}' is not registered in the tracker`, { target: 'name' })
      const now = new Date()
      const free: Predicate = {
        or: [
          { field: 'status', op: 'eq', value: null },
          { field: 'status', op: 'ne', value: 'running' },
          { field: 'leaseUntil', op: 'eq', value: null },
          { field: 'leaseUntil', op: 'lt', value: now.toISOString() },
        ],
      }
      const lease = { status: 'running' as const, currentRun: runId, leaseOwner: LEASE_OWNER, leaseUntil: new Date(now.getTime() + leaseDuration).toISOString() }
      const affected = await tx.run(ql.UPDATE.entity(PIPELINES_ENTITY).set(lease).where(toCqn({ and: [{ field: 'name', op: 'eq', value: name }, free] })))
      if (Number(affected) !== 1) throw new PipelineError('PIPELINE_RUNNING', `Pipeline '${name}' is already running; the trigger was rejected`)
      const staleRun = before.status === 'running' && before.currentRun ? before.currentRun : null
      if (staleRun) await this.closeStaleRun(tx, name, staleRun)
      // the run starts once it holds the guard: taken after the UPDATE (which waits for a
      // previous holder's commit on PostgreSQL), so run windows in PipelineRuns never overlap
      const startTime = run ? new Date(Math.max(Date.now(), Date.parse(run.startTime))).toISOString() : null
      if (run) await this.insertRun(tx, {
        ID: runId, pipeline_name: name, status: 'running', trigger: run.trigger, mode: run.mode, startTime,
        statistics_created: 0, statistics_updated: 0, statistics_deleted: 0, statistics_unchanged: 0, processed: 0,
      })
      const row = staleRun ? ((await tx.run(ql.SELECT.one.from(PIPELINES_ENTITY).where({ name }))) as PipelineRow) : { ...before, ...lease }
      return { row, staleRun, startTime }
    })
  }

  /**
   * The history row of a run, in the guard's transaction (which has begun: the guard read the
   * row first). Written with the database target's prepared statements where they apply
   * (adapters/target/write-path.ts: CAP's rendering, stored as CAP stores it), since CAP's
   * INSERT costs about 2 ms for one row; else with CAP's INSERT.
   */
  private async insertRun(tx: QueryRunner, row: Record<string, unknown>): Promise<void> {
    const path = this.runWritePath ??= chooseWritePath(await this.db(), RUNS_ENTITY)
    const columns = path.writer?.columnsOf([row])
    const sqlTx = sqlInternals<SqlService>(tx)
    if (path.writer && columns && sqlTx.dbc) await path.writer.insert(sqlTx, columns, [row])
    else await tx.run(ql.INSERT.into(RUNS_ENTITY).entries([row]))
  }

  /** Extends the lease; false when another holder took it over (this run lost it). */
  async renew(name: string, runId: string, leaseDuration: number): Promise<boolean> {
    const affected = await this.tx(tx => this.updates.run(tx, PIPELINES_ENTITY, { leaseUntil: new Date(Date.now() + leaseDuration).toISOString() }, { name, currentRun: runId }))
    return affected === 1
  }

  /** Closes a run whose holder died (in the guard's transaction); counts as a failed run of the pipeline. */
  private async closeStaleRun(tx: QueryRunner, name: string, runId: string): Promise<void> {
    const message = `Run ${runId} stopped without finishing (its process crashed or was killed); its lease expired and the next trigger took over`
    await tx.run(ql.UPDATE.entity(RUNS_ENTITY)
      .set({ status: 'failed', failedAt: 'guard', endTime: new Date().toISOString(), error: JSON.stringify({ code: 'LEASE_EXPIRED', message }) })
      .where({ ID: runId, status: 'running' }))
    // its committed batches are real writes: they count in the cumulative statistics
    const stale = (await tx.run(ql.SELECT.one.from(RUNS_ENTITY).columns('statistics_created', 'statistics_updated', 'statistics_deleted', 'statistics_unchanged', 'statistics_skipped').where({ ID: runId }))) as
      Pick<PipelineRow, 'statistics_created' | 'statistics_updated' | 'statistics_deleted' | 'statistics_unchanged' | 'statistics_skipped'> | undefined
    await tx.run(ql.UPDATE.entity(PIPELINES_ENTITY).set({
      errorCount: { '+=': 1 }, lastError: truncateText(message),
      ...cumulative({ created: stale?.statistics_created ?? 0, updated: stale?.statistics_updated ?? 0, deleted: stale?.statistics_deleted ?? 0, unchanged: stale?.statistics_unchanged ?? 0, skipped: stale?.statistics_skipped ?? 0 }),
    }).where({ name }))
  }


  /**
   * Writes a run's running totals and its progress (README "Progress and freshness"); in the
   * caller's transaction when given (per-batch commit). Without statistics, the progress only.
   */
  async progress(runId: string, statistics: WriteStatistics | undefined, tx?: QueryRunner, progress?: RunProgress): Promise<void> {
    const data = {
      ...(statistics ? { statistics_created: statistics.created, statistics_updated: statistics.updated, statistics_deleted: statistics.deleted, statistics_unchanged: statistics.unchanged ?? 0, ...skipped(statistics) } : {}),
      ...progress,
    }
    if (tx) await this.updates.run(tx, RUNS_ENTITY, data, { ID: runId })
    else await this.tx(own => this.updates.run(own, RUNS_ENTITY, data, { ID: runId }))
  }

  /** Records the watermark reached by the committed batches, in the batch's transaction. */
  async checkpoint(name: string, runId: string, checkpoint: string, tx: QueryRunner): Promise<void> {
    await this.updates.run(tx, PIPELINES_ENTITY, { checkpoint }, { name, currentRun: runId })
  }

  /**
   * Where the pipeline's last successful run in this process left its read position: a guess
   * for the next run's read-ahead (another instance, a flush or a failed run may have moved it).
   */
  lastPosition(name: string): ReadPosition | undefined {
    const key = tenantKey(name)
    const paused = this.guessPaused.get(key)
    if (paused === undefined) return this.positions.get(key)
    if (paused <= 1) this.guessPaused.delete(key)
    else this.guessPaused.set(key, paused - 1)
    return undefined
  }

  /**
   * The guess was stale: another instance (or a flush, or a change of the tracker row) moved the
   * pipeline on since. Where runs of a pipeline alternate between instances it would mostly be
   * stale, each time costing the source a request: the next runs here go without guessing.
   */
  positionMissed(name: string): void {
    this.guessPaused.set(tenantKey(name), GUESS_PAUSE)
  }

  async finishSuccess(name: string, runId: string, result: { lastSync: string | null; lastKey: string | null; statistics: WriteStatistics; keepCheckpoint?: boolean; progress?: RunProgress; replay?: boolean }): Promise<boolean> {
    const { statistics } = result
    const stillOwned = await this.tx(async tx => {
      const endTime = new Date().toISOString()
      await this.updates.run(tx, RUNS_ENTITY, {
        status: 'idle', endTime,
        statistics_created: statistics.created, statistics_updated: statistics.updated, statistics_deleted: statistics.deleted, statistics_unchanged: statistics.unchanged ?? 0, ...skipped(statistics),
        ...result.progress,
      }, { ID: runId })
      // lastSuccess: when the pipeline last read its source successfully (freshness), unlike lastSync,
      // the data's watermark; a replay of rejects reads no source and leaves it
      const affected = await this.updates.run(tx, PIPELINES_ENTITY, {
        status: 'idle', ...(result.replay ? {} : { lastSuccess: endTime }), lastSync: result.lastSync, lastKey: result.lastKey, errorCount: 0, lastError: null, ...(result.keepCheckpoint ? {} : { checkpoint: null }),
        ...cumulative(statistics),
        leaseOwner: null, leaseUntil: null, currentRun: null,
      }, { name, currentRun: runId })
      return affected === 1
    })
    if (stillOwned && !result.keepCheckpoint) this.positions.set(tenantKey(name), { lastSync: result.lastSync, lastKey: result.lastKey, checkpoint: null })
    else this.positions.delete(tenantKey(name))
    return stillOwned
  }

  async finishFailure(name: string, runId: string, error: { code?: string; message: string; status?: number }, statistics: WriteStatistics, progress?: RunProgress, failedAt?: string): Promise<void> {
    this.positions.delete(tenantKey(name))
    await this.tx(async tx => {
      await this.updates.run(tx, RUNS_ENTITY, {
        status: 'failed', endTime: new Date().toISOString(), error: JSON.stringify(error), ...(failedAt ? { failedAt } : {}),
        statistics_created: statistics.created, statistics_updated: statistics.updated, statistics_deleted: statistics.deleted, statistics_unchanged: statistics.unchanged ?? 0, ...skipped(statistics),
        ...progress,
      }, { ID: runId })
      // batches committed before the failure stay written and count (a rolled-back run reports zeros)
      await this.updates.run(tx, PIPELINES_ENTITY, {
        status: 'failed', errorCount: { '+=': 1 }, lastError: truncateText(error.message), ...cumulative(statistics),
        leaseOwner: null, leaseUntil: null, currentRun: null,
      }, { name, currentRun: runId })
    })
  }

  /** A run's event log (lib/runs), in one INSERT. */
  async recordEvents(rows: Array<Record<string, unknown>>): Promise<void> {
    if (rows.length) await this.tx(tx => tx.run(ql.INSERT.into(RUN_EVENTS_ENTITY).entries(rows)))
  }

  /** Releases a lease held for a non-run operation (flush). */
  async release(name: string, runId: string, data: Partial<PipelineRow>): Promise<void> {
    await this.tx(tx => tx.run(ql.UPDATE.entity(PIPELINES_ENTITY)
      .set({ ...data, leaseOwner: null, leaseUntil: null, currentRun: null })
      .where({ name, currentRun: runId })))
  }
}
