/**
 * Deletes in delta mode (DESIGN "Deletes"; docs/concepts/deletes.md) against a real
 * provider process (test/fixtures/provider, entity Items with `isDeleted`/`deletedAt`, served
 * over OData V4, V2 and HCQL) and a plain HTTP server for REST: rows soft-deleted or deleted at
 * the provider between runs leave the replica, counted as `deleted`; a sweep reads keys only in
 * bounded pages, stays within its origin, and never wipes a replica because the source answered
 * empty or failed midway. Consumer: test/fixtures/deletes (one target table per test).
 */
import cds from '@sap/cds'
import http from 'node:http'
import path from 'node:path'
import type { AddressInfo } from 'node:net'
import { FIXTURES, type ProviderControl, type RunningApp } from '../helpers/apps'
import { sharedProvider } from '../helpers/shared-provider'
import { ql, rowCount } from '../helpers/consumer'
import type DataPipelineService from '../../srv/data-pipeline'

const PIPELINES = 'plugin.data_pipeline.Pipelines'
const RUNS = 'plugin.data_pipeline.PipelineRuns'
const T0 = '2026-01-01T00:00:00.000Z'
const T1 = '2026-01-02T00:00:00.000Z'

let provider: RunningApp & { control: ProviderControl }
let engine: DataPipelineService

// ---- a REST provider with a key listing (plain HTTP on loopback) ----------------------------
const restItems = new Map<number, { ID: number; name: string; modifiedAt: string }>()
const restRequests: string[] = []
const restServer = http.createServer((req, res) => {
  const url = new URL(req.url!, 'http://x')
  restRequests.push(`${url.pathname}${url.search}`)
  const offset = Number(url.searchParams.get('offset') ?? 0)
  const limit = Number(url.searchParams.get('limit') ?? 100)
  const sorted = [...restItems.values()].sort((a, b) => a.ID - b.ID)
  const page = sorted.slice(offset, offset + limit)
  res.writeHead(200, { 'content-type': 'application/json' })
  if (url.pathname === '/items') res.end(JSON.stringify(page))
  else if (url.pathname === '/item-keys') res.end(JSON.stringify({ keys: page.map(item => ({ ID: item.ID })) }))
  else res.end('[]')
})

beforeAll(async () => {
  provider = await sharedProvider()
  await new Promise<void>(resolve => restServer.listen(0, '127.0.0.1', () => resolve()))
})
cds.test(path.join(FIXTURES, 'deletes'))
beforeAll(async () => {
  const requires = cds.env.requires as unknown as Record<string, { credentials?: { url: string } }>
  requires.Provider.credentials = { url: `${provider.url}/odata/v4/catalog` }
  requires.ProviderV2.credentials = { url: `${provider.url}/odata/v2/catalog` }
  requires.CatalogAPI.credentials = { url: `${provider.url}/hcql/catalog` }
  requires.Rest.credentials = { url: `http://127.0.0.1:${(restServer.address() as AddressInfo).port}` }
  engine = (await cds.connect.to('data-pipeline')) as unknown as DataPipelineService
})
afterAll(async () => {
  await provider?.stop()
  await new Promise<void>(resolve => restServer.close(() => resolve()))
})
beforeEach(async () => {
  await provider.control.reset()
})

async function control(action: string, data: object): Promise<void> {
  const response = await fetch(`${provider.url}/odata/v4/control/${action}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(data) })
  if (!response.ok) throw new Error(`${action}: ${response.status} ${await response.text()}`)
}
const seedItems = (from: number, count: number, modifiedAt = T0) => control('seedItems', { from, count, modifiedAt })
const removeItems = (from: number, count = 1) => control('removeItems', { from, count })
const softDeleteItems = (from: number, count = 1, at = T1) => control('softDeleteItems', { from, count, at })
const hideItems = (on: boolean) => control('hideItems', { on })

async function run(name: string) {
  const { done } = await engine.execute(name)
  return done
}

async function failingRun(name: string): Promise<{ error: Error; runId: string }> {
  const { done, runId } = await engine.execute(name)
  const error = await done.then(() => { throw new Error('run unexpectedly succeeded') }, (e: Error) => e)
  return { error, runId }
}

const ids = async (entity: string, where?: object): Promise<number[]> =>
  ((await (where ? ql.SELECT.from(entity).columns('ID').where(where) : ql.SELECT.from(entity).columns('ID')).orderBy('ID')) as Array<{ ID: number }>).map(r => r.ID)
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)
const tracker = async (name: string) => (await ql.SELECT.one.from(PIPELINES).where({ name })) as Record<string, any>
const lastSweep = async (name: string) => JSON.parse((await tracker(name)).lastSweep ?? 'null')
/** Provider requests since `before` whose URL contains `part`. */
async function urlsSince(before: number, part: string): Promise<string[]> {
  const { requests, urls } = await provider.control.stats()
  const count = requests - before
  return (count > 0 ? urls.slice(-count) : []).filter(url => url.includes(part))
}

const SOURCES = [
  { kind: 'OData V4', service: 'Provider', soft: 'deletes.SoftV4', sweep: 'deletes.SweepV4' },
  { kind: 'OData V2', service: 'ProviderV2', soft: 'deletes.SoftV2', sweep: 'deletes.SweepV2' },
  { kind: 'HCQL', service: 'CatalogAPI', soft: 'deletes.SoftHcql', sweep: 'deletes.SweepHcql' },
] as const

describe('soft-delete field (delta.deletedField)', () => {
  for (const { kind, service, soft } of SOURCES) {
    test(`${kind}: rows read with isDeleted = true are deleted locally and counted once`, async () => {
      const name = `soft-${service}`
      await engine.addPipeline({ name, source: { service, entity: 'Items', batchSize: 10 }, target: { entity: soft }, delta: { field: 'modifiedAt', deletedField: 'isDeleted' } })
      await seedItems(1, 20)
      expect(await run(name)).toMatchObject({ statistics: { created: 20, updated: 0, deleted: 0 } })
      await softDeleteItems(5, 5)
      expect(await run(name)).toMatchObject({ status: 'completed', statistics: { created: 0, updated: 0, deleted: 5 } })
      expect(await ids(soft)).toEqual([...range(1, 4), ...range(10, 20)])
      // the next run re-reads the deleted rows at the watermark: nothing more to delete, nothing counted
      expect(await run(name)).toMatchObject({ statistics: { created: 0, updated: 0, deleted: 0 } })
      expect(await tracker(name)).toMatchObject({ statistics_created: 20, statistics_deleted: 5 })
    })
  }

  test('a deletion timestamp (non-null = deleted) works the same way', async () => {
    await engine.addPipeline({ name: 'soft-stamp', source: { service: 'Provider', entity: 'Items' }, target: { entity: 'deletes.SoftStamp' }, delta: { field: 'modifiedAt', deletedField: 'deletedAt' } })
    await seedItems(1, 10)
    await run('soft-stamp')
    await softDeleteItems(3, 2, T1)
    expect(await run('soft-stamp')).toMatchObject({ statistics: { deleted: 2 } })
    expect(await ids('deletes.SoftStamp')).toEqual([1, 2, ...range(5, 10)])
  })

  test("deletedAction 'flag' keeps the rows with the field set, counted as deleted once", async () => {
    await engine.addPipeline({ name: 'soft-flag', source: { service: 'Provider', entity: 'Items' }, target: { entity: 'deletes.FlagV4' }, delta: { field: 'modifiedAt', deletedField: 'isDeleted', deletedAction: 'flag' } })
    await seedItems(1, 10)
    await run('soft-flag')
    await softDeleteItems(4, 3)
    expect(await run('soft-flag')).toMatchObject({ statistics: { created: 0, updated: 0, deleted: 3 } })
    expect(await rowCount('deletes.FlagV4')).toBe(10)
    expect(await ids('deletes.FlagV4', { isDeleted: true })).toEqual([4, 5, 6])
    expect(await run('soft-flag')).toMatchObject({ statistics: { deleted: 0 } })
  })

  test('invalid settings are rejected naming the key', async () => {
    await expect(engine.addPipeline({ name: 'bad-1', source: { service: 'Provider', entity: 'Items' }, target: { entity: 'deletes.SoftV4' }, delta: { deletedField: '' } }))
      .rejects.toThrow(/delta\.deletedField/)
    await expect(engine.addPipeline({ name: 'bad-2', source: { service: 'Provider', entity: 'Items' }, target: { entity: 'deletes.SoftV4' }, delta: { deletedField: 'isDeleted', deletedAction: 'hide' as never } }))
      .rejects.toThrow(/delta\.deletedAction/)
    await expect(engine.addPipeline({ name: 'bad-3', source: { service: 'Provider', entity: 'Items' }, target: { entity: 'deletes.SoftV4' }, deletes: { sweep: 'sometimes' as never } }))
      .rejects.toThrow(/deletes\.sweep/)
    await expect(engine.addPipeline({ name: 'bad-4', source: { service: 'Provider', entity: 'Items' }, target: { entity: 'deletes.SoftV4' }, deletes: { sweep: 'always', maxShare: 2 } }))
      .rejects.toThrow(/deletes\.maxShare/)
    await expect(engine.addPipeline({ name: 'bad-5', source: { service: 'Rest' }, rest: { path: '/items', pagination: { type: 'offset', pageSize: 10 } }, target: { entity: 'deletes.SweepRest' }, deletes: { sweep: 'always' } }))
      .rejects.toThrow(/rest\.keys/)
  })
})

describe('key reconciliation sweep (deletes.sweep)', () => {
  for (const { kind, service, sweep } of SOURCES) {
    test(`${kind}: rows deleted at the provider are deleted locally, also after the source's last key`, async () => {
      const name = `sweep-${service}`
      await engine.addPipeline({ name, source: { service, entity: 'Items', batchSize: 10 }, target: { entity: sweep }, delta: { field: 'modifiedAt' }, deletes: { sweep: 'always' } })
      await seedItems(1, 30)
      expect(await run(name)).toMatchObject({ statistics: { created: 30, deleted: 0 } })
      await removeItems(10, 5)
      await removeItems(30) // the tail: no source key after it
      expect(await run(name)).toMatchObject({ status: 'completed', statistics: { created: 0, updated: 0, deleted: 6 } })
      expect(await ids(sweep)).toEqual([...range(1, 9), ...range(15, 29)])
      expect(await lastSweep(name)).toMatchObject({ status: 'completed', deleted: 6, sourceKeys: 24, targetKeys: 30, rows: 30, runsSince: 0 })
      expect(await tracker(name)).toMatchObject({ statistics_deleted: 6 })
      const runs = await ql.SELECT.from(RUNS).where({ pipeline_name: name }).orderBy('startTime')
      expect(runs.map((r: any) => r.statistics_deleted)).toEqual([0, 6])
    })
  }

  test('CQN source (a local table): deleted source rows leave the copy', async () => {
    await ql.INSERT.into('deletes.LocalItems').entries(range(1, 12).map(ID => ({ ID, name: `L${ID}`, modifiedAt: T0 })))
    await engine.addPipeline({ name: 'sweep-cqn', source: { entity: 'deletes.LocalItems', batchSize: 5 }, target: { entity: 'deletes.SweepCqn' }, delta: { field: 'modifiedAt' }, deletes: { sweep: 'always' } })
    await run('sweep-cqn')
    await ql.DELETE.from('deletes.LocalItems').where({ ID: { in: [1, 6, 12] } })
    expect(await run('sweep-cqn')).toMatchObject({ statistics: { deleted: 3 } })
    expect(await ids('deletes.SweepCqn')).toEqual([2, 3, 4, 5, 7, 8, 9, 10, 11])
  })

  test('a row added at the source while its keys are listed (parallel): no key of the replica goes unlisted, none is deleted', async () => {
    // keys 10, 20, …, 200 in two key ranges of two pages of 5; before the first range's second page,
    // 55 is added: a range that stopped at its count (10) would end at 90 and delete the replica's 100
    await ql.INSERT.into('deletes.LocalGrowing').entries(range(1, 20).map(k => ({ ID: k * 10, name: `G${k}`, modifiedAt: T0 })))
    await engine.addPipeline({ name: 'sweep-growing', parallel: 2, source: { entity: 'deletes.LocalGrowing', batchSize: 5 }, target: { entity: 'deletes.SweepGrowing' }, delta: { field: 'modifiedAt' }, deletes: { sweep: 'always' } })
    await run('sweep-growing')
    const db = await cds.connect.to('db')
    let added = false
    // as the first range (keys below 110) asks for its second page (keys after 50)
    db.before('READ', 'deletes.LocalGrowing', async function (this: typeof db, req) {
      const where = JSON.stringify((req.query as { SELECT?: { where?: unknown } }).SELECT?.where ?? [])
      if (added || !where.includes('"<"') || !where.includes('{"val":50}')) return
      added = true
      await this.run(ql.INSERT.into('deletes.LocalGrowing').entries({ ID: 55, name: 'G5.5', modifiedAt: T0 }))
    })
    expect(await run('sweep-growing')).toMatchObject({ status: 'completed', statistics: { deleted: 0 } })
    expect(added).toBe(true)
    expect(await ids('deletes.SweepGrowing')).toEqual(range(1, 20).map(k => k * 10))
  })

  test('REST source with a key listing (rest.keys)', async () => {
    restItems.clear()
    for (const ID of range(1, 25)) restItems.set(ID, { ID, name: `R${ID}`, modifiedAt: T0 })
    await engine.addPipeline({
      name: 'sweep-rest', source: { service: 'Rest' }, target: { entity: 'deletes.SweepRest' }, delta: { field: 'modifiedAt' },
      rest: { path: '/items', pagination: { type: 'offset', pageSize: 10 }, keys: { path: '/item-keys', dataPath: 'keys' } },
      deletes: { sweep: 'always' },
    })
    await run('sweep-rest')
    for (const ID of [2, 3, 20, 25]) restItems.delete(ID)
    restRequests.length = 0
    expect(await run('sweep-rest')).toMatchObject({ statistics: { deleted: 4 } })
    expect(await ids('deletes.SweepRest')).toEqual(range(1, 24).filter(id => ![2, 3, 20].includes(id)))
    const keyReads = restRequests.filter(url => url.startsWith('/item-keys'))
    // paged like the collection: offsets advance by the keys received, until an empty page
    expect(keyReads).toEqual(['/item-keys?offset=0&limit=10', '/item-keys?offset=10&limit=10', '/item-keys?offset=20&limit=10', '/item-keys?offset=21&limit=10'])
  })

  test('renamed keys (a consumption view: ItemID ← ID)', async () => {
    await engine.addPipeline({ name: 'sweep-renamed', source: { service: 'Provider', entity: 'Items' }, target: { entity: 'deletes.SweepRenamed' }, deletes: { sweep: 'always' } })
    await seedItems(1, 8)
    await run('sweep-renamed')
    await removeItems(1)
    await removeItems(5)
    expect(await run('sweep-renamed')).toMatchObject({ statistics: { deleted: 2 } })
    const rows = await ql.SELECT.from('deletes.SweepRenamed').columns('ItemID').orderBy('ItemID')
    expect(rows.map((r: any) => r.ItemID)).toEqual([2, 3, 4, 6, 7, 8])
  })

  test("fan-in: a sweep deletes only its own origin's rows", async () => {
    await engine.addPipeline({ name: 'sweep-north', source: { service: 'Provider', entity: 'Items', origin: 'north' }, target: { entity: 'deletes.SweepFanin' }, delta: { field: 'modifiedAt' }, deletes: { sweep: 'always' } })
    // another origin's rows, some with keys the provider does not have (or no longer has)
    await ql.INSERT.into('deletes.SweepFanin').entries([1, 2, 3, 50, 99].map(ID => ({ source: 'south', ID, name: `S${ID}` })))
    await seedItems(1, 10)
    await run('sweep-north')
    await removeItems(2, 2)
    expect(await run('sweep-north')).toMatchObject({ statistics: { deleted: 2 } })
    expect(await ids('deletes.SweepFanin', { source: 'north' })).toEqual([1, ...range(4, 10)])
    expect(await ids('deletes.SweepFanin', { source: 'south' })).toEqual([1, 2, 3, 50, 99])
    expect(await lastSweep('sweep-north')).toMatchObject({ rows: 10, targetKeys: 10 })
  })

  test('{ every: 2 } sweeps every second delta run', async () => {
    await engine.addPipeline({ name: 'sweep-every', source: { service: 'Provider', entity: 'Items' }, target: { entity: 'deletes.SweepEvery' }, delta: { mode: 'key' }, deletes: { sweep: { every: 2 } } })
    await seedItems(1, 10)
    await run('sweep-every') // run 1: no sweep
    expect(await lastSweep('sweep-every')).toEqual({ runsSince: 1 })
    await removeItems(1)
    expect(await run('sweep-every')).toMatchObject({ statistics: { deleted: 1 } }) // run 2: sweep
    await removeItems(2)
    expect(await run('sweep-every')).toMatchObject({ statistics: { deleted: 0 } }) // run 3
    expect(await rowCount('deletes.SweepEvery')).toBe(9)
    expect(await run('sweep-every')).toMatchObject({ statistics: { deleted: 1 } }) // run 4
    expect(await ids('deletes.SweepEvery')).toEqual(range(3, 10))
  })

  test('maxShare guard: a provider that suddenly answers nothing wipes nothing, the run fails naming the setting', async () => {
    await engine.addPipeline({ name: 'sweep-guard', source: { service: 'Provider', entity: 'Items' }, target: { entity: 'deletes.SweepGuard' }, delta: { mode: 'key' }, deletes: { sweep: 'always' } })
    await seedItems(1, 20)
    await run('sweep-guard')
    await hideItems(true)
    const { error, runId } = await failingRun('sweep-guard')
    expect(error.message).toMatch(/deletes\.maxShare = 0\.5.*Nothing was deleted.*deletes\.force/)
    expect(await rowCount('deletes.SweepGuard')).toBe(20)
    expect(await lastSweep('sweep-guard')).toMatchObject({ status: 'failed', deleted: 0, runId, error: expect.stringMatching(/maxShare/) })
    const failed = await ql.SELECT.one.from(RUNS).where({ ID: runId })
    expect(failed).toMatchObject({ status: 'failed', statistics_deleted: 0 })
    expect(JSON.parse(failed.error).message).toMatch(/deletes\.maxShare/)
    // back to normal: the next sweep deletes nothing (all keys are there)
    await hideItems(false)
    expect(await run('sweep-guard')).toMatchObject({ status: 'completed', statistics: { deleted: 0 } })
    // force: a known mass deletion at the source goes through
    await engine.addPipeline({ name: 'sweep-guard-forced', source: { service: 'Provider', entity: 'Items' }, target: { entity: 'deletes.SweepGuard' }, delta: { mode: 'key' }, deletes: { sweep: 'always', force: true } })
    await removeItems(1, 15)
    expect(await run('sweep-guard-forced')).toMatchObject({ statistics: { deleted: 15 } })
    expect(await rowCount('deletes.SweepGuard')).toBe(5)
  })

  test('a source error mid-sweep rolls back the deletes already made; the next run completes them', async () => {
    await engine.addPipeline({ name: 'sweep-fault', source: { service: 'Provider', entity: 'Items', batchSize: 5 }, target: { entity: 'deletes.SweepFault' }, delta: { mode: 'key' }, deletes: { sweep: 'always' }, retry: { maxRetries: 0 } })
    await seedItems(1, 30)
    await run('sweep-fault')
    // the first key page (1, 7, 8, 9, 10) proves 2..6 missing: a full chunk of 5, deleted at once
    await removeItems(2, 5)
    // request 1: the delta read (ID > 30); 2: the first key page; 3: the second key page fails
    await provider.control.faults({ status: 500, count: 5, after: 2 })
    const { error } = await failingRun('sweep-fault')
    expect(error.message).toMatch(/500|injected/)
    expect(await rowCount('deletes.SweepFault')).toBe(30)
    // it had passed key 10: keys 2..6 (a full chunk) were deleted before the failure, and rolled back
    expect(await lastSweep('sweep-fault')).toMatchObject({ status: 'failed', deleted: 0, targetKeys: 10 })
    await provider.control.faults({})
    expect(await run('sweep-fault')).toMatchObject({ statistics: { deleted: 5 } })
    expect(await ids('deletes.SweepFault')).toEqual([1, ...range(7, 30)])
  })

  test('bounded memory: the sweep reads keys only, in keyset pages of at most the batch size, never unbounded', async () => {
    await engine.addPipeline({ name: 'sweep-bounded', source: { service: 'Provider', entity: 'Items', batchSize: 7 }, target: { entity: 'deletes.SweepBounded' }, delta: { mode: 'key' }, deletes: { sweep: 'always' } })
    await seedItems(1, 40)
    await run('sweep-bounded')
    await removeItems(20)
    const before = (await provider.control.stats()).requests
    expect(await run('sweep-bounded')).toMatchObject({ statistics: { deleted: 1 } })
    const reads = await urlsSince(before, '/Items')
    const keyReads = reads.filter(url => /\$select=ID(&|$)/.test(url))
    // 39 keys in pages of 7: 6 pages (the first page's count ends the read without an empty page)
    expect(keyReads).toHaveLength(6)
    for (const url of keyReads) {
      expect(url).toMatch(/\$top=7(&|$)/)
      expect(url).toMatch(/\$orderby=ID asc/)
    }
    expect(keyReads.slice(1).every(url => /\$filter=ID gt \d+/.test(url))).toBe(true)
    expect(reads.every(url => /\$top=\d+/.test(url))).toBe(true)
  })
})
