/**
 * `cds watch` without credentials: CAP serves ("mocks") an imported API in-process from its
 * model and CSV data instead of calling it. Replicas and delegates then work against the mock
 * (read with CQN), so a new project behaves before any provider is reachable — the OData
 * adapters would send OData paths that an in-process service cannot serve.
 *
 * The guide-shaped fixture (test/fixtures/federated) served with `--with-mocks --in-memory`,
 * as `cds watch` does, and no provider URL.
 */
import cds from '@sap/cds'
import path from 'node:path'
import { FIXTURES } from '../helpers/apps'
import { ql, rowCount } from '../helpers/consumer'
import { waitFor } from '../helpers/wait'
import type DataPipelineService from '../../srv/data-pipeline'

const BOOKS = 'sap.capire.catalog.Books'
const app = cds.test(path.join(FIXTURES, 'federated'), '--with-mocks', '--in-memory') as unknown as {
  GET(url: string): Promise<{ status: number; data: any }>
}
let engine: DataPipelineService
beforeAll(async () => {
  engine = (await cds.connect.to('data-pipeline')) as unknown as DataPipelineService
})


test('the imported API is mocked in-process, not a remote service', () => {
  const provider = (cds.services as Record<string, object>).Provider
  expect(provider).toBeDefined()
  expect(provider).not.toBeInstanceOf(cds.RemoteService)
})

test('the replica fills from the mock (preload, then a run), with the pipeline of the real setup', async () => {
  await waitFor(async () => (await rowCount(BOOKS)) === 2, 'the preload to copy the mock rows')
  const rows = await ql.SELECT.from(BOOKS).orderBy('ID')
  expect(rows.map((b: { title: string }) => b.title)).toEqual(['Mocked one', 'Mocked two'])
  const { done } = await engine.execute(BOOKS, { mode: 'full' })
  expect((await done).status).toBe('completed')
  expect(await rowCount(BOOKS)).toBe(2)
  const { data } = await app.GET('/odata/v4/travel/Books?$orderby=ID')
  expect(data.value.map((b: { ID: number }) => b.ID)).toEqual([1, 2])
})

test('the delegate reads the mock', async () => {
  const { status, data } = await app.GET('/odata/v4/travel/Authors')
  expect(status).toBe(200)
  expect(data.value).toEqual([{ ID: 1, name: 'Ann', country: 'DE' }])
})
