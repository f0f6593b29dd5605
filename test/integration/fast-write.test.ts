/**
 * The database target's prepared statements (lib/adapters/target/write-path.ts): plain tables
 * are written on the transaction's own connection, storing exactly what CAP's INSERT/UPSERT
 * store (compared raw, types included, against a table of the same shape written by CAP), with
 * honest counts, idempotent upserts, an atomic full refresh and database triggers firing; views,
 * localized and temporal entities, entities with application handlers on the db service and
 * batches with nested values go through CAP. Runs on SQLite and (project `postgres`) PostgreSQL.
 */
import cds from '@sap/cds'
import path from 'node:path'
import { randomUUID } from 'node:crypto'
import { FIXTURES } from '../helpers/apps'
import { ql } from '../helpers/consumer'
import type DataPipelineService from '../../srv/data-pipeline'
import type { DatabaseTargetAdapter } from '../../lib/adapters/target/db'

cds.test(path.join(FIXTURES, 'fast-write'))

type Row = Record<string, unknown>
interface Db { kind: string; run(query: unknown, values?: unknown[]): Promise<any>; tx<T>(fn: () => Promise<T>): Promise<T>; handle(req: unknown): Promise<unknown>; before(...args: unknown[]): void }
const db = () => (cds as unknown as { db: Db }).db
const postgres = () => db().kind === 'postgres'
let engine: DataPipelineService

beforeAll(async () => {
  engine = (await cds.connect.to('data-pipeline')) as unknown as DataPipelineService
})

async function targetOf(name: string, entity: string, mode: 'full' | 'delta' = 'full'): Promise<DatabaseTargetAdapter> {
  await engine.addPipeline({ name, source: { entity: 'fastwrite.Source' }, target: { entity }, mode } as never)
  return (await engine.registry.prepare(name)).target as DatabaseTargetAdapter
}

const table = (entity: string) => entity.replace(/\./g, '_')

/** The stored rows as the database holds them (no CAP output conversion), with SQLite's storage classes. */
async function raw(entity: string): Promise<Row[]> {
  const columns = ['ID', 'title', 'descr', 'qty', 'big', 'price', 'ratio', 'flag', 'day', 'at', 'changed', 'stamp', 'status', 'createdAt', 'createdBy', 'modifiedAt']
  const select = postgres() ? columns.map(c => `${c} as "${c}"`).join(',') : columns.map(c => `${c}, typeof(${c}) as ${c}_type`).join(',')
  return db().run(`SELECT ${select} FROM ${table(entity)} ORDER BY ID`)
}

/** CAP's INSERT/UPSERT queries of an entity handled while `fn` runs. */
async function capWrites(entity: string, fn: () => Promise<unknown>): Promise<number> {
  const spy = vi.spyOn(db(), 'handle')
  try {
    await fn()
    return spy.mock.calls.filter(([req]) => {
      const query = (req as { query?: Record<string, { into?: { ref?: string[] } }> }).query
      const into = query?.INSERT?.into ?? query?.UPSERT?.into
      return into?.ref?.[0] === entity || (into as unknown) === entity
    }).length
  } finally {
    spy.mockRestore()
  }
}

const uuid = (i: number) => `${String(i).padStart(8, '0')}-${randomUUID().slice(9)}`

/** Every converted type, nulls, numbers and booleans where CAP's JSON changes them, a Date object. */
function sampleRows(): Row[] {
  return [
    { ID: uuid(1), title: 'plain', descr: 'x'.repeat(6000), qty: 1, big: '1234567890123', price: 12.5, ratio: 0.1, flag: true, day: '2026-01-02', at: '10:11:12', changed: '2026-01-02T10:11:12Z', stamp: '2026-01-02T10:11:12.123Z', status: 'set', createdBy: 'alice' },
    { ID: uuid(2), title: 42, descr: null, qty: -7, big: 12, price: '0.10', ratio: 3, flag: false, day: '2026-02-28T23:30:00+02:00', at: '01:02:03', changed: '2026-01-02T12:11:12+02:00', stamp: new Date('2026-03-04T05:06:07.890Z'), status: null, createdBy: null },
    { ID: uuid(3), title: null, descr: 'ü €', qty: null, big: null, price: null, ratio: null, flag: null, day: null, at: null, changed: null, stamp: '2026-01-31T23:59:59.999Z', status: 'x', createdBy: 'bob' },
    { ID: uuid(4), title: 'ts', descr: '', qty: 0, big: 0, price: 100, ratio: -2.5e-8, flag: true, day: '2024-02-29', at: '23:59:59', changed: postgres() ? '2026-02-28T10:00:00Z' : '2026-02-29T10:00:00Z' /* SQLite's ISO() rolls it over, PostgreSQL rejects it */, stamp: '2026-06-30T10:00:00.5Z', status: '', createdBy: '' },
  ]
}

describe('fast write path', () => {
  test('the path is chosen once per pipeline: prepared statements for plain tables, CAP for what needs it', async () => {
    const paths: Record<string, string> = {}
    for (const entity of ['fastwrite.ViaFast', 'fastwrite.Numbered', 'fastwrite.Composite', 'fastwrite.Orders', 'fastwrite.FastView', 'fastwrite.NotStored', 'fastwrite.Texts', 'fastwrite.Versions'])
      paths[entity] = (await targetOf(`path-${entity}`, entity)).writePath.kind
    expect(paths).toEqual({
      'fastwrite.ViaFast': 'prepared', 'fastwrite.Numbered': 'prepared', 'fastwrite.Composite': 'prepared', 'fastwrite.Orders': 'prepared',
      'fastwrite.FastView': 'cap', 'fastwrite.NotStored': 'cap', 'fastwrite.Texts': 'cap', 'fastwrite.Versions': 'cap',
    })
    expect((await targetOf('path-view', 'fastwrite.FastView')).writePath.reason).toMatch(/view/)
    expect((await targetOf('path-texts', 'fastwrite.Texts')).writePath.reason).toMatch(/localized/)
    expect((await targetOf('path-not-stored', 'fastwrite.NotStored')).writePath.reason).toMatch(/@cds.persistence.skip/)
  })

  test('an application handler on the db service for the entity keeps CAP\'s path, and the handler sees the rows', async () => {
    const seen: unknown[] = []
    // by definition: cds 9 prefixes a string path on the db service with 'db.', so only a definition matches there
    db().before('CREATE', cds.model!.definitions['fastwrite.Hooked'], (req: { data: unknown }) => { seen.push(req.data) })
    const target = await targetOf('hooked', 'fastwrite.Hooked')
    expect(target.writePath).toMatchObject({ kind: 'cap', reason: expect.stringMatching(/handler for before CREATE/) })
    await db().tx(async () => {
      await target.truncate({ runId: 'h1', mode: 'full', batchIndex: 0 })
      await target.writeBatch([{ ID: uuid(1), title: 'a' }, { ID: uuid(2), title: 'b' }], { runId: 'h1', mode: 'full', batchIndex: 0 })
    })
    expect(seen.length).toBeGreaterThan(0)
  })

  test('inserts after a truncate store exactly what CAP\'s INSERT stores, without any CAP write', async () => {
    const target = await targetOf('same-insert', 'fastwrite.ViaFast')
    expect(target.writePath.kind).toBe('prepared')
    const rows = sampleRows()
    const writes = await capWrites('fastwrite.ViaFast', () => db().tx(async () => {
      await db().run(ql.DELETE.from('fastwrite.ViaCap'))
      await db().run(ql.INSERT.into('fastwrite.ViaCap').entries(rows.map(row => ({ ...row }))))
      await target.truncate({ runId: 'i1', mode: 'full', batchIndex: 0 })
      expect(await target.writeBatch(rows, { runId: 'i1', mode: 'full', batchIndex: 0 })).toEqual({ created: 4, updated: 0, deleted: 0 })
    }))
    expect(writes).toBe(0)
    const [viaCap, viaFast] = [await raw('fastwrite.ViaCap'), await raw('fastwrite.ViaFast')]
    expect(viaFast).toHaveLength(4)
    expect(viaFast).toEqual(viaCap)
    expect(viaFast[0].status).toBe('set')
    expect(viaFast[0].createdAt).toBeTruthy()
  })

  test('upserts store what CAP\'s UPSERT stores (columns left out keep their value or get @cds.on.update), counted honestly, idempotent', async () => {
    const target = await targetOf('same-upsert', 'fastwrite.ViaFast', 'delta')
    const rows = sampleRows()
    await db().tx(async () => {
      await db().run(ql.DELETE.from('fastwrite.ViaCap'))
      await db().run(ql.DELETE.from('fastwrite.ViaFast'))
      await db().run(ql.INSERT.into('fastwrite.ViaCap').entries(rows))
      await db().run(ql.INSERT.into('fastwrite.ViaFast').entries(rows))
    })
    await new Promise(resolve => setTimeout(resolve, 5)) // a later $now for @cds.on.update
    // rows 1 and 3 change, rows 2 and 4 are new keys; descr, status and createdBy are left out
    const batch = [
      { ID: rows[0].ID, title: 'changed', qty: 2, big: 13, price: 1, ratio: 1.5, flag: false, day: '2026-01-03', at: '00:00:00', changed: '2026-01-03T00:00:00Z', stamp: '2026-01-03T00:00:00.000Z' },
      { ID: uuid(5), title: 'new', qty: 5, big: 5, price: 5, ratio: 5, flag: true, day: '2026-01-05', at: '05:05:05', changed: '2026-01-05T05:05:05Z', stamp: '2026-01-05T05:05:05.000Z' },
      { ID: rows[2].ID, title: 'changed too', qty: null, big: null, price: null, ratio: null, flag: null, day: null, at: null, changed: null, stamp: null },
      { ID: uuid(6), title: 'newer', qty: 6, big: 6, price: 6, ratio: 6, flag: false, day: '2026-01-06', at: '06:06:06', changed: '2026-01-06T06:06:06Z', stamp: '2026-01-06T06:06:06.000Z' },
    ]
    const writes = await capWrites('fastwrite.ViaFast', () => db().tx(async () => {
      await db().run(ql.UPSERT.into('fastwrite.ViaCap').entries(batch))
      expect(await target.writeBatch(batch, { runId: 'u1', mode: 'delta', batchIndex: 0 })).toEqual({ created: 2, updated: 2, deleted: 0, unchanged: 0 })
    }))
    expect(writes).toBe(0)
    const [viaCap, viaFast] = [await raw('fastwrite.ViaCap'), await raw('fastwrite.ViaFast')]
    expect(viaFast).toHaveLength(6)
    expect(viaFast).toEqual(viaCap)
    const first = viaFast.find(r => r.ID === rows[0].ID)!
    expect(first).toMatchObject({ title: 'changed', status: 'set', createdBy: 'alice' })
    expect(first.modifiedAt).not.toEqual(first.createdAt)
    // the same batch again: nothing changed, nothing written, counted unchanged; one value differs: one update
    await db().tx(async () => {
      expect(await target.writeBatch(batch, { runId: 'u2', mode: 'delta', batchIndex: 0 })).toEqual({ created: 0, updated: 0, deleted: 0, unchanged: 4 })
      expect(await target.writeBatch([{ ...batch[1], title: 'again' }], { runId: 'u2', mode: 'delta', batchIndex: 1 })).toEqual({ created: 0, updated: 1, deleted: 0, unchanged: 0 })
    })
    expect(await db().run(ql.SELECT.one.from('fastwrite.ViaFast').columns('count(1) as n'))).toMatchObject({ n: 6 })
  })

  test('a full refresh is atomic: a failure after the prepared inserts leaves the old rows', async () => {
    const target = await targetOf('atomic', 'fastwrite.Numbered')
    await db().tx(async () => {
      await target.truncate({ runId: 'a1', mode: 'full', batchIndex: 0 })
      await target.writeBatch([{ ID: 1, title: 'old 1' }, { ID: 2, title: 'old 2' }], { runId: 'a1', mode: 'full', batchIndex: 0 })
    })
    await expect(db().tx(async () => {
      await target.truncate({ runId: 'a2', mode: 'full', batchIndex: 0 })
      await target.writeBatch([{ ID: 1, title: 'new 1' }, { ID: 3, title: 'new 3' }], { runId: 'a2', mode: 'full', batchIndex: 0 })
      throw new Error('failed midway')
    })).rejects.toThrow('failed midway')
    expect(await db().run(ql.SELECT.from('fastwrite.Numbered').orderBy('ID'))).toEqual([{ ID: 1, title: 'old 1' }, { ID: 2, title: 'old 2' }])
  })

  test('database triggers on the target table fire for the prepared inserts and upserts', async () => {
    const target = await targetOf('triggered', 'fastwrite.Composite', 'delta')
    if (postgres()) {
      await db().run('CREATE TABLE fastwrite_log (code VARCHAR(10), line INTEGER, op VARCHAR(10))')
      await db().run(`CREATE FUNCTION fastwrite_logged() RETURNS trigger AS $$ BEGIN INSERT INTO fastwrite_log VALUES (NEW.code, NEW.line, TG_OP); RETURN NEW; END $$ LANGUAGE plpgsql`)
      await db().run('CREATE TRIGGER fastwrite_logged AFTER INSERT OR UPDATE ON fastwrite_composite FOR EACH ROW EXECUTE FUNCTION fastwrite_logged()')
    } else {
      await db().run('CREATE TABLE fastwrite_log (code TEXT, line INTEGER, op TEXT)')
      await db().run(`CREATE TRIGGER fastwrite_inserted AFTER INSERT ON fastwrite_Composite BEGIN INSERT INTO fastwrite_log VALUES (NEW.code, NEW.line, 'INSERT'); END`)
      await db().run(`CREATE TRIGGER fastwrite_updated AFTER UPDATE ON fastwrite_Composite BEGIN INSERT INTO fastwrite_log VALUES (NEW.code, NEW.line, 'UPDATE'); END`)
    }
    expect(target.writePath.kind).toBe('prepared')
    await db().tx(() => target.writeBatch([{ code: 'a', line: 1, title: 'x' }, { code: 'a', line: 2, title: 'y' }], { runId: 't1', mode: 'delta', batchIndex: 0 }))
    await db().tx(() => target.writeBatch([{ code: 'a', line: 2, title: 'z' }], { runId: 't2', mode: 'delta', batchIndex: 0 }))
    const log = (await db().run('SELECT code, line, op FROM fastwrite_log ORDER BY line, op')) as Row[]
    expect(log.map(r => `${r.code}${r.line} ${r.op}`)).toEqual(['a1 INSERT', 'a2 INSERT', 'a2 UPDATE'])
  })

  test('a full refresh with UUID keys in key order reads no existing keys and takes no CAP write', async () => {
    const rows = Array.from({ length: 2500 }, (_, i) => ({ ID: uuid(i + 1), title: `row ${i}`, qty: i, stamp: '2026-01-01T00:00:00.000Z' }))
    await db().tx(async () => {
      await db().run(ql.DELETE.from('fastwrite.Source'))
      await db().run(ql.INSERT.into('fastwrite.Source').entries(rows))
    })
    await engine.addPipeline({ name: 'uuid-full', source: { entity: 'fastwrite.Source', batchSize: 1000 }, target: { entity: 'fastwrite.ViaFast' }, mode: 'full' } as never)
    const spy = vi.spyOn(db(), 'handle')
    try {
      const { done } = await engine.execute('uuid-full', {})
      expect((await done).statistics).toMatchObject({ created: 2500, updated: 0 })
      const touching = spy.mock.calls.map(([req]) => (req as { query?: Record<string, any> }).query).filter(q =>
        (q?.SELECT?.from?.ref?.[0] ?? q?.INSERT?.into?.ref?.[0] ?? q?.UPSERT?.into?.ref?.[0] ?? q?.INSERT?.into ?? q?.UPSERT?.into) === 'fastwrite.ViaFast')
      expect(touching).toEqual([])
    } finally {
      spy.mockRestore()
    }
    expect(await db().run(ql.SELECT.one.from('fastwrite.ViaFast').columns('count(1) as n'))).toMatchObject({ n: 2500 })
  })

  test('a batch with nested values goes through CAP, plain foreign keys take the prepared path', async () => {
    const target = await targetOf('deep', 'fastwrite.Orders', 'delta')
    await db().run(ql.INSERT.into('fastwrite.Numbered').entries([{ ID: 100, title: 'customer' }]))
    const plain = await capWrites('fastwrite.Orders', () => db().tx(() => target.writeBatch([{ ID: 1, customer_ID: 100 }], { runId: 'd1', mode: 'delta', batchIndex: 0 })))
    const deep = await capWrites('fastwrite.Orders', () => db().tx(() => target.writeBatch([{ ID: 2, customer_ID: 100, items: [{ pos: 1, text: 'one' }] }], { runId: 'd1', mode: 'delta', batchIndex: 1 })))
    expect([plain, deep]).toEqual([0, 1])
    expect(await db().run(ql.SELECT.from('fastwrite.Orders').orderBy('ID'))).toEqual([{ ID: 1, customer_ID: 100 }, { ID: 2, customer_ID: 100 }])
  })
})
