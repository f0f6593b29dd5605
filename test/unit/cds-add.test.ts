/**
 * `cds add data-pipeline`'s decisions, with the real `cds.add` API of @sap/cds-dk (merge, readProject)
 * on temporary projects: what the user set stays, a project's own database stays, and the replicate
 * example picks an entity of a real import (test/fixtures/consumer/srv/external/Provider.cds, written
 * by `cds import --as cds`). The full path with `cds init`/`cds import` is test/integration/cds-add.test.ts.
 */
import cds from '@sap/cds'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { addDataPipeline, addTenancyConfig, findImport, missing, tenancyRequires, type AddApi } from '../../lib/add/data-pipeline'

const ROOT = path.resolve(__dirname, '../..')
const add = require(path.join(ROOT, 'node_modules/@sap/cds-dk/lib/init/add.js')) as AddApi

let dir: string
let root: string
const silent = () => undefined
const readJson = (file: string) => JSON.parse(fs.readFileSync(path.join(dir, file), 'utf8'))
const writeJson = (file: string, value: unknown) => fs.writeFileSync(path.join(dir, file), `${JSON.stringify(value, null, 2)}\n`)

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cds-add-unit-'))
  root = cds.root
  cds.root = dir // cds-dk's merge writes relative to cds.root, as under `cds add`
})
afterEach(() => {
  cds.root = root
  fs.rmSync(dir, { recursive: true, force: true })
})

test('missing(): only what the configuration lacks; a value set by the user (also false), a list or a mocked user counts as set', () => {
  expect(missing({ a: { b: false } }, { a: { b: true, c: 1 }, d: [1] })).toEqual({ a: { c: 1 }, d: [1] })
  expect(missing({ a: { b: false, c: 2 }, d: [] }, { a: { b: true, c: 1 }, d: [1] })).toBeUndefined()
  expect(missing({ auth: { users: { alice: {} } } }, { auth: { users: { alice: { password: 'x' }, bob: {} } } })).toEqual({ auth: { users: { bob: {} } } })
})

test('keeps what the user configured and adds the rest', async () => {
  writeJson('package.json', {
    name: 'app',
    cds: { requires: {
      'data-pipeline': { management: { reuse: { console: false } } },
      '[development]': { auth: { kind: 'mocked', users: { alice: { roles: ['Boss'] } } } },
    } },
  })
  const result = await addDataPipeline(dir, add, { log: silent })
  const requires = readJson('package.json').cds.requires
  expect(requires['data-pipeline']).toEqual({ management: { reuse: { console: false, api: true } } })
  expect(requires['[development]'].auth.users).toEqual({
    alice: { roles: ['Boss'] },
    olivia: { password: 'olivia', roles: ['PipelineOperator'] },
    victor: { password: 'victor', roles: ['PipelineViewer'] },
  })
  expect(requires['[development]'].db).toEqual({ kind: 'sqlite', credentials: { url: 'db.sqlite' } })
  expect(result.written.sort()).toEqual([path.join('srv', 'data-pipeline.cds'), path.join('test', 'http', 'data-pipeline.http')])
  expect(result.example).toBeUndefined()
  expect(fs.readFileSync(path.join(dir, 'test/http/data-pipeline.http'), 'utf8')).toContain('@pipeline = my-pipeline')
})

test('a project with its own database (any profile placement) keeps it', async () => {
  for (const config of [
    { requires: { db: { kind: 'hana' } } },
    { '[development]': { requires: { db: { kind: 'sqlite', credentials: { url: 'dev.db' } } } } },
  ]) {
    writeJson('package.json', { name: 'app', cds: config })
    await addDataPipeline(dir, add, { log: silent })
    const written = readJson('package.json').cds
    expect(written.requires['[development]'].db).toBeUndefined()
    expect(written.requires['[development]'].auth.kind).toBe('mocked')
  }
})

test('the replicate example names an entity of the imported API; a later run after an import adds it, and --force rewrites', async () => {
  writeJson('package.json', { name: 'app' })
  await addDataPipeline(dir, add, { log: silent })
  expect(fs.existsSync(path.join(dir, 'srv/replicas.cds'))).toBe(false)

  fs.mkdirSync(path.join(dir, 'srv/external'), { recursive: true })
  fs.copyFileSync(path.join(ROOT, 'test/fixtures/consumer/srv/external/Provider.cds'), path.join(dir, 'srv/external/Provider.cds'))
  expect(await findImport(dir)).toEqual({ service: 'Provider', using: './external/Provider', entity: 'Books' })
  const again = await addDataPipeline(dir, add, { log: silent })
  expect(again.written).toEqual([path.join('srv', 'replicas.cds')])
  expect(fs.readFileSync(path.join(dir, 'srv/replicas.cds'), 'utf8')).toContain('//   entity Books as projection on external.Books;')

  fs.writeFileSync(path.join(dir, 'srv/data-pipeline.cds'), '// mine\n')
  const forced = await addDataPipeline(dir, add, { force: true, log: silent })
  expect(forced.written).toHaveLength(3)
  expect(fs.readFileSync(path.join(dir, 'srv/data-pipeline.cds'), 'utf8')).toContain("using from 'cap-data-pipeline/db';")
})

test('the engine per tenant follows CAP multitenancy into its profiles, unless the project decided itself', async () => {
  const active = { multitenancy: { active: true } }
  // as `cds add multitenancy` writes it, and the other placements CAP reads
  expect(tenancyRequires({ requires: { '[production]': { multitenancy: true }, '[with-mtx]': { multitenancy: true } } })).toEqual({ '[production]': active, '[with-mtx]': active })
  expect(tenancyRequires({ requires: { multitenancy: { t0: 't0' } } })).toEqual(active)
  expect(tenancyRequires({ '[hybrid]': { requires: { multitenancy: true } } })).toEqual({ '[hybrid]': active })
  // single-tenant, or switched off explicitly: nothing
  expect(tenancyRequires({ requires: { '[production]': { multitenancy: false } } })).toEqual({})
  // the project's own decision, also false and also in a profile, stays
  for (const own of [{ multitenancy: { active: false } }, { '[production]': { multitenancy: { active: false } } }])
    expect(tenancyRequires({ requires: { 'data-pipeline': own, '[production]': { multitenancy: true } } })).toEqual({})

  // what a later `cds add multitenancy` leads to (the facet's combine): only that, nothing the user removed
  writeJson('package.json', { name: 'app', cds: { requires: { 'data-pipeline': {}, '[production]': { multitenancy: true } } } })
  expect(await addTenancyConfig(dir, add, silent)).toEqual({ 'data-pipeline': { '[production]': active } })
  expect(readJson('package.json').cds.requires).toEqual({ 'data-pipeline': { '[production]': active }, '[production]': { multitenancy: true } })
  expect(await addTenancyConfig(dir, add, silent)).toBeUndefined()
})
