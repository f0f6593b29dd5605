/**
 * How users get the product: `npm pack`, install the tarball into a fresh CAP app
 * (@sap/cds 10 + @cap-js/sqlite 3, no TypeScript anywhere), start it with `cds-serve` on
 * plain Node and see the plugin's engine service and tracker tables work over HTTP.
 * The tarball is the run's one pack (test/helpers/packed.ts, shared with new-user, cds-add and
 * readme-quickstart); the install and the server start are this file's own.
 */
import { existsSync, lstatSync, readFileSync, rmSync, writeFileSync, mkdirSync, readdirSync } from 'node:fs'
import path from 'node:path'
import { ROOT, runNpm as npm, startInstalledApp, type RunningApp } from '../helpers/apps'
import { appsFolder, packedPlugin } from '../helpers/packed'

const APP_FILES: Record<string, string> = {
  'db/schema.cds': `
namespace probe;
using from 'cap-data-pipeline/db';

entity Books {
  key ID         : Integer;
      title      : String(100);
      stock      : Integer;
      modifiedAt : Timestamp;
}

entity BookCopies {
  key ID         : Integer;
      title      : String(100);
      stock      : Integer;
      modifiedAt : Timestamp;
}
`,
  'srv/probe-service.cds': `
using { probe } from '../db/schema';
using { plugin.data_pipeline as tracker } from 'cap-data-pipeline/db';

service ProbeService {
  @readonly entity Pipelines    as projection on tracker.Pipelines;
  @readonly entity PipelineRuns as projection on tracker.PipelineRuns;
  @readonly entity BookCopies   as projection on probe.BookCopies;
  action runPipeline(name : String) returns { runId : String; status : String; };
}
`,
  'srv/probe-service.js': `
const cds = require('@sap/cds')
module.exports = class ProbeService extends cds.ApplicationService {
  init() {
    this.on('runPipeline', async req => {
      const engine = await cds.connect.to('data-pipeline')
      try {
        // async: the run continues after this request; clients poll the tracker (Pipelines, PipelineRuns)
        const { runId } = await engine.execute(req.data.name, { async: true })
        return { runId, status: 'started' }
      } catch (error) {
        return req.reject(error.status ?? 500, error.message)
      }
    })
    return super.init()
  }
}
`,
  'server.js': `
const cds = require('@sap/cds')
cds.on('served', async () => {
  const { Books } = cds.entities('probe')
  const stamp = '2026-03-01T10:00:00.000Z'
  await INSERT.into(Books).entries(Array.from({ length: 25 }, (_, i) => ({ ID: i + 1, title: 'Book ' + (i + 1), stock: i, modifiedAt: stamp })))
  const engine = await cds.connect.to('data-pipeline')
  await engine.addPipeline({
    name: 'copy',
    description: 'packaging probe',
    source: { entity: 'probe.Books', batchSize: 10 },
    target: { entity: 'probe.BookCopies' },
    delta: { field: 'modifiedAt' },
  })
  // the public API resolves with plain Node from the installed package
  const api = require('cap-data-pipeline')
  console.log('[probe] api:', typeof api.BaseSourceAdapter, typeof api.BaseTargetAdapter, api.SERVICE_NAME)
})
module.exports = cds.server
`,
}

async function get(url: string): Promise<any> {
  const response = await fetch(url)
  const body = await response.text()
  if (!response.ok) throw new Error(`GET ${url}: ${response.status} ${body}`)
  return JSON.parse(body)
}

async function post(url: string, data: object): Promise<{ status: number; body: any }> {
  const response = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(data) })
  const text = await response.text()
  return { status: response.status, body: text ? JSON.parse(text) : undefined }
}

/** Polls the run row until it has ended (async runs). */
async function finished(base: string, runId: string): Promise<any> {
  const deadline = Date.now() + 30_000
  for (;;) {
    const { value } = await get(`${base}/PipelineRuns?$filter=ID eq ${runId}`)
    if (value[0]?.endTime) return value[0]
    if (Date.now() > deadline) throw new Error(`run ${runId} did not end within 30 s: ${JSON.stringify(value)}`)
    await new Promise(resolve => setTimeout(resolve, 100))
  }
}

describe('the packed tarball in a fresh CAP app', () => {
  const work = appsFolder('cap-data-pipeline-pack-')
  const app = path.join(work, 'app')
  let files: string[] = []
  let server: RunningApp | undefined
  const timings: Record<string, number> = {}
  let reused = false

  beforeAll(async () => {
    const t0 = Date.now()
    // `npm test` builds first; build here only when dist/ is missing, never while other test files read it
    if (!existsSync(path.join(ROOT, 'dist/cds-plugin.js'))) await npm(['run', 'build'], ROOT, 120_000)
    // the run's one `npm pack` (test/helpers/packed.ts): packed here, or by another file and reused
    const packed = await packedPlugin(work)
    files = packed.files
    const tarball = packed.tarball
    timings.pack = Date.now() - t0
    reused = packed.reused

    mkdirSync(app)
    writeFileSync(path.join(app, 'package.json'), JSON.stringify({
      name: 'packaging-probe',
      version: '1.0.0',
      private: true,
      dependencies: { '@sap/cds': '^10', '@cap-js/sqlite': '^3', 'cap-data-pipeline': `file:${tarball}` },
      cds: { requires: { db: { kind: 'sqlite', credentials: { url: ':memory:' } } } },
    }, null, 2))
    for (const [file, text] of Object.entries(APP_FILES)) {
      mkdirSync(path.dirname(path.join(app, file)), { recursive: true })
      writeFileSync(path.join(app, file), text)
    }
    const t1 = Date.now()
    await npm(['install', '--no-audit', '--no-fund', '--prefer-offline'], app, 240_000)
    timings.install = Date.now() - t1

    const t2 = Date.now()
    server = await startInstalledApp(app)
    timings.start = Date.now() - t2
  }, 420_000)

  afterAll(async () => {
    await server?.stop()
    if (!process.env.KEEP_PACKAGING_APP) rmSync(work, { recursive: true, force: true })
    console.log(`packaging: pack ${timings.pack} ms${reused ? ' (packed by another file)' : ''}, npm install ${timings.install} ms, server start ${timings.start} ms${process.env.KEEP_PACKAGING_APP ? `, app kept in ${app}` : ''}`)
  })

  test('the tarball ships compiled JavaScript, types, the plugin shim and the model, no sources or tests', () => {
    for (const file of ['package.json', 'cds-plugin.js', 'db/index.cds', 'dist/cds-plugin.js', 'dist/index.js', 'dist/index.d.ts', 'dist/lib/index.js', 'dist/srv/data-pipeline.js', 'dist/srv/data-pipeline.d.ts'])
      expect(files, file).toContain(file)
    expect(files.filter(f => f.startsWith('test/') || f.startsWith('bench/') || f.startsWith('demo/') || f.startsWith('node_modules/'))).toEqual([])
    expect(files.filter(f => f.endsWith('.ts') && !f.endsWith('.d.ts'))).toEqual([])
    expect(files.filter(f => f.endsWith('.map'))).toEqual([])
    // the README's links into the docs resolve in the installed package too (the site's build config stays home)
    const linked = [...readFileSync(path.join(ROOT, 'README.md'), 'utf8').matchAll(/\]\((docs\/[^)#\s]+)/g)].map(match => match[1])
    expect(linked.length).toBeGreaterThan(3)
    for (const target of new Set(linked)) expect(files, `README link ${target}`).toContain(target.endsWith('/') ? `${target}index.md` : target)
    expect(files.filter(f => f.startsWith('docs/.vitepress'))).toEqual([])
    // every compiled Node module has its declaration file (the console under dist/console is a browser bundle)
    for (const js of files.filter(f => f.startsWith('dist/') && !f.startsWith('dist/console/') && f.endsWith('.js')))
      expect(files, `${js} without .d.ts`).toContain(js.replace(/\.js$/, '.d.ts'))
  })

  test('the app installs a real copy of the package and a single @sap/cds', () => {
    const installed = path.join(app, 'node_modules/cap-data-pipeline')
    expect(lstatSync(installed).isSymbolicLink()).toBe(false)
    expect(existsSync(path.join(installed, 'cds-plugin.js'))).toBe(true)
    expect(existsSync(path.join(installed, 'node_modules/@sap/cds'))).toBe(false)
    expect(JSON.parse(readFileSync(path.join(app, 'node_modules/@sap/cds/package.json'), 'utf8')).version).toMatch(/^10\./)
    expect(readdirSync(installed).filter(f => f.endsWith('.ts'))).toEqual([])
    // the SAP Cloud SDK is an optional peer: installing the plugin does not bring it
    expect(existsSync(path.join(app, 'node_modules/@sap-cloud-sdk'))).toBe(false)
  })

  test('cds-serve loads the plugin with plain Node: engine service, public API, tracker row on registration', async () => {
    const log = server!.output()
    expect(log).not.toMatch(/loaded from different locations/i)
    expect(log).toMatch(/connect to data-pipeline/)
    expect(log).toContain('[probe] api: function function data-pipeline')
    const { value } = await get(`${server!.url}/odata/v4/probe/Pipelines`)
    expect(value).toHaveLength(1)
    expect(value[0]).toMatchObject({ name: 'copy', description: 'packaging probe', mode: 'delta', status: 'idle', enabled: true, errorCount: 0 })
    expect(JSON.parse(value[0].source)).toEqual({ entity: 'probe.Books', batchSize: 10 })
  })

  test('a run over HTTP copies the rows and fills Pipelines and PipelineRuns', async () => {
    const base = `${server!.url}/odata/v4/probe`
    const first = await post(`${base}/runPipeline`, { name: 'copy' })
    expect(first.status).toBe(200)
    expect(first.body).toMatchObject({ status: 'started' })
    const firstRun = await finished(base, first.body.runId)
    expect(firstRun).toMatchObject({ pipeline_name: 'copy', mode: 'delta', trigger: 'manual', error: null, statistics_created: 25, statistics_deleted: 0 })

    const copies = await get(`${base}/BookCopies?$count=true&$orderby=ID`)
    expect(copies['@odata.count']).toBe(25)
    expect(copies.value[0]).toMatchObject({ ID: 1, title: 'Book 1', stock: 0, modifiedAt: '2026-03-01T10:00:00.000Z' })

    const tracker = await get(`${base}/Pipelines('copy')`)
    expect(tracker).toMatchObject({ status: 'idle', errorCount: 0, lastError: null, statistics_created: 25, lastSync: '2026-03-01T10:00:00.000Z' })
    expect(tracker.leaseOwner).toBeNull()

    const second = await post(`${base}/runPipeline`, { name: 'copy' })
    expect(second.status).toBe(200)
    const secondRun = await finished(base, second.body.runId)
    expect(secondRun).toMatchObject({ error: null, statistics_created: 0, statistics_deleted: 0 })
    expect((await get(`${base}/BookCopies/$count`))).toBe(25)
    expect((await get(`${base}/PipelineRuns`)).value).toHaveLength(2)

    const unknown = await post(`${base}/runPipeline`, { name: 'nope' })
    expect(unknown.status).toBe(404)
    expect(unknown.body.error.message).toMatch(/nope/)
  })
})
