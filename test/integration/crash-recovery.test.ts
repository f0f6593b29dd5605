/**
 * DESIGN "One run per pipeline, never stuck" and "Transactions", end to end with real processes:
 * a consumer CAP server (child process, SQLite file) replicates from the real provider, is
 * killed with SIGKILL mid-run, and is restarted on the same database file.
 *
 * Three delta pipelines crash together: `books` (OData, timestamp delta, the default), `booksByKey`
 * (OData, key delta) and `local` (CQN source on a local table whose first delta run starts with the
 * rows that have no watermark value, and is killed while reading them). Afterwards: the stale run is closed as failed (LEASE_EXPIRED), a new trigger
 * proceeds once the lease expired, the new run resumes from the checkpoint committed with the
 * last batch, and the target ends complete without duplicates.
 */
import { execFile } from 'node:child_process'
import { createRequire } from 'node:module'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { FIXTURES, startApp, type ProviderControl, type RunningApp } from '../helpers/apps'
import { sharedProvider } from '../helpers/shared-provider'
import { deployTo, postgresEnv, suiteDatabase } from '../helpers/postgres'

const require = createRequire(import.meta.url)
const APP = path.join(FIXTURES, 'crash-consumer')
const TOTAL = 2000
const BATCH = 50 // batchSize of both pipelines in the fixture
const LEASE = 1500 // leaseDuration of both pipelines in the fixture
const REMOTE = ['books', 'booksByKey'] as const
const PIPELINES = [...REMOTE, 'local'] as const
type Pipeline = (typeof PIPELINES)[number]
const BASE_TIME = Date.parse('2026-01-01T00:00:00.000Z')
/** crash.LocalBooks: rows 1..LOCAL_NULLS without modifiedAt, then LOCAL_STAMPED rows with an old modifiedAt. */
const LOCAL_NULLS = 1000
const LOCAL_STAMPED = 1000
const LOCAL_TIME = '2020-01-01T00:00:00.000Z'

interface TrackerRow {
  status: string; currentRun: string | null; leaseOwner: string | null; leaseUntil: string | null
  errorCount: number; lastError: string | null; checkpoint: string | null; lastSync: string | null; lastKey: string | null
}
interface RunRow {
  ID: string; status: string; trigger: string; mode: string; startTime: string; endTime: string | null
  error: string | null; failedAt: string | null; created: number; updated: number; deleted: number
}

const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms))

/** The crash-consumer's test service. */
function client(app: RunningApp) {
  const get = async <T>(fn: string, pipeline: Pipeline): Promise<T> => {
    const response = await fetch(`${app.url}/crash/${fn}(pipeline='${pipeline}')`)
    if (!response.ok) throw new Error(`${fn}(${pipeline}): ${response.status} ${await response.text()}`)
    const { '@odata.context': _context, ...body } = (await response.json()) as Record<string, unknown> & { value?: T }
    return (Array.isArray(body.value) ? body.value : body) as T
  }
  return {
    async start(pipeline: Pipeline): Promise<{ status: number; body: { runId?: string; error?: { code: string; message: string } } }> {
      const response = await fetch(`${app.url}/crash/start`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ pipeline }) })
      return { status: response.status, body: (await response.json()) as never }
    },
    tracker: (pipeline: Pipeline) => get<TrackerRow>('tracker', pipeline),
    counts: (pipeline: Pipeline) => get<{ rows: number; distinctIDs: number }>('counts', pipeline),
    runs: (pipeline: Pipeline) => get<RunRow[]>('runs', pipeline),
    /** How long each batch of `local` takes to write (the fixture starts with 150 ms). */
    async writeDelay(ms: number): Promise<void> {
      const response = await fetch(`${app.url}/crash/writeDelay`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ms }) })
      if (!response.ok) throw new Error(`writeDelay: ${response.status} ${await response.text()}`)
    },
    async seedLocal(data: { nulls: number; stamped: number; modifiedAt: string }): Promise<void> {
      const response = await fetch(`${app.url}/crash/seedLocal`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(data) })
      if (!response.ok) throw new Error(`seedLocal: ${response.status} ${await response.text()}`)
    },
  }
}

/** Provider request URLs (decoded) of one pipeline: `books` orders by modifiedAt, `booksByKey` by ID. */
function urlsOf(pipeline: (typeof REMOTE)[number], urls: string[]): string[] {
  const reads = urls.filter(u => u.includes('/Books?'))
  return reads.filter(u => (pipeline === 'books' ? u.includes('$orderby=modifiedAt asc') : u.includes('$orderby=ID asc')))
}

describe('crash recovery: kill -9 of a consumer mid-run', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'crash-recovery-'))
  const database = path.join(dir, 'consumer.sqlite')
  let provider: RunningApp & { control: ProviderControl }
  let env: Record<string, string>
  let first: RunningApp | undefined
  let second: RunningApp | undefined
  const firstRun = {} as Record<Pipeline, string>
  const secondRun = {} as Record<Pipeline, string>
  let killedAt = 0
  /** When the restarted instance served, and the latest lease the killed instance had written. */
  let restartedAt = 0
  let staleLeaseUntil = 0
  let requestsBeforeRestart = 0
  /** State committed by the killed instance, read after restart before any trigger. */
  const committed = {} as Record<Pipeline, { rows: number; checkpoint: { runId: string; lastSync: string | null; lastKey: string | null } }>

  /** In the `postgres` project: the database of this file (test/helpers/postgres-setup.ts) instead of the SQLite file. */
  const postgres = suiteDatabase()

  beforeAll(async () => {
    const deploy = postgres ? deployTo(APP, postgres) : promisify(execFile)(process.execPath, [require.resolve('@sap/cds-dk/bin/cds.js'), 'deploy', '--to', `sqlite:${database}`], {
      cwd: APP, env: { ...process.env, NODE_ENV: 'test', CDS_ENV: '' },
    })
    deploy.catch(() => undefined) // awaited below; avoids an unhandled rejection while the provider starts
    provider = await sharedProvider()
    // 40 groups of 50 rows (one batch each), each group with its own modifiedAt, IDs ascending with time
    await Promise.all(Array.from({ length: TOTAL / BATCH }, (_, i) =>
      provider.control.seed({ from: 1 + i * BATCH, count: BATCH, modifiedAt: new Date(BASE_TIME + i * 1000).toISOString() })))
    await provider.control.faults({ delay: 100 }) // every provider request takes ≥ 100 ms: a run lasts several seconds
    await deploy
    env = { ...(postgres ? postgresEnv(postgres) : { cds_requires_db_credentials_url: database }), cds_requires_Provider_credentials_url: `${provider.url}/odata/v4/catalog` }
  })

  afterAll(async () => {
    await first?.kill().catch(() => undefined)
    await second?.stop().catch(() => undefined)
    await provider?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  test('while the first instance runs, a second trigger is rejected with 409 PIPELINE_RUNNING', async () => {
    first = await startApp(APP, { env })
    const api = client(first)
    await api.seedLocal({ nulls: LOCAL_NULLS, stamped: LOCAL_STAMPED, modifiedAt: LOCAL_TIME })
    for (const pipeline of PIPELINES) {
      const started = await api.start(pipeline)
      expect(started.status, JSON.stringify(started.body)).toBe(200)
      firstRun[pipeline] = started.body.runId!
      expect(firstRun[pipeline]).toMatch(/^[0-9a-f-]{36}$/)
    }
    for (const pipeline of PIPELINES) {
      const rejected = await api.start(pipeline)
      expect(rejected.status).toBe(409)
      expect(rejected.body.error).toMatchObject({ code: 'PIPELINE_RUNNING' })
      expect(rejected.body.error!.message).toMatch(/already running/)
      expect(await api.tracker(pipeline)).toMatchObject({ status: 'running', currentRun: firstRun[pipeline] })
    }
    // exactly one run row per pipeline: the rejected trigger left no trace
    for (const pipeline of PIPELINES) expect(await api.runs(pipeline)).toHaveLength(1)
  })

  test('SIGKILL mid-run leaves the committed batches, their progress and checkpoint, and a stale running row', async () => {
    const api = client(first!)
    const deadline = Date.now() + 15_000
    for (;;) {
      const counts = await Promise.all(PIPELINES.map(p => api.counts(p)))
      if (counts.every(c => c.rows >= 2 * BATCH)) break
      if (Date.now() > deadline) throw new Error(`no progress before the kill: ${JSON.stringify(counts)}\n${first!.output()}`)
      await sleep(50)
    }
    await first!.kill()
    killedAt = Date.now()
    expect(first!.child.signalCode).toBe('SIGKILL')
    first = undefined
    requestsBeforeRestart = (await provider.control.stats()).requests

    second = await startApp(APP, { env })
    restartedAt = Date.now()
    const api2 = client(second)
    for (const pipeline of PIPELINES) {
      const tracker = await api2.tracker(pipeline)
      const { rows, distinctIDs } = await api2.counts(pipeline)
      // killed mid-run: partial data, the row still claims a run (nobody could clean up)
      expect(rows).toBeGreaterThanOrEqual(2 * BATCH)
      expect(rows).toBeLessThan(pipeline === 'local' ? LOCAL_NULLS : TOTAL) // `local`: killed while reading the rows without modifiedAt
      expect(rows % BATCH, 'only whole batches are committed').toBe(0)
      expect(distinctIDs).toBe(rows)
      expect(tracker).toMatchObject({ status: 'running', currentRun: firstRun[pipeline] })
      expect(Date.parse(tracker.leaseUntil!)).toBeLessThanOrEqual(killedAt + LEASE + 100) // renewed for at most one lease duration
      staleLeaseUntil = Math.max(staleLeaseUntil, Date.parse(tracker.leaseUntil!))
      expect(tracker.checkpoint).toBeTruthy()
      const checkpoint = JSON.parse(tracker.checkpoint!) as { runId: string; lastSync: string | null; lastKey: string | null }
      expect(checkpoint.runId).toBe(firstRun[pipeline])
      committed[pipeline] = { rows, checkpoint }
      // each batch committed together with its progress: the run row's statistics equal the rows in the target
      const [stale] = await api2.runs(pipeline)
      expect(stale).toMatchObject({ ID: firstRun[pipeline], status: 'running', endTime: null, created: rows, updated: 0 })
      // the checkpoint names the last committed row
      if (pipeline === 'booksByKey') expect(checkpoint.lastKey).toBe(String(rows))
      else if (pipeline === 'books') expect(Date.parse(checkpoint.lastSync!)).toBe(BASE_TIME + (rows / BATCH - 1) * 1000)
      // no modifiedAt was read yet: the checkpoint must not claim a watermark beyond the unread rows (e.g. the run's clock)
      else if (checkpoint.lastSync !== null) expect(Date.parse(checkpoint.lastSync), `checkpoint ${checkpoint.lastSync}`).toBeLessThanOrEqual(Date.parse(LOCAL_TIME))
    }
  })

  test('after restart the next trigger takes over once the lease expired, and the stale run is closed as failed', async () => {
    const api = client(second!)
    // not blocked forever: accepted at the latest shortly after the dead holder's lease ran out (or the restart, if later)
    const blockedUntil = Math.max(restartedAt, staleLeaseUntil) + 5000
    const rejected = { books: 0, booksByKey: 0, local: 0 } as Record<Pipeline, number>
    const acceptedAt = {} as Record<Pipeline, number>
    await Promise.all(PIPELINES.map(async pipeline => {
      for (;;) {
        const started = await api.start(pipeline)
        if (started.status === 200) {
          secondRun[pipeline] = started.body.runId!
          acceptedAt[pipeline] = Date.now() - killedAt
          return
        }
        // only a still valid lease may reject the trigger, and only with 409
        expect(started.status, JSON.stringify(started.body)).toBe(409)
        expect(started.body.error!.code).toBe('PIPELINE_RUNNING')
        rejected[pipeline]++
        if (Date.now() > blockedUntil) return
        await sleep(100)
      }
    }))
    console.log(`restart served ${restartedAt - killedAt} ms after the kill, the stale leases expired ${staleLeaseUntil - killedAt} ms after it; ` +
      `new runs accepted after (ms): ${JSON.stringify(acceptedAt)}; 409 answers before: ${JSON.stringify(rejected)}`)
    for (const pipeline of PIPELINES)
      expect(secondRun[pipeline], `'${pipeline}' still blocked ${blockedUntil - killedAt} ms after the kill`).toBeDefined()

    for (const pipeline of PIPELINES) {
      expect(secondRun[pipeline]).not.toBe(firstRun[pipeline])
      const runs = await api.runs(pipeline)
      const stale = runs.find(r => r.ID === firstRun[pipeline])!
      expect(stale.status).toBe('failed')
      expect(stale.endTime).toBeTruthy()
      const error = JSON.parse(stale.error!) as { code: string; message: string }
      expect(error.code).toBe('LEASE_EXPIRED')
      expect(error.message).toContain(firstRun[pipeline])
      expect(error.message).toMatch(/crashed or was killed/)
      expect(stale.failedAt).toBe('guard') // docs/reference/management-api.md "Run events": its lease expired
      // the statistics the killed run committed stay on its row
      expect(stale).toMatchObject({ created: committed[pipeline].rows, updated: 0 })
      const current = runs.find(r => r.ID === secondRun[pipeline])!
      expect(current).toMatchObject({ status: 'running', trigger: 'external', mode: 'delta' })
      // the stale run counts as a failed run while the new one is under way
      const tracker = await api.tracker(pipeline)
      expect(tracker).toMatchObject({ status: 'running', currentRun: secondRun[pipeline], errorCount: 1 })
      expect(tracker.lastError).toMatch(/crashed or was killed/)
      expect(tracker.leaseOwner).toMatch(new RegExp(`:${second!.child.pid}:`))
    }
  })

  test('the resumed run completes the data without duplicates and leaves the tracker idle', async () => {
    const api = client(second!)
    // the new runs are under way (above): the rest of them need not be slow
    await provider.control.faults({})
    await api.writeDelay(0)
    const deadline = Date.now() + 20_000
    for (const pipeline of PIPELINES) {
      while ((await api.tracker(pipeline)).status === 'running') {
        if (Date.now() > deadline) throw new Error(`'${pipeline}' did not finish:\n${second!.output()}`)
        await sleep(100)
      }
    }
    for (const pipeline of PIPELINES) {
      // LOCAL_NULLS + LOCAL_STAMPED == TOTAL as well
      expect(await api.counts(pipeline), `rows of '${pipeline}'`).toEqual({ rows: TOTAL, distinctIDs: TOTAL })
      const tracker = await api.tracker(pipeline)
      // errorCount counts failed runs since the last successful one (SPEC): the stale run was counted (1, above), the success resets it
      expect(tracker).toMatchObject({ status: 'idle', errorCount: 0, lastError: null, checkpoint: null, currentRun: null, leaseOwner: null, leaseUntil: null })
      if (pipeline === 'booksByKey') expect(tracker.lastKey).toBe(String(TOTAL))
      else if (pipeline === 'books') expect(Date.parse(tracker.lastSync!)).toBe(BASE_TIME + (TOTAL / BATCH - 1) * 1000)
      else expect(Date.parse(tracker.lastSync!)).toBe(Date.parse(LOCAL_TIME))
      const runs = await api.runs(pipeline)
      expect(runs.map(r => [r.ID, r.status])).toEqual([[firstRun[pipeline], 'failed'], [secondRun[pipeline], 'idle']])
      const resumed = runs[1]
      // every row the killed run did not commit is created now; nothing is deleted
      expect(resumed.created).toBe(TOTAL - committed[pipeline].rows)
      expect(resumed.deleted).toBe(0)
      // committed rows re-read by the resumed run (timestamp delta: the group sharing the checkpoint's timestamp;
      // no-watermark segment: read again) are unchanged, so they are neither rewritten nor counted as updates
      expect(resumed.updated).toBe(0)
    }
  })

  test('the resumed run reads from the checkpoint: committed pages are not fetched again', async () => {
    const { requests, urls } = await provider.control.stats()
    const after = requests - requestsBeforeRestart
    expect(after).toBeLessThanOrEqual(urls.length) // all requests since the restart are in the window kept by the provider
    const resumedUrls = urls.slice(urls.length - after)
    for (const pipeline of REMOTE) {
      const reads = urlsOf(pipeline, resumedUrls)
      const { checkpoint, rows } = committed[pipeline]
      // one request per remaining page (+1 for the tie group of timestamp delta), not one per page of the table
      const remainingPages = Math.ceil((TOTAL - rows) / BATCH)
      expect(reads.length).toBeGreaterThanOrEqual(remainingPages)
      expect(reads.length).toBeLessThanOrEqual(remainingPages + 2)
      const segment = pipeline === 'booksByKey'
        ? new RegExp(`\\$filter=.*\\bID gt ${checkpoint.lastKey}\\b`)
        : new RegExp(`\\$filter=.*\\bmodifiedAt ge ${checkpoint.lastSync!.replace(/\./g, '\\.')}`)
      // the first request starts at the checkpoint, and every later page after a row at or above it
      expect(reads[0], `first resumed request of '${pipeline}'`).toMatch(segment)
      const lowerBound = pipeline === 'booksByKey' ? /\bID gt (\d+)/ : /\bmodifiedAt ge (\S+?)[)\s&]/
      for (const url of reads) {
        const bound = lowerBound.exec(url)?.[1]
        expect(bound, url).toBeDefined()
        if (pipeline === 'booksByKey') expect(Number(bound)).toBeGreaterThanOrEqual(Number(checkpoint.lastKey))
        else expect(Date.parse(bound!)).toBeGreaterThanOrEqual(Date.parse(checkpoint.lastSync!))
      }
      // no request re-runs the first run's initial segment (rows without a watermark value) or reads unfiltered
      for (const url of reads) expect(url).not.toMatch(/modifiedAt eq null/)
    }
  })
})
