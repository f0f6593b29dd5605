/**
 * Run retention per tenant (docs/reference/management-api.md "Run events"): with CAP's real multitenancy (one SQLite
 * database per tenant, test/fixtures/mtx/app) each tenant's runs are pruned in its own database,
 * after its own runs: `ticker` runs every 300 ms in every subscribed tenant (fan-out), t1's
 * succeed and t2's fail; `retention.runs.maxCount: 2` keeps each tenant's newest runs.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { type ProviderControl, type RunningApp } from '../helpers/apps'
import { sharedProvider } from '../helpers/shared-provider'
import { waitFor } from '../helpers/wait'
import { userClient } from '../helpers/users'
import { startMtxApp, tenantDatabases, tenantLifecycle } from '../helpers/mtx'

const USER: Record<string, string> = { t1: 'u1', t2: 'u2' }

let provider: RunningApp & { control: ProviderControl }
let app: RunningApp
const dir = mkdtempSync(path.join(tmpdir(), 'mtx-retention-'))

/** Rows of a query on a tenant's database. */
const { sql } = tenantDatabases(dir)

const { call, get } = userClient(() => app.url)
interface Run { ID: string; status: string; startTime: string }
const runs = (tenant: string) => get<Run[]>(USER[tenant], `/pipeline/PipelineRuns?$filter=pipeline_name eq 'ticker'&$orderby=startTime`)

beforeAll(async () => {
  provider = await sharedProvider()
  await provider.control.seed({ count: 3 })
  app = await startMtxApp(dir, provider.url, { requires: { 'data-pipeline': { retention: { runs: { maxCount: 2, interval: 1 } } } }, env: { MTX_TICK: '300', MTX_FAIL_TENANTS: 't2' } })
  for (const tenant of ['t1', 't2']) {
    const { status, body } = await call('ops', 'POST', '/-/cds/deployment/subscribe', { tenant })
    if (status >= 300) throw new Error(`subscribe ${tenant}: ${status} ${JSON.stringify(body)}`)
  }
})

afterAll(async () => {
  await app?.stop()
  await provider?.stop()
  rmSync(dir, { recursive: true, force: true })
})

describe('run retention with multitenancy', () => {
  it("each tenant's runs are pruned in its own database, their events with them", async () => {
    for (const [tenant, status] of [['t1', 'idle'], ['t2', 'failed']]) {
      const first = await waitFor(async () => (await runs(tenant)).find(r => r.status === status), `a finished ticker run in ${tenant}`, 60_000)
      expect(sql<{ n: number }>(tenant, 'SELECT count(*) AS n FROM plugin_data_pipeline_PipelineRunEvents WHERE run_ID = ?', first.ID)[0].n).toBeGreaterThan(0)
      // later runs of the tenant push it beyond maxCount: gone, with its events
      await waitFor(async () => !(await runs(tenant)).some(r => r.ID === first.ID), `the first ticker run of ${tenant} to be pruned`, 60_000)
      expect(sql<{ n: number }>(tenant, 'SELECT count(*) AS n FROM plugin_data_pipeline_PipelineRunEvents WHERE run_ID = ?', first.ID)[0].n).toBe(0)
      const left = await runs(tenant)
      expect(left.length).toBeGreaterThan(0)
      // the newest two, the last successful and the last failed run, and one that started since
      expect(left.length).toBeLessThanOrEqual(4)
    }
    expect(app.output()).not.toMatch(/not pruned/)
  })
})
