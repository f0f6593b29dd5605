/**
 * The federation model hook on APIs as `cds import` really writes them (issue 9): every
 * imported entity carries `@cds.persistence.skip` (and `@cds.external`), which the compiler
 * propagates to projections. Replicate and delegate projections on them, in a namespace or
 * inside a service, with or without a select list, with `@readonly`/`@Capabilities…`
 * propagated too, must compile to the right tables for SQLite and PostgreSQL; only an
 * explicit, contradictory annotation of the user's own is an error. Also CAP's `@federated`.
 *
 * The imports are the committed fixtures (regenerated from the real provider by
 * `npm run import:fixtures`), not look-alikes: the first test checks that they carry what
 * `cds import` writes.
 */
import cds from '@sap/cds'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import * as annotationsModule from '../../lib/federation/annotations'
import * as replicateModule from '../../lib/federation/replicate'

const annotations = () => annotationsModule
const replicate = () => replicateModule

const EXTERNAL = path.resolve(__dirname, '../fixtures/consumer/srv/external')
const V4 = path.join(EXTERNAL, 'Provider.cds')
const V2 = path.join(EXTERNAL, 'ProviderV2.cds')

type Definition = Record<string, unknown> & { elements?: Record<string, unknown> }
type Csn = { definitions: Record<string, Definition>; meta?: Record<string, unknown> }

const work = mkdtempSync(path.join(os.tmpdir(), 'federation-imported-'))
afterAll(() => rmSync(work, { recursive: true, force: true }))
let files = 0
/** Loads a consumer model file that uses the imported API files (inferred CSN, as `cds.load` gives; no plugin hook runs). */
async function compile(source: string): Promise<Csn> {
  const file = path.join(work, `consumer-${++files}.cds`)
  writeFileSync(file, source)
  return (await cds.load(file, { silent: true } as never)) as unknown as Csn
}
const usingImports = `using { Provider as ext } from '${V4}';\nusing { ProviderV2 as v2 } from '${V2}';\n`
const sql = (csn: Csn, dialect = 'sqlite') => (cds.compile.to.sql(csn as never, { dialect } as never) as unknown as string[]).join('\n')
const own = (def: Definition, key: string) => (Object.hasOwn(def, key) ? def[key] : undefined)

let remotes: string[] = []
beforeAll(() => {
  // `@federated` replicates only from remote services, as bound in cds.requires
  const requires = cds.env.requires as unknown as Record<string, unknown>
  for (const [name, kind] of [['Provider', 'odata'], ['ProviderV2', 'odata-v2']]) {
    if (!requires[name]) { requires[name] = { kind }; remotes.push(name) }
  }
})
afterAll(() => {
  const requires = cds.env.requires as unknown as Record<string, unknown>
  for (const name of remotes) delete requires[name]
  remotes = []
})

describe('imported APIs as cds import writes them', () => {
  test('the committed imports are real: every entity is @cds.external and @cds.persistence.skip, and a plain projection inherits skip', async () => {
    const csn = await compile(`${usingImports} entity Plain as projection on ext.Books;`)
    for (const name of ['Provider.Books', 'ProviderV2.Books']) {
      expect(csn.definitions[name]['@cds.persistence.skip'], name).toBe(true)
      expect(csn.definitions[name]['@cds.external'], name).toBe(true)
    }
    expect(csn.definitions.Plain['@cds.persistence.skip']).toBe(true)
  })

  test('replicate inside a service, without a select list: a table for SQLite and PostgreSQL, the inherited skip switched off', async () => {
    const csn = await compile(`${usingImports}
      service ConsumerService {
        @federation.replicate: { delta: { field: 'modifiedAt' } }
        entity ReplicatedBooks as projection on ext.Books;
      }`)
    expect(csn.definitions['ConsumerService.ReplicatedBooks']['@cds.persistence.skip']).toBe(true) // propagated by the compiler
    expect(annotations().enhanceModel(csn as never)).toBe(true)
    const def = csn.definitions['ConsumerService.ReplicatedBooks']
    expect(def['@cds.persistence.table']).toBe(true)
    expect(def['@cds.persistence.skip']).toBe(false)
    expect(sql(csn)).toMatch(/CREATE TABLE ConsumerService_ReplicatedBooks \(\s+ID INTEGER NOT NULL,\s+title NVARCHAR\(200\)/)
    expect(sql(csn, 'postgres')).toMatch(/CREATE TABLE ConsumerService_ReplicatedBooks \(/)
    // the remote entity itself stays without storage
    expect(sql(csn)).not.toMatch(/Provider_Books/)
  })

  test('replicate in a db namespace with a select list and renames; views on the replica become database views', async () => {
    const csn = await compile(`${usingImports}
      namespace my.db;
      @federation.replicate
      entity Books as projection on ext.Books { key ID, title as name, modifiedAt as changedAt };
      service S { entity BookList as projection on Books; }`)
    annotations().enhanceModel(csn as never)
    const text = sql(csn)
    expect(text).toMatch(/CREATE TABLE my_db_Books \(\s+ID INTEGER NOT NULL,\s+name NVARCHAR\(200\),\s+changedAt TIMESTAMP_TEXT,/)
    expect(text).toMatch(/CREATE VIEW my_db_S_BookList AS SELECT[\s\S]*FROM my_db_Books/)
    expect(csn.definitions['my.db.S.BookList']['@cds.persistence.skip']).toBe(false)
  })

  test('OData V2 imports (sap: annotations, V2 types) replicate the same way', async () => {
    const csn = await compile(`${usingImports}
      service ConsumerService { @federation.replicate entity V2Books as projection on v2.Books { key ID, title, modifiedAt }; }`)
    annotations().enhanceModel(csn as never)
    expect(sql(csn)).toMatch(/CREATE TABLE ConsumerService_V2Books \(\s+ID INTEGER NOT NULL,\s+title NVARCHAR\(200\),\s+modifiedAt TIMESTAMP_TEXT,/)
  })

  test('propagated @readonly and @Capabilities… do not matter; the replica config reads the remote entity', async () => {
    const csn = await compile(`${usingImports}
      annotate ext.Books with @readonly @Capabilities.InsertRestrictions.Insertable: false;
      service ConsumerService {
        @federation.replicate: { schedule: 60000, delta: { field: 'changed' } }
        entity Books as projection on ext.Books { key ID, title, modifiedAt as changed };
      }`)
    expect(csn.definitions['ConsumerService.Books']['@readonly']).toBe(true)
    annotations().enhanceModel(csn as never)
    expect(sql(csn)).toMatch(/CREATE TABLE ConsumerService_Books/)
    const replica = replicate().replicaOf('ConsumerService.Books', csn as never)
    expect(replica.config).toMatchObject({ source: { service: 'Provider', entity: 'Books' }, target: { entity: 'ConsumerService.Books' }, delta: { field: 'modifiedAt' }, schedule: 60000 })
  })

  test('every option @federation.replicate accepts (docs/guide/replicate.md): delta mode, field pairs, soft deletes, settle', async () => {
    const csn = await compile(`${usingImports}
      @federation.replicate: { schedule: '10m', preload: { wait: true }, delta: { mode: 'datetime-fields', dateField: 'changedOn', timeField: 'changedAt', settle: '5m' } }
      entity Pairs as projection on v2.Books { key ID, title, changedDate as changedOn, changedTime as changedAt };
      @federation.replicate: { delta: { mode: 'key', field: 'ID' } }
      entity ByKey as projection on ext.Books { key ID, title };
      @federation.replicate: { delta: { field: 'changed', deletedField: 'isDeleted', deletedAction: 'flag' } }
      entity Soft as projection on ext.Items { key ID, name, isDeleted, modifiedAt as changed };
      @federation.replicate: { mode: 'full' }
      entity Unknown as projection on ext.Books { key ID };
      @federation.replicate: { parallel: 8 }
      entity Wide as projection on ext.Books { key ID, title };
      @federation.replicate: { parallel: 33 }
      entity TooWide as projection on ext.Books { key ID };
      @federation.replicate: { parallel: 'many' }
      entity NotWide as projection on ext.Books { key ID };`)
    annotations().enhanceModel(csn as never)
    const config = (name: string) => replicate().replicaOf(name, csn as never).config
    expect(config('Pairs')).toMatchObject({ schedule: '10m', delta: { mode: 'datetime-fields', dateField: 'changedDate', timeField: 'changedTime', settle: '5m' } })
    expect(replicate().replicaOf('Pairs', csn as never).preload).toBe('wait')
    expect(config('ByKey').delta).toEqual({ mode: 'key', field: 'ID' })
    expect(config('Soft').delta).toEqual({ field: 'modifiedAt', deletedField: 'isDeleted', deletedAction: 'flag' })
    expect(() => config('Unknown')).toThrow("@federation.replicate on 'Unknown': mode is unknown; expected one of schedule, preload, delta, events, parallel")
    // key ranges a full copy reads at once (docs/guide/partitioned-reads.md)
    expect(config('Wide').parallel).toBe(8)
    expect(config('ByKey').parallel).toBeUndefined()
    expect(() => config('TooWide')).toThrow("@federation.replicate on 'TooWide': parallel must be an integer between 1 and 32")
    expect(() => config('NotWide')).toThrow("@federation.replicate on 'NotWide': parallel must be an integer between 1 and 32")
  })

  test('@federation.replicate: { events } subscribes the replica (docs/guide/event-driven.md); @federated takes events from its settings', async () => {
    const csn = await compile(`${usingImports}
      @federation.replicate: { events: { service: 'bus', topics: [{ topic: 'sap.s4.beh.book.v1.Book.Changed.v1', key: 'BookID' }], window: '100ms' } }
      entity Followed as projection on ext.Books { key ID, title, modifiedAt };
      @federation.replicate: { events: 'bus' }
      entity Short as projection on ext.Books { key ID, title };
      @federated entity Fed as projection on ext.Books { key ID, title, modifiedAt };`)
    annotations().enhanceModel(csn as never)
    expect(replicate().replicaOf('Followed', csn as never).config.events).toEqual({ service: 'bus', topics: [{ topic: 'sap.s4.beh.book.v1.Book.Changed.v1', key: 'BookID' }], window: '100ms' })
    expect(replicate().replicaOf('Short', csn as never).config.events).toBe('bus')
    const settings = cds.env.requires as unknown as Record<string, { federation?: Record<string, unknown> }>
    const before = settings['data-pipeline'].federation
    settings['data-pipeline'].federation = { ...before, federated: { events: true } }
    try {
      expect(replicate().replicaOf('Fed', csn as never, true).config.events).toBe(true)
    } finally {
      settings['data-pipeline'].federation = before
    }
  })

  test('delegate inside a service: no storage, for the projection and views on it', async () => {
    const csn = await compile(`${usingImports}
      service ConsumerService { @federation.delegate entity LiveBooks as projection on ext.Books { key ID, title }; }
      service Other { entity LiveView as projection on ConsumerService.LiveBooks; }`)
    annotations().enhanceModel(csn as never)
    expect(csn.definitions['ConsumerService.LiveBooks']['@cds.persistence.skip']).toBe(true)
    expect(csn.definitions['Other.LiveView']['@cds.persistence.skip']).toBe(true)
    expect(sql(csn)).not.toMatch(/LiveBooks|LiveView/)
  })

  test('the hook is idempotent, and a recompiled model (JSON round trip, runtime compile) keeps the replica a table', async () => {
    const csn = await compile(`${usingImports} service C { @federation.replicate entity R as projection on ext.Books; }`)
    expect(annotations().enhanceModel(csn as never)).toBe(true)
    const once = JSON.stringify(csn)
    expect(annotations().enhanceModel(csn as never)).toBe(false)
    expect(JSON.stringify(csn)).toBe(once)
    const copy = JSON.parse(once) as Csn
    delete copy.meta!['@federation.$enhanced']
    expect(annotations().enhanceModel(copy as never)).toBe(false)
    const runtime = cds.compile.for.nodejs(JSON.parse(once) as never) as unknown as Csn
    expect(own(runtime.definitions['C.R'], '@cds.persistence.skip')).toBe(false)
    expect(sql(copy)).toMatch(/CREATE TABLE C_R/)
  })

  test('only an explicit, contradictory annotation of the user on the same entity is an error', async () => {
    const skipOnLocal = await compile(`
      entity Local { key ID : Integer; }
      @federation.replicate @cds.persistence.skip entity Copy as projection on Local;`)
    expect(() => annotations().enhanceModel(skipOnLocal as never)).toThrow(/'Copy' is annotated @federation.replicate \(a local table\) but carries @cds.persistence.skip itself/)
    const tableOnDelegate = await compile(`${usingImports} @federation.delegate @cds.persistence.table entity Live as projection on ext.Books;`)
    expect(() => annotations().enhanceModel(tableOnDelegate as never)).toThrow(/'Live' is served by @federation.delegate \(no local storage\) but carries @cds.persistence.table itself/)
  })
})

describe("CAP's @federated", () => {
  test('on a projection of a remote entity: replicated with the documented defaults (delta on modifiedAt, schedule, preload)', async () => {
    const csn = await compile(`${usingImports}
      @federated entity Customers as projection on ext.Books { key ID, title as name, modifiedAt };
      @federated entity Titles as projection on ext.Books { key ID, title };
      service TravelService { entity CustomerList as projection on Customers; }`)
    expect(Object.fromEntries(annotations().classify(csn as never))).toEqual({
      Customers: { kind: 'replicate', own: true, federated: true },
      Titles: { kind: 'replicate', own: true, federated: true },
      'TravelService.CustomerList': { kind: 'replicate', own: false },
    })
    annotations().enhanceModel(csn as never)
    const text = sql(csn)
    expect(text).toMatch(/CREATE TABLE Customers \(/)
    expect(text).toMatch(/CREATE VIEW TravelService_CustomerList AS SELECT[\s\S]*FROM Customers/)
    const [customers, titles] = replicate().replicasOf(csn as never)
    expect(customers.config).toEqual({
      name: 'Customers',
      description: '@federated: Provider.Books → Customers',
      source: { service: 'Provider', entity: 'Books' },
      target: { entity: 'Customers' },
      delta: { field: 'modifiedAt' },
      schedule: 600_000,
    })
    expect(customers.preload).toBe('background')
    // no modifiedAt: full refreshes
    expect(titles.config).toMatchObject({ name: 'Titles', mode: 'full' })
    expect(titles.config.delta).toBeUndefined()
  })

  test('@federation.delegate or @federation.replicate on the same entity say otherwise; a non-remote source is left alone', async () => {
    const csn = await compile(`${usingImports}
      @federated @federation.delegate entity Live as projection on ext.Books;
      @federated @federation.replicate: { schedule: 5000 } entity Tuned as projection on ext.Books;
      service LocalService { entity Things { key ID : Integer; modifiedAt : Timestamp; } }
      @federated entity LocalCopy as projection on LocalService.Things;`)
    expect(Object.fromEntries(annotations().classify(csn as never))).toEqual({
      Live: { kind: 'delegate', own: true },
      Tuned: { kind: 'replicate', own: true },
    })
    annotations().enhanceModel(csn as never)
    expect(csn.definitions.Live['@cds.persistence.skip']).toBe(true)
    expect(replicate().replicasOf(csn as never).map(r => [r.name, r.config.schedule])).toEqual([['Tuned', 5000]])
    expect(own(csn.definitions.LocalCopy, '@cds.persistence.table')).toBeUndefined()
  })
})
