/**
 * Event-driven replication with CAP's real multitenancy (issue 23): test/fixtures/mtx/app with
 * `@sap/cds-mtxs` in the same process, SQLite with one database file per tenant, tenants t1 and t2
 * subscribed through `cds.xt.DeploymentService` over HTTP, the real OData provider over HTTP.
 * `mtx.FollowedBooks` is a replica with `events` on local-messaging: a tenant's user calls
 * `MtxService.bookChanged`, which emits `Book.Changed` in that user's tenant context — as CAP's
 * messaging hands a tenant's message to its handler. The keys, the micro-batch, the tracker guard
 * and the statistics of that message live in that tenant's database only; one batcher per
 * pipeline and tenant, so a tenant whose source fails (ProgramService.failSourceFor) holds no
 * other tenant back. The tenants' databases are read with node:sqlite.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { type ProviderControl, type RunningApp } from '../helpers/apps'
import { sharedProvider } from '../helpers/shared-provider'
import { waitFor } from '../helpers/wait'
import { userClient } from '../helpers/users'
import { startMtxApp, tenantDatabases, tenantLifecycle } from '../helpers/mtx'

const USER: Record<string, string> = { t1: 'u1', t2: 'u2' }
const PIPELINE = 'mtx.FollowedBooks'
const BOOKS = 5

interface Book { ID: number; title: string }
interface Stats { received: number; applied: number; skipped: number; lagP95: number | null }
interface Pipeline { name: string; lastSync: string | null }

let provider: RunningApp & { control: ProviderControl }
let app: RunningApp
const dir = mkdtempSync(path.join(tmpdir(), 'mtx-events-'))
/** A tenant's database file and the rows of a query on it. */
const { dbFile, sql } = tenantDatabases(dir)
/** The keys waiting for their micro-batch in a tenant's database. */
const waiting = (tenant: string) => sql<{ recordKey: string }>(tenant, `SELECT recordKey FROM plugin_data_pipeline_PipelineEventKeys WHERE pipeline = '${PIPELINE}'`).map(r => r.recordKey)
/** Keys in the provider's own database (none: a tenant's message never lands there). */
const providerKeys = () => {
  if (!existsSync(dbFile('')) || !sql('', "SELECT name FROM sqlite_master WHERE name = 'plugin_data_pipeline_PipelineEventKeys'").length) return 0
  return sql<{ n: number }>('', 'SELECT count(*) AS n FROM plugin_data_pipeline_PipelineEventKeys')[0].n
}

const { call, get } = userClient(() => app.url)
const replica = async (tenant: string) => Object.fromEntries((await get<Book[]>(USER[tenant], '/odata/v4/mtx/FollowedBooks')).map(b => [b.ID, b.title]))
const changed = async (tenant: string, ID: number) => {
  const { status, body } = await call(USER[tenant], 'POST', '/odata/v4/mtx/bookChanged', { ID })
  if (status >= 300) throw new Error(`bookChanged as ${USER[tenant]}: ${status} ${JSON.stringify(body)}`)
}
const failSourceFor = async (tenants: string) => expect((await call('ops', 'POST', '/odata/v4/program/failSourceFor', { tenants })).status).toBeLessThan(300)
/** A tenant's event statistics of the pipeline, summed over its minutes (read by the tenant's own user). */
const stats = async (tenant: string): Promise<Stats> => {
  const rows = await get<Stats[]>(USER[tenant], `/pipeline/PipelineEventStats?$filter=pipeline eq '${PIPELINE}'`)
  return rows.reduce((sum, r) => ({ received: sum.received + r.received, applied: sum.applied + r.applied, skipped: sum.skipped + r.skipped, lagP95: r.lagP95 ?? sum.lagP95 }), { received: 0, applied: 0, skipped: 0, lagP95: null as number | null })
}
const lifecycle = tenantLifecycle(call)
/** Lines of the app's output since `mark` that name an event batch of the tenant. */
const batchLines = (mark: number, tenant: string) => app.output().slice(mark).split('\n').filter(line => line.includes(`(tenant '${tenant}')`) && /event (batch|keys)/.test(line))

beforeAll(async () => {
  provider = await sharedProvider()
  await provider.control.seed({ count: BOOKS })
  app = await startMtxApp(dir, provider.url)
  // side by side (subscribing is the setup here; multitenancy.test.ts subscribes one after another)
  await Promise.all(['t1', 't2'].map(tenant => lifecycle('subscribe', tenant)))
  // syncOnSubscribe: the replica holds the provider's books in both tenants
  for (const tenant of ['t1', 't2'])
    await waitFor(async () => (await get<Pipeline[]>(USER[tenant], '/pipeline/Pipelines')).find(p => p.name === PIPELINE)?.lastSync, `initial sync of ${tenant}`, 120_000)
}, 240_000)

afterAll(async () => {
  await app?.stop()
  await provider?.stop()
  rmSync(dir, { recursive: true, force: true })
})

describe('event-driven replication per tenant (@sap/cds-mtxs, SQLite database per tenant)', () => {
  it("a change event in t1's context is applied in t1's replica only, its keys and statistics in t1's database", async () => {
    const before = await replica('t2')
    expect(Object.keys(before)).toHaveLength(BOOKS)
    await provider.control.touch({ from: 2, title: 'changed for t1' })
    await changed('t1', 2)
    await waitFor(async () => (await replica('t1'))[2] === 'changed for t1', "t1's replica follows the event", 60_000)
    // t2 received nothing: its replica keeps the old title, its database saw no keys and no statistics
    expect(await replica('t2')).toEqual(before)
    expect(waiting('t2')).toEqual([])
    expect((await stats('t2')).received).toBe(0)
    await waitFor(async () => (await stats('t1')).applied === 1, "t1's statistics", 30_000)
    expect(await stats('t1')).toMatchObject({ received: 1, applied: 1, skipped: 0 })
    // the provider's own database holds no tenant's keys, and no drain tried it (its tracker tables live in the tenants')
    expect(providerKeys()).toBe(0)
    expect(app.output()).not.toMatch(/could not be drained/)
  })

  it("t2's source fails: its key waits and is retried in t2's database, while t1's next event is applied; once the source answers, t2's change arrives", async () => {
    await failSourceFor('t2')
    const mark = app.output().length
    await provider.control.touch({ from: 3, title: 'changed for t2' })
    await changed('t2', 3)
    // t2's micro-batch fails (the key fetch in t2's context) and its key stays in t2's database
    await waitFor(() => batchLines(mark, 't2').some(line => /failed|not applied/.test(line)), "t2's failing micro-batch", 60_000)
    expect(waiting('t2')).toEqual([JSON.stringify({ ID: 3 })])

    await provider.control.touch({ from: 4, title: 'changed again for t1' })
    await changed('t1', 4)
    await waitFor(async () => (await replica('t1'))[4] === 'changed again for t1', "t1's next event, while t2's batch fails", 60_000)
    // t2 still has not applied its key: t1 did not wait for it
    expect(waiting('t2')).toEqual([JSON.stringify({ ID: 3 })])
    expect((await replica('t2'))[3]).not.toBe('changed for t2')
    expect((await replica('t2'))[4]).not.toBe('changed again for t1')
    expect((await replica('t1'))[3]).not.toBe('changed for t2')
    // statistics per tenant, each in its own database
    await waitFor(async () => (await stats('t1')).applied === 2, "t1's statistics", 30_000)
    expect(await stats('t1')).toMatchObject({ received: 2, applied: 2, skipped: 0 })
    await waitFor(async () => (await stats('t2')).received === 1, "t2's statistics", 30_000)
    expect(await stats('t2')).toMatchObject({ received: 1, applied: 0 })

    // the source answers again: t2's own retry applies the change
    await failSourceFor('')
    await waitFor(async () => (await replica('t2'))[3] === 'changed for t2', "t2's change after its source recovered", 90_000)
    expect(waiting('t2')).toEqual([])
    await waitFor(async () => (await stats('t2')).applied === 1, "t2's applied count", 30_000)
  })

  it("an unsubscribed tenant's batcher stops and its messages are dropped with a warning; the others go on", async () => {
    await failSourceFor('t2')
    let mark = app.output().length
    await changed('t2', 5)
    await waitFor(() => batchLines(mark, 't2').some(line => /failed|not applied/.test(line)), "t2's failing micro-batch", 60_000)
    await lifecycle('unsubscribe', 't2')
    await waitFor(() => !existsSync(dbFile('t2')), 't2 database file removed', 60_000)
    mark = app.output().length
    // a message still arriving in t2's context is dropped, with a warning
    await changed('t2', 1)
    await waitFor(() => /\(tenant 't2'\): a message of 'Book.Changed' arrived after the tenant unsubscribed; dropped/.test(app.output().slice(mark)), 'the warning of the dropped message')
    // t1 goes on; t2's batcher tried nothing more (no batch of t2 since its unsubscribe) and left no database behind
    await provider.control.touch({ from: 1, title: 'changed for t1 after t2 left' })
    await changed('t1', 1)
    await waitFor(async () => (await replica('t1'))[1] === 'changed for t1 after t2 left', "t1's event after t2's unsubscribe", 60_000)
    expect(batchLines(mark, 't2')).toEqual([])
    expect(existsSync(dbFile('t2'))).toBe(false)
    await failSourceFor('')
  })
})
