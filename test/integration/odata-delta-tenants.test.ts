/**
 * `delta.mode: 'odata-delta'` with CAP's real multitenancy (issue 38, point 2: one subscription per
 * tenant): test/fixtures/changes-mtx/app (one cds-serve process with `@sap/cds-mtxs`, SQLite with a
 * database file per tenant) replicates the change-tracking provider's Products into every tenant
 * (`@federation.replicate: { delta: { mode: 'odata-delta' } }`, synced on subscribe). Tenants are
 * subscribed through MTX's deployment service over HTTP; mocked users u1 and u2 belong to t1 and t2,
 * `ops` is the provider's operator. The provider (test/fixtures/changes-provider, over HTTP) lists
 * every read it served; the test drives the tenants one after another, so the reads are attributed
 * by their order.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { FIXTURES, startApp, type RunningApp } from '../helpers/apps'
import { tenantDatabases, tenantLifecycle } from '../helpers/mtx'
import { userClient } from '../helpers/users'
import { BOUND } from '../helpers/management'
import { waitFor } from '../helpers/wait'

const APP = path.join(FIXTURES, 'changes-mtx/app')
const PIPELINE = 'tenants.Products'
const USER: Record<string, string> = { t1: 'u1', t2: 'u2' }

let provider: RunningApp
let app: RunningApp
const dir = mkdtempSync(path.join(tmpdir(), 'delta-tenants-'))
const { sql } = tenantDatabases(dir)
const { call, get } = userClient(() => app.url)
const lifecycle = tenantLifecycle(call)

async function control(action: string, body: object = {}): Promise<unknown> {
  const response = await fetch(`${provider.url}/control/${action}`, action === 'requests' ? {} : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  if (!response.ok) throw new Error(`control ${action}: ${response.status}`)
  return response.json()
}
const reads = async () => ((await control('requests')) as Array<{ url: string; prefer: string }>).map(read => read.url.replace('/odata/v4/changes', ''))
/** A tracked initial read's first page (no delta link, no next link). */
const initial = (url: string) => !url.includes('$deltatoken') && !url.includes('$skiptoken')

beforeAll(async () => {
  provider = await startApp(path.join(FIXTURES, 'changes-provider'))
  await control('reset', { count: 5 })
  app = await startApp(APP, {
    timeout: 60_000,
    env: { CDS_CONFIG: JSON.stringify({ requires: { db: { credentials: { url: path.join(dir, 'db.sqlite') } }, Changes: { credentials: { url: `${provider.url}/odata/v4/changes` } } } }) },
  })
})
afterAll(async () => {
  await app?.stop()
  await provider?.stop()
  rmSync(dir, { recursive: true, force: true })
})

const tracker = (tenant: string) => get<{ lastKey: string | null; status: string; lastError: string | null }>(USER[tenant], `/pipeline/Pipelines('${PIPELINE}')`)
const replica = (tenant: string) => sql<{ ID: number; name: string }>(tenant, 'SELECT ID, name FROM tenants_Products ORDER BY ID')
async function execute(tenant: string, body: object = {}): Promise<{ status: number; body: any }> {
  return call(USER[tenant], 'POST', '/pipeline/execute', { name: PIPELINE, ...body })
}
async function configView(user: string): Promise<Record<string, unknown>> {
  const { status, body } = await call(user, 'GET', `${BOUND(PIPELINE)}.configView()`)
  expect(status, JSON.stringify(body)).toBe(200)
  return JSON.parse(body.value) as Record<string, unknown>
}

test('one tracked initial read per tenant, each tenant its own link; a link refused for one tenant stops neither the other nor its own re-initialisation', async () => {
  // t1 subscribes: its initial sync is a tracked initial read, its tracker holds the link
  await lifecycle('subscribe', 't1')
  await waitFor(async () => (await tracker('t1')).lastKey, 'the initial sync of t1', 60_000)
  expect((await tracker('t1')).lastKey).toBe('/Products?$deltatoken=0')
  expect(replica('t1')).toHaveLength(5)

  // t2 subscribes after a change: a subscription (and link) of its own; t1's is untouched
  await control('change', { ids: [6], name: 'Product 6' })
  await lifecycle('subscribe', 't2')
  await waitFor(async () => (await tracker('t2')).lastKey, 'the initial sync of t2', 60_000)
  expect((await tracker('t2')).lastKey).toBe('/Products?$deltatoken=1')
  expect(replica('t2')).toHaveLength(6)
  expect((await tracker('t1')).lastKey).toBe('/Products?$deltatoken=0')
  expect((await reads()).filter(initial)).toHaveLength(2)

  // the provider's operator sees the shared configuration, no tenant's link; each tenant its own
  expect(await configView('ops')).not.toHaveProperty('deltaLink')
  expect(await configView('u1')).toMatchObject({ changeTracking: 'initialised', deltaLink: '/Products?$deltatoken=0' })
  expect(await configView('u2')).toMatchObject({ changeTracking: 'initialised', deltaLink: '/Products?$deltatoken=1' })

  // t2 follows its link; then the provider drops its change log below t2's new link: t1's link expires, t2's does not
  await control('change', { ids: [7], name: 'Product 7' })
  expect((await execute('t2')).body).toMatchObject({ status: 'completed', statistics: { created: 1 } })
  expect((await tracker('t2')).lastKey).toBe('/Products?$deltatoken=2')
  await control('expire')
  await control('change', { ids: [1], name: 'Product 1 changed' })
  const before = (await reads()).length

  const refused = await execute('t1')
  expect(refused.status).toBe(502)
  expect(JSON.stringify(refused.body)).toMatch(/refused the stored delta link of 'Products' \(410 Gone/)
  expect(await tracker('t1')).toMatchObject({ status: 'failed', lastKey: '/Products?$deltatoken=0' })
  expect((await execute('t2')).body).toMatchObject({ status: 'completed', statistics: { created: 0, updated: 1, deleted: 0 } })
  expect(await tracker('t2')).toMatchObject({ status: 'idle', lastKey: '/Products?$deltatoken=3' })
  expect(replica('t2').find(row => row.ID === 1)?.name).toBe('Product 1 changed')
  expect(replica('t1')).toHaveLength(5) // nothing copied silently

  // t1 re-initialises with mode 'full': a new tracked initial read for t1 only
  expect((await execute('t1', { mode: 'full' })).body).toMatchObject({ status: 'completed' })
  expect(await tracker('t1')).toMatchObject({ status: 'idle', lastKey: '/Products?$deltatoken=3' })
  expect(replica('t1').map(row => row.ID)).toEqual([1, 2, 3, 4, 5, 6, 7])
  expect((await reads()).slice(before).filter(url => !url.includes('$skiptoken'))).toEqual([
    '/Products?$deltatoken=0', // t1: refused (410)
    '/Products?$deltatoken=2', // t2
    expect.stringMatching(/^\/Products\?\$select=/), // t1: its second tracked initial read
  ])
  // over the whole test: one subscription per tenant, one more for t1's re-initialisation
  expect((await reads()).filter(initial)).toHaveLength(3)
})
