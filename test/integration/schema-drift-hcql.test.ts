/**
 * Schema drift over HCQL (docs/concepts/drift.md): the live schema is the provider's `/$csn`.
 * The consumer is test/fixtures/hcql-consumer (its API imported with `cds import` from the
 * original provider's OData `$metadata`, bound with kind 'hcql'); behind its URL a real HTTP
 * proxy switches from the original provider to test/fixtures/drift/provider-b (the same
 * CatalogService redeployed with a changed Books). See schema-drift.test.ts for OData and REST.
 */
import cds from '@sap/cds'
import path from 'node:path'
import { FIXTURES, startApp, startProvider, type ProviderControl, type RunningApp } from '../helpers/apps'
import { ql } from '../helpers/consumer'
import { startSwitchProxy, type SwitchProxy } from '../helpers/switch-proxy'
import type DataPipelineService from '../../srv/data-pipeline'

const RUNS = 'plugin.data_pipeline.PipelineRuns'
const T0 = '2026-01-01T00:00:00.000Z'
const T1 = '2026-02-01T00:00:00.000Z'

let original: RunningApp & { control: ProviderControl }
let changed: RunningApp
let proxy: SwitchProxy
let engine: DataPipelineService

beforeAll(async () => {
  ;[original, changed, proxy] = await Promise.all([startProvider(), startApp(path.join(FIXTURES, 'drift/provider-b')), startSwitchProxy()])
})
cds.test(path.join(FIXTURES, 'hcql-consumer'))
beforeAll(async () => {
  const requires = cds.env.requires as unknown as Record<string, { credentials?: object }>
  requires.CatalogAPI.credentials = { url: `${proxy.url}/hcql/catalog` }
  engine = (await cds.connect.to('data-pipeline')) as unknown as DataPipelineService
})
afterAll(async () => {
  await Promise.all([original?.stop(), changed?.stop(), proxy?.close()])
})

async function execute(name: string) {
  const { runId, done } = await engine.execute(name)
  const outcome = await done.then(value => ({ value, error: undefined }), (error: Error & { code?: string }) => ({ value: undefined, error }))
  const row = await ql.SELECT.one.from(RUNS).where({ ID: runId })
  return { runId, ...outcome, row: { ...row, drift: row.drift ? JSON.parse(row.drift) : row.drift } }
}

const changesOf = (drift: { changes: Array<{ change: string; column: string; breaking: boolean }> }) =>
  Object.fromEntries(drift.changes.map(c => [c.column, `${c.change}${c.breaking ? '!' : ''}`]))

test('HCQL: the drift read from the provider\'s $csn is recorded under warn (the run proceeds) and stops the run under fail', async () => {
  await original.control.seed({ from: 1, count: 5, modifiedAt: T0 })
  proxy.target = original.url
  await engine.addPipeline({ name: 'hcql-drift', source: { service: 'CatalogAPI', entity: 'Books' }, target: { entity: 'hcql.DriftHcql' }, schemaDrift: { maxAge: 0 } })
  await engine.addPipeline({ name: 'hcql-drift-fail', source: { service: 'CatalogAPI', entity: 'Books' }, target: { entity: 'hcql.DriftHcqlFail' }, schemaDrift: 'fail' })
  for (const name of ['hcql-drift', 'hcql-drift-fail']) {
    const run = await execute(name)
    expect(run.value).toMatchObject({ status: 'completed', statistics: { created: 5 } })
    expect(run.row.drift).toBeNull() // the $csn of the original matches the API imported from its $metadata
  }
  const before = await ql.SELECT.from('hcql.DriftHcqlFail').orderBy('ID')

  const response = await fetch(`${changed.url}/odata/v4/control/seed`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ from: 1, count: 8, modifiedAt: T1 }) })
  expect(response.ok).toBe(true)
  proxy.target = changed.url

  const warned = await execute('hcql-drift')
  expect(warned.value).toMatchObject({ status: 'completed', statistics: { created: 3, updated: 5 } })
  expect(warned.row.drift).toMatchObject({ source: 'CatalogAPI/Books', basis: '$csn', policy: 'warn', breaking: true })
  expect(changesOf(warned.row.drift)).toEqual({ isbn: 'added', author: 'removed!', stock: 'type!', title: 'length!', price: 'precision!' })
  // the removed column is not asked for; the replica keeps its last value
  expect(await ql.SELECT.one.from('hcql.DriftHcql').where({ ID: 1 })).toMatchObject({ title: 'Book 1', author: 'Author 1', modifiedAt: T1 })

  const at = proxy.log.length
  const failed = await execute('hcql-drift-fail')
  expect(failed.error?.code).toBe('SCHEMA_DRIFT')
  expect(failed.error?.message).toContain("column 'stock' changed type Integer → String(10)")
  expect(proxy.log.slice(at)).toEqual(['/hcql/catalog/$csn']) // no query was sent
  expect(await ql.SELECT.from('hcql.DriftHcqlFail').orderBy('ID')).toEqual(before)
})
