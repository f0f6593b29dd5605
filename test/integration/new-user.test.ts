/**
 * A new user's path, end to end, with the real tools (docs/getting-started.md, docs/guide/pipelines-in-code.md,
 * guide/replicate.md, guide/delegate.md, reference/management-api.md, guide/console.md; the README's quick start itself, as written, is readme-quickstart.test.ts):
 *
 *   cds init bookshop --nodejs            (this repository's @sap/cds-dk 10)
 *   cds import CatalogService.edmx        (the $metadata of a real provider: test/fixtures/provider)
 *   npm add <the packed tarball>
 *   @federation.replicate + @federation.delegate projections in a service, management API + console,
 *   using from 'cap-data-pipeline/db'
 *   cds deploy (file SQLite), cds build, cds compile --to sql --dialect postgres
 *   cds-serve on plain Node from the project's node_modules, then HTTP only.
 *
 * It also proves that installing the plugin changes nothing else in the host app: the app's own
 * use of its remote OData service (a CAP "mashup" handler) goes through the same HTTP client before
 * and after `npm add`, observed from the provider side (a recording proxy in front of the provider
 * logs each request's User-Agent: Node's fetch sends `node`, the SAP Cloud SDK `axios/<version>`),
 * and no `@sap-cloud-sdk` package arrives with the plugin. The REST source works without the SDK
 * (native fetch) and refuses a destination binding with the install hint; once the app installs the
 * SDK, CAP and the REST source switch to it together (CAP's own rule, `shouldUseCloudSdk`).
 *
 * `cds import` of an OData API adds @sap-cloud-sdk/{http-client,connectivity,resilience} to the
 * project's dependencies (cds-dk 10, lib/import/odata.package.json). This project removes them
 * before installing — an app that wants CAP 10's native fetch — so that the plugin alone decides
 * whether the SDK arrives; the last phase adds them back.
 *
 * NEW_USER_TARBALL=<path.tgz> runs the same path against a given tarball instead of packing this
 * checkout (e.g. one packed from an older commit); KEEP_NEW_USER_APP=1 keeps the project.
 */
import http from 'node:http'
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync, mkdirSync } from 'node:fs'
import path from 'node:path'
import { packPlugin, runCds, runNpm, startInstalledApp, startProvider, type ProviderControl, type RunningApp } from '../helpers/apps'
import { appsFolder } from '../helpers/packed'
import { startRestProvider, type RestProvider } from '../fixtures/rest-provider/server.mjs'
import { basicAuth } from '../helpers/auth'

const SEEDED = 12
const STAMP = '2026-03-01T10:00:00.000Z'
const API_KEY = 'new-user-api-key'
const SDK_PACKAGES = ['@sap-cloud-sdk/connectivity', '@sap-cloud-sdk/http-client', '@sap-cloud-sdk/resilience']
const FETCH_AGENT = /^node$/
const SDK_AGENT = /^axios\//

/** A transparent HTTP proxy in front of the provider that records who asked (User-Agent). */
interface RecordingProxy { url: string; requests: Array<{ method: string; url: string; userAgent?: string }>; close(): Promise<void> }

function recordingProxy(target: string): Promise<RecordingProxy> {
  const requests: RecordingProxy['requests'] = []
  const upstream = new URL(target)
  const server = http.createServer((req, res) => {
    requests.push({ method: req.method!, url: req.url!, userAgent: req.headers['user-agent'] })
    const forward = http.request({ host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers: { ...req.headers, host: upstream.host } }, answer => {
      res.writeHead(answer.statusCode!, answer.headers)
      answer.pipe(res)
    })
    forward.on('error', error => { res.writeHead(502); res.end(String(error)) })
    req.pipe(forward)
  })
  return new Promise(resolve => server.listen(0, '127.0.0.1', () => resolve({
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    requests,
    close: () => new Promise(done => { server.closeAllConnections(); server.close(() => done()) }),
  })))
}

/** docs/guide/security.md: /pipeline needs a role; the project's mocked user `admin` holds PipelineAdmin. */
const ADMIN = basicAuth('admin')

async function http_(method: string, url: string, body?: object): Promise<{ status: number; body: any; text: string }> {
  const auth = new URL(url).pathname.startsWith('/pipeline/') ? ADMIN : {}
  const response = await fetch(url, { method, headers: { ...auth, ...(body ? { 'content-type': 'application/json' } : {}) }, body: body ? JSON.stringify(body) : undefined })
  const text = await response.text()
  let parsed: unknown
  try { parsed = JSON.parse(text) } catch { parsed = undefined }
  return { status: response.status, body: parsed, text }
}
const get = async (url: string) => {
  const response = await http_('GET', url)
  if (response.status !== 200) throw new Error(`GET ${url}: ${response.status} ${response.text}`)
  return response.body
}

const readJson = (file: string) => JSON.parse(readFileSync(file, 'utf8'))
const writeJson = (file: string, value: unknown) => writeFileSync(file, `${JSON.stringify(value, null, 2)}\n`)
const write = (file: string, text: string) => {
  mkdirSync(path.dirname(file), { recursive: true })
  writeFileSync(file, text)
}

/** The app's own use of its remote service, CAP's documented mashup pattern (no plugin involved). */
const MASHUP_CDS = `using { CatalogService as ext } from './external/CatalogService';

service MashupService {
  @readonly entity RemoteBooks as projection on ext.Books { key ID, title, stock };
}
`
const MASHUP_JS = `import cds from '@sap/cds'

export default class MashupService extends cds.ApplicationService {
  async init() {
    const catalog = await cds.connect.to('CatalogService')
    this.on('READ', 'RemoteBooks', req => catalog.run(req.query))
    return super.init()
  }
}
`

/** What the README tells a user to add once the plugin is installed. */
const CONSUMER_CDS = `using { CatalogService as ext } from './external/CatalogService';

service ConsumerService {
  @federation.replicate: { delta: { field: 'modifiedAt' } }
  entity ReplicatedBooks as projection on ext.Books;

  @federation.delegate
  entity LiveAuthors as projection on ext.Authors;
}
`
const SCHEMA_CDS = `namespace bookshop;
using from 'cap-data-pipeline/db'; // docs/getting-started.md: the tracker tables

/** Filled by a REST pipeline (docs/reference/adapters.md). */
entity Items {
  key id        : Integer;
      name      : String(100);
      price     : Decimal(9, 2);
      updatedAt : Timestamp;
}
`
/** docs/guide/pipelines-in-code.md: pipelines registered in code when the app is served (ESM: cds init makes "type": "module" projects). */
const SERVER_JS = `import cds from '@sap/cds'

cds.on('served', async () => {
  const pipelines = await cds.connect.to('data-pipeline')
  const rest = { path: '/items', dataPath: 'data.items', pagination: { type: 'offset', pageSize: 5 } }
  await pipelines.addPipeline({ name: 'legacy-items', source: { service: 'LegacyApi' }, target: { entity: 'bookshop.Items' }, delta: { field: 'updatedAt' }, rest })
  await pipelines.addPipeline({ name: 'legacy-items-destination', mode: 'full', source: { service: 'LegacyDestination' }, target: { entity: 'bookshop.Items' }, rest })
})

export default cds.server
`

describe('a new user: cds init → cds import → npm add → annotate → cds deploy → cds-serve', () => {
  const started = Date.now()
  const work = appsFolder('cap-data-pipeline-new-user-')
  const app = path.join(work, 'bookshop')
  const file = (name: string) => path.join(app, name)
  const timings: Record<string, number> = {}
  const agents: Record<string, string[]> = {}
  let tarball = ''
  let provider: RunningApp & { control: ProviderControl }
  let proxy: RecordingProxy
  let rest: RestProvider
  let server: RunningApp | undefined
  const topLevelPackages = () => readdirSync(path.join(app, 'node_modules')).flatMap(name =>
    name.startsWith('@') ? readdirSync(path.join(app, 'node_modules', name)).map(child => `${name}/${child}`) : name.startsWith('.') ? [] : [name])

  async function timed<T>(label: string, fn: () => Promise<T>): Promise<T> {
    const t0 = Date.now()
    try {
      return await fn()
    } finally {
      timings[label] = Date.now() - t0
    }
  }
  /** Starts the app; the proxy's log is cleared first, so that it shows this server's requests only. */
  async function serve(label: string, env: Record<string, string> = {}) {
    proxy.requests.length = 0
    server = await timed(label, () => startInstalledApp(app, { env }))
    return server
  }
  async function stop() {
    await server?.stop()
    server = undefined
  }
  const proxyAgents = () => [...new Set(proxy.requests.map(r => r.userAgent ?? '(none)'))]

  beforeAll(async () => {
    const pack = timed('pack', async () => {
      if (process.env.NEW_USER_TARBALL) return path.resolve(process.env.NEW_USER_TARBALL)
      return packPlugin(work)
    })
    ;[tarball, provider] = await Promise.all([pack, startProvider()])
    await provider.control.seed({ count: SEEDED, modifiedAt: STAMP })
    const seeded = await fetch(`${provider.url}/odata/v4/control/seedAuthors`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ count: 3, works: 1 }) })
    expect(seeded.status).toBe(200)
    proxy = await recordingProxy(provider.url)
    rest = await startRestProvider({ apiKey: API_KEY, items: 7 })
  }, 180_000)

  afterAll(async () => {
    await server?.stop()
    await provider?.stop()
    await proxy?.close()
    await rest?.close()
    if (!process.env.KEEP_NEW_USER_APP) rmSync(work, { recursive: true, force: true })
    timings.total = Date.now() - started
    console.log(`new-user: ${Object.entries(timings).map(([k, v]) => `${k} ${v} ms`).join(', ')}`)
    console.log(`new-user: User-Agent at the provider: ${JSON.stringify(agents)}${process.env.KEEP_NEW_USER_APP ? `; project kept in ${app}` : ''}`)
  })

  test('cds init --nodejs, cds import of the provider\'s $metadata: a CAP 10 project with a remote OData service', async () => {
    await timed('cds init + import', async () => {
      await runCds(['init', 'bookshop', '--nodejs'], work)
      const edmx = path.join(work, 'CatalogService.edmx')
      const metadata = await fetch(`${provider.url}/odata/v4/catalog/$metadata`)
      expect(metadata.status).toBe(200)
      writeFileSync(edmx, await metadata.text())
      await runCds(['import', edmx], app)
    })
    const pkg = readJson(file('package.json'))
    expect(pkg).toMatchObject({ type: 'module', dependencies: { '@sap/cds': '^10' }, devDependencies: { '@cap-js/sqlite': '^3' } })
    expect(pkg.cds.requires.CatalogService).toEqual({ kind: 'odata', model: 'srv/external/CatalogService' })
    expect(existsSync(file('srv/external/CatalogService.csn'))).toBe(true)
    // cds-dk 10's `cds import` of OData adds the SAP Cloud SDK to the app (see the module comment)
    for (const name of SDK_PACKAGES) expect(pkg.dependencies[name], name).toBe('^4')

    // the user's side: the provider's URL (here: the recording proxy in front of it) and a file database
    for (const name of SDK_PACKAGES) delete pkg.dependencies[name]
    pkg.cds.requires.db = { kind: 'sqlite', credentials: { url: 'db.sqlite' } }
    writeJson(file('package.json'), pkg)
    writeJson(file('.cdsrc.json'), { requires: { CatalogService: { credentials: { url: `${proxy.url}/odata/v4/catalog` } } } })
    write(file('srv/mashup.cds'), MASHUP_CDS)
    write(file('srv/mashup.js'), MASHUP_JS)

    await timed('npm install', () => runNpm(['install', '--no-audit', '--no-fund', '--prefer-offline'], app))
    expect(existsSync(file('node_modules/@sap-cloud-sdk'))).toBe(false)
  })

  test('before the plugin: the app reads its remote service through native fetch', async () => {
    await serve('start (no plugin)')
    const { value } = await get(`${server!.url}/odata/v4/mashup/RemoteBooks?$top=3&$orderby=ID`)
    expect(value).toEqual([1, 2, 3].map(ID => ({ ID, title: `Book ${ID}`, stock: ID })))
    agents['app, no plugin'] = proxyAgents()
    expect(agents['app, no plugin']).toEqual([expect.stringMatching(FETCH_AGENT)])
    await stop()
  })

  test('npm add of the tarball adds the plugin and nothing else: no SAP Cloud SDK', async () => {
    const before = topLevelPackages()
    const dependencies = readJson(file('package.json')).dependencies
    await timed('npm add tarball', () => runNpm(['add', '--no-audit', '--no-fund', '--prefer-offline', tarball], app))
    expect(topLevelPackages().filter(name => !before.includes(name))).toEqual(['cap-data-pipeline'])
    expect(existsSync(file('node_modules/@sap-cloud-sdk'))).toBe(false)
    expect(existsSync(file('node_modules/cap-data-pipeline/node_modules'))).toBe(false)
    expect(readJson(file('package.json')).dependencies).toEqual({ ...dependencies, 'cap-data-pipeline': expect.stringMatching(/^file:.*\.tgz$/) })
  })

  test('the README\'s model: replicate + delegate in a service, management API and console; cds deploy to SQLite', async () => {
    write(file('srv/consumer-service.cds'), CONSUMER_CDS)
    write(file('db/schema.cds'), SCHEMA_CDS)
    write(file('server.js'), SERVER_JS)
    // docs/guide/production.md: cds build reads the model from the project's files, so the management API is named in one
    write(file('srv/pipeline-api.cds'), "using from 'cap-data-pipeline/srv/management';\n")
    const pkg = readJson(file('package.json'))
    pkg.cds.requires['data-pipeline'] = { management: { reuse: { api: true, console: true } } }
    // docs/guide/security.md: mocked users holding the plugin's roles, for development only
    pkg.cds.requires['[development]'] = { auth: { kind: 'mocked', users: { admin: { password: 'admin', roles: ['PipelineAdmin'] }, viewer: { password: 'viewer', roles: ['PipelineViewer'] } } } }
    writeJson(file('package.json'), pkg)
    const cdsrc = readJson(file('.cdsrc.json'))
    cdsrc.requires.LegacyApi = { kind: 'rest', credentials: { url: rest.url, headers: { 'x-api-key': API_KEY } } }
    cdsrc.requires.LegacyDestination = { kind: 'rest', credentials: { destination: 'legacy', headers: { 'x-api-key': API_KEY } } }
    writeJson(file('.cdsrc.json'), cdsrc)

    // the defect this test guards against: `… carries @cds.persistence.skip` (cds import marks every imported entity so)
    const deployed = await timed('cds deploy', () => runCds(['deploy'], app))
    expect(deployed).toMatch(/successfully deployed to db\.sqlite/)
  })

  test('cds build and cds compile accept the model: a table for the replica, none for the delegate', async () => {
    await timed('cds build', async () => {
      await runCds(['build', '--for', 'nodejs'], app)
      const csn = readJson(file('gen/srv/srv/csn.json'))
      expect(csn.definitions['ConsumerService.ReplicatedBooks']).toMatchObject({ '@cds.persistence.table': true })
      expect(csn.definitions['ConsumerService.LiveAuthors']).toMatchObject({ '@cds.persistence.skip': true })

      await runCds(['build', '--for', 'hana'], app)
      const hana = readdirSync(file('gen/db/src/gen'))
      for (const artifact of ['ConsumerService.ReplicatedBooks.hdbtable', 'plugin.data_pipeline.Pipelines.hdbtable', 'plugin.data_pipeline.PipelineRuns.hdbtable', 'bookshop.Items.hdbtable'])
        expect(hana, artifact).toContain(artifact)
      expect(hana.filter(name => /LiveAuthors|RemoteBooks|CatalogService/.test(name))).toEqual([])

      const postgres = await runCds(['compile', '*', '--to', 'sql', '--dialect', 'postgres'], app)
      const created = [...postgres.matchAll(/^CREATE (TABLE|VIEW) (\w+)/gm)].map(m => m[2])
      expect(created).toEqual(expect.arrayContaining(['ConsumerService_ReplicatedBooks', 'plugin_data_pipeline_Pipelines', 'plugin_data_pipeline_PipelineRuns', 'bookshop_Items']))
      expect(created.filter(name => /LiveAuthors|RemoteBooks|CatalogService/.test(name))).toEqual([])
    })
  })

  // management.reuse.api adds the model at runtime only (cds serve, cds deploy); cds build re-reads the project's configuration
  test('cds build --for hana carries the management API\'s views (the README\'s production step)', () => {
    expect(readdirSync(file('gen/db/src/gen'))).toEqual(expect.arrayContaining(['DataPipelineManagementService.Pipelines.hdbview', 'DataPipelineManagementService.PipelineRuns.hdbview']))
  })

  test('cds-serve: POST /pipeline/execute fills the replica; the tracker row is in /pipeline/Pipelines; a delta run takes a change', async () => {
    await serve('start (plugin)')
    const log = server!.output()
    expect(log).not.toMatch(/loaded from different locations/i)
    expect(log).toMatch(/serving DataPipelineManagementService/)

    const name = 'ConsumerService.ReplicatedBooks'
    const first = await http_('POST', `${server!.url}/pipeline/execute`, { name })
    expect(first.status, first.text).toBe(200)
    expect(first.body).toMatchObject({ name, status: 'completed', statistics: { created: SEEDED, updated: 0, deleted: 0 } })
    expect(await get(`${server!.url}/odata/v4/consumer/ReplicatedBooks/$count`)).toBe(SEEDED)
    const tracker = await get(`${server!.url}/pipeline/Pipelines('${name}')`)
    expect(tracker).toMatchObject({ name, mode: 'delta', status: 'idle', errorCount: 0, lastError: null, lastSync: STAMP })
    expect(JSON.parse(tracker.source)).toEqual({ service: 'CatalogService', entity: 'Books' })
    const runs = await get(`${server!.url}/pipeline/PipelineRuns?$filter=pipeline_name eq '${name}'`)
    expect(runs.value).toHaveLength(1)

    await provider.control.touch({ from: 3, modifiedAt: '2026-03-02T00:00:00.000Z', title: 'Changed at the provider' })
    const second = await http_('POST', `${server!.url}/pipeline/execute`, { name })
    expect(second.body).toMatchObject({ status: 'completed', statistics: { created: 0, updated: 1 } })
    expect(await get(`${server!.url}/odata/v4/consumer/ReplicatedBooks(3)`)).toMatchObject({ ID: 3, title: 'Changed at the provider', modifiedAt: '2026-03-02T00:00:00.000Z' })
  })

  test('the delegate answers live: a change at the provider shows at once', async () => {
    const url = `${server!.url}/odata/v4/consumer/LiveAuthors?$orderby=ID`
    const before = await get(url)
    expect(before.value).toEqual([1, 2, 3].map(ID => ({ ID, name: `Author ${ID}`, country: ['DE', 'FR', 'US'][ID % 3], born: 1900 + ID })))
    const patched = await fetch(`${provider.url}/odata/v4/catalog/Authors(2)`, { method: 'PATCH', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Renamed at the provider' }) })
    expect(patched.status).toBe(200)
    expect((await get(url)).value[1]).toMatchObject({ ID: 2, name: 'Renamed at the provider' })
  })

  test('/pipeline-console/ answers with the UI5 index', async () => {
    const response = await fetch(`${server!.url}/pipeline-console/`)
    expect(response.status).toBe(200)
    const html = await response.text()
    expect(html).toContain('<title>Pipeline console</title>')
    expect(html).toMatch(/id="sap-ui-bootstrap"[^>]*src="resources\/sap-ui-custom\.js"/)
  })

  test('without the SDK: the REST source reads through fetch; a destination binding is refused with the install hint', async () => {
    rest.state.requests = []
    const run = await http_('POST', `${server!.url}/pipeline/execute`, { name: 'legacy-items' })
    expect(run.status, run.text).toBe(200)
    expect(run.body).toMatchObject({ status: 'completed', statistics: { created: 7 } })
    expect(rest.state.requests.every(r => r.authorized)).toBe(true)
    agents['REST source, no SDK'] = [...new Set(rest.state.requests.map(r => r.userAgent!))]
    expect(agents['REST source, no SDK']).toEqual([expect.stringMatching(FETCH_AGENT)])

    const refused = await http_('POST', `${server!.url}/pipeline/execute`, { name: 'legacy-items-destination' })
    expect(refused.status, refused.text).toBe(400)
    expect(refused.body.error.message).toBe("REST source 'LegacyDestination': cds.requires.LegacyDestination.credentials.destination ('legacy') needs the SAP Cloud SDK to resolve the destination, but @sap-cloud-sdk/http-client is not installed; install it in the app (npm add @sap-cloud-sdk/http-client@^4) or give the binding a url instead")
    expect(refused.text).not.toContain(API_KEY)
  })

  test('after the plugin: the app\'s own remote service still uses native fetch, and so do replicate and delegate', async () => {
    const { value } = await get(`${server!.url}/odata/v4/mashup/RemoteBooks?$top=3&$orderby=ID`)
    expect(value).toHaveLength(3)
    agents['app + plugin (mashup, replicate, delegate)'] = proxyAgents()
    expect(agents['app + plugin (mashup, replicate, delegate)']).toEqual(agents['app, no plugin'])
    expect(proxy.requests.some(r => r.url.includes('/Authors'))).toBe(true)
    await stop()
  })

  test('with the SDK installed by the app (what cds import wanted): CAP and the REST source switch to it together; destinations work', async () => {
    await timed('npm add SDK', () => runNpm(['add', '--no-audit', '--no-fund', '--prefer-offline', ...SDK_PACKAGES.map(name => `${name}@^4`)], app))
    rest.state.requests = []
    await serve('start (plugin + SDK)', { destinations: JSON.stringify([{ name: 'legacy', url: rest.url, authentication: 'NoAuthentication' }]) })
    expect((await get(`${server!.url}/odata/v4/mashup/RemoteBooks?$top=1`)).value).toHaveLength(1)
    agents['app + plugin + SDK'] = proxyAgents()
    expect(agents['app + plugin + SDK']).toEqual([expect.stringMatching(SDK_AGENT)])

    const viaUrl = await http_('POST', `${server!.url}/pipeline/execute`, { name: 'legacy-items' })
    expect(viaUrl.body).toMatchObject({ status: 'completed' })
    const viaDestination = await http_('POST', `${server!.url}/pipeline/execute`, { name: 'legacy-items-destination' })
    expect(viaDestination.status, viaDestination.text).toBe(200)
    // the same 7 rows again, through the destination: a full refresh counts them unchanged, by key
    expect(viaDestination.body).toMatchObject({ status: 'completed', statistics: { created: 0, updated: 0, unchanged: 7, deleted: 0 } })
    expect(rest.state.requests.every(r => r.authorized)).toBe(true)
    agents['REST source + SDK'] = [...new Set(rest.state.requests.map(r => r.userAgent!))]
    expect(agents['REST source + SDK']).toEqual([expect.stringMatching(SDK_AGENT)])
    await stop()
  })
})
