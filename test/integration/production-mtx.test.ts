/**
 * Multitenancy as deployed (issue 33 point 4): a project made with the real tools, built for
 * production, its MTX sidecar and its app served from `gen/` in the production profile.
 *
 *   cds init shop --nodejs ; cds import CatalogService.edmx   (this repo's @sap/cds-dk 10; the $metadata of
 *                                                              test/fixtures/provider, served for the test)
 *   "cap-data-pipeline" in package.json, node_modules → this repository's (it resolves to the repo itself)
 *   cds add data-pipeline ; cds add multitenancy            (the sidecar in mtx/sidecar, @sap/cds-mtxs 4)
 *   srv/tenant-replicas.cds: @federation.replicate of the imported Books
 *   cds build --production                                  → gen/srv, gen/mtx/sidecar (+ gen/db for HANA)
 *   gen/mtx/sidecar: cds-serve, NODE_ENV=production        (its `npm start`)
 *   gen/srv:         cds-serve, NODE_ENV=production        (its `npm start`)
 *   PUT /-/cds/saas-provisioning/tenant/t1|t2 on the sidecar, as the SaaS registry calls it
 *   POST /pipeline/execute on the app as a user of t1; as the provider's operator for t2
 *   DELETE /-/cds/saas-provisioning/tenant/t2 on the sidecar
 *
 * What CAP cannot run here, and what stands in for it (CDS_CONFIG of both processes):
 * - the database: the production profile of a sidecar project is SAP HANA through the Service
 *   Manager (one HDI container per tenant). cds-mtxs 4 deploys tenants into HANA and SQLite only
 *   (its deployer plugins: srv/plugins/hana.js, sqlite.js; a sidecar on PostgreSQL ends at startup
 *   with `Service "cds.xt.DeploymentService" has no handler for "getColumns"`), and @cap-js/postgres
 *   has no database per tenant (its connection pool ignores the tenant): PostgreSQL tenants are not
 *   something CAP supports. The test runs CAP's own local setup: one SQLite file per tenant (db-<tenant>.sqlite,
 *   t0 for CAP's registry), shared by sidecar and app. The HANA part tested instead: the tenant
 *   deployment content the build packs for the sidecar (_main/resources.tgz) holds the tracker's
 *   and the replica's .hdbtable files, i.e. what HDI would deploy into each tenant's container.
 * - authentication: production's is XSUAA (JWT); mocked users with the same roles instead —
 *   `mtcallback` for the SaaS registry's callback, tenant users, a provider operator.
 * - the SaaS registry's asynchronous callback: the subscription is the synchronous PUT.
 *
 * The sidecar does not load the plugin (not a dependency of mtx/sidecar): the tables come from the
 * app's model that the build compiled with the plugin's model hooks (_main/srv/csn.json); the
 * engine's own subscribe hooks do not run, it reads the tenants from CAP's registry in t0 and sets
 * a tenant up on first use (docs/guide/multitenancy.md, Limits). Not tested: subscribing an unsubscribed
 * tenant again while the app runs — on SQLite the app's own CAP connection pool keeps the deleted
 * file open (CAP itself then serves the old rows), local SQLite only.
 */
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { gunzipSync } from 'node:zlib'
import { ROOT, runCds, startInstalledApp, startProvider, type ProviderControl, type RunningApp } from '../helpers/apps'
import { tenantDatabases } from '../helpers/mtx'
import { importCatalog, useRepositoryPackages } from '../helpers/projects'
import { userClient } from '../helpers/users'

const BOOKS = 5
const PIPELINE = 'TenantReplicas.Books'
const TABLE = 'TenantReplicas_Books'
const TRACKER = ['plugin_data_pipeline_Pipelines', 'plugin_data_pipeline_PipelineRuns']

const readJson = (file: string) => JSON.parse(readFileSync(file, 'utf8'))
/** The names in a .tgz (ustar: a 512-byte header per entry, the name in its first 100 bytes). */
function tarNames(file: string): string[] {
  const tar = gunzipSync(readFileSync(file))
  const names: string[] = []
  for (let at = 0; at + 512 <= tar.length && tar[at] !== 0;) {
    const field = (offset: number, length: number) => tar.subarray(at + offset, at + offset + length).toString('utf8').replace(/\0.*$/s, '')
    const prefix = field(345, 155)
    names.push(prefix ? `${prefix}/${field(0, 100)}` : field(0, 100))
    at += 512 + Math.ceil(parseInt(field(124, 12).trim() || '0', 8) / 512) * 512
  }
  return names
}

interface Run { pipeline_name: string; status: string; trigger: string; statistics_created: number; statistics_updated: number }

describe('multitenancy as deployed: cds add multitenancy, cds build --production, MTX sidecar and app from gen/', () => {
  const work = mkdtempSync(path.join(os.tmpdir(), 'pipeline-production-mtx-'))
  const project = path.join(work, 'shop')
  const gen = path.join(project, 'gen')
  /** The tenants' SQLite files (db-<tenant>.sqlite), shared by sidecar and app. */
  const data = path.join(work, 'data')
  mkdirSync(data)
  const { dbFile, sql } = tenantDatabases(data)
  const tables = (tenant: string) => sql<{ name: string }>(tenant, "SELECT name FROM sqlite_master WHERE type = 'table'").map(t => t.name)
  let provider: RunningApp & { control: ProviderControl }
  let sidecar: RunningApp | undefined
  let app: RunningApp | undefined

  const db = { kind: 'sqlite', credentials: { url: path.join(data, 'db.sqlite') } }
  const onSidecar = userClient(() => sidecar!.url)
  const { call, get } = userClient(() => app!.url)
  const registry = (method: 'PUT' | 'DELETE', tenant: string) => onSidecar.call('saas-registry', method, `/-/cds/saas-provisioning/tenant/${tenant}`,
    method === 'PUT' ? { subscribedTenantId: tenant, subscribedSubdomain: `${tenant}-shop`, eventType: 'CREATE' } : undefined)

  beforeAll(async () => {
    const [provided] = await Promise.all([
      startProvider().then(async running => { await running.control.seed({ count: BOOKS, modifiedAt: '2026-03-01T10:00:00.000Z' }); return running }),
      runCds(['init', 'shop', '--nodejs'], work),
    ])
    provider = provided
    await importCatalog(provider.url, work, project)
    useRepositoryPackages(project)

    await runCds(['add', 'data-pipeline'], project)
    await runCds(['add', 'multitenancy'], project)
    // the app's own replica of the imported API
    writeFileSync(path.join(project, 'srv/tenant-replicas.cds'), `using { CatalogService as external } from './external/CatalogService';

service TenantReplicas {
  @federation.replicate: { delta: { field: 'modifiedAt' } }
  entity Books as projection on external.Books { key ID, title, stock, modifiedAt };
}
`)
  }, 240_000)

  afterAll(async () => {
    await app?.stop()
    await sidecar?.stop()
    await provider?.stop()
    if (process.env.KEEP_PRODUCTION_MTX) console.log(`production-mtx: kept in ${work}`)
    else rmSync(work, { recursive: true, force: true })
  })

  test('the project: cds add multitenancy made the sidecar, cds add data-pipeline the tracker model', () => {
    const { cds } = readJson(path.join(project, 'package.json'))
    expect(cds.profile).toBe('with-mtx-sidecar')
    expect(cds.requires['[production]']).toMatchObject({ multitenancy: true })
    // the engine per tenant in the same profiles, by `cds add multitenancy` after `cds add data-pipeline` (nothing by hand)
    expect(cds.requires['data-pipeline']).toMatchObject({ '[production]': { multitenancy: { active: true } }, '[with-mtx]': { multitenancy: { active: true } } })
    expect(cds.requires['data-pipeline'].multitenancy).toBeUndefined()
    expect(readJson(path.join(project, 'mtx/sidecar/package.json')).dependencies).toHaveProperty('@sap/cds-mtxs')
    // the tracker model in the app's model (db/ or srv/, wherever `cds add data-pipeline` puts it)
    const models = ['db', 'srv'].flatMap(folder => existsSync(path.join(project, folder)) ? readdirSync(path.join(project, folder)).filter(f => f.endsWith('.cds')).map(f => path.join(project, folder, f)) : [])
    expect(models.filter(file => /^using from 'cap-data-pipeline\/db';$/m.test(readFileSync(file, 'utf8')))).toHaveLength(1)
  })

  test('cds build --production: gen/srv with the compiled model, gen/mtx/sidecar with the app model for tenant deployments', async () => {
    const output = await runCds(['build', '--production'], project, 180_000)
    expect(output).toMatch(/build completed/)
    for (const folder of ['srv', 'mtx/sidecar']) expect(existsSync(path.join(gen, folder, 'package.json')), folder).toBe(true)

    // the app: one compiled model with the tracker, the management API and the replica
    const appModel = readJson(path.join(gen, 'srv/srv/csn.json')).definitions
    for (const name of ['plugin.data_pipeline.Pipelines', 'plugin.data_pipeline.PipelineRuns', 'DataPipelineManagementService', PIPELINE]) expect(appModel, name).toHaveProperty([name])
    // the sidecar: CAP's MTX services; the app's model (what it deploys into each tenant) under _main
    expect(readJson(path.join(gen, 'mtx/sidecar/srv/csn.json')).definitions).toHaveProperty(['cds.xt.DeploymentService'])
    const tenantModel = readJson(path.join(gen, 'mtx/sidecar/_main/srv/csn.json')).definitions
    for (const name of ['plugin.data_pipeline.Pipelines', 'plugin.data_pipeline.PipelineRuns', PIPELINE]) expect(tenantModel, name).toHaveProperty([name])
    // the replica is a table (the plugin's model hook ran in the build), not a skipped projection of a remote entity
    expect(tenantModel[PIPELINE]['@cds.persistence.skip']).not.toBe(true)

    // SAP HANA, which cannot run here: the tenant deployment content the sidecar hands HDI for every tenant container
    const resources = tarNames(path.join(gen, 'mtx/sidecar/_main/resources.tgz'))
    for (const table of ['plugin.data_pipeline.Pipelines', 'plugin.data_pipeline.PipelineRuns', PIPELINE]) expect(resources).toContain(`src/gen/${table}.hdbtable`)

    // what `npm ci` in each deployed folder would install: this repository's packages
    for (const folder of ['srv', 'mtx/sidecar']) symlinkSync(path.join(ROOT, 'node_modules'), path.join(gen, folder, 'node_modules'), 'junction')
  })

  test('the sidecar and the app start in the production profile from gen/', async () => {
    sidecar = await startInstalledApp(path.join(gen, 'mtx/sidecar'), {
      env: { NODE_ENV: 'production', CDS_CONFIG: JSON.stringify({ requires: { db, auth: { kind: 'mocked', users: { 'saas-registry': { roles: ['mtcallback'] } } } } }) },
    })
    expect(sidecar.output()).toMatch(/serving cds\.xt\.SaasProvisioningService/)
    app = await startInstalledApp(path.join(gen, 'srv'), {
      env: {
        NODE_ENV: 'production',
        CDS_CONFIG: JSON.stringify({
          requires: {
            db,
            auth: {
              kind: 'mocked',
              users: {
                u1: { tenant: 't1', roles: ['PipelineOperator'] },
                u2: { tenant: 't2', roles: ['PipelineOperator'] },
                ops: { roles: ['PipelineAdmin'] },
              },
            },
            CatalogService: { credentials: { url: `${provider.url}/odata/v4/catalog` } },
          },
        }),
      },
    })
    // the compiled model alone (issue 33: the management model was loaded beside it, duplicate definitions)
    expect(app.output()).toMatch(/loaded model from 1 file\(s\)[^]*srv[/\\]csn\.json/)
    expect(app.output()).toMatch(/serving DataPipelineManagementService/)
    // MTX's deployment service is the sidecar's: the engine reads the tenants from CAP's registry in t0
    expect(app.output()).not.toMatch(/serving cds\.xt\.DeploymentService/)
  })

  test('a subscription through the sidecar deploys the tracker tables and the replica into the tenant database', async () => {
    for (const tenant of ['t1', 't2']) {
      const { status, body } = await registry('PUT', tenant)
      expect(status, JSON.stringify(body)).toBeLessThan(300)
    }
    for (const tenant of ['t1', 't2']) expect(tables(tenant)).toEqual(expect.arrayContaining([...TRACKER, TABLE]))
    expect(sql<{ ID: string }>('t0', 'SELECT ID FROM cds_xt_Tenants ORDER BY ID').map(t => t.ID)).toEqual(['t1', 't2'])
    // nothing of a tenant in the provider's own database
    expect(existsSync(dbFile('')) ? sql('', `SELECT name FROM sqlite_master WHERE name IN ('${TABLE}', '${TRACKER[0]}')`) : []).toEqual([])
  })

  test("a user of t1 runs the pipeline on the app: rows in t1's table, the run in t1's tracker, nothing in t2", async () => {
    const first = await call('u1', 'POST', '/pipeline/execute', { name: PIPELINE })
    expect(first.status, JSON.stringify(first.body)).toBe(200)
    expect(first.body).toMatchObject({ name: PIPELINE, status: 'completed', statistics: { created: BOOKS } })
    expect(sql<{ n: number }>('t1', `SELECT count(*) AS n FROM ${TABLE}`)[0].n).toBe(BOOKS)
    expect(sql('t1', `SELECT pipeline_name, status, statistics_created FROM ${TRACKER[1]}`)).toEqual([{ pipeline_name: PIPELINE, status: 'idle', statistics_created: BOOKS }])
    expect(sql<{ lastSync: string }>('t1', `SELECT lastSync FROM ${TRACKER[0]} WHERE name = ?`, PIPELINE)[0].lastSync).toBe('2026-03-01T10:00:00.000Z')

    // a delta run reads the change only
    await provider.control.touch({ from: 2, title: 'Book 2, second edition', modifiedAt: '2026-03-02T10:00:00.000Z' })
    const delta = await call('u1', 'POST', '/pipeline/execute', { name: PIPELINE })
    expect(delta.body).toMatchObject({ status: 'completed', statistics: { created: 0, updated: 1 } })
    expect(await get<Array<{ title: string }>>('u1', '/odata/v4/tenant-replicas/Books?$filter=ID eq 2')).toEqual([expect.objectContaining({ title: 'Book 2, second edition' })])
    const runs = await get<Run[]>('u1', `/pipeline/PipelineRuns?$filter=pipeline_name eq '${PIPELINE}'&$orderby=startTime`)
    expect(runs.map(r => [r.trigger, r.status, r.statistics_created, r.statistics_updated])).toEqual([['manual', 'idle', BOOKS, 0], ['manual', 'idle', 0, 1]])

    // t2 was not touched
    expect(sql<{ n: number }>('t2', `SELECT count(*) AS n FROM ${TABLE}`)[0].n).toBe(0)
    expect(sql('t2', `SELECT ID FROM ${TRACKER[1]}`)).toEqual([])
    expect(await get<Run[]>('u2', '/pipeline/PipelineRuns')).toEqual([])
  })

  test("the provider's operator runs it for t2 and sees both tenants (CAP's registry in t0, read by the app)", async () => {
    const run = await call('ops', 'POST', '/pipeline/execute', { name: PIPELINE, tenant: 't2' })
    expect(run.status, JSON.stringify(run.body)).toBe(200)
    expect(run.body).toMatchObject({ status: 'completed', statistics: { created: BOOKS } })
    expect(sql<{ n: number }>('t2', `SELECT count(*) AS n FROM ${TABLE}`)[0].n).toBe(BOOKS)
    const overview = await get<Array<{ tenant: string; pipeline: string; lastRunStatus: string; error: string | null }>>('ops', '/pipeline/tenantsOverview()')
    expect(overview.map(r => [r.tenant, r.pipeline, r.lastRunStatus, r.error])).toEqual([['t1', PIPELINE, 'idle', null], ['t2', PIPELINE, 'idle', null]])
    expect((await call('ops', 'POST', '/pipeline/execute', { name: PIPELINE, tenant: 't9' })).status).toBe(404)
    // t1 still has its own two runs
    expect(sql('t1', `SELECT ID FROM ${TRACKER[1]}`)).toHaveLength(2)
  })

  test('an unsubscription through the sidecar: the tenant is gone for the app too', async () => {
    const { status, body } = await registry('DELETE', 't2')
    expect(status, JSON.stringify(body)).toBeLessThan(300)
    expect(existsSync(dbFile('t2'))).toBe(false)
    expect(sql<{ ID: string }>('t0', 'SELECT ID FROM cds_xt_Tenants').map(t => t.ID)).toEqual(['t1'])
    expect((await get<Array<{ tenant: string }>>('ops', '/pipeline/tenantsOverview()')).map(r => r.tenant)).toEqual(['t1'])
    expect((await call('ops', 'POST', '/pipeline/execute', { name: PIPELINE, tenant: 't2' })).status).toBe(404)
    expect((await call('u1', 'POST', '/pipeline/execute', { name: PIPELINE })).body).toMatchObject({ status: 'completed' })
  })
})
