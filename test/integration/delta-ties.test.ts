/**
 * Ties at the watermark after a bulk update (issue 14), against a real provider over HTTP:
 * once the rows sharing the newest value were read, a no-change delta run sends one request
 * and transfers no row; rows written later with that value still arrive (above the stored key
 * position at once, below it while the value may still be given to writes: the settle window);
 * an unfinished run resumes inside the group. OData V4 (Integer and UUID keys), V2, and the
 * CQN source on a local table. HCQL: delta-ties-hcql.test.ts.
 */
import cds from '@sap/cds'
import { createHash } from 'node:crypto'
import { createRequire } from 'node:module'
import { useConsumer, ql, rowCount } from '../helpers/consumer'
import { parseTieCursor } from '../../lib/adapters/watermark'

// the plugin as the consumer loads it (lazily: importing it early would load cds.env before cds.test picks the folder)
const plugin = () => createRequire(__filename)('cap-data-pipeline') as typeof import('../../index')

const ctx = useConsumer()
const { run } = ctx

const T_OLD = '2026-01-01T00:00:00.000Z'
/** The value a bulk update gave many rows: long past, so the group has settled when it is read. */
const T_TIES = '2026-01-05T00:00:00.000Z'

interface Stats { requests: number; urls: string[]; rows: number; bytes: number }
const stats = async () => (await ctx.provider.control.stats()) as unknown as Stats
const control = async (action: string, data: object) => {
  const response = await fetch(`${ctx.provider.url}/odata/v4/control/${action}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(data) })
  if (!response.ok) throw new Error(`${action}: ${response.status} ${await response.text()}`)
}
/** Runs a pipeline and reports the provider requests and rows it cost. */
async function measured(name: string) {
  const before = await stats()
  const outcome = await run(name)
  const after = await stats()
  const requests = after.requests - before.requests
  return { outcome, requests, rows: after.rows - before.rows, urls: requests > 0 ? after.urls.slice(-requests) : [] }
}
const cursorOf = async (name: string) => parseTieCursor((await ctx.engine.status(name)).lastKey)
/** A timestamp inside the settle window: now, to the millisecond (as CAP's managed fields write it). */
const fresh = () => new Date().toISOString()

describe('no-change delta after a bulk update', () => {
  beforeEach(async () => {
    await ctx.provider.control.reset()
  })

  test('OData V4: the tie group is read once; a no-change run is one request and no row; a later tie with a higher key arrives', async () => {
    await ctx.provider.control.seed({ from: 1, count: 2500, modifiedAt: T_OLD })
    await ctx.engine.addPipeline({ name: 'v4-bulk', source: { service: 'Provider', entity: 'Books', batchSize: 1000 }, target: { entity: 'consumer.BooksTies' } })
    expect((await run('v4-bulk')).statistics).toEqual({ created: 2500, updated: 0, deleted: 0 })

    // a bulk update gives 2,200 rows (more than two pages) the newest value
    await ctx.provider.control.touch({ from: 101, count: 2200, modifiedAt: T_TIES, title: 'Bulk' })
    const take = await measured('v4-bulk')
    expect(take.outcome.statistics).toEqual({ created: 0, updated: 2200, deleted: 0 })
    expect(take.rows).toBe(2200)
    expect((await ctx.engine.status('v4-bulk')).lastSync).toBe(T_TIES)
    expect(await cursorOf('v4-bulk')).toMatchObject({ at: T_TIES, after: { ID: 2300 } })

    for (let i = 0; i < 2; i++) {
      const none = await measured('v4-bulk')
      expect(none.outcome).toMatchObject({ status: 'completed', statistics: { created: 0, updated: 0, deleted: 0 } })
      expect(none.requests).toBe(1)
      expect(none.rows).toBe(0)
      expect(none.urls[0]).toContain(`(modifiedAt ge ${T_TIES}) and ((modifiedAt gt ${T_TIES}) or (ID gt 2300))`)
    }

    // written later with exactly the watermark value: a higher key, and a change to a later value
    await ctx.provider.control.seed({ from: 5001, count: 3, modifiedAt: T_TIES })
    const later = await measured('v4-bulk')
    expect(later.outcome.statistics).toEqual({ created: 3, updated: 0, deleted: 0 })
    expect(later.rows).toBe(3)
    expect(await cursorOf('v4-bulk')).toMatchObject({ at: T_TIES, after: { ID: 5003 } })
    await ctx.provider.control.touch({ from: 7, modifiedAt: '2026-01-06T00:00:00.000Z', title: 'Later' })
    expect((await measured('v4-bulk')).outcome.statistics).toEqual({ created: 0, updated: 1, deleted: 0 })
    expect(await rowCount('consumer.BooksTies')).toBe(2503)
    expect(await ql.SELECT.one.from('consumer.BooksTies').where({ ID: 7 })).toMatchObject({ title: 'Later' })
  })

  test('inside the settle window a row written later with the value and a LOWER key is taken (the group is read inclusively)', async () => {
    const now = fresh()
    await ctx.provider.control.seed({ from: 10, count: 21, modifiedAt: now })
    await ctx.engine.addPipeline({ name: 'v4-window', source: { service: 'Provider', entity: 'Books', batchSize: 8 }, target: { entity: 'consumer.BooksNoChange' } })
    expect((await run('v4-window')).statistics).toEqual({ created: 21, updated: 0, deleted: 0 })
    expect(await cursorOf('v4-window')).toMatchObject({ at: now, after: { ID: 30 } })

    await ctx.provider.control.seed({ from: 1, count: 2, modifiedAt: now })
    const second = await measured('v4-window')
    expect(second.outcome.statistics).toEqual({ created: 2, updated: 0, unchanged: 21, deleted: 0 }) // the group re-read, identical
    expect(second.urls[0]).toContain(`$filter=modifiedAt ge ${now}&`)
    expect(await rowCount('consumer.BooksNoChange')).toBe(23)
  })

  test('delta.settle 0 trusts the position once the value is over; an older release\'s watermark (no position) reads inclusively once', async () => {
    await ctx.provider.control.seed({ from: 1, count: 12, modifiedAt: T_TIES })
    await ctx.engine.addPipeline({ name: 'v4-upgrade', source: { service: 'Provider', entity: 'Books', batchSize: 5 }, target: { entity: 'consumer.BooksPaging' }, delta: { settle: 0 } })
    expect((await run('v4-upgrade')).statistics.created).toBe(12)
    // as an earlier release left it: lastSync only
    await ql.UPDATE.entity('plugin.data_pipeline.Pipelines').set({ lastKey: null }).where({ name: 'v4-upgrade' })
    const upgrade = await measured('v4-upgrade')
    expect(upgrade.rows).toBe(12)
    // the row changed behind the engine's back: the read started ahead from the position it knew is dropped
    expect(upgrade.urls[0]).toContain('(ID gt 12)')
    expect(upgrade.urls[1]).toContain(`$filter=modifiedAt ge ${T_TIES}&`)
    const none = await measured('v4-upgrade')
    expect([none.requests, none.rows]).toEqual([1, 0])
  })

  test('OData V2: one request and no row after the tie group was read', async () => {
    await ctx.provider.control.seed({ from: 1, count: 25, modifiedAt: T_OLD })
    await ctx.engine.addPipeline({ name: 'v2-bulk', source: { service: 'ProviderV2', entity: 'Books', batchSize: 10 }, target: { entity: 'consumer.BooksV2Ties' } })
    expect((await run('v2-bulk')).statistics.created).toBe(25)
    await ctx.provider.control.touch({ from: 1, count: 25, modifiedAt: T_TIES, title: 'Bulk' })
    expect((await measured('v2-bulk')).rows).toBe(25)

    const none = await measured('v2-bulk')
    expect(none.outcome.statistics).toEqual({ created: 0, updated: 0, deleted: 0 })
    expect([none.requests, none.rows]).toEqual([1, 0])
    expect(none.urls[0]).toContain(`(modifiedAt ge datetimeoffset'${T_TIES}') and ((modifiedAt gt datetimeoffset'${T_TIES}') or (ID gt 25))`)
    await ctx.provider.control.seed({ from: 26, count: 1, modifiedAt: T_TIES })
    expect((await measured('v2-bulk')).outcome.statistics).toEqual({ created: 1, updated: 0, deleted: 0 })
  })

  test('UUID keys (OData V4): the position is the last UUID read in the provider\'s order', async () => {
    const written: Array<Record<string, unknown>> = []
    class MemoryTarget extends plugin().BaseTargetAdapter {
      capabilities() { return { keyAddressableUpsert: true, truncate: true, batchDelete: false, batchInsert: true } }
      async writeBatch(records: Array<Record<string, unknown>>) { written.push(...records); return { created: records.length, updated: 0, deleted: 0 } }
      async truncate() { return 0 }
      async deleteSlice() { return 0 }
    }
    await control('seedBench', { from: 1, count: 1200, modifiedAt: T_OLD })
    await ctx.engine.addPipeline({ name: 'uuid-bulk', source: { service: 'Provider', entity: 'BenchItems', batchSize: 500 }, target: { adapter: MemoryTarget } })
    await run('uuid-bulk')
    await control('touchBench', { count: 1200, modifiedAt: T_TIES })
    written.length = 0
    expect((await measured('uuid-bulk')).rows).toBe(1200)
    const cursor = (await cursorOf('uuid-bulk'))!
    const ids = written.map(r => String(r.ID))
    expect(cursor.after).toEqual({ ID: ids[ids.length - 1] })
    expect(ids.every(id => id <= String(cursor.after.ID))).toBe(true)

    const none = await measured('uuid-bulk')
    expect([none.requests, none.rows]).toEqual([1, 0])
    // a later row at the value above the position arrives; one below it while settled is, by design, before the position
    written.length = 0
    const above = Array.from({ length: 100_000 }, (_, i) => 2000 + i).find(i => benchId(i) > String(cursor.after.ID))!
    await control('seedBench', { from: above, count: 1, modifiedAt: T_TIES })
    const taken = await measured('uuid-bulk')
    expect(above).toBeDefined()
    expect([taken.requests, taken.rows]).toEqual([1, 1])
    expect(written.map(r => r.ID)).toEqual([benchId(above)])
  })

  test('a run stopped inside the tie group resumes after the last committed row, not at the start of the group', async () => {
    await ctx.provider.control.seed({ from: 1, count: 30, modifiedAt: T_OLD })
    await ctx.engine.addPipeline({ name: 'resume', source: { service: 'Provider', entity: 'Books', batchSize: 10 }, target: { entity: 'consumer.BooksMidRun' }, retry: { maxRetries: 0 } })
    await run('resume')
    await ctx.provider.control.touch({ from: 1, count: 30, modifiedAt: T_TIES, title: 'Bulk' })
    await ctx.provider.control.faults({ status: 500, count: 1, after: 2 })
    expect(await run('resume').then(() => 'completed', () => 'failed')).toBe('failed')
    await ctx.provider.control.faults({})
    const row = await ctx.engine.status('resume') as { checkpoint: string | null }
    const checkpoint = JSON.parse(row.checkpoint!) as { lastSync: string; lastKey: string }
    expect(checkpoint.lastSync).toBe(T_TIES)
    const committed = Number(parseTieCursor(checkpoint.lastKey)!.after.ID)
    expect([10, 20]).toContain(committed)

    const resumed = await measured('resume')
    expect(resumed.outcome.status).toBe('completed')
    expect(resumed.rows).toBe(30 - committed)
    expect(resumed.urls[0]).toContain(`(ID gt ${committed})`)
    expect(await ql.SELECT.from('consumer.BooksMidRun').where({ title: 'Bulk' }).columns('count(1) as n')).toEqual([{ n: 30 }])
  })
})

describe('CQN source (a local table)', () => {
  test('no-change after ties reads no row; a lower key inside the window is taken', async () => {
    const db = await cds.connect.to('db')
    let rowsRead = 0
    // rows of the source's pages (its count query answers a row without a title)
    db.after('READ', 'consumer.LocalBooks', (rows: unknown) => { rowsRead += Array.isArray(rows) ? rows.filter(row => row && 'title' in row).length : 0 })
    const local = (from: number, count: number, modifiedAt: string) =>
      Array.from({ length: count }, (_, i) => ({ ID: from + i, title: `Local ${from + i}`, author: 'A', stock: 1, modifiedAt }))
    await ql.INSERT.into('consumer.LocalBooks').entries(local(1, 40, T_TIES))
    await ctx.engine.addPipeline({ name: 'cqn-ties', source: { entity: 'consumer.LocalBooks', batchSize: 15 }, target: { entity: 'consumer.LocalCopies' } })
    expect((await run('cqn-ties')).statistics.created).toBe(40)
    rowsRead = 0
    expect((await run('cqn-ties')).statistics).toEqual({ created: 0, updated: 0, deleted: 0 })
    expect(rowsRead).toBe(0)
    await ql.INSERT.into('consumer.LocalBooks').entries(local(41, 1, T_TIES))
    expect((await run('cqn-ties')).statistics.created).toBe(1)

    const now = fresh()
    await ql.INSERT.into('consumer.LocalBooks').entries(local(100, 5, now))
    expect((await run('cqn-ties')).statistics.created).toBe(5)
    await ql.INSERT.into('consumer.LocalBooks').entries(local(50, 1, now))
    expect((await run('cqn-ties')).statistics.created).toBe(1)
    expect(await rowCount('consumer.LocalCopies')).toBe(47)
  })
})

/** The UUID of BenchItems number `i` (test/fixtures/provider/srv/control.js). */
function benchId(i: number): string {
  const h = createHash('md5').update(`bench-${i}`).digest('hex')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`
}
