/**
 * OData V2 delta tokens and ODP (issue 38): ODQ_CHANGEMODE as upserts and deleted entries, the
 * Olingo/Gateway `$deletedEntity` tombstone as CAP hands V2 over, the retries an initial load may
 * make, no read-ahead of an initialisation, and the replica of an ODP entity set without the delta
 * queue's fields (idempotent, compiled by CAP to the table).
 */
import cds from '@sap/cds'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { changeEntry } from '../../lib/adapters/source/odp'
import { deltaEntry, REMOVED } from '../../lib/adapters/source/delta-links'
import { notServed } from '../../lib/adapters/retry'
import { ODataV2SourceAdapter } from '../../lib/adapters/source/odata-v2'
import { enhanceModel, type FederationCsn } from '../../lib/federation/annotations'
import type { ResolvedPipeline } from '../../lib/pipeline/types'
import { ANNOTATIONS } from '../../lib/constants'

const KEYS = ['SALESDOCUMENT', 'SALESDOCUMENTITEM']
const row = (mode: unknown) => ({ SALESDOCUMENT: '0001000001', SALESDOCUMENTITEM: '000010', NETAMOUNT: '10.000', ODQ_CHANGEMODE: mode, ODQ_ENTITYCNTR: '1' })

describe('ODQ_CHANGEMODE', () => {
  test.each(['', 'C', 'U', null])('%j is an upsert of the row as it is', mode => {
    expect(changeEntry(row(mode), KEYS, 'FactsOfX')).toEqual(row(mode))
  })
  test("'D' is a deleted entry of the key fields", () => {
    expect(changeEntry({ ...row('D'), NETAMOUNT: '0.000', ODQ_ENTITYCNTR: '-1' }, KEYS, 'FactsOfX'))
      .toEqual({ [REMOVED]: { reason: 'deleted' }, SALESDOCUMENT: '0001000001', SALESDOCUMENTITEM: '000010' })
    expect(() => changeEntry({ ODQ_CHANGEMODE: 'D', SALESDOCUMENT: '1' }, KEYS, 'FactsOfX')).toThrow(/names no value for key 'SALESDOCUMENTITEM'/)
  })
  test.each([['X', /with ODQ_CHANGEMODE 'X'/], [undefined, /without ODQ_CHANGEMODE/]])('an unknown or missing mode (%j) fails the run', (mode, message) => {
    const input = row(mode)
    if (mode === undefined) delete (input as Record<string, unknown>).ODQ_CHANGEMODE
    expect(() => changeEntry(input, KEYS, 'FactsOfX')).toThrow(expect.objectContaining({ code: 'SOURCE_FAILED', message: expect.stringMatching(message) }))
  })
})

test("Gateway's tombstones (Olingo's JSON: `@odata.context` kept by CAP in V2) are deleted entries by their id", () => {
  const tombstone = { '@odata.context': '$metadata#SalesOrderSet/$deletedEntity', id: "http://h/sap/opu/odata/sap/Z_SRV/SalesOrderSet('0500000003')" }
  expect(deltaEntry(tombstone, ['SalesOrderID'])).toEqual({ [REMOVED]: { reason: 'deleted' }, SalesOrderID: '0500000003' })
})

test('the first request of an initial load is retried only where the provider surely did not serve it', () => {
  const failure = (status: number) => Object.assign(new Error('x'), { reason: { response: { status } } })
  expect([429, 503].map(s => notServed(failure(s)))).toEqual([true, true])
  expect([500, 502, 504, 400].map(s => notServed(failure(s)))).toEqual([false, false, false, false])
  expect(notServed(new Error('socket hang up'))).toBe(false)
})

test('a delta run reads ahead from a stored link only, never an initialisation', () => {
  const pipeline = { name: 'p', delta: { mode: 'odata-delta' }, config: { source: {} } } as unknown as ResolvedPipeline
  const source = new ODataV2SourceAdapter({ pipeline } as never)
  expect(source.readsAheadFrom({ name: 'p', mode: 'delta', lastSync: null, lastKey: "/FactsOfX?!deltatoken='D1'" })).toBe(true)
  expect(source.readsAheadFrom({ name: 'p', mode: 'delta', lastSync: null, lastKey: null })).toBe(false)
  const watermarked = new ODataV2SourceAdapter({ pipeline: { ...pipeline, delta: { mode: 'timestamp' } } } as never)
  expect(watermarked.readsAheadFrom({ name: 'p', mode: 'delta', lastSync: null, lastKey: null })).toBe(true)
  // an ODP entity set (its rows carry ODQ_CHANGEMODE) never: a token another instance moved past is not asked again
  const odp = new ODataV2SourceAdapter({ pipeline } as never)
  Object.assign(odp, { entity: { elements: { SalesDocument: { key: true }, ODQ_CHANGEMODE: { type: 'cds.String' } } } })
  expect(odp.readsAheadFrom({ name: 'p', mode: 'delta', lastSync: null, lastKey: "/FactsOfX?!deltatoken='D1'" })).toBe(false)
})

describe('@federation.replicate on an ODP entity set', () => {
  const external = path.resolve(__dirname, '../fixtures/odp-consumer/srv/external/Z_ODP_SALES_SRV.cds')
  const work = mkdtempSync(path.join(os.tmpdir(), 'odp-replica-'))
  afterAll(() => rmSync(work, { recursive: true, force: true }))
  /** A consumer model on the committed import (inferred CSN, as `cds.load` gives; no plugin hook runs). */
  const load = async (source: string) => {
    const file = path.join(work, 'consumer.cds')
    writeFileSync(file, `using { Z_ODP_SALES_SRV as ext } from '${external}';\n${source}`)
    return (await cds.load(file, { silent: true } as never)) as unknown as FederationCsn
  }
  const elements = (csn: FederationCsn, name: string) => Object.keys((csn.definitions![name] as { elements: object }).elements)

  test('the delta queue fields leave `*`, an explicit column keeps its own; twice is once; the table has neither', async () => {
    const csn = await load(`namespace r;
      @federation.replicate entity Plain as projection on ext.FactsOfCSDSLSDOCITMDX;
      @federation.replicate entity Mapped as projection on ext.FactsOfCSDSLSDOCITMDX { *, ODQ_CHANGEMODE as changeMode };
      @federation.replicate entity Listed as projection on ext.FactsOfCSDSLSDOCITMDX { key SALESDOCUMENT, key SALESDOCUMENTITEM, ODQ_ENTITYCNTR };`)
    expect(enhanceModel(csn)).toBe(true)
    expect(elements(csn, 'r.Plain').filter(e => e.startsWith('ODQ_'))).toEqual([])
    expect(elements(csn, 'r.Mapped')).toContain('changeMode')
    expect(elements(csn, 'r.Mapped').filter(e => e.startsWith('ODQ_'))).toEqual([])
    expect(elements(csn, 'r.Listed')).toEqual(['SALESDOCUMENT', 'SALESDOCUMENTITEM', 'ODQ_ENTITYCNTR'])
    expect((csn.definitions!['r.Plain'].projection as { excluding?: string[] }).excluding).toEqual(['ODQ_CHANGEMODE', 'ODQ_ENTITYCNTR'])
    // run twice: the marker stops the second call; without the marker it changes nothing either
    expect(enhanceModel(csn)).toBe(false)
    delete csn.meta![ANNOTATIONS.enhanced]
    enhanceModel(csn)
    expect((csn.definitions!['r.Plain'].projection as { excluding?: string[] }).excluding).toEqual(['ODQ_CHANGEMODE', 'ODQ_ENTITYCNTR'])
    // what CAP compiles from it: the tables of the replicas
    const ddl = (cds.compile.to.sql(csn as never) as unknown as string[]).join('\n')
    const table = (name: string) => new RegExp(`CREATE TABLE ${name} \\(([^;]*?)\\n\\)`).exec(ddl)?.[1] ?? ''
    expect(table('r_Plain')).toContain('NETAMOUNT')
    expect(table('r_Plain')).not.toContain('ODQ_')
    expect(table('r_Mapped')).toMatch(/changeMode NVARCHAR\(1\)/)
    expect(table('r_Mapped')).not.toContain('ODQ_')
    expect(table('r_Listed')).toContain('ODQ_ENTITYCNTR')
  })
})
