/**
 * OData V4 standard delta links (issue 38, first slice): `delta: { mode: 'odata-delta' }`.
 *
 * The provider (test/fixtures/changes-provider, a child process over HTTP) tracks changes of
 * Products as OData 4.01 describes it: `Prefer: odata.track-changes`, `odata.maxpagesize` paging
 * with `@odata.nextLink`, `@odata.deltaLink` on the last page, `@removed` entries (by `@id` and by
 * key field), 410 Gone for an expired token; it records the URL and Prefer header of every read.
 * The consumer (test/fixtures/changes-consumer, in-process) imports its API with `cds import`.
 */
import cds from '@sap/cds'
import path from 'node:path'
import { createRequire } from 'node:module'
import { FIXTURES, ROOT, startApp, type RunningApp } from '../helpers/apps'
import { ql } from '../helpers/consumer'
import type DataPipelineService from '../../srv/data-pipeline'

let provider: RunningApp
let engine: DataPipelineService

beforeAll(async () => {
  provider = await startApp(path.join(FIXTURES, 'changes-provider'))
})
cds.test(path.join(FIXTURES, 'changes-consumer'))
beforeAll(async () => {
  const requires = cds.env.requires as unknown as Record<string, { credentials?: { url: string } }>
  requires.Changes.credentials = { url: `${provider.url}/odata/v4/changes` }
  engine = (await cds.connect.to('data-pipeline')) as unknown as DataPipelineService
})
afterAll(async () => {
  await provider?.stop()
})

async function control(action: string, body: object = {}): Promise<unknown> {
  const response = await fetch(`${provider.url}/control/${action}`, action === 'requests' ? {} : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  if (!response.ok) throw new Error(`control ${action}: ${response.status}`)
  return response.json()
}
const requests = async () => (await control('requests')) as Array<{ url: string; prefer: string }>

async function run(name: string, mode?: string) {
  const { done } = await engine.execute(name, mode ? { mode } : {})
  return done
}
async function failingRun(name: string): Promise<Error> {
  const { done } = await engine.execute(name)
  return done.then(() => { throw new Error('run unexpectedly succeeded') }, (e: Error) => e)
}
const replica = (entity: string) => ql.SELECT.from(`changes.${entity}`).orderBy('ID') as Promise<Array<{ ID: number; name: string; price: number | string }>>
const tracker = (name: string) => engine.status(name) as Promise<Record<string, unknown>>

const pipeline = (name: string, entity: string) => ({ name, source: { service: 'Changes', entity: 'Products', batchSize: 10 }, target: { entity: `changes.${entity}` }, delta: { mode: 'odata-delta' as const } })

describe("delta.mode 'odata-delta' over HTTP", () => {
  test('first run reads everything tracked and stores the link; later runs apply exactly the changes and deletes', async () => {
    await control('reset', { count: 25 })
    await engine.addPipeline(pipeline('products', 'Products'))

    const first = await run('products')
    expect(first).toMatchObject({ status: 'completed', statistics: { created: 25, updated: 0, deleted: 0 } })
    expect(await replica('Products')).toHaveLength(25)
    let seen = await requests()
    // three pages of at most 10 (odata.maxpagesize), each tracked
    expect(seen.map(r => r.url.replace(/\?.*/, ''))).toEqual(Array(3).fill('/odata/v4/changes/Products'))
    for (const r of seen) expect(r.prefer).toMatch(/odata\.track-changes/)
    for (const r of seen) expect(r.prefer).toMatch(/odata\.maxpagesize=10/)
    // stored relative to the service root: no host, no port
    expect((await tracker('products')).lastKey).toBe('/Products?$deltatoken=0')

    // 3 changed, 10 created, 4 and 7 deleted (4 reported by @id, 7 by its key field): 15 entries, two pages
    await control('change', { ids: [1, 2, 3, ...Array.from({ length: 10 }, (_, i) => 26 + i)] })
    await control('delete', { ids: [4, 7] })
    const before = (await requests()).length
    const second = await run('products')
    expect(second).toMatchObject({ status: 'completed', statistics: { created: 10, updated: 3, deleted: 2 } })
    seen = (await requests()).slice(before)
    expect(seen).toHaveLength(2)
    expect(seen[0].url).toBe('/odata/v4/changes/Products?$deltatoken=0')
    expect(seen[1].url).toContain('$skiptoken=10')
    for (const r of seen) expect(r.prefer).toMatch(/odata\.track-changes/)
    const rows = await replica('Products')
    expect(rows).toHaveLength(33)
    expect(rows.map(r => r.ID)).not.toContain(4)
    expect(rows.map(r => r.ID)).not.toContain(7)
    expect(rows.find(r => r.ID === 2)).toMatchObject({ name: 'Product 2 changed' })
    expect((await tracker('products')).lastKey).toBe('/Products?$deltatoken=2')

    // nothing changed: one request, nothing written
    const quiet = await run('products')
    expect(quiet).toMatchObject({ status: 'completed', statistics: { created: 0, updated: 0, deleted: 0 } })
    expect((await requests()).slice(-1)[0]).toMatchObject({ url: '/odata/v4/changes/Products?$deltatoken=2', prefer: expect.stringMatching(/odata\.track-changes/) })
    const status = await tracker('products')
    expect(status).toMatchObject({ status: 'idle', statistics_created: 35, statistics_updated: 3, statistics_deleted: 2 })
  })

  test('a refused link fails the run naming the reason and the action; mode full re-initialises', async () => {
    await control('reset', { count: 5 })
    await engine.addPipeline(pipeline('expiring', 'ProductsAgain'))
    await cds.run(cds.ql.DELETE.from('changes.ProductsAgain'))
    expect(await run('expiring', 'full')).toMatchObject({ status: 'completed' })
    const link = (await tracker('expiring')).lastKey
    expect(link).toBe('/Products?$deltatoken=0')

    await control('change', { ids: [6] })
    await control('expire')
    const error = await failingRun('expiring')
    expect(error.message).toMatch(/refused the stored delta link of 'Products' \(410 Gone/)
    expect(error.message).toContain("run mode 'full' to re-initialise")
    expect(error.message).not.toContain(provider.url.replace(/^https?:\/\//, ''))
    // nothing copied silently, the link kept
    expect(await replica('ProductsAgain')).toHaveLength(5)
    expect(await tracker('expiring')).toMatchObject({ status: 'failed', lastKey: link })

    const before = (await requests()).length
    expect(await run('expiring', 'full')).toMatchObject({ status: 'completed' })
    const reads = (await requests()).slice(before)
    expect(reads).toHaveLength(1)
    expect(reads[0].url).not.toContain('$deltatoken')
    expect(reads[0].prefer).toMatch(/odata\.track-changes/)
    expect(await replica('ProductsAgain')).toHaveLength(6)
    expect((await tracker('expiring')).lastKey).toBe('/Products?$deltatoken=1')
    await control('delete', { ids: [1] })
    expect(await run('expiring')).toMatchObject({ status: 'completed', statistics: { created: 0, updated: 0, deleted: 1 } })
  })

  test('a run whose final tracker update fails keeps the old link: the next run re-reads the changes without duplicates', async () => {
    await control('reset', { count: 8 })
    await cds.run(cds.ql.DELETE.from('changes.ProductsAgain'))
    await engine.addPipeline(pipeline('crashing', 'ProductsAgain'))
    expect(await run('crashing', 'full')).toMatchObject({ status: 'completed', statistics: { created: 8 } })
    expect((await tracker('crashing')).lastKey).toBe('/Products?$deltatoken=0')

    await control('change', { ids: [2, 9] })
    await control('delete', { ids: [3] })
    // the engine as the app loaded it (dist/): its final tracker update fails once, after the batches committed
    const { Tracker } = createRequire(path.join(ROOT, 'package.json'))(path.join(ROOT, 'dist/lib/engine/tracker/index.js')) as { Tracker: { prototype: { finishSuccess: (...args: unknown[]) => Promise<boolean> } } }
    const original = Tracker.prototype.finishSuccess
    Tracker.prototype.finishSuccess = async function () {
      Tracker.prototype.finishSuccess = original
      throw new Error('simulated crash before the delta link was stored')
    }
    const error = await failingRun('crashing')
    expect(error.message).toContain('simulated crash')
    expect(Tracker.prototype.finishSuccess).toBe(original)
    // the writes committed, the link did not move
    expect((await replica('ProductsAgain')).map(r => r.ID)).toEqual([1, 2, 4, 5, 6, 7, 8, 9])
    expect((await tracker('crashing')).lastKey).toBe('/Products?$deltatoken=0')

    const again = await run('crashing')
    expect(again.status).toBe('completed')
    expect(again.statistics.created).toBe(0) // re-delivered rows are upserts of what is there
    expect((await requests()).slice(-1)[0].url).toBe('/odata/v4/changes/Products?$deltatoken=0')
    const rows = await replica('ProductsAgain')
    expect(rows.map(r => r.ID)).toEqual([1, 2, 4, 5, 6, 7, 8, 9])
    expect((await tracker('crashing')).lastKey).toBe('/Products?$deltatoken=2')
  })

  test.each([
    ['a database source', { source: { service: 'db', entity: 'changes.Products' } }],
    ['a watermark field beside it', { source: { service: 'Changes', entity: 'Products' }, delta: { mode: 'odata-delta', field: 'name' } }],
  ])('rejects odata-delta with %s, naming delta.mode', async (_label, config) => {
    await expect(engine.addPipeline({ name: `invalid-${_label.length}`, target: { entity: 'changes.ProductsAgain' }, delta: { mode: 'odata-delta' }, ...config } as never))
      .rejects.toMatchObject({ code: 'INVALID_CONFIG', target: 'delta.mode', message: expect.stringContaining('delta.mode') })
  })
})
