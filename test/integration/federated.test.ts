/**
 * CAP's own `@federated` (guide "CAP-level Data Federation"): an app written along the guide —
 * consumption views tagged `@federated` on an API brought in by `cds import`, local data
 * associated to them, and no code — gets tracked, loss-free replication by adding the plugin.
 * `@federated` behaves as `@federation.replicate` with the documented defaults (delta on
 * `modifiedAt`, a 10-minute schedule, a background preload) unless `@federation.delegate`
 * on the same entity says otherwise.
 *
 * The fixture (test/fixtures/federated) runs in-process against the real provider; the
 * provider URL is passed before the app serves, since the preload starts at `served`.
 */
import cds from '@sap/cds'
import path from 'node:path'
import { FIXTURES, type ProviderControl, type RunningApp } from '../helpers/apps'
import { sharedProvider } from '../helpers/shared-provider'
import { ql, rowCount, sqliteType } from '../helpers/consumer'
import { waitFor } from '../helpers/wait'
import type DataPipelineService from '../../srv/data-pipeline'

const URL_VARIABLE = 'cds_requires_Provider_credentials_url'
const BOOKS = 'sap.capire.catalog.Books'
const T0 = '2026-01-01T00:00:00.000Z'
const T1 = '2026-02-01T00:00:00.000Z'
const SEEDED = 30

let provider: RunningApp & { control: ProviderControl }
let engine: DataPipelineService

beforeAll(async () => {
  provider = await sharedProvider()
  await provider.control.seed({ from: 1, count: SEEDED, modifiedAt: T0 })
  await fetch(`${provider.url}/odata/v4/control/seedAuthors`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ count: 5, works: 1 }) })
  process.env[URL_VARIABLE] = `${provider.url}/odata/v4/catalog`
})
const app = cds.test(path.join(FIXTURES, 'federated')) as unknown as {
  GET(url: string): Promise<{ status: number; data: any }>
}
beforeAll(async () => {
  engine = (await cds.connect.to('data-pipeline')) as unknown as DataPipelineService
})
afterAll(async () => {
  delete process.env[URL_VARIABLE]
  await provider?.stop()
})



test('@federated on a projection of the imported API makes it a table; views on it stay views; the @federation.delegate one has no storage', async () => {
  expect(await sqliteType('sap_capire_catalog_Books')).toBe('table')
  expect(await sqliteType('TravelService_Books')).toBe('view')
  expect(await sqliteType('sap_capire_catalog_Authors')).toBeUndefined()
  expect(await sqliteType('TravelService_Authors')).toBeUndefined()
})

test('one pipeline, named after the entity, with the defaults: delta on modifiedAt, every 10 minutes, preloaded in the background', async () => {
  expect(engine.getPipelineNames()).toEqual([BOOKS])
  expect(engine.registry.coded(BOOKS)).toEqual({
    name: BOOKS,
    description: `@federated: Provider.Books → ${BOOKS}`,
    source: { service: 'Provider', entity: 'Books' },
    target: { entity: BOOKS },
    delta: { field: 'modifiedAt' },
    schedule: 600_000,
  })
  const tracker = await ql.SELECT.one.from('plugin.data_pipeline.Pipelines').where({ name: BOOKS })
  expect(tracker).toMatchObject({ mode: 'delta', schedule: 'every 10 min (spawn)' })
  // the preload ran by itself at startup
  await waitFor(async () => (await rowCount(BOOKS)) === SEEDED, 'the preload to fill the replica')
  const runs = await ql.SELECT.from('plugin.data_pipeline.PipelineRuns').where({ pipeline_name: BOOKS })
  expect(runs).toHaveLength(1)
  expect(runs[0]).toMatchObject({ trigger: 'scheduled', mode: 'delta', statistics_created: SEEDED })
})

test('local data joins the replica locally: an expand to the federated entity costs the provider nothing', async () => {
  await waitFor(async () => (await rowCount(BOOKS)) === SEEDED, 'the preload')
  await ql.INSERT.into('sap.capire.travels.Trips').entries([{ ID: 1, name: 'Reading week', book_ID: 7 }, { ID: 2, name: 'Library tour', book_ID: 12 }])
  const before = (await provider.control.stats()).requests
  const { status, data } = await app.GET('/odata/v4/travel/Trips?$expand=book($select=title)&$orderby=ID')
  expect(status).toBe(200)
  expect(data.value.map((t: { book: { title: string } }) => t.book.title)).toEqual(['Book 7', 'Book 12'])
  expect((await provider.control.stats()).requests).toBe(before)
})

test('a change at the source arrives with the next delta run; nothing is lost or duplicated', async () => {
  await waitFor(async () => (await rowCount(BOOKS)) === SEEDED, 'the preload')
  await provider.control.touch({ from: 3, count: 2, modifiedAt: T1, title: 'Revised' })
  await provider.control.seed({ from: SEEDED + 1, count: 2, modifiedAt: T1 })
  const { done } = await engine.execute(BOOKS)
  const outcome = await done
  expect(outcome.statistics).toMatchObject({ created: 2, updated: 2 })
  expect(await rowCount(BOOKS)).toBe(SEEDED + 2)
  const revised = await ql.SELECT.from(BOOKS).where({ title: 'Revised' }).orderBy('ID')
  expect(revised.map((b: { ID: number }) => b.ID)).toEqual([3, 4])
})

test('the @federated entity with @federation.delegate reads live from the provider', async () => {
  const before = (await provider.control.stats()).requests
  const { status, data } = await app.GET('/odata/v4/travel/Authors?$orderby=ID&$top=2')
  expect(status).toBe(200)
  expect(data.value).toEqual([expect.objectContaining({ ID: 1, name: expect.any(String) }), expect.objectContaining({ ID: 2 })])
  expect((await provider.control.stats()).requests).toBeGreaterThan(before)
})
