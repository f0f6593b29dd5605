import cds from '@sap/cds'
import { useConsumer, ql } from '../helpers/consumer'
import { suiteDatabase } from '../helpers/postgres'

const ctx = useConsumer()

describe('OData V4 source → database target', () => {
  beforeEach(async () => {
    await ctx.provider.control.reset()
  })

  test('delta replication applies the consumption view: renames and column restriction', async () => {
    await ctx.provider.control.seed({ from: 1, count: 25, modifiedAt: '2026-01-01T00:00:00.000Z' })
    await ctx.engine.addPipeline({ name: 'books', source: { service: 'Provider', entity: 'Books', batchSize: 10 }, target: { entity: 'consumer.Books' } })
    const { done } = await ctx.engine.execute('books')
    const outcome = await done
    expect(outcome.status).toBe('completed')
    expect(outcome.statistics).toEqual({ created: 25, updated: 0, deleted: 0 })
    const rows = await ql.SELECT.from('consumer.Books').orderBy('ID')
    expect(rows).toHaveLength(25)
    expect(rows[0]).toMatchObject({ ID: 1, name: 'Book 1', author: 'Author 1', stock: 1 })
    const { urls } = await ctx.provider.control.stats()
    const reads = urls.filter(u => u.includes('/Books?'))
    expect(reads.length).toBeGreaterThan(1)
    for (const url of reads) {
      expect(url).toContain('$select=')
      expect(url).not.toContain('price')
    }
    const tracker = await ctx.engine.status('books')
    expect(tracker).toMatchObject({ status: 'idle', errorCount: 0, statistics_created: 25, mode: 'delta' })
    expect(tracker.lastSync).toBe('2026-01-01T00:00:00.000Z')
  })

  test('execute inside a transaction holding SQLite\'s only connection fails fast instead of hanging (PostgreSQL: runs beside it)', async () => {
    await ctx.engine.addPipeline({ name: 'books-in-tx', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.BooksFull' } })
    await cds.tx(async () => {
      await ql.SELECT.from('consumer.BooksFull')
      // PostgreSQL (the `postgres` project) has a pool of connections: the run takes its own
      if (suiteDatabase()) await expect((await ctx.engine.execute('books-in-tx', { async: true })).done).resolves.toMatchObject({ status: 'completed' })
      else await expect(ctx.engine.execute('books-in-tx', { async: true })).rejects.toThrow(/only connection/)
    })
    const { done } = await ctx.engine.execute('books-in-tx') // outside the transaction it runs
    await expect(done).resolves.toMatchObject({ status: 'completed' })
  })
})
