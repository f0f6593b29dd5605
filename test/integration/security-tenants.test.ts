/**
 * Security of multitenancy (issue 20, findings 10–13) with CAP's real multitenancy: one
 * cds-serve process of test/fixtures/mtx/app with `@sap/cds-mtxs` in the same process, SQLite
 * with one database file per tenant, tenants t1, t2 and t3 subscribed through
 * `cds.xt.DeploymentService` over HTTP, mocked users bound to tenants (u1 → t1, u2 → t2, u3 → t3:
 * each its tenant's PipelineAdmin) and the provider's operator `ops` (no tenant, PipelineAdmin).
 *
 * Schedules: `ticker` (spawn fan-out, 700 ms; t3's runs fail on purpose) and `nightly` (queued,
 * 1 s per tenant; t1's own schedule is 1 h). The provider locks `mode` for tenant admins
 * (`multitenancy.lockedSettings`).
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { type ProviderControl, type RunningApp } from '../helpers/apps'
import { sharedProvider } from '../helpers/shared-provider'
import { waitFor } from '../helpers/wait'
import { userClient } from '../helpers/users'
import { startMtxApp, tenantLifecycle } from '../helpers/mtx'
import { invalidTenantId, MAX_TENANT_ID_LENGTH } from '../../lib/security/tenant-id'
import { basicAuth } from '../helpers/auth'

const USER: Record<string, string> = { t1: 'u1', t2: 'u2', t3: 'u3' }
const BOOKS = 3

interface Run { ID: string; pipeline_name: string; status: string; trigger: string; startTime: string; error: string | null }

let provider: RunningApp & { control: ProviderControl }
let app: RunningApp
const dir = mkdtempSync(path.join(tmpdir(), 'sec-tenants-'))

const { call, get } = userClient(() => app.url)
const runs = (tenant: string, pipeline: string) => get<Run[]>(USER[tenant], `/pipeline/PipelineRuns?$filter=pipeline_name eq '${pipeline}'&$orderby=startTime`)
const scheduled = async (tenant: string, pipeline: string) => (await runs(tenant, pipeline)).filter(r => r.trigger === 'scheduled').length
function sql(file: string, statement: string): void {
  const db = new DatabaseSync(file)
  try { db.exec(statement) } finally { db.close() }
}
const files = () => readdirSync(dir, { recursive: true }).map(String).sort()
const lifecycle = tenantLifecycle(call)
/** The healthy tenants' schedules still run: `count` more scheduled runs of t1's ticker and t2's queued nightly. */
async function schedulesGoOn(count = 2): Promise<void> {
  const before = { ticker: await scheduled('t1', 'ticker'), nightly: await scheduled('t2', 'nightly') }
  await waitFor(async () => (await scheduled('t1', 'ticker')) >= before.ticker + count, 'more scheduled ticker runs of t1', 60_000)
  await waitFor(async () => (await scheduled('t2', 'nightly')) >= before.nightly + count, 'more queued nightly runs of t2', 60_000)
}
const bound = (user: string, pipeline: string, action: string, body: object = {}) =>
  call(user, 'POST', `/pipeline/Pipelines('${pipeline}')/DataPipelineManagementService.${action}`, body)
const view = async (user: string, name: string) => JSON.parse(await get<string>(user, `/pipeline/Pipelines('${name}')/DataPipelineManagementService.configView()`))

beforeAll(async () => {
  provider = await sharedProvider()
  await provider.control.seed({ count: BOOKS })
  app = await startMtxApp(dir, provider.url, { requires: { 'data-pipeline': { multitenancy: { lockedSettings: ['mode'] } } }, env: { MTX_TICK: '700', MTX_QUEUED: '1s', MTX_FAIL_TENANTS: 't3' } })
  // side by side (subscribing is the setup here; multitenancy.test.ts subscribes one after another)
  await Promise.all(['t1', 't2', 't3'].map(tenant => lifecycle('subscribe', tenant)))
  for (const tenant of ['t1', 't2', 't3'])
    await waitFor(async () => (await runs(tenant, 'mtx.Books')).some(r => r.status === 'idle'), `initial sync of ${tenant}`, 60_000)
})

afterAll(async () => {
  await app?.stop()
  await provider?.stop()
  rmSync(dir, { recursive: true, force: true })
})

const UNSAFE = ['../x', '..', '.', 'a/b', 'a\\b', '/etc', 'x\u0000y', 'a b', 't1\n', '', 'x'.repeat(MAX_TENANT_ID_LENGTH + 1), '.hidden', 'a..b']

describe('tenant ids: one validator at every entry (finding 10)', () => {
  it('the validator accepts CAP/BTP tenant ids and refuses anything that could leave a directory or name another file', () => {
    for (const tenant of ['t1', '6b3f0c1e-8d2a-4c5b-9e7f-0a1b2c3d4e5f', 'acme-prod_01', 'acme.prod', 'x'.repeat(MAX_TENANT_ID_LENGTH)]) expect(invalidTenantId(tenant), tenant).toBeUndefined()
    for (const tenant of [...UNSAFE, null, 42, {}]) expect(invalidTenantId(tenant), JSON.stringify(tenant)).toBeTruthy()
  })

  it('execute with an unsafe tenant answers 400 naming `tenant`, creates no file, and every tenant keeps its schedules', async () => {
    const before = files()
    for (const tenant of UNSAFE.filter(Boolean)) {
      const { status, body } = await call('ops', 'POST', '/pipeline/execute', { name: 'mtx.Books', tenant })
      expect(status, `${JSON.stringify(tenant)}: ${JSON.stringify(body)}`).toBe(400)
      expect(body.error.target).toBe('tenant')
      expect(body.error.message).toMatch(/^tenant: /)
      expect(JSON.stringify(body)).not.toMatch(/SQLITE|no such|sqlite/i)
    }
    // the same from program code (executeForTenant / execute with { tenant })
    for (const style of ['executeForTenant', 'execute']) {
      const { status, body } = await call('ops', 'POST', '/odata/v4/program/runFor', { tenant: '../x', name: 'mtx.Books', style })
      expect(status, JSON.stringify(body)).toBe(400)
      expect(body.error.message).toMatch(/tenant/)
    }
    expect(files()).toEqual(before)
    await schedulesGoOn()
  })

  it('a subscription with an unsafe tenant id is refused with 400 before any database is created', async () => {
    const before = files()
    for (const tenant of ['../x', 'a/b', 'x y']) {
      const { status, body } = await call('ops', 'POST', '/-/cds/deployment/subscribe', { tenant })
      expect(status, `${tenant}: ${JSON.stringify(body)}`).toBe(400)
      expect(JSON.stringify(body)).toContain('tenant')
    }
    expect(files()).toEqual(before)
    await schedulesGoOn(1)
  })

  it('a tenant whose runs fail (t3) holds no one back: the healthy tenants keep their scheduled runs', async () => {
    await waitFor(async () => (await runs('t3', 'ticker')).filter(r => r.status === 'failed').length >= 2, 'failed ticker runs of t3', 60_000)
    await schedulesGoOn(3)
    // and t3 itself keeps being scheduled (each tick a new, failing run)
    const failed = (await runs('t3', 'ticker')).filter(r => r.status === 'failed').length
    await waitFor(async () => (await runs('t3', 'ticker')).filter(r => r.status === 'failed').length > failed, 'the next failing ticker run of t3', 60_000)
  })
})

describe('unknown or unsubscribed tenant (finding 11)', () => {
  it('execute for a tenant nobody subscribed answers 404 naming it; no database file is created', async () => {
    const before = files()
    const { status, body } = await call('ops', 'POST', '/pipeline/execute', { name: 'mtx.Books', tenant: 'nope' })
    expect(status, JSON.stringify(body)).toBe(404)
    expect(body.error.target).toBe('tenant')
    expect(body.error.message).toContain("'nope'")
    expect(body.error.message).not.toMatch(/TRACKER_MISSING|no such table/i)
    const program = await call('ops', 'POST', '/odata/v4/program/runFor', { tenant: 'nope', name: 'mtx.Books', style: 'executeForTenant' })
    expect(program.status, JSON.stringify(program.body)).toBe(404)
    expect(files()).toEqual(before)
    expect(files().some(f => f.includes('nope'))).toBe(false)
    await schedulesGoOn(1)
  })
})

describe('run events and retry stay in their tenant (issue 25)', () => {
  it("a tenant's user reads its runs' events; another tenant's user neither reads nor retries them; the provider's operator reads none", async () => {
    const own = (await runs('t1', 'mtx.Books')).find(r => r.status === 'idle')!
    const events = await get<Array<{ kind: string; seq: number }>>('u1', `/pipeline/PipelineRuns(${own.ID})/events?$orderby=seq`)
    expect(events[0].kind).toBe('start')
    expect(events.at(-1)!.kind).toBe('end')
    // t2's database has no such run: not found, and no event of it in the list
    const other = await call('u2', 'GET', `/pipeline/PipelineRuns(${own.ID})/events`)
    expect(other.status === 404 || (other.status === 200 && other.body.value.length === 0), JSON.stringify(other.body)).toBe(true)
    expect(await get<unknown[]>('u2', `/pipeline/PipelineRunEvents?$filter=run_ID eq ${own.ID}`)).toEqual([])
    expect(await get<unknown[]>('ops', '/pipeline/PipelineRunEvents')).toEqual([])

    // t3's ticker fails on purpose in READ: failed at the source, retried by t3's admin only
    const failed = await waitFor(async () => (await runs('t3', 'ticker')).find(r => r.status === 'failed'), "a failed run of t3's ticker", 30_000) as Run & { failedAt: string }
    expect(failed.failedAt).toBe('source')
    const error = await get<Array<{ kind: string; phase: string; message: string }>>('u3', `/pipeline/PipelineRuns(${failed.ID})/events?$filter=kind eq 'error'`)
    expect(error).toEqual([expect.objectContaining({ phase: 'source', message: 'ticker fails on purpose in tenant t3' })])
    const foreign = await call('u2', 'POST', `/pipeline/PipelineRuns(${failed.ID})/DataPipelineManagementService.retry`, { async: true })
    expect(foreign.status, JSON.stringify(foreign.body)).toBe(404)
    const retried = await call('u3', 'POST', `/pipeline/PipelineRuns(${failed.ID})/DataPipelineManagementService.retry`, { async: true })
    expect([202, 409], JSON.stringify(retried.body)).toContain(retried.status) // 409: a scheduled tick holds the pipeline right now
  })
})

describe("the provider's operator: a view across tenants and per-tenant fan-out answers (finding 12)", () => {
  it('GET /pipeline/Pipelines and PipelineRuns as provider answer 200 with an empty list and a hint, never SQL', async () => {
    for (const entity of ['Pipelines', 'PipelineRuns', 'PipelineRejects']) {
      const { status, body } = await call('ops', 'GET', `/pipeline/${entity}`)
      expect(status, `${entity}: ${JSON.stringify(body)}`).toBe(200)
      expect(body.value).toEqual([])
    }
    const response = await fetch(`${app.url}/pipeline/Pipelines`, { headers: basicAuth('ops', '') })
    expect(decodeURIComponent(response.headers.get('sap-messages') ?? '')).toContain('tenantsOverview')
  })

  it('tenantsOverview() shows every subscribed tenant\'s pipelines: status, freshness, last run and last error per tenant', async () => {
    await waitFor(async () => (await runs('t3', 'ticker')).some(r => r.status === 'failed'), 'a failed run of t3')
    const { status, body } = await call('ops', 'GET', '/pipeline/tenantsOverview()')
    expect(status, JSON.stringify(body)).toBe(200)
    const rows = body.value as Array<Record<string, any>>
    expect([...new Set(rows.map(r => r.tenant))].sort()).toEqual(['t1', 't2', 't3'])
    for (const tenant of ['t1', 't2', 't3'])
      expect(rows.filter(r => r.tenant === tenant).map(r => r.pipeline).sort()).toEqual(['mtx.Books', 'mtx.FollowedBooks', 'nightly', 'ticker'])
    const t3 = rows.find(r => r.tenant === 't3' && r.pipeline === 'ticker')!
    expect(t3).toMatchObject({ lastRunStatus: 'failed', freshness: expect.any(String) })
    expect(t3.lastError).toContain('ticker fails on purpose in tenant t3')
    const t1 = rows.find(r => r.tenant === 't1' && r.pipeline === 'mtx.Books')!
    expect(t1).toMatchObject({ status: 'idle', mode: 'full', error: null })
    expect(t1.lastSync).toBeTruthy()
    // a tenant's own user never sees the others
    expect((await call('u1', 'GET', '/pipeline/tenantsOverview()')).status).toBe(403)
  })

  it('tenantsOverview(): a tenant whose database cannot be read is one error row; the answer still comes', async () => {
    // a tenant in CAP's registry whose database was never deployed: its tracker cannot be read
    sql(path.join(dir, 'db-t0.sqlite'), "INSERT INTO cds_xt_Tenants (ID) VALUES ('ghost')")
    try {
      const { status, body } = await call('ops', 'GET', '/pipeline/tenantsOverview()')
      expect(status, JSON.stringify(body)).toBe(200)
      const rows = body.value as Array<Record<string, any>>
      expect(rows.filter(r => r.tenant === 't1')).toHaveLength(4)
      const broken = rows.filter(r => r.tenant === 'ghost')
      expect(broken).toHaveLength(1)
      expect(broken[0]).toMatchObject({ pipeline: null, error: expect.stringContaining("tenant 'ghost'") })
      expect(broken[0].error).not.toMatch(/SELECT|no such table/)
      // the healthy tenants' schedules go on while the fan-out also tries the broken one
      await schedulesGoOn(1)
    } finally {
      sql(path.join(dir, 'db-t0.sqlite'), "DELETE FROM cds_xt_Tenants WHERE ID = 'ghost'")
    }
    await lifecycle('unsubscribe', 't3')
  })

  it('a fan-out execute over HTTP answers each tenant\'s run beside the summed statistics', async () => {
    const { status, body } = await call('ops', 'POST', '/pipeline/execute', { name: 'mtx.Books', trigger: 'external' })
    expect(status, JSON.stringify(body)).toBe(200)
    expect(body).toMatchObject({ name: 'mtx.Books', status: 'completed', runId: null })
    expect(body.tenants.map((t: any) => t.tenant).sort()).toEqual(['t1', 't2'])
    // the summed statistics stay (t1 runs full: all rows again; t2 delta: nothing new)
    expect(body.statistics.created).toBe(body.tenants.reduce((sum: number, t: any) => sum + t.statistics.created, 0))
    expect(body.statistics.unchanged ?? 0).toBe(body.tenants.reduce((sum: number, t: any) => sum + (t.statistics.unchanged ?? 0), 0))
    // t1's full run reads every row again, each counted by key: new, changed or unchanged
    const t1 = body.tenants.find((t: any) => t.tenant === 't1').statistics
    expect(t1.created + t1.updated + (t1.unchanged ?? 0)).toBe(BOOKS)
    for (const tenant of ['t1', 't2']) {
      const entry = body.tenants.find((t: any) => t.tenant === tenant)
      expect(entry).toMatchObject({ status: 'completed', error: null, statistics: expect.objectContaining({ created: expect.any(Number) }) })
      expect((await runs(tenant, 'mtx.Books')).map(r => r.ID)).toContain(entry.runId)
    }
    // a failing tenant shows as its own entry; the others' outcomes are answered too
    const ticker = await call('ops', 'POST', '/pipeline/execute', { name: 'ticker', trigger: 'external' })
    expect(ticker.status, JSON.stringify(ticker.body)).toBe(200)
    expect(ticker.body.tenants.every((t: any) => ['completed', 'skipped'].includes(t.status))).toBe(true)
  })
})

describe("a tenant's admin overrides its own tenant's settings within the provider's bounds (finding 13)", () => {
  it("t2's admin sets and clears t2's schedule; t1 is untouched", async () => {
    // no schedule for t2: its ticks stop while t1's go on
    const cleared = await bound('u2', 'ticker', 'clearSchedule')
    expect(cleared.status, JSON.stringify(cleared.body)).toBe(200)
    expect(cleared.body.schedule).toBeNull()
    const t2 = await scheduled('t2', 'ticker')
    const t1 = await scheduled('t1', 'ticker')
    await waitFor(async () => (await scheduled('t1', 'ticker')) >= t1 + 4, 'four more ticks of t1')
    expect(await scheduled('t2', 'ticker')).toBeLessThanOrEqual(t2 + 1) // at most one tick that had already started
    expect((await view('u1', 'ticker')).effective.schedule).toBe('every 700 ms (spawn)')
    expect((await view('u2', 'ticker')).tenantOverrides).toEqual({ schedule: null })
    // its own schedule for t2 only
    const set = await bound('u2', 'ticker', 'setSchedule', { every: 1000, engine: 'spawn' })
    expect(set.status, JSON.stringify(set.body)).toBe(200)
    expect(set.body.schedule).toBe('every 1 s (spawn)')
    const after = await scheduled('t2', 'ticker')
    await waitFor(async () => (await scheduled('t2', 'ticker')) >= after + 2, 't2 ticks on its own schedule')
    expect((await view('u1', 'ticker')).effective.schedule).toBe('every 700 ms (spawn)')
    // clearing the tenant's override returns it to the provider's schedule
    const back = await bound('u2', 'ticker', 'clearOverrides', { keys: 'schedule' })
    expect(back.status, JSON.stringify(back.body)).toBe(200)
    expect((await view('u2', 'ticker')).effective.schedule).toBe('every 700 ms (spawn)')
  })

  it('a field the provider locked (mode), or one tenants may not set, is refused with 403 naming it', async () => {
    const locked = await bound('u2', 'mtx.Books', 'setOverrides', { overrides: '{"mode":"full"}' })
    expect(locked.status, JSON.stringify(locked.body)).toBe(403)
    expect(locked.body.error.target).toBe('mode')
    expect(locked.body.error.message).toMatch(/mode.*locked/)
    const other = await bound('u2', 'mtx.Books', 'setOverrides', { overrides: '{"source":{"batchSize":10}}' })
    expect(other.status, JSON.stringify(other.body)).toBe(403)
    expect(other.body.error.target).toBe('source.batchSize')
    expect(other.body.error.message).toMatch(/source\.batchSize.*shared by all tenants/)
    expect((await view('u2', 'mtx.Books')).fields.find((f: any) => f.path === 'mode')).toMatchObject({ effective: 'delta' })
  })

  it("t2's admin disables t2's pipeline: t2's row only; the provider's operator still changes the shared configuration", async () => {
    const off = await bound('u2', 'nightly', 'setEnabled', { enabled: false })
    expect(off.status, JSON.stringify(off.body)).toBe(200)
    expect((await get<Array<{ name: string; enabled: boolean }>>('u2', '/pipeline/Pipelines')).find(p => p.name === 'nightly')?.enabled).toBe(false)
    expect((await get<Array<{ name: string; enabled: boolean }>>('u1', '/pipeline/Pipelines')).find(p => p.name === 'nightly')?.enabled).toBe(true)
    expect((await bound('u2', 'nightly', 'setEnabled', { enabled: true })).status).toBe(200)
  })
})
