/**
 * Multitenancy, second part: federation caches per tenant, tenant ids as file names, and an
 * upgrade that keeps the tenant's data. One cds-serve process of test/fixtures/mtx/app with
 * `@sap/cds-mtxs` in the same process, SQLite with one database file per tenant and
 * `schema_evolution: 'auto'` (an upgrade keeps tables and rows, as HANA/PostgreSQL do), tenants
 * subscribed, upgraded and unsubscribed through `cds.xt.DeploymentService` over HTTP, mocked
 * users bound to tenants (u2 → t2, u3 → t3; `ops` is a provider user without tenant; `bad*`
 * are bound to tenant ids that must never become file names), the real OData provider.
 *
 * The entity cache files live under `cache/inner` with `urlTemplate: '{tenant}/cache.sqlite'`, a
 * template under which `../evil`, `..` or an absolute path WOULD leave `baseDir` if the tenant id
 * were used as it is.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { FIXTURES, startApp, type ProviderControl, type RunningApp } from '../helpers/apps'
import { sharedProvider } from '../helpers/shared-provider'
import { waitFor } from '../helpers/wait'
import { invalidTenantId, MAX_TENANT_ID_LENGTH, storeFile, type EntityCacheSettings } from '../../lib/federation/cache/entity'
import { userClient } from '../helpers/users'
import { tenantLifecycle } from '../helpers/mtx'

const APP = path.join(FIXTURES, 'mtx/app')
const USER: Record<string, string> = { t2: 'u2', t3: 'u3' }
const BOOKS = 5

const dir = mkdtempSync(path.join(tmpdir(), 'mtx-cache-'))
const cacheDir = path.join(dir, 'cache', 'inner')
const TEMPLATE = '{tenant}/cache.sqlite'

/** Users bound to tenant ids that must be rejected before they name a file. */
const BAD: Record<string, string> = {
  bad1: '../evil',
  bad2: '..',
  bad3: '.',
  bad4: 'a/b',
  bad5: 'a\\b',
  bad6: 'x\u0000y',
  bad7: 'x'.repeat(MAX_TENANT_ID_LENGTH + 1),
  bad8: path.join(dir, 'absolute-evil'),
  bad9: '.hidden',
}

interface Pipeline { name: string; mode: string; lastSync: string | null; lastKey: string | null; status: string; statistics_created: number }
interface Run { ID: string; trigger: string; mode: string; status: string }

let provider: RunningApp & { control: ProviderControl }
let app: RunningApp

const dbFile = (tenant: string) => path.join(dir, `db-${tenant}.sqlite`)
const cacheFile = (tenant: string) => path.join(cacheDir, tenant, 'cache.sqlite')

function sql<T>(file: string, query: string, write = false): T[] {
  const db = new DatabaseSync(file, { readOnly: !write })
  try {
    return (write ? (db.exec(query), []) : db.prepare(query).all()) as T[]
  } finally {
    db.close()
  }
}

/** Every file below `root`, as paths relative to it (SQLite's -wal/-shm files counted with their database). */
function filesBelow(root: string): string[] {
  const out = new Set<string>()
  for (const entry of readdirSync(root, { withFileTypes: true, recursive: true }))
    if (entry.isFile()) out.add(path.relative(root, path.join(entry.parentPath, entry.name)).replace(/-(wal|shm|journal)$/, ''))
  return [...out].sort()
}

/** Rows of the delegated ShelfBooks view in a tenant's entity cache file (the table is named after the served entity). */
function shelf(tenant: string, query: (table: string) => string): unknown[] {
  const [{ name }] = sql<{ name: string }>(cacheFile(tenant), "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%ShelfBooks'")
  return sql(cacheFile(tenant), query(name))
}

const { call, get } = userClient(() => app.url)
const title = async (user: string, entity: string) => (await get<{ title: string }>(user, `/odata/v4/mtx/${entity}(1)`)).title
const pipeline = async (tenant: string) => (await get<Pipeline[]>(USER[tenant], '/pipeline/Pipelines')).find(p => p.name === 'mtx.Books')
const runs = (tenant: string) => get<Run[]>(USER[tenant], `/pipeline/PipelineRuns?$filter=pipeline_name eq 'mtx.Books'&$orderby=startTime`)
const lifecycle = tenantLifecycle(call)
const synced = (tenant: string, after = '') => waitFor(async () => {
  const p = await pipeline(tenant)
  return p?.lastSync && p.lastSync > after && p.status === 'idle' ? p : undefined
}, `sync of ${tenant}`, 20_000)

beforeAll(async () => {
  mkdirSync(cacheDir, { recursive: true })
  provider = await sharedProvider()
  await provider.control.seed({ count: BOOKS, modifiedAt: '2026-01-01T00:00:00Z' })
  const roles = ['PipelineAdmin']
  app = await startApp(APP, {
    timeout: 60_000,
    env: {
      CDS_CONFIG: JSON.stringify({
        requires: {
          db: { kind: 'sqlite', credentials: { url: path.join(dir, 'db.sqlite') }, schema_evolution: 'auto' },
          Provider: { credentials: { url: `${provider.url}/odata/v4/catalog` } },
          'data-federation-cache': { kind: 'sqlite', entityCache: { baseDir: cacheDir, urlTemplate: TEMPLATE } },
          auth: {
            kind: 'mocked',
            users: {
              u2: { tenant: 't2', roles }, u3: { tenant: 't3', roles }, ops: { roles: [...roles, 'cds.Subscriber'] },
              ...Object.fromEntries(Object.entries(BAD).map(([user, tenant]) => [user, { tenant, roles }])),
            },
          },
        },
      }),
    },
  })
})

afterAll(async () => {
  await app?.stop()
  await provider?.stop()
  rmSync(dir, { recursive: true, force: true })
})

describe('entity cache file names (storeFile)', () => {
  const settings: EntityCacheSettings = { files: true, urlTemplate: TEMPLATE, defaultTenant: 'default', baseDir: '/srv/cache' }

  it('rejects each bad form with 400 naming the tenant, before any path is built', () => {
    for (const tenant of [...Object.values(BAD), '', '/', '\\', 'a b', 't1\n']) {
      expect(invalidTenantId(tenant), JSON.stringify(tenant)).toBeTruthy()
      let error: any
      try { storeFile(tenant, settings) } catch (e) { error = e }
      expect(error?.status, JSON.stringify(tenant)).toBe(400)
      expect(error.message).toContain(JSON.stringify(tenant).slice(0, 30))
    }
    expect(() => storeFile('x'.repeat(200), settings)).toThrow(/\(200 characters\).*longer than 128/)
    // valid ids: CAP tenant ids (UUIDs, subdomains), inside baseDir
    for (const tenant of ['t1', '6b3f0c1e-8d2a-4c5b-9e7f-0a1b2c3d4e5f', 'acme.prod_01', 'x'.repeat(MAX_TENANT_ID_LENGTH)])
      expect(storeFile(tenant, settings)).toBe(path.join('/srv/cache', tenant, 'cache.sqlite'))
  })

  it('configurations that cannot give each tenant its own file inside baseDir fail with 500 (containment checked on the resolved path)', () => {
    const fails = (over: Partial<EntityCacheSettings>, tenant = 't1', origin: 'request' | 'config' = 'request') => {
      try { storeFile(tenant, { ...settings, ...over }, origin) } catch (error: any) { return { status: error.status, message: error.message } }
      return undefined
    }
    expect(fails({ urlTemplate: '../{tenant}.sqlite' })).toMatchObject({ status: 500, message: expect.stringContaining('leads out of entityCache.baseDir') })
    expect(fails({ urlTemplate: '/var/tmp/{tenant}.sqlite' })).toMatchObject({ status: 500 })
    expect(fails({ urlTemplate: 'cache.sqlite' })).toMatchObject({ status: 500, message: expect.stringContaining("no '{tenant}'") })
    expect(fails({}, '../x', 'config')).toMatchObject({ status: 500, message: expect.stringContaining('entityCache.defaultTenant') })
    expect(fails({ urlTemplate: 'sub/{tenant}/x-{tenant}.sqlite' })).toBeUndefined()
  })
})

describe('multitenancy: caches per tenant, tenant ids, upgrade with data kept (@sap/cds-mtxs, SQLite with schema evolution)', () => {
  it('subscribe: t2 and t3 get their initial sync (delta, watermark set)', async () => {
    for (const tenant of ['t2', 't3']) await lifecycle('subscribe', tenant)
    for (const tenant of ['t2', 't3']) {
      const row = await synced(tenant)
      expect(row).toMatchObject({ mode: 'delta', statistics_created: BOOKS })
      expect(await get<unknown[]>(USER[tenant], '/odata/v4/mtx/Books')).toHaveLength(BOOKS)
    }
  })

  it('upgrade: a watermark whose target table is empty after the upgrade is reset, the next run reads everything; a kept table keeps its watermark', async () => {
    const before = { t2: (await pipeline('t2'))!, t3: (await pipeline('t3'))! }
    // t3's replica is empty as after a redeploy that recreated the table; its tracker row survived
    sql(dbFile('t3'), 'DELETE FROM mtx_Books', true)
    expect(sql<{ n: number }>(dbFile('t3'), 'SELECT count(*) AS n FROM mtx_Books')[0].n).toBe(0)
    for (const tenant of ['t2', 't3']) await lifecycle('upgrade', tenant)
    // schema evolution: the upgrade kept tables and rows
    expect(sql<{ n: number }>(dbFile('t2'), 'SELECT count(*) AS n FROM mtx_Books')[0].n).toBe(BOOKS)
    const reset = await waitFor(async () => { const p = await pipeline('t3'); return p && p.lastSync === null ? p : undefined }, 'reset of t3', 60_000)
    expect(reset).toMatchObject({ status: 'idle', lastKey: null })
    expect(app.output()).toMatch(/tenant 't3': pipeline 'mtx\.Books' had a watermark, but its target mtx\.Books is empty after the upgrade/)
    // t2 kept its rows: its watermark stays (the hooks ran for t2 as well: same tracker row)
    expect((await pipeline('t2'))?.lastSync).toBe(before.t2.lastSync)
    expect(before.t3.lastSync).toBeTruthy()
    // next run, the pipeline's own mode (delta): t3 reads all rows, t2 only what changed (nothing)
    const t3 = await call('ops', 'POST', '/pipeline/execute', { name: 'mtx.Books', tenant: 't3' })
    expect(t3.status).toBe(200)
    expect(t3.body.statistics).toMatchObject({ created: BOOKS })
    expect(await get<unknown[]>('u3', '/odata/v4/mtx/Books')).toHaveLength(BOOKS)
    const t2 = await call('ops', 'POST', '/pipeline/execute', { name: 'mtx.Books', tenant: 't2' })
    expect(t2.status).toBe(200)
    expect(t2.body.statistics).toMatchObject({ created: 0 })
    expect((await runs('t3')).map(r => r.mode)).toEqual(['delta', 'delta'])
  })

  it("tenant A never sees tenant B's rows through the response cache or the entity cache; tenantScoped: false shares", async () => {
    for (const entity of ['LiveBooks', 'ShelfBooks', 'SharedBooks']) expect(await title('u2', entity)).toBe('Book 1')
    await provider.control.touch({ from: 1, title: 'Changed' })
    // t3 loads its own copy: t2's cached answer is not served to it
    expect(await title('u3', 'LiveBooks')).toBe('Changed')
    expect(await title('u3', 'ShelfBooks')).toBe('Changed')
    // the unscoped view is one entry for all tenants: t2's load answers t3 (proof that the tag above matters)
    expect(await title('u3', 'SharedBooks')).toBe('Book 1')
    // t2 is still answered from its own caches (TTL 10 min)
    expect(await title('u2', 'LiveBooks')).toBe('Book 1')
    expect(await title('u2', 'ShelfBooks')).toBe('Book 1')
    // a query over all rows of t3's entity cache has t3's copy only; one file per tenant, no tenant column
    expect((await get<Array<{ ID: number; title: string }>>('u3', "/odata/v4/mtx/ShelfBooks?$filter=title eq 'Book 1'"))).toEqual([])
    expect(shelf('t2', table => `PRAGMA table_info('${table}')`).map(c => (c as { name: string }).name)).toEqual(['ID', 'title'])
    expect(shelf('t2', table => `SELECT title FROM ${table} WHERE ID = 1`)).toEqual([{ title: 'Book 1' }])
    expect(shelf('t3', table => `SELECT title FROM ${table} WHERE ID = 1`)).toEqual([{ title: 'Changed' }])
  })

  it('a tenant id that cannot be a file name fails the read with 400 naming the tenant; nothing is created outside baseDir', async () => {
    const outside = filesBelow(dir).filter(f => !f.startsWith(`cache${path.sep}`))
    for (const [user, tenant] of Object.entries(BAD)) {
      const { status, body } = await call(user, 'GET', '/odata/v4/mtx/ShelfBooks')
      expect(status, `${user} (${JSON.stringify(tenant)}): ${JSON.stringify(body)}`).toBe(400)
      expect(body.error.message).toContain('cannot have an entity cache file')
      expect(body.error.message).toContain(JSON.stringify(tenant).slice(0, 30))
    }
    // no file anywhere but the two tenants' stores; nothing next to or above baseDir
    expect(filesBelow(cacheDir)).toEqual([path.join('t2', 'cache.sqlite'), path.join('t3', 'cache.sqlite')])
    expect(filesBelow(dir).filter(f => !f.startsWith(`cache${path.sep}`))).toEqual(outside)
    expect(existsSync(path.join(dir, 'cache', 'evil'))).toBe(false)
    expect(existsSync(path.join(dir, 'cache', 'cache.sqlite'))).toBe(false)
    expect(existsSync(BAD.bad8)).toBe(false)
    // the app goes on serving valid tenants
    expect(await title('u3', 'ShelfBooks')).toBe('Changed')
  })

  it('unsubscribe and a later re-subscribe of the same tenant start clean: no cached rows, fresh tracker, one initial sync', async () => {
    expect(await title('u2', 'LiveBooks')).toBe('Book 1')
    await lifecycle('unsubscribe', 't2')
    await waitFor(() => !existsSync(cacheFile('t2')), 't2 cache file removed')
    expect(existsSync(dbFile('t2'))).toBe(false)
    await lifecycle('subscribe', 't2')
    const fresh = await synced('t2')
    expect(fresh.statistics_created).toBe(BOOKS)
    expect((await runs('t2')).map(r => r.trigger)).toEqual(['event'])
    // its response cache entries went with the unsubscribe: the new tenant sees the remote as it is now
    expect(await title('u2', 'LiveBooks')).toBe('Changed')
    expect(await title('u2', 'ShelfBooks')).toBe('Changed')
    expect(shelf('t2', table => `SELECT title FROM ${table} WHERE ID = 1`)).toEqual([{ title: 'Changed' }])
  })

  it('a request without tenant (the provider user) uses the file of entityCache.defaultTenant', async () => {
    expect(existsSync(cacheFile('default'))).toBe(false)
    expect(await title('ops', 'ShelfBooks')).toBe('Changed')
    expect(existsSync(cacheFile('default'))).toBe(true)
    expect(filesBelow(cacheDir)).toEqual(['default', 't2', 't3'].map(t => path.join(t, 'cache.sqlite')))
  })
})
