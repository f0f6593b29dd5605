/**
 * What ships (issue 33): a project made with the real tools and built the way CAP apps are deployed.
 *
 *   cds init shop --nodejs; cds import <a real provider's $metadata>
 *   cds add data-pipeline, postgres, xsuaa, mta; cds add kyma --force      (Helm chart, no questions)
 *   cds build --production                      → gen/srv (srv/csn.json), gen/pg (the deployer)
 *   cds-deploy in gen/pg                        → a fresh PostgreSQL database
 *   cds-serve in a copy of gen/srv, NODE_ENV=production, away from the project's sources
 *   cds build --production --for hana           → gen/db (.hdbtable / .hdbview)
 *
 * The one change to production: mocked users instead of XSUAA (no XSUAA here), through CDS_CONFIG as
 * a binding would come. The project's node_modules are this repository's (`cap-data-pipeline` is the
 * repository itself): the packed tarball is installed and served by packaging.test.ts and cds-add.test.ts.
 */
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { ROOT, runCds, runCommand, startInstalledApp, startProvider, type ProviderControl, type RunningApp } from '../helpers/apps'
import { importCatalog, useRepositoryPackages } from '../helpers/projects'
import { createDatabase, dropDatabase, PG, pgQuery, randomDatabaseName } from '../helpers/postgres'
import { waitFor } from '../helpers/wait'
import { basic } from '../helpers/auth'

const SEEDED = 7
const PIPELINE = 'ReplicaService.Books'
const USERS = { alice: ['PipelineAdmin'], victor: ['PipelineViewer'] }
const ROLES = ['PipelineViewer', 'PipelineOperator', 'PipelineAdmin']
const readJson = (file: string) => JSON.parse(readFileSync(file, 'utf8'))
const DK_MAJOR = Number(readJson(path.join(ROOT, 'node_modules/@sap/cds-dk/package.json')).version.split('.')[0])
const cdsBin = (name: string) => path.join(ROOT, 'node_modules/@sap/cds/bin', name)

/** A project by `cds init` that uses this repository's packages. */
async function initProject(work: string, name: string): Promise<string> {
  await runCds(['init', name, '--nodejs'], work)
  const dir = path.join(work, name)
  useRepositoryPackages(dir)
  return dir
}

/** A built folder (gen/srv, gen/pg) copied away from the project, with the packages a deployment installs. */
function deployable(from: string, to: string): string {
  cpSync(from, to, { recursive: true })
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(to, 'node_modules'), 'junction')
  return to
}

/** Every file below `dir` but node_modules, relative. */
function filesOf(dir: string, prefix = ''): string[] {
  return readdirSync(path.join(dir, prefix), { withFileTypes: true }).flatMap(entry => {
    const name = path.join(prefix, entry.name)
    if (entry.name === 'node_modules') return []
    return entry.isDirectory() ? filesOf(dir, name) : [name]
  })
}

const securityNames = (file: string) => {
  const security = readJson(file)
  return { scopes: security.scopes.map((scope: { name: string }) => scope.name), templates: security['role-templates'].map((role: { name: string }) => role.name) }
}

describe('the production build of a project made by cds init and cds add', () => {
  const work = mkdtempSync(path.join(os.tmpdir(), 'pipeline-production-'))
  let app = ''
  let provider: RunningApp & { control: ProviderControl }
  const servers: RunningApp[] = []
  const databases: string[] = []

  beforeAll(async () => {
    provider = await startProvider()
    await provider.control.seed({ count: SEEDED, modifiedAt: '2026-03-01T10:00:00.000Z' })
    app = await initProject(work, 'shop')
    await importCatalog(provider.url, work, app)
    // the documented order: the plugin first, production after it
    for (const facet of ['data-pipeline', 'postgres', 'xsuaa', 'mta']) await runCds(['add', facet], app)
    await runCds(['add', 'kyma', '--force'], app)
    writeFileSync(path.join(app, 'srv/replicas.cds'), `using { CatalogService as external } from './external/CatalogService';
service ReplicaService {
  @federation.replicate: { schedule: '1s' }
  entity Books as projection on external.Books;
}
`)
    await runCds(['build', '--production'], app)
  }, 300_000)

  afterAll(async () => {
    for (const server of servers) await server.stop()
    await provider?.stop()
    for (const database of databases) await dropDatabase(database)
    rmSync(work, { recursive: true, force: true })
  })

  test('cds add xsuaa after cds add data-pipeline: scopes and role templates in xs-security.json, role collections in mta.yaml and the Helm chart', () => {
    const { scopes, templates } = securityNames(path.join(app, 'xs-security.json'))
    expect(scopes).toEqual(ROLES.map(role => `$XSAPPNAME.${role}`))
    expect(templates).toEqual(ROLES)
    const mta = readFileSync(path.join(app, 'mta.yaml'), 'utf8')
    const chart = readFileSync(path.join(app, 'chart/values.yaml'), 'utf8')
    // a role collection per role template (named by cds-dk: `PipelineAdmin (shop ${org}-${space})` in cds-dk 10)
    for (const role of ROLES) {
      const collection = new RegExp(`role-template-references:\\s*\\n\\s*- '?\\$XSAPPNAME\\.${role}'?\\s*$`, 'm')
      expect(mta, role).toMatch(collection)
      if (DK_MAJOR >= 10) expect(chart, role).toMatch(collection) // cds-dk 9's Helm chart has none
    }
    // the deployment descriptors deploy the database and bind the app to it and to XSUAA
    expect(mta).toMatch(/- name: shop-postgres-deployer/)
    expect(chart).toMatch(/^postgres-deployer:/m)
    // and cds build --production packs the chart for helm
    expect(existsSync(path.join(app, 'gen/chart/Chart.yaml'))).toBe(true)
  })

  test('cds add data-pipeline after cds add xsuaa, with its own role names: those instead of the defaults', async () => {
    const other = await initProject(work, 'custom-roles')
    await runCds(['add', 'xsuaa'], other)
    const manifest = readJson(path.join(other, 'package.json'))
    manifest.cds.requires['data-pipeline'] = { management: { roles: { viewer: 'Auditor', operator: ['Ops', 'authenticated-user'], admin: 'Admin' } } }
    writeFileSync(path.join(other, 'package.json'), JSON.stringify(manifest, null, 2))
    const output = await runCds(['add', 'data-pipeline'], other)
    expect(output).toMatch(/creating srv[/\\]data-pipeline\.cds/)
    expect(securityNames(path.join(other, 'xs-security.json'))).toEqual({ scopes: ['$XSAPPNAME.Auditor', '$XSAPPNAME.Ops', '$XSAPPNAME.Admin'], templates: ['Auditor', 'Ops', 'Admin'] })
    // and what `cds compile srv --to xsuaa` (docs/guide/security.md "Roles") says
    expect(securityNames(path.join(other, 'xs-security.json'))).toEqual(securityNames(await compiledSecurity(other)))
  })

  test('PostgreSQL: gen/pg deployed by cds-deploy, gen/srv served in production — /pipeline/, the console, the schedule writes the rows', async () => {
    const database = await createDatabase(randomDatabaseName('production'))
    databases.push(database)
    const credentials = { host: PG.host, port: PG.port, user: PG.user, password: PG.password, database }
    const deployer = deployable(path.join(app, 'gen/pg'), path.join(work, 'deployed-pg'))
    await runCommand(process.execPath, [cdsBin('deploy.js')], deployer, 120_000, { NODE_ENV: 'production', CDS_CONFIG: JSON.stringify({ requires: { db: { credentials } } }) })
    const tables = await pgQuery<{ table_name: string }>(database, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public'")
    expect(tables.map(row => row.table_name)).toEqual(expect.arrayContaining(['plugin_data_pipeline_pipelines', 'plugin_data_pipeline_pipelineruns', 'replicaservice_books']))

    const server = await serveBuilt(path.join(work, 'served-pg'), { db: { credentials } })
    await expectServes(server)
    const rows = await pgQuery<{ count: string }>(database, 'SELECT count(*) FROM replicaservice_books')
    expect(Number(rows[0].count)).toBe(SEEDED)
  })

  test('SQLite: the same gen/srv deployed to a file and served in production', async () => {
    const db = { kind: 'sqlite', impl: '@cap-js/sqlite', credentials: { url: path.join(work, 'production.sqlite') } }
    const served = deployable(path.join(app, 'gen/srv'), path.join(work, 'deployed-sqlite'))
    await runCommand(process.execPath, [cdsBin('deploy.js')], served, 120_000, { NODE_ENV: 'production', CDS_CONFIG: JSON.stringify({ requires: { db } }) })
    await expectServes(await serveBuilt(served, { db }, false))
  })

  test('SAP HANA: cds build --production --for hana has a table for every tracker entity and a view for every management entity', async () => {
    const csn = readJson(path.join(app, 'gen/srv/srv/csn.json')) as { definitions: Record<string, { kind: string; query?: unknown; projection?: unknown; '@cds.persistence.skip'?: boolean }> }
    const entities = Object.entries(csn.definitions).filter(([, definition]) => definition.kind === 'entity' && !definition['@cds.persistence.skip'])
    const tracker = entities.filter(([name]) => name.startsWith('plugin.data_pipeline.')).map(([name]) => name)
    const views = entities.filter(([name]) => name.startsWith('DataPipelineManagementService.')).map(([name]) => name)
    expect(tracker.length).toBeGreaterThanOrEqual(3)
    expect(views.length).toBeGreaterThanOrEqual(3)
    await runCds(['build', '--production', '--for', 'hana'], app)
    const files = readdirSync(path.join(app, 'gen/db/src/gen'))
    for (const name of tracker) expect(files, name).toContain(`${name}.hdbtable`)
    for (const name of views) expect(files, name).toContain(`${name}.hdbview`)
    expect(files).toContain('ReplicaService.Books.hdbtable')
  })

  /** A copy of gen/srv (unless `copy` is false: it is one already) served as in production, with mocked users. */
  async function serveBuilt(dir: string, requires: Record<string, unknown>, copy = true): Promise<RunningApp> {
    if (copy) deployable(path.join(app, 'gen/srv'), dir)
    // nothing but the build's output: no CDS source of the app's
    expect(filesOf(dir).filter(file => file.endsWith('.cds'))).toEqual([])
    const users = Object.fromEntries(Object.entries(USERS).map(([name, roles]) => [name, { roles }]))
    const server = await startInstalledApp(dir, {
      env: {
        NODE_ENV: 'production',
        CDS_CONFIG: JSON.stringify({ requires: { ...requires, auth: { kind: 'mocked', users }, CatalogService: { credentials: { url: `${provider.url}/odata/v4/catalog` } } } }),
      },
    })
    servers.push(server)
    return server
  }

  async function expectServes(server: RunningApp): Promise<void> {
    const get = (url: string, user?: string) => fetch(`${server.url}${url}`, { headers: user ? { authorization: basic(user) } : {} })
    expect((await get('/pipeline/Pipelines')).status).toBe(401)
    const pipelines = await (await get('/pipeline/Pipelines', 'victor')).json()
    expect(pipelines.value.map((row: { name: string }) => row.name)).toContain(PIPELINE)
    const console = await get('/pipeline-console/')
    expect(console.status).toBe(200)
    expect(await console.text()).toMatch(/<html/i)
    // the schedule runs by itself
    const runs = await waitFor(async () => {
      const answer = await (await get(`/pipeline/PipelineRuns?$filter=pipeline_name eq '${PIPELINE}' and statistics_created eq ${SEEDED}`, 'victor')).json()
      return answer.value?.length ? answer.value : undefined
    }, 'a scheduled run that copied the rows', 60_000)
    expect(runs[0]).toMatchObject({ trigger: 'scheduled' })
    const count = await get('/odata/v4/replica/Books/$count', 'victor')
    expect(await count.text()).toBe(String(SEEDED))
    // roles hold in production: a viewer may not run it
    const execute = await fetch(`${server.url}/pipeline/execute`, { method: 'POST', headers: { authorization: basic('victor'), 'content-type': 'application/json' }, body: JSON.stringify({ name: PIPELINE }) })
    expect(execute.status).toBe(403)
    expect(server.output()).not.toMatch(/Duplicate definition/)
  }
})

/** `cds compile srv --to xsuaa` of the project, written next to it. */
async function compiledSecurity(dir: string): Promise<string> {
  const file = path.join(dir, 'compiled-xs-security.json')
  writeFileSync(file, await runCds(['compile', 'srv', '--to', 'xsuaa'], dir))
  expect(existsSync(file)).toBe(true)
  return file
}
