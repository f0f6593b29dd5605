/**
 * DESIGN "Scale-out" and "One run per pipeline, never stuck" with real parts: THREE cds-serve
 * processes of one app (test/fixtures/scale-out/app) on ONE PostgreSQL database (@cap-js/postgres,
 * a fresh database per test, deployed with CAP's own `cds deploy`, dropped afterwards), reading
 * from the real OData provider over HTTP, slowed by the provider's fault control (`delay`).
 *
 * - 30 concurrent POST /pipeline/execute spread over the instances: one run, 29 answers 409.
 * - kill -9 of the instance holding a run: another instance's next execute is rejected (409)
 *   while the dead holder's lease is valid and runs once it expired; the dead run is closed as
 *   failed (LEASE_EXPIRED), the new run resumes, and the target ends complete without duplicates.
 * - a `spawn` schedule on all three instances: one run at a time (no two run windows overlap).
 * - a `queued` schedule (CAP's task queue, one named task per pipeline): one run per tick.
 *
 * The concurrent executes and the spawn schedule share one cluster (the schedule ticks on every
 * instance from its start, beside the executes); the kill -9 takeover has a cluster of its own after
 * it (both seed the provider). The queued schedule, in a cluster of its own (its source is local),
 * runs beside them.
 */
import path from 'node:path'
import { FIXTURES, startApp, type ProviderControl, type RunningApp } from '../helpers/apps'
import { sharedProvider } from '../helpers/shared-provider'
import { basicAuth } from '../helpers/management'
import { createDatabase, deployTo, dropDatabase, pgQuery, postgresEnv, randomDatabaseName } from '../helpers/postgres'
import { sleep, waitFor } from '../helpers/wait'

const APP = path.join(FIXTURES, 'scale-out/app')
const TOTAL = 2000
const BATCH = 50 // batchSize of `books` in the fixture
// leaseDuration (SCALE_OUT_LEASE) where a lease must expire: the kill -9 takeover. Long enough that the
// test's first trigger after the kill comes while the dead holder's lease is still valid, also on a
// loaded machine. Elsewhere the leases are long: a live holder whose renewal (every third of the
// lease) is held up for a whole lease on a loaded machine counts as dead, and its run is taken over.
const LEASE = 8000
const LONG_LEASE = '60000'
const BASE_TIME = Date.parse('2026-01-01T00:00:00.000Z')

interface RunRow {
  ID: string; status: string; trigger: string; mode: string; startTime: string; endTime: string | null; error: string | null
  statistics?: { created: number; updated: number; deleted: number }; statistics_created?: number
}
interface TrackerRow { status: string; currentRun: string | null; leaseUntil: string | null; errorCount: number; lastError: string | null }

let provider: RunningApp & { control: ProviderControl }

beforeAll(async () => {
  provider = await sharedProvider()
})
afterAll(async () => {
  await provider?.stop()
})

/** Three instances of the app on a fresh database. */
interface Cluster {
  database: string
  instances: RunningApp[]
  close(): Promise<void>
}

async function startCluster(label: string, env: Record<string, string> = {}, options: { events?: number } = {}): Promise<Cluster> {
  const database = await createDatabase(randomDatabaseName(`scale_${label}`))
  const instances: RunningApp[] = []
  const close = async () => {
    await Promise.all(instances.map(app => app.stop().catch(() => undefined)))
    await dropDatabase(database)
  }
  try {
    await deployTo(APP, database)
    // the local source of `ticker`, there before the first tick
    if (options.events) await pgQuery(database, `INSERT INTO scale_events (id, label) SELECT i, 'event ' || i FROM generate_series(1, $1) AS i`, [options.events])
    const appEnv = {
      ...postgresEnv(database), SCALE_OUT_LEASE: LONG_LEASE,
      cds_requires_Provider_credentials_url: `${provider.url}/odata/v4/catalog`, ...env,
    }
    const started = await Promise.allSettled([0, 1, 2].map(() => startApp(APP, { env: appEnv, timeout: 60_000 })))
    for (const result of started) if (result.status === 'fulfilled') instances.push(result.value)
    const failed = started.find(r => r.status === 'rejected') as PromiseRejectedResult | undefined
    if (failed) throw failed.reason
  } catch (error) {
    await close()
    throw error
  }
  return { database, instances, close }
}

// /pipeline needs a role: the fixture's mocked admin (PipelineAdmin)
const json = { 'content-type': 'application/json', ...basicAuth('admin') }

async function execute(app: RunningApp, body: Record<string, unknown>): Promise<{ status: number; body: { runId?: string; error?: { code: string; message: string } } }> {
  const response = await fetch(`${app.url}/pipeline/execute`, { method: 'POST', headers: json, body: JSON.stringify(body) })
  return { status: response.status, body: (await response.json().catch(() => ({}))) as never }
}

async function get<T>(app: RunningApp, url: string): Promise<T> {
  const response = await fetch(`${app.url}${url}`, { headers: basicAuth('admin') })
  if (!response.ok) throw new Error(`GET ${url}: ${response.status} ${await response.text()}`)
  return (await response.json()) as T
}

const runsOf = async (app: RunningApp, pipeline: string): Promise<RunRow[]> =>
  (await get<{ value: RunRow[] }>(app, `/pipeline/PipelineRuns?$filter=${encodeURIComponent(`pipeline_name eq '${pipeline}'`)}&$orderby=startTime`)).value
const trackerOf = (app: RunningApp, pipeline: string) => get<TrackerRow>(app, `/pipeline/Pipelines('${pipeline}')`)
const created = (run: RunRow) => run.statistics?.created ?? run.statistics_created ?? 0

/** Rows and distinct keys of the `books` target, straight from PostgreSQL. */
async function bookCounts(database: string): Promise<{ rows: number; distinctIDs: number }> {
  const [row] = await pgQuery<{ rows: string; ids: string }>(database, 'SELECT count(*) AS rows, count(DISTINCT id) AS ids FROM scale_books')
  return { rows: Number(row.rows), distinctIDs: Number(row.ids) }
}

/** Which instance (pid) ran which run: written by the instance on PIPELINE.DONE. */
async function runLog(database: string, pipeline: string): Promise<Array<{ runId: string; instance: string; status: string }>> {
  return pgQuery(database, 'SELECT runid AS "runId", instance, status FROM scale_runlog WHERE pipeline = $1', [pipeline])
}

/** Seeds the provider: 40 groups of 50 rows, each group with its own modifiedAt; every request then takes ≥ `delay` ms. */
async function seedSlowProvider(delay: number): Promise<void> {
  await provider.control.reset()
  await Promise.all(Array.from({ length: TOTAL / BATCH }, (_, i) =>
    provider.control.seed({ from: 1 + i * BATCH, count: BATCH, modifiedAt: new Date(BASE_TIME + i * 1000).toISOString() })))
  await provider.control.faults({ delay })
}

// a run of 2000 rows through three processes on one PostgreSQL takes seconds on a quiet machine and
// far longer on a loaded one: the deadlines only bound a failing test
async function waitIdle(app: RunningApp, pipeline: string, timeout = 150_000): Promise<TrackerRow> {
  return waitFor(async () => {
    const tracker = await trackerOf(app, pipeline)
    return tracker.status !== 'running' && tracker
  }, `'${pipeline}' to finish`, timeout)
}

/** Every pair of finished runs: one ended before the other started; a running run started after all ended. */
function expectNoOverlap(runs: RunRow[]): void {
  const windows = runs.map(r => ({ id: r.ID, start: Date.parse(r.startTime), end: r.endTime ? Date.parse(r.endTime) : Infinity }))
    .sort((a, b) => a.start - b.start)
  expect(windows.filter(w => w.end === Infinity).length, 'at most one run in progress').toBeLessThanOrEqual(1)
  for (let i = 1; i < windows.length; i++) {
    const [previous, next] = [windows[i - 1], windows[i]]
    expect(previous.end, `run ${previous.id} [${runs.find(r => r.ID === previous.id)!.startTime} … ${runs.find(r => r.ID === previous.id)!.endTime}] overlaps run ${next.id} starting ${runs.find(r => r.ID === next.id)!.startTime}`)
      .toBeLessThanOrEqual(next.start)
  }
}

describe('three instances on one PostgreSQL database', { timeout: 300_000 }, () => {
  // the tests that read the provider one after another (each seeds it), the queued schedule (local
  // source, a cluster of its own) beside them
  describe('reading the provider', { concurrent: true }, () => {
    describe('one cluster with a spawn schedule (every 1 s on every instance): concurrent executes meanwhile', { concurrent: false }, () => {
      let cluster: Cluster & { startedAt: number }
      beforeAll(async () => {
        await seedSlowProvider(100)
        const startedAt = Date.now()
        cluster = Object.assign(await startCluster('spawn', { SCALE_OUT_SCHEDULE: 'spawn', SCALE_OUT_EVERY: '1s', SCALE_OUT_WRITE_DELAY: '300' }, { events: 100 }), { startedAt })
      })
      afterAll(async () => {
        await cluster?.close()
      })

      test('30 concurrent POST /pipeline/execute spread over three instances start exactly one run; the other 29 answer 409', async () => {
        const { instances, database } = cluster
        const started = Date.now()
        const answers = await Promise.all(Array.from({ length: 30 }, (_, i) =>
          execute(instances[i % 3], { name: 'books', async: true, trigger: 'external' })))
        const spread = Date.now() - started
        const accepted = answers.filter(a => a.status === 202)
        const rejected = answers.filter(a => a.status === 409)
        console.log(`30 concurrent executes over 3 instances answered within ${spread} ms: ${accepted.length} × 202, ${rejected.length} × 409`)
        expect(accepted, JSON.stringify(answers.filter(a => a.status !== 409))).toHaveLength(1)
        expect(rejected).toHaveLength(29)
        for (const answer of rejected) {
          expect(answer.body.error!.code).toBe('PIPELINE_RUNNING')
          expect(answer.body.error!.message).toMatch(/already running/)
        }
        // the rejections came from all three instances, not only from the winner's
        expect(new Set(answers.map((a, i) => (a.status === 409 ? i % 3 : -1)).filter(i => i >= 0)).size).toBe(3)

        // exactly one history row, the winner's; it completes the data
        const runId = accepted[0].body.runId!
        expect(await runsOf(instances[1], 'books')).toEqual([expect.objectContaining({ ID: runId, trigger: 'external' })])
        // the race is decided: the rest of the run need not be slow
        await provider.control.faults({})
        const tracker = await waitIdle(instances[2], 'books')
        expect(tracker).toMatchObject({ status: 'idle', errorCount: 0, currentRun: null })
        const runs = await runsOf(instances[0], 'books')
        expect(runs).toHaveLength(1)
        expect(runs[0]).toMatchObject({ ID: runId, status: 'idle' })
        expect(created(runs[0])).toBe(TOTAL)
        expect(await bookCounts(database)).toEqual({ rows: TOTAL, distinctIDs: TOTAL })
      })

      test('a spawn schedule on three instances yields one run at a time: no two runs overlap', async () => {
        // `ticker` runs every second on every instance; a run lasts longer than that (4 batches × 300 ms).
        // It has ticked since the cluster started, beside the executes above.
        const { instances, database } = cluster
        const watched = cluster.startedAt
        // until three runs finished and several instances won a tick (a loaded machine needs longer)
        await waitFor(async () => (await runsOf(instances[0], 'ticker')).filter(r => r.endTime).length >= 3 &&
          new Set((await runLog(database, 'ticker')).map(l => l.instance)).size >= 2, 'three finished runs by several instances', 120_000)
        const runs = await runsOf(instances[0], 'ticker')
        const finished = runs.filter(r => r.endTime)
        const log = await runLog(database, 'ticker')
        const instancesUsed = new Set(log.map(l => l.instance))
        console.log(`spawn schedule (every 1 s) on 3 instances, ${Date.now() - watched} ms: ${runs.length} runs, by ${instancesUsed.size} instances, none overlapping`)
        expect(finished.length).toBeGreaterThanOrEqual(3)
        expect(finished.every(r => r.status === 'idle'), JSON.stringify(runs)).toBe(true)
        expect(runs.every(r => r.trigger === 'scheduled')).toBe(true)
        expectNoOverlap(runs)
        // the runs are the instances' own ticks: several instances won a tick
        expect(instancesUsed.size).toBeGreaterThanOrEqual(2)
        // (the instance writes its log row after the run's end: the latest one may still be on its way)
        const ids = new Set(runs.map(r => r.ID))
        expect(log.every(l => ids.has(l.runId))).toBe(true)
        expect(log.length).toBeGreaterThanOrEqual(finished.length - 1)
      })
    })

    // a cluster of its own
    test('kill -9 of the instance holding a run: another instance takes over once the lease expired; the dead run is closed as failed; the target ends complete', { concurrent: false }, async () => {
      await seedSlowProvider(100)
      const cluster = await startCluster('kill', { SCALE_OUT_LEASE: String(LEASE) })
      try {
        const { instances, database } = cluster
        const [holder, other, third] = instances
        const first = await execute(holder, { name: 'books', async: true, trigger: 'external' })
        expect(first.status, JSON.stringify(first.body)).toBe(202)
        const deadRun = first.body.runId!

        // mid-run: some batches committed, far from all
        await waitFor(async () => (await bookCounts(database)).rows >= 2 * BATCH, 'two committed batches', 60_000)
        await holder.kill()
        const killedAt = Date.now()
        expect(holder.child.signalCode).toBe('SIGKILL')
        const atKill = await bookCounts(database)
        expect(atKill.rows).toBeLessThan(TOTAL)
        const stale = await trackerOf(other, 'books')
        expect(stale).toMatchObject({ status: 'running', currentRun: deadRun })
        const leaseUntil = Date.parse(stale.leaseUntil!)
        expect(leaseUntil).toBeLessThanOrEqual(killedAt + LEASE + 100) // renewed for at most one lease duration

        // the next trigger on another instance: 409 while the dead holder's lease is valid, then it runs
        let rejected = 0
        let takeover: { status: number; body: { runId?: string } } | undefined
        let acceptedAt = 0
        // (no bound on how soon after the expiry: a request SENT after it must be accepted, whatever the load)
        const giveUp = Date.now() + 120_000
        while (!takeover) {
          const sentAt = Date.now()
          const answer = await execute(rejected % 2 ? third : other, { name: 'books', async: true, trigger: 'external' })
          if (answer.status === 202) {
            takeover = answer
            acceptedAt = Date.now()
            break
          }
          expect(answer.status, JSON.stringify(answer.body)).toBe(409)
          rejected++
          expect(sentAt, 'rejected although the dead holder\'s lease had expired before the request was sent').toBeLessThanOrEqual(leaseUntil)
          expect(Date.now(), 'no takeover').toBeLessThan(giveUp)
          await sleep(100)
        }
        console.log(`kill -9 of the holder; its lease ran out ${leaseUntil - killedAt} ms after the kill; ` +
          `another instance's execute was accepted ${acceptedAt - killedAt} ms after it (${rejected} × 409 before)`)
        expect(rejected, 'the valid lease of the dead holder rejected the first triggers').toBeGreaterThan(0)
        expect(acceptedAt).toBeGreaterThanOrEqual(leaseUntil)
        // taken over: the rest of the new run need not be slow
        await provider.control.faults({})

        // the dead run is closed as failed with a clear error, counted as a failed run
        const runs = await runsOf(other, 'books')
        const dead = runs.find(r => r.ID === deadRun)!
        expect(dead).toMatchObject({ status: 'failed' })
        expect(dead.endTime).toBeTruthy()
        const error = JSON.parse(dead.error!) as { code: string; message: string }
        expect(error.code).toBe('LEASE_EXPIRED')
        expect(error.message).toContain(deadRun)
        expect(error.message).toMatch(/crashed or was killed/)
        expect(created(dead)).toBe(atKill.rows) // each batch committed with its progress

        // the new run completes the data, resuming after the committed batches: no duplicates
        const tracker = await waitIdle(third, 'books')
        expect(tracker).toMatchObject({ status: 'idle', errorCount: 0, lastError: null, currentRun: null })
        expect(await bookCounts(database)).toEqual({ rows: TOTAL, distinctIDs: TOTAL })
        const final = await runsOf(third, 'books')
        expect(final.map(r => [r.ID, r.status])).toEqual([[deadRun, 'failed'], [takeover.body.runId, 'idle']])
        expect(created(final[1])).toBe(TOTAL - atKill.rows)
        expectNoOverlap(final)
      } finally {
        await cluster.close()
      }
    })
  })

  test.concurrent('a queued schedule (one named task in CAP\'s queue) on three instances yields exactly one run per tick, also after kill -9 of the instance running them', async () => {
    const EVERY = 3000
    const cluster = await startCluster('queued', {
      SCALE_OUT_SCHEDULE: 'queued', SCALE_OUT_EVERY: `${EVERY}ms`, SCALE_OUT_WRITE_DELAY: '100',
      SCALE_OUT_LEASE: '4000', // the victim is killed between two runs: no lease of it blocks the next tick
    }, { events: 100 })
    try {
      const { instances, database } = cluster
      // one task for the pipeline, whichever instances wrote or kept it
      const tasks = await pgQuery<{ task: string }>(database, `SELECT task FROM cds_outbox_messages WHERE task LIKE '%ticker%'`)
      expect(tasks).toHaveLength(1)

      // the first TICKS runs (on a busy machine a tick comes late, so a fixed window would hold fewer)
      const TICKS = 5
      await waitFor(async () => (await runsOf(instances[0], 'ticker'))[0], 'the first queued tick', 3 * EVERY)
      const runs = (await waitFor(async () => { const all = await runsOf(instances[1], 'ticker'); return all.length >= TICKS && all }, `${TICKS} queued ticks`, 4 * TICKS * EVERY)).slice(0, TICKS)
      const starts = runs.map(r => Date.parse(r.startTime))
      const gaps = starts.slice(1).map((start, i) => start - starts[i])
      const log = await runLog(database, 'ticker')
      const byInstance = Object.values(Object.groupBy(log, l => l.instance)).map(l => l!.length)
      console.log(`queued schedule (every ${EVERY} ms) on 3 instances, ${TICKS} ticks: ${runs.length} runs, gaps ${JSON.stringify(gaps)} ms, runs per instance ${JSON.stringify(byInstance)}`)
      expect(runs).toHaveLength(TICKS)
      // one run per tick: consecutive runs one interval apart, never two in one interval; a missed tick
      // would leave a gap of two intervals (late ticks on a busy machine: gaps up to 4,013 ms seen)
      for (const gap of gaps) {
        expect(gap).toBeGreaterThan(EVERY * 0.6)
        expect(gap).toBeLessThan(EVERY * 1.9)
      }
      expect(runs.every(r => r.trigger === 'scheduled')).toBe(true)
      expectNoOverlap(runs)
      // still one task: a tick never turns into a second task or a dead letter
      expect(await pgQuery(database, `SELECT task FROM cds_outbox_messages WHERE task LIKE '%ticker%'`)).toHaveLength(1)

      // kill -9 of the instance running the ticks: a surviving instance goes on with them, one per
      // tick. CAP's queue re-arms a task's timer only in the process that ran it, and its periodic
      // flush in the others comes only every cds.requires.scheduling.flushInterval (default 1 h);
      // the engine's per-instance watchdog flushes the queue once the task is overdue, and the
      // queue's row lock lets one of the survivors run it.
      // (between two ticks, so that no run of the victim holds a lease the next tick would wait for)
      await waitFor(async () => {
        const latest = (await runsOf(instances[1], 'ticker')).at(-1)!
        return latest.endTime && Date.now() - Date.parse(latest.startTime) < EVERY - 700
      }, 'a pause between two ticks', 2 * EVERY)
      const ticking = (await runLog(database, 'ticker')).at(-1)!.instance
      const victim = instances.find(i => `pid ${i.child.pid}` === ticking)!
      await victim.kill()
      const killedAt = Date.now()
      const survivor = instances.find(i => i !== victim)!
      const resumed = await waitFor(async () => {
        const later = (await runsOf(survivor, 'ticker')).filter(r => Date.parse(r.startTime) > killedAt && r.endTime)
        return later.length >= 3 && later
      }, 'three ticks after the kill', 6 * EVERY)
      const resumedStarts = resumed.map(r => Date.parse(r.startTime))
      const resumedGaps = resumedStarts.slice(1).map((start, i) => start - resumedStarts[i])
      const resumedBy = new Set((await runLog(database, 'ticker')).filter(l => resumed.some(r => r.ID === l.runId)).map(l => l.instance))
      console.log(`kill -9 of the ticking instance: the next tick ran ${resumedStarts[0] - killedAt} ms after the kill, by ${[...resumedBy].join(', ')}; gaps ${JSON.stringify(resumedGaps)} ms`)
      expect(resumedBy.has(ticking)).toBe(false)
      for (const gap of resumedGaps) {
        expect(gap).toBeGreaterThan(EVERY * 0.6)
        expect(gap).toBeLessThan(EVERY * 1.6)
      }
      expectNoOverlap(await runsOf(survivor, 'ticker'))
      expect(await pgQuery(database, `SELECT task FROM cds_outbox_messages WHERE task LIKE '%ticker%'`)).toHaveLength(1)
    } finally {
      await cluster.close()
    }
  })
})
