/**
 * Ties at the watermark after a bulk update (issue 14) over HCQL (test/fixtures/hcql-consumer
 * against the provider's /hcql/catalog): the tie group is read once, then a no-change run sends
 * one query and receives no row; later ties arrive (a lower key while inside the settle window).
 */
import cds from '@sap/cds'
import path from 'node:path'
import { FIXTURES, type ProviderControl, type RunningApp } from '../helpers/apps'
import { sharedProvider } from '../helpers/shared-provider'
import { ql, rowCount } from '../helpers/consumer'
import { parseTieCursor } from '../../lib/adapters/watermark'
import type DataPipelineService from '../../srv/data-pipeline'

type Cqn = Record<string, any>

let provider: RunningApp & { control: ProviderControl }
let engine: DataPipelineService
/** The CQN SELECTs the consumer sent (each one HTTP request). */
const sent: Cqn[] = []

beforeAll(async () => {
  provider = await sharedProvider()
})
cds.test(path.join(FIXTURES, 'hcql-consumer'))
beforeAll(async () => {
  const requires = cds.env.requires as unknown as Record<string, { credentials?: { url: string } }>
  requires.CatalogAPI.credentials = { url: `${provider.url}/hcql/catalog` }
  const remote = await cds.connect.to('CatalogAPI')
  remote.before('READ', (req: { query?: Cqn }) => { sent.push(req.query?.SELECT ?? {}) })
  engine = (await cds.connect.to('data-pipeline')) as unknown as DataPipelineService
})
afterAll(async () => {
  await provider?.stop()
})

const T_OLD = '2026-01-01T00:00:00.000Z'
const T_TIES = '2026-01-05T00:00:00.000Z'
const rowsServed = async () => ((await provider.control.stats()) as unknown as { rows: number }).rows

async function measured(name: string) {
  sent.length = 0
  const before = await rowsServed()
  const { done } = await engine.execute(name)
  const outcome = await done
  return { outcome, selects: [...sent], rows: (await rowsServed()) - before }
}

beforeEach(async () => {
  await provider.control.reset()
})

test('after the tie group was read, a no-change run is one query and no row; a later tie with a higher key arrives', async () => {
  await provider.control.seed({ from: 1, count: 20, modifiedAt: T_OLD })
  await engine.addPipeline({ name: 'hcql-bulk', source: { service: 'CatalogAPI', entity: 'Books', batchSize: 8 }, target: { entity: 'hcql.BooksTies' } })
  expect((await measured('hcql-bulk')).outcome.statistics.created).toBe(20)
  await provider.control.touch({ from: 1, count: 20, modifiedAt: T_TIES, title: 'Bulk' })
  const take = await measured('hcql-bulk')
  expect([take.outcome.statistics.updated, take.rows]).toEqual([20, 20])
  expect(parseTieCursor((await engine.status('hcql-bulk')).lastKey)).toMatchObject({ at: T_TIES, after: { ID: 20 } })

  const none = await measured('hcql-bulk')
  expect(none.outcome.statistics).toEqual({ created: 0, updated: 0, deleted: 0 })
  expect(none.selects).toHaveLength(1)
  expect(none.rows).toBe(0)
  expect(none.selects[0].where).toEqual([
    { xpr: [{ ref: ['modifiedAt'] }, '>=', { val: T_TIES }] }, 'and',
    { xpr: [{ xpr: [{ ref: ['modifiedAt'] }, '>', { val: T_TIES }] }, 'or', { xpr: [{ ref: ['ID'] }, '>', { val: 20 }] }] },
  ])

  await provider.control.seed({ from: 101, count: 2, modifiedAt: T_TIES })
  const later = await measured('hcql-bulk')
  expect(later.outcome.statistics).toEqual({ created: 2, updated: 0, deleted: 0 })
  expect(later.rows).toBe(2)
  expect(await rowCount('hcql.BooksTies')).toBe(22)
})

test('inside the settle window a row written later with the value and a lower key is taken', async () => {
  const now = new Date().toISOString()
  await provider.control.seed({ from: 10, count: 10, modifiedAt: now })
  await engine.addPipeline({ name: 'hcql-window', source: { service: 'CatalogAPI', entity: 'Books', batchSize: 4 }, target: { entity: 'hcql.BooksPaged' } })
  expect((await measured('hcql-window')).outcome.statistics.created).toBe(10)
  await provider.control.seed({ from: 1, count: 1, modifiedAt: now })
  const second = await measured('hcql-window')
  expect(second.outcome.statistics).toEqual({ created: 1, updated: 0, unchanged: 10, deleted: 0 }) // the group re-read, identical
  expect(second.selects[0].where).toEqual([{ ref: ['modifiedAt'] }, '>=', { val: now }])
  expect(await ql.SELECT.one.from('hcql.BooksPaged').where({ ID: 1 })).toBeTruthy()
})
