/**
 * kill -9 in the middle of a partitioned full refresh (issue 24), end to end with real processes:
 * the crash-consumer app (child process, SQLite file) copies the real provider with `parallel: 4`
 * in one transaction. Killed while its key ranges are being read, the target keeps the previous
 * copy; after the restart the next trigger takes over once the lease expired and the new run
 * leaves every row exactly once, as the provider has it now. The same for a partitioned delta,
 * which commits per batch: its checkpoint never passes a row a lower range has not written.
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
import { waitFor } from '../helpers/wait'

const require = createRequire(import.meta.url)
const APP = path.join(FIXTURES, 'crash-consumer')
const TOTAL = 2000
const T0 = '2026-01-01T00:00:00.000Z'

function client(app: RunningApp, pipeline = 'booksFull') {
  const get = async <T>(fn: string): Promise<T> => {
    const url = `${app.url}/crash/${fn}(pipeline='${pipeline}')`
    // a read is sent again once when its connection closes unanswered: right after a kill -9 and a
    // restart, a pooled connection can still point at the killed process (seen on a loaded machine)
    const response = await fetch(url).catch((error: { cause?: { code?: string } }) => {
      if (error.cause?.code !== 'UND_ERR_SOCKET') throw error
      return fetch(url)
    })
    if (!response.ok) throw new Error(`${fn}: ${response.status} ${await response.text()}`)
    const { '@odata.context': _context, ...body } = (await response.json()) as Record<string, unknown> & { value?: T }
    return (Array.isArray(body.value) ? body.value : body) as T
  }
  return {
    start: async () => {
      const response = await fetch(`${app.url}/crash/start`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ pipeline }) })
      return { status: response.status, body: (await response.json()) as { runId?: string } }
    },
    tracker: () => get<{ status: string; currentRun: string | null; checkpoint: string | null; lastSync: string | null }>('tracker'),
    counts: async () => ({ ...(await get<{ rows: number; distinctIDs: number }>('counts')), rewritten: (await get<{ value: number }>('rewritten')).value }),
    runs: () => get<Array<{ ID: string; status: string; created: number; updated: number; deleted: number; error: string | null }>>('runs'),
  }
}

describe('crash recovery of partitioned reads', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'crash-partitioned-'))
  const database = path.join(dir, 'consumer.sqlite')
  const postgres = suiteDatabase()
  let provider: RunningApp & { control: ProviderControl }
  let env: Record<string, string>
  let app: RunningApp | undefined

  beforeAll(async () => {
    const deploy = postgres ? deployTo(APP, postgres) : promisify(execFile)(process.execPath, [require.resolve('@sap/cds-dk/bin/cds.js'), 'deploy', '--to', `sqlite:${database}`], {
      cwd: APP, env: { ...process.env, NODE_ENV: 'test', CDS_ENV: '' },
    })
    deploy.catch(() => undefined)
    provider = await sharedProvider()
    await provider.control.seed({ from: 1, count: TOTAL, modifiedAt: T0 })
    await deploy
    env = { ...(postgres ? postgresEnv(postgres) : { cds_requires_db_credentials_url: database }), cds_requires_Provider_credentials_url: `${provider.url}/odata/v4/catalog` }
  })

  afterAll(async () => {
    await app?.kill().catch(() => undefined)
    await provider?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  /**
   * With the provider answering slowly, starts a run of `pipeline`, kills the app once the provider
   * has answered `requests` more requests (several key ranges read at once), and starts it again:
   * the client of the restarted app and the killed run's id.
   */
  async function killMidRead(pipeline: string, requests: number, what: string) {
    await provider.control.faults({ delay: 100 })
    const before = (await provider.control.stats()).requests
    const started = await client(app!, pipeline).start()
    expect(started.status).toBe(200)
    await waitFor(async () => (await provider.control.stats()).requests - before >= requests, what, 20_000)
    const { maxInFlight } = await provider.control.stats()
    await app!.kill()
    app = undefined
    expect(maxInFlight).toBeGreaterThan(1)
    app = await startApp(APP, { env })
    return { api: client(app, pipeline), runId: started.body.runId }
  }

  /** The next trigger takes over once the killed run's lease expired (tried every 100 ms); its run ends. */
  async function takeOver(api: ReturnType<typeof client>, what: string) {
    await waitFor(async () => (await api.start()).status === 200, 'the takeover', 15_000, 100)
    // taken over: the new run need not be slow
    await provider.control.faults({})
    await waitFor(async () => (await api.tracker()).status === 'idle', what, 60_000)
  }

  test('killed mid-read: the previous copy stays; the next run replaces it with every row once', async () => {
    app = await startApp(APP, { env })
    let api = client(app)
    expect((await api.start()).status).toBe(200)
    await waitFor(async () => (await api.tracker()).status === 'idle', 'the first full copy', 30_000)
    expect(await api.counts()).toEqual({ rows: TOTAL, distinctIDs: TOTAL, rewritten: 0 })

    // the provider changes every title and answers slowly: the next copy takes several seconds
    await provider.control.touch({ from: 1, count: TOTAL, title: 'Rewritten', modifiedAt: T0 })
    // kill once several ranges have been read (samples and more than one round of pages)
    const killed = await killMidRead('booksFull', 12, 'the partitioned read under way')
    api = killed.api
    // one transaction: nothing of the killed run is in the target
    expect(await api.counts()).toEqual({ rows: TOTAL, distinctIDs: TOTAL, rewritten: 0 })
    expect(await api.tracker()).toMatchObject({ status: 'running', currentRun: killed.runId })

    await takeOver(api, 'the new full copy')
    expect(await api.counts()).toEqual({ rows: TOTAL, distinctIDs: TOTAL, rewritten: TOTAL })
    const runs = await api.runs()
    expect(runs.map(r => r.status)).toEqual(['idle', 'failed', 'idle'].map(s => expect.stringMatching(s === 'idle' ? /idle|completed/ : /failed/)))
    expect(runs[1].error).toMatch(/LEASE_EXPIRED/)
    expect(runs[2]).toMatchObject({ created: 0, updated: TOTAL, deleted: 0 })
  })

  test('partitioned delta killed mid-read (every row at one timestamp, ties across all boundaries): the resumed run loses nothing', async () => {
    const T1 = '2026-02-01T00:00:00.000Z'
    await app?.kill()
    await provider.control.faults({})
    await provider.control.touch({ from: 1, count: TOTAL, title: 'Book', modifiedAt: T0 })
    app = await startApp(APP, { env })
    let api = client(app, 'booksDelta')
    // the first delta run reads rows without a watermark first, then the others: page after page
    expect((await api.start()).status).toBe(200)
    await waitFor(async () => (await api.tracker()).status === 'idle', 'the first delta run', 60_000)
    expect(await api.counts()).toEqual({ rows: TOTAL, distinctIDs: TOTAL, rewritten: 0 })

    // every row changes to one timestamp: the boundaries of the ranges fall inside that group
    await provider.control.touch({ from: 1, count: TOTAL, title: 'Rewritten', modifiedAt: T1 })
    // kill once later ranges have committed batches (and checkpoints) while the first is not complete
    const killed = await killMidRead('booksDelta', 14, 'the partitioned delta under way')
    api = killed.api
    expect(await api.tracker()).toMatchObject({ status: 'running', currentRun: killed.runId })
    const partial = await api.counts()
    expect(partial.rewritten).toBeGreaterThan(0) // batches committed before the kill
    expect(partial.rewritten).toBeLessThan(TOTAL)

    // the takeover resumes from the checkpoint: every row rewritten, none twice
    await takeOver(api, 'the resumed delta')
    expect(await api.counts()).toEqual({ rows: TOTAL, distinctIDs: TOTAL, rewritten: TOTAL })
    expect(new Date((await api.tracker()).lastSync!).toISOString()).toBe(T1)
  })
})
