/**
 * Multitenancy of the engine with CAP's real multitenancy: one cds-serve process of
 * test/fixtures/mtx/app with `@sap/cds-mtxs` in the same process (`cds.requires.multitenancy`),
 * SQLite with one database file per tenant (plus the technical tenant t0), tenants subscribed,
 * upgraded and unsubscribed through `cds.xt.DeploymentService` over HTTP, mocked users bound to
 * tenants (u1 → t1, u2 → t2, u3 → t3; `ops` is a provider user without tenant), the real OData
 * provider over HTTP. The tenants' databases are read with node:sqlite.
 *
 * Engine settings (fixture package.json): multitenancy { active, fanOutScheduledRuns,
 * syncOnSubscribe, flushOnUnsubscribe, tenants.t1.replicate: mtx.Books mode full, nightly
 * schedule 1 h }; this test sets `parallel: 2`. Pipelines: the replica `mtx.Books`, `ticker`
 * (spawn, 700 ms; t2's runs take 3 s, t3's fail) and `nightly` (queued, 1 s).
 */
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { type ProviderControl, type RunningApp } from '../helpers/apps'
import { sharedProvider } from '../helpers/shared-provider'
import { waitFor } from '../helpers/wait'
import { userClient } from '../helpers/users'
import { startMtxApp, tenantDatabases, tenantLifecycle } from '../helpers/mtx'

const USER: Record<string, string> = { t1: 'u1', t2: 'u2', t3: 'u3' }
const BOOKS = 5
const SLOW_MS = 3000

interface Run { ID: string; pipeline_name: string; status: string; trigger: string; mode: string; startTime: string; endTime: string | null; statistics_created: number; error: string | null }
interface Pipeline { name: string; mode: string; schedule: string | null; lastSync: string | null; status: string; statistics_created: number }

let provider: RunningApp & { control: ProviderControl }
let app: RunningApp
const dir = mkdtempSync(path.join(tmpdir(), 'mtx-'))
const figures: Record<string, unknown> = {}

/** A tenant's database file and the rows of a query on it. */
const { dbFile, sql } = tenantDatabases(dir)

/** A tenant's SQLite file without any table (or not readable as one yet: not counted as gone). */
function tableless(tenant: string): boolean {
  try {
    return sql<{ n: number }>(tenant, 'SELECT count(*) AS n FROM sqlite_master')[0].n === 0
  } catch {
    return false
  }
}
const tables = (tenant: string) => sql<{ name: string }>(tenant, "SELECT name FROM sqlite_master WHERE type = 'table'").map(t => t.name)
const tasks = (tenant: string) => sql<{ task: string; msg: string; status: string | null }>(tenant, "SELECT task, msg, status FROM cds_outbox_Messages WHERE task LIKE 'data-pipeline/%'")
/** For polling: a tenant database that MTX is still (re)creating cannot be opened yet — not there yet, not an error. */
const tasksSoFar = (tenant: string) => { try { return tasks(tenant) } catch { return [] } }

const { call, get } = userClient(() => app.url)
const runs = (tenant: string, pipeline: string) => get<Run[]>(USER[tenant], `/pipeline/PipelineRuns?$filter=pipeline_name eq '${pipeline}'&$orderby=startTime`)
const pipeline = async (tenant: string, name: string) => (await get<Pipeline[]>(USER[tenant], '/pipeline/Pipelines')).find(p => p.name === name)
const lifecycle = tenantLifecycle(call)

beforeAll(async () => {
  provider = await sharedProvider()
  await provider.control.seed({ count: BOOKS })
  app = await startMtxApp(dir, provider.url, { requires: { 'data-pipeline': { multitenancy: { parallel: 2 } } }, env: { MTX_TICK: '700', MTX_QUEUED: '1s', MTX_FAIL_TENANTS: 't3', MTX_SLOW_TENANTS: 't2', MTX_SLOW_MS: String(SLOW_MS) } })
})

afterAll(async () => {
  await app?.stop()
  await provider?.stop()
  console.log('multitenancy figures', JSON.stringify(figures))
  rmSync(dir, { recursive: true, force: true })
})

describe('multitenancy with @sap/cds-mtxs (SQLite database per tenant)', () => {
  it('subscribe: every tenant database gets the replica table, tracker rows, its queued tasks and its initial sync (per-tenant mode)', async () => {
    const times: number[] = []
    for (const tenant of ['t1', 't2', 't3']) times.push(await lifecycle('subscribe', tenant))
    figures.subscribeMs = times
    for (const tenant of ['t1', 't2', 't3']) {
      expect(tables(tenant)).toEqual(expect.arrayContaining(['mtx_Books', 'mtx_ItemCopies', 'plugin_data_pipeline_Pipelines', 'plugin_data_pipeline_PipelineRuns', 'cds_outbox_Messages']))
      // syncOnSubscribe: the replicate pipeline ran for the tenant, in its database
      const synced = await waitFor(async () => { const p = await pipeline(tenant, 'mtx.Books'); return p?.lastSync ? p : undefined }, `initial sync of ${tenant}`, 60_000)
      expect(synced.statistics_created).toBe(BOOKS)
      expect(await get<unknown[]>(USER[tenant], '/odata/v4/mtx/Books')).toHaveLength(BOOKS)
      const [sync] = await runs(tenant, 'mtx.Books')
      expect(sync).toMatchObject({ status: 'idle', trigger: 'event', mode: tenant === 't1' ? 'full' : 'delta' })
    }
    // per-tenant queued tasks in each tenant's own queue table; t1's schedule is its own (1 h)
    await waitFor(() => ['t1', 't2', 't3'].every(t => tasks(t).length === 1), 'queued tasks of all tenants')
    for (const tenant of ['t1', 't2', 't3']) expect(tasks(tenant).map(t => t.task)).toEqual([`data-pipeline/${tenant}/nightly`])
    expect(JSON.parse(tasks('t1')[0].msg).queue.every).toBe(3_600_000)
    expect(JSON.parse(tasks('t2')[0].msg).queue.every).toBe(1000)
    // the provider's own database holds no tenant data
    expect(existsSync(path.join(dir, 'db.sqlite')) ? sql<{ name: string }>('', "SELECT name FROM sqlite_master WHERE name = 'mtx_Books'").length : 0).toBe(0)
    // a repeated subscribe is harmless (SQLite redeploys the database; the engine writes rows and tasks again and syncs once more)
    await lifecycle('subscribe', 't3')
    await waitFor(async () => (await pipeline('t3', 'mtx.Books'))?.lastSync, 'sync after the repeated subscribe of t3', 60_000)
    await waitFor(() => tasksSoFar('t3').length === 1, 'task of t3 after the repeated subscribe')
    expect((await runs('t3', 'mtx.Books')).filter(r => r.trigger === 'event')).toHaveLength(1)
  })

  it('scheduled fan-out: each tenant runs in its own database, at most `parallel` at once; a slow (t2) or failing (t3) tenant holds no one back', async () => {
    // per-tenant data, written by each tenant's own user
    const items: Record<string, number[]> = { t1: [11, 12, 13], t2: [21, 22], t3: [31] }
    for (const [tenant, ids] of Object.entries(items))
      for (const ID of ids) expect((await call(USER[tenant], 'POST', '/odata/v4/mtx/Items', { ID, label: `${tenant}-${ID}` })).status).toBe(201)
    const started = Date.now()
    // until t2's first slow run since then has ended (3 s; no bound on how soon: a loaded machine takes longer)
    const slow = await waitFor(async () => (await runs('t2', 'ticker')).find(r => Date.parse(r.startTime) > started && r.status !== 'failed' && r.endTime), 't2 slow ticker run', 60_000)
    const t2 = (await runs('t2', 'ticker')).filter(r => Date.parse(r.startTime) > started)
    expect(t2.filter(r => r.status !== 'failed').length).toBeLessThanOrEqual(2)
    // t1 went on while t2's single slow run held its lease and t3's runs failed: t1 runs started and
    // ended within t2's slow run (the order of the runs, not how fast the machine is)
    const t1 = (await runs('t1', 'ticker')).filter(r => r.status === 'idle' && r.endTime)
    const within = t1.filter(r => Date.parse(r.startTime) >= Date.parse(slow.startTime) && Date.parse(r.endTime!) <= Date.parse(slow.endTime!))
    expect(within.length, JSON.stringify({ slow, t1 })).toBeGreaterThanOrEqual(2)
    await waitFor(async () => (await runs('t3', 'ticker')).some(r => r.status === 'failed'), 't3 failed ticker run')
    expect((await pipeline('t3', 'ticker'))).toMatchObject({ status: 'failed' })
    // isolation: each tenant's copy holds its own items only
    await waitFor(async () => (await get<unknown[]>('u2', '/odata/v4/mtx/ItemCopies')).length === 2, 't2 copies', 60_000)
    expect((await get<Array<{ ID: number }>>('u1', '/odata/v4/mtx/ItemCopies')).map(r => r.ID).sort()).toEqual(items.t1)
    expect((await get<Array<{ ID: number }>>('u2', '/odata/v4/mtx/ItemCopies')).map(r => r.ID).sort()).toEqual(items.t2)
    expect(await get<unknown[]>('u3', '/odata/v4/mtx/ItemCopies')).toEqual([])
    // bounded parallelism: never more than 2 tenant runs of `ticker` at once (parallel: 2)
    const all = (await Promise.all(['t1', 't2', 't3'].map(t => runs(t, 'ticker')))).flat().filter(r => r.endTime)
    const points = all.flatMap(r => [[Date.parse(r.startTime), 1], [Date.parse(r.endTime!), -1]] as const).sort((a, b) => a[0] - b[0] || a[1] - b[1])
    let open = 0, most = 0
    for (const [, delta] of points) most = Math.max(most, open += delta)
    figures.ticker = { runs: all.length, maxParallel: most }
    expect(most).toBeLessThanOrEqual(2)
    expect(most).toBeGreaterThanOrEqual(1)
  })

  it('queued schedules tick per tenant in the tenant\'s context; a tenant\'s own schedule (t1: 1 h) keeps it out', async () => {
    await waitFor(async () => (await runs('t2', 'nightly')).some(r => r.trigger === 'scheduled' && r.status === 'idle'), 'queued tick of t2', 60_000)
    await waitFor(async () => (await runs('t3', 'nightly')).some(r => r.trigger === 'scheduled' && r.status === 'idle'), 'queued tick of t3', 60_000)
    expect(await runs('t1', 'nightly')).toEqual([])
    expect((await get<Array<{ ID: number }>>('u3', '/odata/v4/mtx/ItemArchive')).map(r => r.ID)).toEqual([31])
  })

  it('HTTP and programmatic execute run in the named tenant; a tenant user never reaches another tenant', async () => {
    const before = { t1: (await runs('t1', 'mtx.Books')).length, t2: (await runs('t2', 'mtx.Books')).length, t3: (await runs('t3', 'mtx.Books')).length }
    // a tenant user naming another tenant: 403; without tenant (or its own): its own tenant, no fan-out
    expect((await call('u1', 'POST', '/pipeline/execute', { name: 'mtx.Books', tenant: 't2' })).status).toBe(403)
    expect((await call('u1', 'POST', '/pipeline/execute', { name: 'mtx.Books' })).status).toBe(200)
    expect((await call('u1', 'POST', '/pipeline/execute', { name: 'mtx.Books', tenant: 't1' })).status).toBe(200)
    expect((await runs('t1', 'mtx.Books')).length).toBe(before.t1 + 2)
    expect((await runs('t2', 'mtx.Books')).length).toBe(before.t2)
    // a tenant user cannot change the configuration all tenants share (its own tenant's mode and schedule: security-tenants test)
    expect((await call('u1', 'POST', `/pipeline/Pipelines('mtx.Books')/DataPipelineManagementService.setOverrides`, { overrides: '{"retry":{"maxRetries":3}}' })).status).toBe(403)
    // the provider names a tenant
    const named = await call('ops', 'POST', '/pipeline/execute', { name: 'mtx.Books', tenant: 't2' })
    expect(named.status).toBe(200)
    expect((await runs('t2', 'mtx.Books')).map(r => r.ID)).toContain(named.body.runId)
    // the provider without tenant: one run per subscribed tenant (fan-out of an external trigger)
    const fanned = await call('ops', 'POST', '/pipeline/execute', { name: 'mtx.Books', trigger: 'external' })
    expect(fanned.status).toBe(200)
    for (const tenant of ['t1', 't2', 't3'] as const)
      expect((await runs(tenant, 'mtx.Books')).filter(r => r.trigger === 'external')).toHaveLength(1)
    // programmatic: executeForTenant(tenant, name) and execute(name, { tenant }) from provider code
    for (const style of ['executeForTenant', 'execute']) {
      const { status, body } = await call('ops', 'POST', '/odata/v4/program/runFor', { tenant: 't3', name: 'mtx.Books', style })
      expect(status).toBe(200)
      const result = JSON.parse(body.value)
      expect(result.status).toBe('completed')
      expect((await runs('t3', 'mtx.Books')).map(r => r.ID)).toContain(result.runId)
    }
    // reads: each tenant's user sees its own runs only
    const ids = async (tenant: string) => new Set((await get<Run[]>(USER[tenant], '/pipeline/PipelineRuns')).map(r => r.ID))
    const [r1, r2] = [await ids('t1'), await ids('t2')]
    expect([...r1].filter(id => r2.has(id))).toEqual([])
    expect((await call('u2', 'GET', `/pipeline/PipelineRuns(${[...r1][0]})`)).status).toBe(404)
  })

  it("per-tenant overrides (mode, schedule) show in that tenant's configView and tracker row", async () => {
    const view = async (user: string, name: string) => JSON.parse((await get<string>(user, `/pipeline/Pipelines('${name}')/DataPipelineManagementService.configView()`)))
    const t1 = await view('u1', 'mtx.Books')
    expect(t1.meta.tenant).toBe('t1')
    expect(t1.tenantOverrides).toEqual({ mode: 'full' })
    expect(t1.fields.find((f: any) => f.path === 'mode')).toMatchObject({ effective: 'full', source: 'tenant', tenantOverride: 'full' })
    const t2 = await view('u2', 'mtx.Books')
    expect(t2.fields.find((f: any) => f.path === 'mode')).toMatchObject({ effective: 'delta' })
    expect(t2.fields.find((f: any) => f.path === 'mode').source).not.toBe('tenant')
    const nightly = await view('u1', 'nightly')
    expect(nightly.effective.schedule).toBe('every 1 h (queued)')
    expect((await view('u2', 'nightly')).effective.schedule).toBe('every 1 s (queued)')
    expect(await pipeline('t1', 'mtx.Books')).toMatchObject({ mode: 'full' })
    expect(await pipeline('t2', 'mtx.Books')).toMatchObject({ mode: 'delta' })
    expect((await pipeline('t1', 'nightly'))?.schedule).toBe('every 1 h (queued)')
  })

  it('upgrade: the recreated database gets its tracker rows and tasks again, the replica table stays, the next run is full', async () => {
    expect((await pipeline('t2', 'mtx.Books'))?.lastSync).toBeTruthy()
    await lifecycle('upgrade', 't2')
    // SQLite redeploys by drop-create: the tenant's data and tracker rows were gone
    expect(tables('t2')).toContain('mtx_Books')
    await waitFor(() => tasksSoFar('t2').length === 1, 'queued task of t2 after the upgrade')
    const row = await waitFor(async () => pipeline('t2', 'mtx.Books'), 'tracker row of t2 after the upgrade')
    expect(row).toMatchObject({ lastSync: null, status: 'idle', statistics_created: 0 })
    const { status, body } = await call('ops', 'POST', '/pipeline/execute', { name: 'mtx.Books', tenant: 't2' })
    expect(status).toBe(200)
    expect(body.statistics.created).toBe(BOOKS)
    expect(await get<unknown[]>('u2', '/odata/v4/mtx/Books')).toHaveLength(BOOKS)
  })

  it('unsubscribe: the database, the tasks and (flushOnUnsubscribe) the entity cache file go; a re-subscribe starts clean', async () => {
    // a delegated read through the entity cache creates t3's cache file
    expect(await get<unknown[]>('u3', '/odata/v4/mtx/Authors')).toBeDefined()
    const cacheFile = path.join(dir, 'data-federation-cache-t3.sqlite')
    expect(existsSync(cacheFile)).toBe(true)
    const ms = await lifecycle('unsubscribe', 't3')
    figures.unsubscribeMs = ms
    await waitFor(() => !existsSync(cacheFile), 't3 cache file removed')
    // MTX deletes it once its connections closed. CAP's task queue, polling t3 when it was unsubscribed,
    // may open the tenant's database again ("no such table: cds_outbox_Messages"): SQLite then leaves a
    // new file, empty (0 bytes) or with only its header page (WAL mode set on open) — no table of t3
    const gone = () => !existsSync(dbFile('t3')) || statSync(dbFile('t3')).size === 0 || tableless('t3')
    await waitFor(gone, 't3 database file removed').catch(error => {
      const size = existsSync(dbFile('t3')) ? `${statSync(dbFile('t3')).size} bytes` : 'absent'
      throw new Error(`${(error as Error).message} (${size})\n${app.output().split('\n').filter(line => /t3/.test(line)).slice(-40).join('\n')}`)
    })
    // the engine no longer works in t3 (no tick, no task, no watchdog): ticks go on for the others
    const mark = app.output().length
    const before = (await runs('t1', 'ticker')).length
    await waitFor(async () => (await runs('t1', 'ticker')).length > before + 1, 't1 ticks after the unsubscribe of t3')
    await waitFor(async () => (await runs('t2', 'nightly')).length > 1, 't2 queued ticks')
    expect(app.output().slice(mark)).not.toMatch(/\[data-pipeline[^\]]*\|t3\]/)
    // the provider's fan-out covers the two remaining tenants
    const fanned = await call('ops', 'POST', '/pipeline/execute', { name: 'mtx.Books', trigger: 'external' })
    expect(fanned.status).toBe(200)
    // re-subscribe: fresh tracker rows, one initial sync, a new task, no cache file until the next read
    await lifecycle('subscribe', 't3')
    const fresh = await waitFor(async () => { const p = await pipeline('t3', 'mtx.Books'); return p?.lastSync ? p : undefined }, 'sync after re-subscribe', 60_000)
    expect(fresh.statistics_created).toBe(BOOKS)
    expect((await runs('t3', 'mtx.Books')).map(r => r.trigger)).toEqual(['event'])
    let seen: unknown[] = []
    await waitFor(() => (seen = tasksSoFar('t3')).length === 1, 'task of t3 after re-subscribe').catch(error => {
      throw new Error(`${(error as Error).message}: ${JSON.stringify(seen)}\n${app.output().split('\n').filter(line => /t3/.test(line)).slice(-40).join('\n')}`)
    })
    expect(existsSync(cacheFile)).toBe(false)
  })
})
