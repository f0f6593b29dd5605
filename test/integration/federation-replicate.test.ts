/**
 * `@federation.replicate` end to end (issue 6, SPEC "Federation annotations"): the model hook
 * makes annotated projections local tables (renames and column restriction from the
 * projection) and is idempotent on every model path; one pipeline per annotated entity,
 * named after it; manual-only vs scheduled; `preload: true` in the background and
 * `preload: { wait: true }` before the app listens (and a failed one stops startup); local
 * writes stay local until a run overwrites them; derived projections read the local table.
 *
 * The federation fixture runs in-process (cds.test) against the real provider (a child
 * process). The provider URL must be known before the fixture serves (its wait-preload reads
 * the provider during startup), so it is passed as `cds_requires_Provider_credentials_url`.
 */
import cds from '@sap/cds'
import path from 'node:path'
import { createRequire } from 'node:module'
import { FIXTURES, startApp, type ProviderControl, type RunningApp } from '../helpers/apps'
import { sharedProvider } from '../helpers/shared-provider'
import { ql, rowCount } from '../helpers/consumer'
import { columnNames, dbName, relationType } from '../helpers/postgres'
import type DataPipelineService from '../../srv/data-pipeline'
import { waitFor } from '../helpers/wait'

const require = createRequire(import.meta.url)
const APP = path.join(FIXTURES, 'federation')
const SOURCES = [path.join(APP, 'db/schema.cds'), path.join(APP, 'srv/service.cds')]
const URL_VARIABLE = 'cds_requires_Provider_credentials_url'
const T0 = '2026-01-01T00:00:00.000Z'
const T1 = '2026-02-01T00:00:00.000Z'
const SEEDED = 20
const REPLICATED = ['federation.Books', 'federation.Catalog', 'federation.Shelf', 'federation.Ticker']

/** The compiled plugin modules, the same instances the running app uses. */
const annotations = () => require('../../dist/lib/federation/annotations.js') as typeof import('../../lib/federation/annotations')
const replicate = () => require('../../dist/lib/federation/replicate.js') as typeof import('../../lib/federation/replicate')

type Csn = { definitions: Record<string, Record<string, unknown>>; extensions?: Array<Record<string, unknown>>; meta?: Record<string, unknown> }
interface RunRow { ID: string; status: string; trigger: string; mode: string; startTime: string; endTime: string | null }

let provider: RunningApp & { control: ProviderControl }
let listenedAt = 0
let engine: DataPipelineService

beforeAll(async () => {
  provider = await sharedProvider()
  await provider.control.seed({ from: 1, count: SEEDED, modifiedAt: T0 })
  process.env[URL_VARIABLE] = `${provider.url}/odata/v4/catalog`
  cds.once('listening', () => { listenedAt = Date.now() })
})
const app = cds.test(APP) as unknown as {
  GET(url: string): Promise<{ data: any }>
  POST(url: string, data: object): Promise<{ status: number; data: any }>
  PATCH(url: string, data: object): Promise<{ status: number; data: any }>
}
beforeAll(async () => {
  engine = (await cds.connect.to('data-pipeline')) as unknown as DataPipelineService
})
afterAll(async () => {
  delete process.env[URL_VARIABLE]
  await provider?.stop()
})

const count = rowCount
const runsOf = (name: string): Promise<RunRow[]> =>
  ql.SELECT.from('plugin.data_pipeline.PipelineRuns').where({ pipeline_name: name }).orderBy('startTime')
/** The fixture model as loaded from its sources, without emitting `loaded` (so no hook ran). */
const loadPlain = (flavor?: string) => cds.load(SOURCES, { silent: true, ...(flavor ? { flavor } : {}) } as never) as unknown as Promise<Csn>

async function run(name: string, mode?: 'full' | 'delta') {
  const { done } = await engine.execute(name, mode ? { mode } : {})
  return done
}

describe('model hook', () => {
  test('a replicated projection becomes a table with its renames and its column restriction; derived projections stay views', async () => {
    // SQLite or PostgreSQL (the `postgres` project), as deployed by CAP
    expect(await columnNames('federation_Books')).toEqual(['ID', 'name', 'writer', 'changedAt'].map(dbName))
    expect(await relationType('federation_Books')).toBe('table')
    expect(await relationType('federation_Catalog')).toBe('table')
    expect(await relationType('FederationService_Books')).toBe('view')
    expect(await relationType('FederationService_Stock')).toBe('view')
    expect(await relationType('federation_Notes')).toBe('table')

    const defs = (cds.model as unknown as Csn).definitions
    expect(defs['federation.Books']['@cds.persistence.table']).toBe(true)
    // the compiler propagates the annotation to derived projections: they are not replicas
    // (a linked model lets a projection inherit from its source, so only own properties tell)
    expect(defs['FederationService.Books']['@federation.replicate']).toBe(true)
    expect(Object.hasOwn(defs['FederationService.Books'], '@cds.persistence.table')).toBe(false)
    expect(defs['federation.Notes']['@cds.persistence.table']).toBeUndefined()
  })

  test('idempotent: running the hook twice changes nothing, with or without the marker', async () => {
    const { enhanceModel } = annotations()
    const csn = await loadPlain()
    expect(csn.definitions['federation.Books']['@cds.persistence.table']).toBeUndefined()

    expect(enhanceModel(csn as never)).toBe(true)
    expect(csn.meta?.['@federation.$enhanced']).toBe(true)
    const once = JSON.stringify(csn)
    expect(enhanceModel(csn as never)).toBe(false)
    expect(JSON.stringify(csn)).toBe(once)

    // a copy that lost its marker (serialized without meta) comes out identical
    const copy = JSON.parse(once) as Csn
    delete copy.meta!['@federation.$enhanced']
    expect(enhanceModel(copy as never)).toBe(false)
    expect(copy).toEqual(JSON.parse(once))
    expect(cds.compile.to.sql(copy as never)).toEqual(cds.compile.to.sql(JSON.parse(once)))
  })

  test('a model without federation annotations is left untouched (not even marked)', () => {
    const { enhanceModel } = annotations()
    const csn = cds.compile(`
      @cds.external service Remote { entity Things { key ID : Integer; name : String; } }
      entity Plain { key ID : Integer; }
      @cds.persistence.table entity Copy as projection on Remote.Things;
    `) as unknown as Csn
    const before = JSON.stringify(csn)
    expect(enhanceModel(csn as never)).toBe(false)
    expect(JSON.stringify(csn)).toBe(before)
    expect(csn.meta?.['@federation.$enhanced']).toBeUndefined()
  })

  test('runs on the runtime and DDL compile paths too (extended / multitenant models), and on annotate statements', async () => {
    // cds.compile.for.nodejs (compile.for.runtime) of a model that never went through `loaded`,
    // as an MTX app server compiles a tenant's model fetched from the sidecar
    const fetched = await loadPlain()
    expect(fetched.definitions['federation.Books']['@cds.persistence.table']).toBeUndefined()
    const runtime = cds.compile.for.nodejs(fetched as never) as unknown as Csn
    expect(runtime.definitions['federation.Books']['@cds.persistence.table']).toBe(true)
    expect(Object.hasOwn(runtime.definitions['FederationService.Books'], '@cds.persistence.table')).toBe(false)

    // an xtended model (extensions applied, nothing inferred) is classified the same way
    const xtended = await loadPlain('xtended')
    expect(annotations().enhanceModel(xtended as never)).toBe(true)
    expect(xtended.definitions['federation.Books']['@cds.persistence.table']).toBe(true)
    expect(xtended.definitions['FederationService.Books']['@cds.persistence.table']).toBeUndefined()

    // cds.compile.to.sql (compile.to.dbx), as used by cds deploy and the MTX sidecar
    const sql = (cds.compile.to.sql(await loadPlain() as never) as unknown as string[]).join('\n')
    expect(sql).toMatch(/CREATE TABLE federation_Books \(/)
    expect(sql).not.toMatch(/CREATE VIEW federation_Books\b/)
    expect(sql).toMatch(/CREATE VIEW FederationService_Books AS SELECT[\s\S]*FROM federation_Books/)

    // a parsed model (an extension) annotating with `annotate … with @federation.replicate`
    const parsed = cds.parse(`
      @cds.external service Remote { entity Things { key ID : Integer; name : String; } }
      entity Copy as projection on Remote.Things;
      annotate Copy with @federation.replicate.schedule: 60000;
    `) as unknown as Csn
    expect(annotations().enhanceModel(parsed as never)).toBe(true)
    const inferred = cds.compile(parsed as never) as unknown as Csn
    expect(inferred.definitions.Copy['@cds.persistence.table']).toBe(true)
  })

  test('@federation.delegate: no storage, also for views on it; both annotations on one entity are rejected', () => {
    const { enhanceModel, classify } = annotations()
    const source = `
      @cds.external service Remote { entity Things { key ID : Integer; name : String; } }
      @federation.delegate entity Live as projection on Remote.Things;
      @federation.replicate entity Copy as projection on Remote.Things;
      service S { entity LiveView as projection on Live; entity CopyView as projection on Copy; }
    `
    const csn = cds.compile(source) as unknown as Csn
    enhanceModel(csn as never)
    expect(csn.definitions.Live['@cds.persistence.skip']).toBe(true)
    expect(csn.definitions['S.LiveView']['@cds.persistence.skip']).toBe(true)
    expect(csn.definitions.Copy['@cds.persistence.table']).toBe(true)
    expect(csn.definitions['S.CopyView']['@cds.persistence.skip']).toBeUndefined()
    expect(Object.fromEntries(classify(csn as never))).toEqual({
      Live: { kind: 'delegate', own: true },
      'S.LiveView': { kind: 'delegate', own: false },
      Copy: { kind: 'replicate', own: true },
      'S.CopyView': { kind: 'replicate', own: false },
    })
    const sql = (cds.compile.to.sql(csn as never) as unknown as string[]).join('\n')
    expect(sql).not.toMatch(/\bLive\b|S_LiveView/)
    expect(sql).toMatch(/CREATE TABLE Copy/)

    const both = cds.compile(`
      @cds.external service Remote { entity Things { key ID : Integer; } }
      @federation.replicate @federation.delegate entity Both as projection on Remote.Things;
    `)
    expect(() => enhanceModel(both as never)).toThrow(/'Both' is annotated with both @federation.replicate and @federation.delegate/)
  })
})

describe('pipelines', () => {
  test('one pipeline per annotated entity, named after its fully qualified name, with the derived config', async () => {
    const names = engine.getPipelineNames()
    expect(names).toEqual(expect.arrayContaining(REPLICATED))
    expect(names.filter(n => n.startsWith('FederationService.'))).toEqual([])

    expect(engine.registry.coded('federation.Books')).toEqual({
      name: 'federation.Books',
      description: '@federation.replicate: Provider.Books → federation.Books',
      source: { service: 'Provider', entity: 'Books' },
      target: { entity: 'federation.Books' },
    })
    // the annotation names the projection's element; the pipeline reads the source's
    expect(engine.registry.coded('federation.Catalog')).toMatchObject({ delta: { field: 'modifiedAt' } })
    expect(engine.registry.get('federation.Catalog')).toMatchObject({ shape: 'entity', mode: 'delta' })
    const tracker = await engine.status('federation.Books')
    expect(JSON.parse(tracker.source as string)).toEqual({ service: 'Provider', entity: 'Books' })
    expect(JSON.parse(tracker.target as string)).toEqual({ entity: 'federation.Books' })
  })

  test('without schedule: manual only — no run happens until one is triggered', async () => {
    expect(engine.registry.get('federation.Books').schedule).toBeUndefined()
    expect((await engine.status('federation.Books')).schedule).toBeNull()
    expect(await runsOf('federation.Books')).toEqual([])
    expect(await count('federation.Books')).toBe(0)

    const outcome = await run('federation.Books')
    expect(outcome.status).toBe('completed')
    expect(outcome.statistics).toEqual({ created: SEEDED, updated: 0, deleted: 0 })
    const rows = await ql.SELECT.from('federation.Books').orderBy('ID').limit(1)
    expect(rows).toEqual([{ ID: 1, name: 'Book 1', writer: 'Author 1', changedAt: T0 }])
    expect((await runsOf('federation.Books')).map(r => r.trigger)).toEqual(['manual'])
  })

  test('with schedule: the in-process schedule runs it', async () => {
    expect(engine.registry.get('federation.Ticker').schedule).toEqual({ every: 300, engine: 'spawn' })
    expect((await engine.status('federation.Ticker')).schedule).toBe('every 300 ms (spawn)')
    await waitFor(async () => (await runsOf('federation.Ticker')).some(r => r.trigger === 'scheduled' && r.status === 'idle'))
    expect(await count('federation.Ticker')).toBe(SEEDED)
    await engine.setEnabled('federation.Ticker', false) // keep the rest of the file quiet
  })

  test('preload { wait: true }: loaded before the app started listening', async () => {
    expect(listenedAt).toBeGreaterThan(0)
    expect(await count('federation.Catalog')).toBe(SEEDED)
    const [preload, ...others] = await runsOf('federation.Catalog')
    expect(others).toEqual([])
    expect(preload).toMatchObject({ status: 'idle', trigger: 'scheduled', mode: 'delta' })
    expect(Date.parse(preload.endTime!)).toBeLessThanOrEqual(listenedAt)
    // a derived projection (with its own where clause) reads the local table
    const { data } = await app.GET('/odata/v4/federation/Stock?$orderby=ID&$top=2')
    expect(data.value).toEqual([{ ID: 10, title: 'Book 10', stock: 10 }, { ID: 11, title: 'Book 11', stock: 11 }])
  })

  test('preload: true: one initial load in the background', async () => {
    await waitFor(async () => (await count('federation.Shelf')) === SEEDED)
    await waitFor(async () => (await runsOf('federation.Shelf'))[0]?.status === 'idle')
    const runs = await runsOf('federation.Shelf')
    expect(runs.map(r => [r.trigger, r.status])).toEqual([['scheduled', 'idle']])
  })

  test('a failing preload { wait: true } stops startup with an error naming the entity and the cause', async () => {
    const failed = await startApp(APP, { env: { [URL_VARIABLE]: `${provider.url}/odata/v4/nowhere` } })
      .then(async started => { await started.stop(); return undefined }, (error: Error) => error)
    expect(failed?.message).toMatch(/exited with 1/)
    expect(failed?.message).toMatch(/@federation\.replicate preload \{ wait: true \} failed, the app does not start — 'federation\.Catalog': /)
    expect(failed?.message).not.toMatch(/server listening/)
  })

  test('ties at the watermark arrive through the annotation pipeline too', async () => {
    await engine.flushPipeline('federation.Books')
    await provider.control.reset()
    await provider.control.seed({ from: 1, count: 5, modifiedAt: T0 })
    expect((await run('federation.Books')).statistics).toEqual({ created: 5, updated: 0, deleted: 0 })
    expect((await engine.status('federation.Books')).lastSync).toBe(T0)

    // rows written later carrying exactly the watermark value of the previous run
    await provider.control.seed({ from: 101, count: 3, modifiedAt: T0 })
    // (the tie rows are re-read; unchanged ones are not counted as updates)
    expect((await run('federation.Books')).statistics).toEqual({ created: 3, updated: 0, deleted: 0 })
    expect(((await ql.SELECT.from('federation.Books').columns('ID').orderBy('ID')) as Array<{ ID: number }>).map(r => r.ID))
      .toEqual([1, 2, 3, 4, 5, 101, 102, 103])
  })

  test('writes stay local (the provider is untouched) until a run overwrites them; derived projections read the local table', async () => {
    // continues from the tie test: 8 rows, replicated
    await app.PATCH('/odata/v4/federation/Books(1)', { name: 'Edited locally' })
    await app.POST('/odata/v4/federation/Books', { ID: 999, name: 'Local only', writer: 'Me' })

    expect((await provider.control.books('?$filter=ID eq 1'))[0]).toMatchObject({ title: 'Book 1' })
    expect(await provider.control.books('?$filter=ID eq 999')).toEqual([])

    // the derived service projection reads the local table, local rows included
    const local = (await app.GET('/odata/v4/federation/Books?$orderby=ID&$select=ID,name')).data.value
    expect(local).toHaveLength(9)
    expect(local[0]).toEqual({ ID: 1, name: 'Edited locally' })
    expect(local[8]).toEqual({ ID: 999, name: 'Local only' })
    expect(local).toEqual(await ql.SELECT.from('federation.Books').columns('ID', 'name').orderBy('ID'))

    // a delta run overwrites the edited row once the source row changed; the local-only row stays
    await provider.control.touch({ from: 1, modifiedAt: T1 })
    expect((await run('federation.Books')).status).toBe('completed')
    expect(await ql.SELECT.one.from('federation.Books').where({ ID: 1 })).toMatchObject({ name: 'Book 1', changedAt: T1 })
    expect(await ql.SELECT.one.from('federation.Books').where({ ID: 999 })).toMatchObject({ name: 'Local only' })

    // a full run makes the table equal to the source again
    expect((await run('federation.Books', 'full')).status).toBe('completed')
    expect(await ql.SELECT.one.from('federation.Books').where({ ID: 999 })).toBeUndefined()
    expect(await count('federation.Books')).toBe(8)
  })
})

describe('registration rules', () => {
  const remote = '@cds.external service Provider { entity Books { key ID : Integer; title : String; modifiedAt : Timestamp; } }'

  test('a pipeline of the same name with a different config is a collision naming both; the same config is accepted again', async () => {
    const { registerReplicas } = replicate()
    await engine.addPipeline({ name: 'Clash', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'federation.Notes' } })
    const csn = cds.compile(`${remote} @federation.replicate entity Clash as projection on Provider.Books { key ID, title };`)
    const error = await registerReplicas(engine, csn as never).then(() => undefined, (e: Error) => e)
    expect(error?.message).toContain("@federation.replicate on entity 'Clash' needs pipeline 'Clash' (source Provider.Books → target Clash)")
    expect(error?.message).toContain("already registered with a different config (source Provider.Books → target federation.Notes)")

    // registering the served model's replicas again is a no-op, not a collision
    const again = await registerReplicas(engine, cds.model as never)
    expect(again.map(r => r.name)).toEqual(REPLICATED)
  })

  test('invalid annotation values are rejected naming the entity and the key', () => {
    const { replicaOf } = replicate()
    const replica = (annotation: string, projection = 'projection on Provider.Books') =>
      () => replicaOf('X', cds.compile(`${remote} ${annotation} entity X as ${projection};`) as never)
    expect(replica("@federation.replicate: { scheduel: 1000 }")).toThrow(/@federation.replicate on 'X': scheduel is unknown; expected one of schedule, preload, delta/)
    expect(replica("@federation.replicate: { preload: 'yes' }")).toThrow(/@federation.replicate on 'X': preload must be true or \{ wait: true \}/)
    expect(replica("@federation.replicate: { preload: { wait: 1 } }")).toThrow(/preload.wait must be true or false/)
    expect(replica('@federation.replicate: { delta: { field: 7 } }')).toThrow(/delta.field must be an element name/)
    expect(replica('@federation.replicate', 'select from Provider.Books as a join Provider.Books as b on a.ID = b.ID { key a.ID }'))
      .toThrow(/must be a projection on one entity of a remote service/)
    expect(replicaOf('X', cds.compile(`${remote} @federation.replicate: { schedule: 60000, preload: { wait: true } } entity X as projection on Provider.Books;`) as never))
      .toMatchObject({ preload: 'wait', config: { schedule: 60000, source: { service: 'Provider', entity: 'Books' }, target: { entity: 'X' } } })
  })
})

describe('a replica table that is not deployed (SQLite: no such table; PostgreSQL: relation … does not exist)', () => {
  test('the run fails saying which table to deploy and what to do next, in its error and the tracker row, never SQL', async () => {
    // views of the model read it: PostgreSQL drops them along (CASCADE), SQLite leaves them
    const postgres = (cds.env.requires as unknown as { db: { kind: string } }).db.kind === 'postgres'
    await cds.run(`DROP TABLE federation_Catalog${postgres ? ' CASCADE' : ''}`)
    const error = await run('federation.Catalog', 'full').then(() => undefined, (e: Error) => e)
    expect(error).toBeDefined()
    const [last] = (await runsOf('federation.Catalog')).slice(-1) as Array<RunRow & { error: string }>
    const stored = JSON.parse(last.error) as { message: string; correlationId: string }
    const tracker = await ql.SELECT.one.from('plugin.data_pipeline.Pipelines').where({ name: 'federation.Catalog' }) as { lastError: string }
    for (const message of [stored.message, tracker.lastError]) {
      expect(message).toMatch(/^The replica table of pipeline 'federation\.Catalog' \(federation_Catalog\) is not deployed: run cds deploy and restart the app/i)
      expect(message).not.toMatch(/no such table|does not exist|SELECT|INSERT|DELETE/i)
    }
    expect(stored.correlationId).toMatch(/^[0-9a-f-]{36}$/)
  })
})
