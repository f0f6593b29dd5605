/**
 * Full refresh into the database target: batches whose keys are all new after the run's
 * truncate are plain INSERTs (no lookup of existing keys); anything else — keys repeated
 * across batches, out of order — still takes the counted UPSERT, so statistics stay honest
 * and nothing fails on a duplicate key. And the progress of a full refresh in one transaction
 * (docs/concepts/counts.md "Progress", "Freshness"): PostgreSQL (this file is part of the `postgres` project) shows
 * it per batch beside the run's transaction; SQLite's only connection is the run's, the row shows the end.
 */
import { useConsumer, ql } from '../helpers/consumer'
import { suiteDatabase } from '../helpers/postgres'
import { expectAdvancing, num, watch } from '../helpers/progress'

const ctx = useConsumer()
type Data = Record<string, any>
const engine = () => ctx.engine as unknown as { on(event: string, pipeline: string, handler: (req: { data: Data }) => unknown): void }

describe('full refresh writes', () => {
  beforeAll(async () => {
    await ctx.provider.control.reset()
    await ctx.provider.control.seed({ from: 1, count: 2500, modifiedAt: '2026-01-01T00:00:00.000Z' })
  })

  test('ordered keys: every row created, content equal to the source, re-run replaces it', async () => {
    await ctx.engine.addPipeline({ name: 'fr-ordered', source: { service: 'Provider', entity: 'Books', batchSize: 1000 }, target: { entity: 'consumer.BooksFull' }, mode: 'full' })
    expect((await ctx.run('fr-ordered')).statistics).toEqual({ created: 2500, updated: 0, deleted: 0 })
    const rows = await ql.SELECT.from('consumer.BooksFull').orderBy('ID')
    expect(rows).toHaveLength(2500)
    expect(rows[0]).toEqual({ ID: 1, title: 'Book 1', author: 'Author 1', stock: 1 })
    expect(rows[2499]).toEqual({ ID: 2500, title: 'Book 2500', author: 'Author 0', stock: 0 })
    // the same rows again: present before and identical (docs/concepts/counts.md "Statistics"), not deleted and created
    expect((await ctx.run('fr-ordered')).statistics).toEqual({ created: 0, updated: 0, unchanged: 2500, deleted: 0 })
  })

  test('a @cds.persistence.table projection of a `cds import`ed entity takes the prepared write path (the import\'s @cds.persistence.skip is inherited, not its own)', async () => {
    await ctx.engine.addPipeline({ name: 'fr-imported', source: { service: 'Provider', entity: 'Books', batchSize: 1000 }, target: { entity: 'consumer.BooksFull' }, mode: 'full' })
    const { target } = await (ctx.engine as unknown as { registry: { prepare(name: string): Promise<{ target: { writePath: { kind: string; reason: string } } }> } }).registry.prepare('fr-imported')
    expect(target.writePath).toEqual(expect.objectContaining({ kind: 'prepared' }))
    const statistics = (await ctx.run('fr-imported')).statistics
    // the table may hold the same rows from the test before: then they are unchanged, else created
    expect(statistics.created + (statistics.unchanged ?? 0)).toBe(2500)
    expect(statistics).toMatchObject({ updated: 0, deleted: 0 })
  })

  test('keys repeated in a later batch are written once and counted once (created: new to the target)', async () => {
    await ctx.engine.addPipeline({ name: 'fr-folded', source: { service: 'Provider', entity: 'Books', batchSize: 1000 }, target: { entity: 'consumer.LocalCopies' }, mode: 'full' })
    // 2500 source rows onto 1500 keys: rows 1501..2500 land on keys 1..1000 with another title
    engine().on('PIPELINE.MAP', 'fr-folded', req => {
      req.data.targetRecords = req.data.sourceRecords.map((r: Data) => ({ ID: ((r.ID - 1) % 1500) + 1, title: `from ${r.ID}`, author: r.author, stock: r.stock }))
    })
    const outcome = await ctx.run('fr-folded')
    expect(outcome.status).toBe('completed')
    // counts compare with the target before the run: 1500 keys new to it (a second write of a key in the run is no update of it)
    expect(outcome.statistics).toEqual({ created: 1500, updated: 0, deleted: 0 })
    const rows = await ql.SELECT.from('consumer.LocalCopies').orderBy('ID')
    expect(rows).toHaveLength(1500)
    expect(rows[0].title).toBe('from 1501')
    expect(rows[1499].title).toBe('from 1500')
  })

  test('keys arriving in descending batches are still written once each', async () => {
    await ctx.engine.addPipeline({ name: 'fr-reversed', source: { service: 'Provider', entity: 'Books', batchSize: 1000 }, target: { entity: 'consumer.LocalCopies' }, mode: 'full' })
    engine().on('PIPELINE.MAP', 'fr-reversed', req => {
      req.data.targetRecords = req.data.sourceRecords.map((r: Data) => ({ ID: 10_000 - r.ID, title: r.title, author: r.author, stock: r.stock }))
    })
    expect((await ctx.run('fr-reversed')).statistics).toEqual({ created: 2500, updated: 0, deleted: 1500 })
    expect(await ql.SELECT.one.from('consumer.LocalCopies').columns('count(1) as count')).toEqual({ count: 2500 })
  })

  test('progress of a full refresh in one transaction: per batch beside it on PostgreSQL, at the end on SQLite', async () => {
    await ctx.provider.control.reset()
    await ctx.provider.control.seed({ from: 1, count: 24, modifiedAt: '2026-01-01T00:00:00.000Z' })
    await ctx.engine.addPipeline({ name: 'progress-atomic', mode: 'full', source: { service: 'Provider', entity: 'Books', batchSize: 4 }, target: { entity: 'consumer.BooksGuard' } })
    await ctx.provider.control.faults({ delay: 120 })
    try {
      const atomic = await ctx.engine.execute('progress-atomic', { async: true })
      const watched = await watch(atomic.runId, atomic.done)
      // one transaction: PostgreSQL shows the progress per batch beside it; SQLite's only connection is the run's, the row shows the end
      if (suiteDatabase()) expectAdvancing(watched.samples, 24)
      expect([num(watched.final.processed), num(watched.final.expected), num(watched.final.percent)]).toEqual([24, 24, 100])
    } finally {
      await ctx.provider.control.faults({})
    }
  })
})
