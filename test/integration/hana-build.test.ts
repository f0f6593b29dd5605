/**
 * SAP HANA artifacts of an app that uses the plugin (issue 22): `cds build --for hana` of a copy
 * of the federation fixture — `@federation.replicate` projections, a `@federation.delegate`
 * one with a local entity associated to it, the tracker model (`cap-data-pipeline/db`) and the
 * management API (`cap-data-pipeline/srv/management`, as docs/guide/production.md says) — and a
 * HANA-dialect compile (`to.sql` with `dialect: 'hana'`, `to.hdbtable`) of the same model as
 * the plugin's model hook enhances it. HANA itself is not run here: the fast write path is not
 * taken on HANA (test/unit/write-path.test.ts), every write goes through CAP's path.
 */
import cds from '@sap/cds'
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { FIXTURES, ROOT, runCds } from '../helpers/apps'
import { enhanceModel, type FederationCsn } from '../../lib/federation/annotations'

let dir: string

beforeAll(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'pipeline-hana-'))
  for (const part of ['db', 'srv', 'package.json']) cpSync(path.join(FIXTURES, 'federation', part), path.join(dir, part), { recursive: true })
  // this repository's packages; `cap-data-pipeline` resolves to the repository itself
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'junction')
  writeFileSync(path.join(dir, 'db/delegated.cds'), `namespace federation;
using { Provider as ext } from '../srv/external/Provider';

@federation.delegate
entity LiveBooks as projection on ext.Books { key ID, title as name };

entity Reviews {
  key ID   : Integer;
      book : Association to LiveBooks;
      text : String(100);
}
`)
  writeFileSync(path.join(dir, 'srv/pipeline-api.cds'), "using from 'cap-data-pipeline/srv/management';\n")
})

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true })
})

const TABLES = [
  'plugin.data_pipeline.Pipelines', 'plugin.data_pipeline.PipelineRuns', 'plugin.data_pipeline.PipelineRejects',
  'federation.Books', 'federation.Catalog', 'federation.Shelf', 'federation.Ticker', 'federation.Reviews',
]

describe('SAP HANA artifacts', () => {
  test('cds build --for hana: tables for the tracker and the replicas, nothing for a delegate, views for the management API', async () => {
    await runCds(['build', '--for', 'hana'], dir, 60_000)
    const gen = path.join(dir, 'gen/db/src/gen')
    const files = readdirSync(gen)
    for (const table of TABLES) expect(files).toContain(`${table}.hdbtable`)
    // a delegated projection has no storage, a replicated one is a table (not CAP's view)
    expect(files.filter(f => f.includes('LiveBooks'))).toEqual([])
    expect(files).not.toContain('federation.Books.hdbview')
    const books = readFileSync(path.join(gen, 'federation.Books.hdbtable'), 'utf8')
    expect(books).toMatch(/^COLUMN TABLE federation_Books \(/)
    expect(books).toMatch(/\bname NVARCHAR\(200\)/)
    expect(books).toMatch(/\bchangedAt TIMESTAMP\b/)
    expect(books).not.toMatch(/\bprice\b/)
    expect(readFileSync(path.join(gen, 'federation.Reviews.hdbtable'), 'utf8')).toMatch(/\bbook_ID INTEGER\b/)
    expect(files).toContain('DataPipelineManagementService.Pipelines.hdbview')
    expect(existsSync(path.join(dir, 'gen/db/package.json'))).toBe(true)
  })

  test('HANA-dialect compile of the enhanced model: to.sql and to.hdbtable', async () => {
    const csn = (await cds.load([path.join(dir, 'db'), path.join(dir, 'srv')])) as unknown as FederationCsn
    expect(enhanceModel(csn)).toBe(true)
    const sql = (cds.compile.to.sql(csn as never, { dialect: 'hana' } as never) as unknown as string[]).join('\n')
    for (const table of TABLES) expect(sql).toContain(`CREATE TABLE ${table.replace(/\./g, '_')} (`)
    // HANA's types, not SQLite's or PostgreSQL's
    expect(sql).toMatch(/CREATE TABLE federation_Books \(\s+ID INTEGER NOT NULL,\s+name NVARCHAR\(200\)/)
    expect(sql).toMatch(/source NCLOB/)
    expect(sql).not.toMatch(/LiveBooks/)
    const hdbtable = [...(cds.compile.to.hdbtable(csn as never) as unknown as Iterable<[string, { file?: string }]>)]
    const names = hdbtable.map(([, meta]) => meta.file ?? '')
    for (const table of TABLES) expect(names).toContain(`${table}.hdbtable`)
  })
})
