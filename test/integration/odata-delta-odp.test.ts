/**
 * OData V2 delta tokens (issue 38, "ODP and OData V2 delta tokens"): `delta: { mode: 'odata-delta' }`
 * on an ODP service and on SAP Gateway's delta query.
 *
 * The provider (test/fixtures/odp-provider, a child process over HTTP) serves Z_ODP_SALES_SRV as SAP
 * generates it for the CDS extraction view C_SalesDocumentItemDEX (FactsOfCSDSLSDOCITMDX with
 * ODQ_CHANGEMODE/ODQ_ENTITYCNTR, DeltaLinksOf…, SubscribedTo…/TerminateDeltasFor…; each tracked
 * initial load opens a subscription) and Z_SALES_DELTA_SRV (Gateway delta query, `$deletedEntity`
 * tombstones); it records every request with its Prefer header. The consumer
 * (test/fixtures/odp-consumer, in-process) has their APIs from `cds import` of the EDMX.
 */
import cds from '@sap/cds'
import path from 'node:path'
import { FIXTURES, startApp, type RunningApp } from '../helpers/apps'
import { ql } from '../helpers/consumer'
import type DataPipelineService from '../../srv/data-pipeline'

const ODP = '/sap/opu/odata/sap/Z_ODP_SALES_SRV'
const GATEWAY = '/sap/opu/odata/sap/Z_SALES_DELTA_SRV'
const FACTS = 'FactsOfCSDSLSDOCITMDX'

let provider: RunningApp
let engine: DataPipelineService

beforeAll(async () => {
  provider = await startApp(path.join(FIXTURES, 'odp-provider'))
})
cds.test(path.join(FIXTURES, 'odp-consumer'))
beforeAll(async () => {
  const requires = cds.env.requires as unknown as Record<string, { credentials?: { url: string } }>
  requires.Z_ODP_SALES_SRV.credentials = { url: `${provider.url}${ODP}` }
  requires.Z_SALES_DELTA_SRV.credentials = { url: `${provider.url}${GATEWAY}` }
  engine = (await cds.connect.to('data-pipeline')) as unknown as DataPipelineService
})
afterAll(async () => {
  await provider?.stop()
})

async function control(action: string, body: object = {}): Promise<unknown> {
  const read = action === 'requests' || action === 'subscriptions'
  const response = await fetch(`${provider.url}/control/${action}`, read ? {} : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  if (!response.ok) throw new Error(`control ${action}: ${response.status}`)
  return response.json()
}
interface Request { method: string; url: string; prefer: string }
/** The requests to the services since `from` (the provider's $metadata reads left out). */
const requestsSince = async (from = 0) => ((await control('requests')) as Request[]).slice(from).filter(r => !r.url.endsWith('/$metadata'))
const requestCount = async () => ((await control('requests')) as Request[]).length
const subscriptions = async () => (await control('subscriptions')) as Array<{ id: number; active: boolean }>
const decoded = (r: Request) => decodeURIComponent(r.url)

async function run(name: string, mode?: string) {
  const { done } = await engine.execute(name, mode ? { mode } : {})
  return done
}
async function failingRun(name: string, mode?: string): Promise<Error> {
  const { done } = await engine.execute(name, mode ? { mode } : {})
  return done.then(() => { throw new Error('run unexpectedly succeeded') }, (e: Error) => e)
}
type Row = Record<string, unknown>
const replica = (entity: string) => ql.SELECT.from(`odp.${entity}`).orderBy('SALESDOCUMENT', 'SALESDOCUMENTITEM') as Promise<Row[]>
const tracker = (name: string) => engine.status(name) as Promise<Record<string, unknown>>
/** Row n of the provider's numbering: two items per sales document. */
const key = (n: number) => ({ SALESDOCUMENT: String(1000000 + Math.ceil(n / 2)).padStart(10, '0'), SALESDOCUMENTITEM: n % 2 ? '000010' : '000020' })
const keysOf = (rows: Row[]) => rows.map(r => `${String(r.SALESDOCUMENT)}/${String(r.SALESDOCUMENTITEM)}`)
const keyText = (n: number) => `${key(n).SALESDOCUMENT}/${key(n).SALESDOCUMENTITEM}`

const odpPipeline = (name: string, target: string, extra: object = {}) => ({
  name, source: { service: 'Z_ODP_SALES_SRV', entity: FACTS, batchSize: 10 }, target: { entity: `odp.${target}` },
  delta: { mode: 'odata-delta' as const }, retry: { maxRetries: 2, baseDelay: 5, maxDelay: 20 }, ...extra,
})

describe("delta.mode 'odata-delta' on an ODP service (OData V2)", () => {
  test('the initial load pages tracked and opens one subscription; later runs apply C/U/D; a quiet run is one request', async () => {
    await control('reset', { count: 25 })
    await engine.addPipeline(odpPipeline('odp-items', 'SalesDocItems'))

    const first = await run('odp-items')
    expect(first).toMatchObject({ status: 'completed', statistics: { created: 25, updated: 0, deleted: 0 } })
    let seen = await requestsSince()
    // three pages of at most 10 (odata.maxpagesize, __next), every one tracked
    expect(seen.map(r => r.url.replace(/\?.*/, ''))).toEqual(Array(3).fill(`${ODP}/${FACTS}`))
    for (const r of seen) expect(r.prefer).toBe('odata.track-changes, odata.maxpagesize=10')
    // the change mode is read whatever the target maps; no $orderby (ODP marks no field sortable)
    expect(decoded(seen[0])).toMatch(/\$select=[^&]*ODQ_CHANGEMODE/)
    expect(decoded(seen[0])).not.toContain('$orderby')
    expect(await subscriptions()).toEqual([expect.objectContaining({ id: 1, active: true })])
    // stored relative to the service root: no host, no port
    const link = String((await tracker('odp-items')).lastKey)
    expect(decodeURIComponent(link)).toMatch(new RegExp(`^/${FACTS}\\?!deltatoken='D\\d{14}_\\d{9}'$`))
    const rows = await replica('SalesDocItems')
    expect(rows).toHaveLength(25)
    // V2 wire values as CDS values; the delta queue's fields are not the replica's
    expect(rows[0]).toMatchObject({ ...key(1), CREATIONDATE: '2026-01-15' })
    expect(Number(rows[0].NETAMOUNT)).toBe(10)
    expect(Object.keys(rows[0]).filter(k => k.startsWith('ODQ_'))).toEqual([])

    // 2 changed (U), 10 created (C), 4 and 7 deleted (D): 14 rows, two pages
    await control('change', { ids: [1, 2, ...Array.from({ length: 10 }, (_, i) => 26 + i)] })
    await control('delete', { ids: [4, 7] })
    const before = await requestCount()
    const second = await run('odp-items')
    expect(second).toMatchObject({ status: 'completed', statistics: { created: 10, updated: 2, deleted: 2 } })
    seen = await requestsSince(before)
    expect(seen).toHaveLength(2)
    expect(decodeURIComponent(seen[0].url)).toBe(`${ODP}${decodeURIComponent(link)}`)
    expect(decoded(seen[1])).toContain('$skiptoken=')
    for (const r of seen) expect(r.prefer).toBe('odata.track-changes, odata.maxpagesize=10')
    const after = await replica('SalesDocItems')
    expect(after).toHaveLength(33)
    expect(keysOf(after)).not.toContain(keyText(4))
    expect(keysOf(after)).not.toContain(keyText(7))
    const changed = after.find(r => keysOf([r])[0] === keyText(2))!
    expect(changed).toMatchObject({ LASTCHANGEDATE: '2026-11-29' })
    expect(Number(changed.NETAMOUNT)).toBe(25)
    const next = String((await tracker('odp-items')).lastKey)
    expect(next).not.toBe(link)

    // nothing changed: one tracked request, nothing written
    const quiet = await run('odp-items')
    expect(quiet).toMatchObject({ status: 'completed', statistics: { created: 0, updated: 0, deleted: 0 } })
    const last = (await requestsSince()).slice(-1)[0]
    expect(decodeURIComponent(last.url)).toBe(`${ODP}${decodeURIComponent(next)}`)
    expect(last.prefer).toMatch(/odata\.track-changes/)
    expect(await tracker('odp-items')).toMatchObject({ status: 'idle', statistics_created: 35, statistics_updated: 2, statistics_deleted: 2 })
    // still the one subscription
    expect(await subscriptions()).toHaveLength(1)
  })

  test("deleted rows take the soft-delete policy: flagged with delta.deletedField of the target and deletedAction 'flag'", async () => {
    await control('reset', { count: 6 })
    await engine.addPipeline(odpPipeline('odp-flagged', 'SalesDocItemsFlagged', { delta: { mode: 'odata-delta', deletedField: 'deleted', deletedAction: 'flag' } }))
    expect(await run('odp-flagged')).toMatchObject({ status: 'completed', statistics: { created: 6 } })
    await control('delete', { ids: [3] })
    await control('change', { ids: [5] })
    expect(await run('odp-flagged')).toMatchObject({ status: 'completed', statistics: { created: 0, updated: 1, deleted: 1 } })
    // the flag field is the target's: never selected from the source
    for (const r of await requestsSince()) expect(decoded(r)).not.toMatch(/\$select=[^&]*deleted/)
    const rows = await replica('SalesDocItemsFlagged')
    expect(rows).toHaveLength(6)
    expect(rows.filter(r => r.deleted === true).map(r => keysOf([r])[0])).toEqual([keyText(3)])
  })

  test("an expired token fails the run naming the action, nothing written; mode 'full' ends the old subscription and opens one", async () => {
    await control('reset', { count: 5 })
    await cds.run(cds.ql.DELETE.from('odp.SalesDocItemsAgain'))
    await engine.addPipeline(odpPipeline('odp-expiring', 'SalesDocItemsAgain'))
    expect(await run('odp-expiring', 'full')).toMatchObject({ status: 'completed', statistics: { created: 5 } })
    const link = (await tracker('odp-expiring')).lastKey

    await control('change', { ids: [6] })
    await control('expire')
    const error = await failingRun('odp-expiring')
    expect(error.message).toMatch(new RegExp(`refused the stored delta link of '${FACTS}' \\(HTTP 400`))
    expect(error.message).toContain('has expired')
    expect(error.message).toContain("run mode 'full' to re-initialise")
    expect(error.message).not.toContain(provider.url.replace(/^https?:\/\//, ''))
    expect(await replica('SalesDocItemsAgain')).toHaveLength(5)
    expect(await tracker('odp-expiring')).toMatchObject({ status: 'failed', lastKey: link })

    const before = await requestCount()
    expect(await run('odp-expiring', 'full')).toMatchObject({ status: 'completed' })
    const seen = await requestsSince(before)
    // first the old subscription ends, then exactly one tracked initial load
    expect(seen.map(r => decoded(r).replace(/\?.*/, ''))).toEqual([`${ODP}/TerminateDeltasFor${FACTS}`, `${ODP}/${FACTS}`])
    expect(decoded(seen[1])).not.toContain('deltatoken')
    expect(seen[1].prefer).toMatch(/odata\.track-changes/)
    expect(await subscriptions()).toEqual([expect.objectContaining({ id: 1, active: false }), expect.objectContaining({ id: 2, active: true })])
    expect(await replica('SalesDocItemsAgain')).toHaveLength(6)
    await control('delete', { ids: [1] })
    expect(await run('odp-expiring')).toMatchObject({ status: 'completed', statistics: { created: 0, updated: 0, deleted: 1 } })

    // a flush drops the link and ends its subscription; the next run opens exactly one
    await engine.flushPipeline('odp-expiring')
    expect((await subscriptions()).filter(s => s.active)).toEqual([])
    expect(await run('odp-expiring')).toMatchObject({ status: 'completed', statistics: { created: 5 } })
    expect((await subscriptions()).filter(s => s.active)).toEqual([expect.objectContaining({ id: 3 })])
  })

  test('a failed initial load opens no second subscription: 503 is retried, a lost answer is not and its subscription ends', async () => {
    await control('reset', { count: 3 })
    await engine.addPipeline(odpPipeline('odp-faults', 'SalesDocItemsAgain'))
    await cds.run(cds.ql.DELETE.from('odp.SalesDocItemsAgain'))
    const initial = `${FACTS}\\?(?!.*deltatoken)(?!.*skiptoken)`
    // unavailable: the provider served nothing, the retry is the one initial load
    await control('fault', { match: initial, status: 503, count: 1 })
    expect(await run('odp-faults')).toMatchObject({ status: 'completed', statistics: { created: 3 } })
    expect((await requestsSince()).filter(r => new RegExp(initial).test(decoded(r)))).toHaveLength(2)
    expect(await subscriptions()).toEqual([expect.objectContaining({ active: true })])

    // served, but the answer was lost (500): not retried; the subscription it may have opened ends
    // (the run re-initialises: it ends the stored link's subscription first)
    await control('reset', { count: 3 })
    await control('fault', { match: initial, status: 500, count: 1, served: true })
    const error = await failingRun('odp-faults', 'full')
    expect(error.message).toContain('Injected fault 500')
    const seen = await requestsSince()
    expect(seen.map(r => decoded(r).replace(/\?.*/, ''))).toEqual([`${ODP}/TerminateDeltasFor${FACTS}`, `${ODP}/${FACTS}`, `${ODP}/TerminateDeltasFor${FACTS}`])
    expect(await subscriptions()).toEqual([expect.objectContaining({ active: false })])
    expect(await run('odp-faults', 'full')).toMatchObject({ status: 'completed' })
    expect((await subscriptions()).filter(s => s.active)).toHaveLength(1)
  })
})

describe("delta.mode 'odata-delta' on SAP Gateway's delta query (OData V2)", () => {
  test('!deltatoken links are followed and $deletedEntity tombstones delete by key', async () => {
    await control('reset', { orders: 4 })
    await engine.addPipeline({ name: 'gw-orders', source: { service: 'Z_SALES_DELTA_SRV', entity: 'SalesOrderSet', batchSize: 10 }, target: { entity: 'odp.SalesOrders' }, delta: { mode: 'odata-delta' } })
    expect(await run('gw-orders')).toMatchObject({ status: 'completed', statistics: { created: 4 } })
    expect(decodeURIComponent(String((await tracker('gw-orders')).lastKey))).toMatch(/^\/SalesOrderSet\?!deltatoken='\d+'$/)

    await control('gateway/change', { ids: [2, 5] })
    await control('gateway/delete', { ids: [3] })
    const before = await requestCount()
    expect(await run('gw-orders')).toMatchObject({ status: 'completed', statistics: { created: 1, updated: 1, deleted: 1 } })
    const [read] = await requestsSince(before)
    expect(decoded(read)).toContain('!deltatoken=')
    expect(read.prefer).toMatch(/odata\.track-changes/)
    const orders = (await ql.SELECT.from('odp.SalesOrders').orderBy('SalesOrderID')) as Row[]
    expect(orders.map(o => o.SalesOrderID)).toEqual(['0500000001', '0500000002', '0500000004', '0500000005'])
    expect(orders[1]).toMatchObject({ CustomerName: 'Customer 2 (changed)' })
  })
})

describe('@federation.replicate on the imported ODP service', () => {
  test('the replica table leaves the delta queue fields out unless the projection maps them; its pipeline reads by delta token', async () => {
    const columns = async (table: string) => ((await cds.run(`PRAGMA table_info(${table})`)) as Array<{ name: string }>).map(c => c.name)
    const plain = await columns('odp_SalesDocs')
    expect(plain).toContain('NETAMOUNT')
    expect(plain.filter(c => c.startsWith('ODQ_'))).toEqual([])
    const mapped = await columns('odp_SalesDocChanges')
    expect(mapped).toContain('changeMode')
    expect(mapped.filter(c => c.startsWith('ODQ_'))).toEqual([])

    await control('reset', { count: 4 })
    expect(await run('odp.SalesDocs')).toMatchObject({ status: 'completed', statistics: { created: 4 } })
    expect(await run('odp.SalesDocChanges')).toMatchObject({ status: 'completed', statistics: { created: 4 } })
    await control('change', { ids: [2] })
    await control('delete', { ids: [4] })
    expect(await run('odp.SalesDocs')).toMatchObject({ status: 'completed', statistics: { updated: 1, deleted: 1 } })
    expect(await run('odp.SalesDocChanges')).toMatchObject({ status: 'completed', statistics: { updated: 1, deleted: 1 } })
    const changes = (await ql.SELECT.from('odp.SalesDocChanges').orderBy('SALESDOCUMENT', 'SALESDOCUMENTITEM')) as Row[]
    expect(changes.map(r => r.changeMode)).toEqual(['', 'U', ''])
    expect(await subscriptions()).toHaveLength(2) // one per replica pipeline
  })
})
