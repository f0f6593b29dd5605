/**
 * Partitioned full reads (issue 24, README "Performance"): a full copy reads `parallel` key
 * ranges of the real OData provider at once, feeding one writer. The provider (a child process)
 * counts the requests open at once and when each arrived (test/fixtures/provider/srv/faults.js).
 */
import cds from '@sap/cds'
import { ql, useConsumer } from '../helpers/consumer'

const ctx = useConsumer()
const T0 = '2026-01-01T00:00:00.000Z'
const RUNS = 'plugin.data_pipeline.PipelineRuns'
const num = (value: unknown) => (value === null || value === undefined ? null : Number(value))

async function expectCopy(entity: string, count: number, title = (id: number) => `Book ${id}`) {
  const rows = (await ql.SELECT.from(entity).columns('ID', 'title').orderBy('ID')) as Array<{ ID: number; title: string }>
  expect(rows.map(r => r.ID)).toEqual(Array.from({ length: count }, (_, i) => i + 1))
  expect(rows.filter(r => r.title !== title(r.ID))).toEqual([])
}

const sampleUrls = (urls: string[]) => urls.filter(url => url.includes('$skip='))

describe('partitioned full reads', () => {
  beforeEach(async () => {
    await ctx.provider.control.reset()
  })

  test('parallel 4: key ranges read at once, every row once, at most 4 requests in flight; counts and progress add up', async () => {
    await ctx.provider.control.seed({ from: 1, count: 200, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'parallel-four', mode: 'full', parallel: 4, source: { service: 'Provider', entity: 'Books', batchSize: 10 }, target: { entity: 'consumer.BooksParallel' } })
    // a long round trip against the page: all four ranges at once (partitions.ts `depth`)
    await ctx.provider.control.faults({ delay: 200 })
    const before = await ctx.requestCount()
    const outcome = await ctx.run('parallel-four')
    const stats = await ctx.provider.control.stats()
    expect(outcome).toMatchObject({ status: 'completed', statistics: { created: 200, updated: 0, deleted: 0 } })
    await expectCopy('consumer.BooksParallel', 200)
    // ranges at once, never more than `parallel`
    expect(stats.maxInFlight).toBe(4)
    const urls = stats.urls.slice(-(stats.requests - before))
    // boundaries at 50, 100, 150 of the count (three one-row samples)
    expect(sampleUrls(urls).map(url => /\$skip=(\d+)/.exec(url)![1]).sort()).toEqual(['100', '150', '50'])
    // 20 pages plus the samples and one short end page per range at most
    expect(urls.length).toBeLessThanOrEqual(20 + 3 + 4)
    const run = (await ql.SELECT.one.from(RUNS).where({ ID: outcome.runId })) as Record<string, unknown>
    expect([num(run.processed), num(run.expected), num(run.percent)]).toEqual([200, 200, 100])
  })

  test('parallel 1 reads page after page as before: one request at a time, no samples', async () => {
    await ctx.provider.control.seed({ from: 1, count: 60, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'parallel-one', mode: 'full', parallel: 1, source: { service: 'Provider', entity: 'Books', batchSize: 10 }, target: { entity: 'consumer.BooksParallelOne' } })
    await ctx.provider.control.faults({ delay: 20 })
    const before = await ctx.requestCount()
    expect(await ctx.run('parallel-one')).toMatchObject({ status: 'completed', statistics: { created: 60 } })
    const stats = await ctx.provider.control.stats()
    expect(stats.maxInFlight).toBe(1)
    expect(sampleUrls(stats.urls.slice(-(stats.requests - before)))).toEqual([])
    await expectCopy('consumer.BooksParallelOne', 60)
  })

  test('a range failing for good fails the run after its retries; the target keeps its previous rows (one transaction)', async () => {
    await ctx.provider.control.seed({ from: 1, count: 120, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'parallel-atomic', mode: 'full', parallel: 3, retry: { maxRetries: 2, baseDelay: 10, maxDelay: 20 }, source: { service: 'Provider', entity: 'Books', batchSize: 10 }, target: { entity: 'consumer.BooksParallelAtomic' } })
    expect(await ctx.run('parallel-atomic')).toMatchObject({ status: 'completed', statistics: { created: 120 } })
    await ctx.provider.control.touch({ from: 1, count: 120, title: 'Rewritten' })
    // the first page and the two samples pass, then every request fails
    await ctx.provider.control.faults({ status: 503, count: 1000, after: 5 })
    const before = await ctx.requestCount()
    const { done } = await ctx.engine.execute('parallel-atomic')
    await expect(done).rejects.toThrow(/503/)
    const stats = await ctx.provider.control.stats()
    await ctx.provider.control.faults({})
    // one range's request was retried twice before the run gave up
    const failed = stats.times.slice(-(stats.requests - before)).filter(t => t.status === 503)
    expect(failed.length).toBeGreaterThanOrEqual(3)
    await expectCopy('consumer.BooksParallelAtomic', 120)
    const runs = (await ql.SELECT.from(RUNS).where({ pipeline_name: 'parallel-atomic' }).orderBy('startTime')) as Array<Record<string, unknown>>
    expect(runs[1]).toMatchObject({ status: 'failed', statistics_created: 0, statistics_updated: 0, statistics_deleted: 0 })
  })

  test('a range whose request fails for a while is retried on its own; the run completes with every row', async () => {
    await ctx.provider.control.seed({ from: 1, count: 120, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'parallel-retry', mode: 'full', parallel: 3, retry: { maxRetries: 3, baseDelay: 10, maxDelay: 20 }, source: { service: 'Provider', entity: 'Books', batchSize: 10 }, target: { entity: 'consumer.BooksParallelRetry' } })
    await ctx.provider.control.faults({ status: 502, count: 2, after: 6 })
    expect(await ctx.run('parallel-retry')).toMatchObject({ status: 'completed', statistics: { created: 120, deleted: 0 } })
    await expectCopy('consumer.BooksParallelRetry', 120)
  })

  test('429 with Retry-After holds back every range of the run, not only the one that was told', async () => {
    await ctx.provider.control.seed({ from: 1, count: 200, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'parallel-429', mode: 'full', parallel: 4, retry: { maxRetries: 3, baseDelay: 10, maxDelay: 20 }, source: { service: 'Provider', entity: 'Books', batchSize: 10 }, target: { entity: 'consumer.BooksParallel429' } })
    await ctx.provider.control.faults({ status: 429, count: 1, after: 8, retryAfter: 1, delay: 10 })
    const before = await ctx.requestCount()
    expect(await ctx.run('parallel-429')).toMatchObject({ status: 'completed', statistics: { created: 200 } })
    const stats = await ctx.provider.control.stats()
    const times = stats.times.slice(-(stats.requests - before))
    const told = times.findIndex(t => t.status === 429)
    expect(told).toBeGreaterThan(0)
    // requests already under way when the 429 came may still arrive; after them, nothing for ~1 s
    const later = times.slice(told + 1).filter(t => t.at > times[told].at + 100)
    expect(later.length).toBeGreaterThan(0)
    expect(later[0].at - times[told].at).toBeGreaterThanOrEqual(900)
    await expectCopy('consumer.BooksParallel429', 200)
  })

  test('maxParallelReads caps the requests in flight of the whole process', async () => {
    const requires = cds.env.requires as unknown as Record<string, Record<string, unknown>>
    requires['data-pipeline'].maxParallelReads = 2
    try {
      await ctx.provider.control.seed({ from: 1, count: 200, modifiedAt: T0 })
      await ctx.engine.addPipeline({ name: 'parallel-cap', mode: 'full', parallel: 8, source: { service: 'Provider', entity: 'Books', batchSize: 10 }, target: { entity: 'consumer.BooksParallelCap' } })
      await ctx.provider.control.faults({ delay: 200 })
      expect(await ctx.run('parallel-cap')).toMatchObject({ status: 'completed', statistics: { created: 200 } })
      expect((await ctx.provider.control.stats()).maxInFlight).toBe(2)
      await expectCopy('consumer.BooksParallelCap', 200)
    } finally {
      delete requires['data-pipeline'].maxParallelReads
    }
  })

  test('delta runs stay sequential (one request at a time)', async () => {
    await ctx.provider.control.seed({ from: 1, count: 100, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'parallel-delta', parallel: 4, source: { service: 'Provider', entity: 'Books', batchSize: 10 }, target: { entity: 'consumer.BooksParallelDelta' } })
    await ctx.provider.control.faults({ delay: 20 })
    expect(await ctx.run('parallel-delta')).toMatchObject({ status: 'completed', statistics: { created: 100 } })
    expect((await ctx.provider.control.stats()).maxInFlight).toBe(1)
  })

  test('OData V2: the same ranges with $inlinecount and typed literals', async () => {
    await ctx.provider.control.seed({ from: 1, count: 90, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'parallel-v2', mode: 'full', parallel: 3, source: { service: 'ProviderV2', entity: 'Books', batchSize: 10 }, target: { entity: 'consumer.BooksParallelV2' } })
    await ctx.provider.control.faults({ delay: 200 })
    expect(await ctx.run('parallel-v2')).toMatchObject({ status: 'completed', statistics: { created: 90 } })
    expect((await ctx.provider.control.stats()).maxInFlight).toBe(3)
    await expectCopy('consumer.BooksParallelV2', 90)
  })
})
