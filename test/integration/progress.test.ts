/**
 * Progress of a running run (docs/concepts/counts.md "Progress", "Freshness"): `PipelineRuns.processed`,
 * `expected` (the source's count of the run's filter), `percent`, `rowsPerSecond`, `remainingMs`
 * and `eta`, updated after every batch. The OData provider is a child process slowed down with
 * `faults({ delay })`, so the run row can be watched while the run reads; a REST source cannot
 * count (expected stays null). A full refresh in one transaction (progress beside it on PostgreSQL, at
 * the end on SQLite) is in full-refresh-writes.test.ts, a file of the `postgres` project.
 */
import path from 'node:path'
import { FIXTURES } from '../helpers/apps'
import { ql, useConsumer } from '../helpers/consumer'
import { RUNS, T0, expectAdvancing, num, watch, type RunRow } from '../helpers/progress'

const T1 = '2026-01-02T00:00:00.000Z'

const ctx = useConsumer()

describe('progress of a run', () => {
  beforeEach(async () => {
    await ctx.provider.control.reset()
  })

  test('delta run: processed advances per batch, expected is the $count, percent, rate and a shrinking ETA', async () => {
    await ctx.provider.control.seed({ from: 1, count: 30, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'progress-delta', source: { service: 'Provider', entity: 'Books', batchSize: 5 }, target: { entity: 'consumer.BooksPaging' } })
    await ctx.provider.control.faults({ delay: 120 })
    const { runId, done } = await ctx.engine.execute('progress-delta', { async: true })
    const { samples, final } = await watch(runId, done)
    expectAdvancing(samples, 30)
    expect(final).toMatchObject({ status: 'idle', eta: expect.any(String) })
    expect([num(final.processed), num(final.expected), num(final.percent), num(final.remainingMs)]).toEqual([30, 30, 100, 0])
  })

  test('delta run: expected is the count of the delta filter (the changed rows)', async () => {
    await ctx.provider.control.seed({ from: 1, count: 1, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'progress-changes', source: { service: 'Provider', entity: 'Books', batchSize: 4 }, target: { entity: 'consumer.BooksTies' } })
    await expect(ctx.run('progress-changes')).resolves.toMatchObject({ status: 'completed' })
    await ctx.provider.control.seed({ from: 2, count: 15, modifiedAt: T1 })
    await ctx.provider.control.seed({ from: 100, count: 40, modifiedAt: '2025-06-01T00:00:00.000Z' }) // older than the watermark: not read
    await ctx.provider.control.faults({ delay: 120 })
    const { runId, done } = await ctx.engine.execute('progress-changes', { async: true })
    const { samples, final } = await watch(runId, done)
    // the 15 changed rows; the row at the settled watermark value is not read again (docs/concepts/delta.md "Watermarks, loss-free delta")
    expectAdvancing(samples, 15)
    expect([num(final.processed), num(final.expected), num(final.percent)]).toEqual([15, 15, 100])
  })

  test('full refresh with transaction batch: expected is the $count, progress per batch', async () => {
    await ctx.provider.control.seed({ from: 1, count: 24, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'progress-full', mode: 'full', transaction: 'batch', source: { service: 'Provider', entity: 'Books', batchSize: 4 }, target: { entity: 'consumer.BooksFull' } })
    await ctx.provider.control.faults({ delay: 120 })
    const batched = await ctx.engine.execute('progress-full', { async: true })
    const { samples, final } = await watch(batched.runId, batched.done)
    expectAdvancing(samples, 24)
    expect([num(final.processed), num(final.expected), num(final.percent)]).toEqual([24, 24, 100])
  })

  test('a source that finds nothing: expected 0, 100 percent', async () => {
    await ctx.engine.addPipeline({ name: 'progress-empty', source: { service: 'Provider', entity: 'Books', batchSize: 5 }, target: { entity: 'consumer.BooksNoChange' } })
    const { runId, done } = await ctx.engine.execute('progress-empty')
    await done
    const row = (await ql.SELECT.one.from(RUNS).where({ ID: runId })) as RunRow
    expect([num(row.processed), num(row.expected), num(row.percent), num(row.remainingMs)]).toEqual([0, 0, 100, 0])
  })
})

describe('progress of a source that cannot count (REST)', () => {
  let provider: { url: string; state: { items: unknown[]; delay?: number }; close(): Promise<void> }
  beforeAll(async () => {
    const { startRestProvider, makeItems } = await import(path.join(FIXTURES, 'rest-provider/server.mjs'))
    provider = await startRestProvider({ apiKey: 'k' })
    provider.state.items = makeItems(12)
    const requires = (await import('@sap/cds')).default.env.requires as unknown as Record<string, { credentials?: object }>
    requires.Rest.credentials = { url: provider.url, headers: { 'x-api-key': 'k' } }
  })
  afterAll(async () => {
    await provider?.close()
  })

  test('expected, percent, remainingMs and eta stay null while it runs; processed counts', async () => {
    await ctx.engine.addPipeline({
      name: 'progress-rest', source: { service: 'Rest' }, target: { entity: 'consumer.RestOffset' },
      rest: { path: '/items', dataPath: 'data.items', pagination: { type: 'offset', pageSize: 3 } },
    })
    provider.state.delay = 120
    const { runId, done } = await ctx.engine.execute('progress-rest', { async: true })
    const { samples, final } = await watch(runId, done)
    const moving = samples.filter(s => num(s.processed)! > 0)
    expect(moving.length).toBeGreaterThanOrEqual(1)
    for (const sample of moving) {
      expect([sample.expected, sample.percent, sample.remainingMs, sample.eta]).toEqual([null, null, null, null])
      expect(num(sample.rowsPerSecond)).toBeGreaterThan(0)
    }
    expect(final.expected).toBeNull()
    expect([num(final.processed), num(final.percent), num(final.remainingMs)]).toEqual([12, 100, 0])
  })
})
