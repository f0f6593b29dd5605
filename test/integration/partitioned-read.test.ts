/**
 * Partitioned full reads (issue 24, docs/guide/partitioned-reads.md): a full copy reads `parallel` key
 * ranges of the real OData provider at once, feeding one writer. The provider (a child process)
 * counts the requests open at once and when each arrived (test/fixtures/provider/srv/faults.js).
 */
import cds from '@sap/cds'
import { formatWithOptions } from 'node:util'
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
    // a long round trip against the page: from one request up to all four ranges at once (governor.ts)
    await ctx.provider.control.faults({ delay: 200 })
    // lookups of existing keys in the target: none, every batch of every range is a plain INSERT
    // after the truncate (its keys lie outside all key intervals written before; written-keys.ts)
    let lookups = 0
    const db = await cds.connect.to('db')
    db.before('READ', 'consumer.BooksParallel', req => { if ((req.query as { SELECT?: { where?: unknown } }).SELECT?.where) lookups++ })
    const before = await ctx.requestCount()
    const outcome = await ctx.run('parallel-four')
    expect(lookups).toBe(0)
    const stats = await ctx.provider.control.stats()
    expect(outcome).toMatchObject({ status: 'completed', statistics: { created: 200, updated: 0, deleted: 0 } })
    await expectCopy('consumer.BooksParallel', 200)
    // ranges at once, never more than `parallel` (how many between: governor.ts, from one up; on a
    // loaded machine a provider short of CPU answers slower with more at once and the read stays lower)
    expect(stats.maxInFlight).toBeGreaterThanOrEqual(2)
    expect(stats.maxInFlight).toBeLessThanOrEqual(4)
    const urls = stats.urls.slice(-(stats.requests - before))
    // boundaries near k/4 of the 190 rows after the first page, on whole pages: 60, 110, 150 (three one-row
    // samples), each skipped from after the first page's last row (ID gt 10)
    expect(sampleUrls(urls).map(url => /\$skip=(\d+)/.exec(url)![1]).sort()).toEqual(['100', '140', '50'])
    expect(sampleUrls(urls).every(url => /\$filter=ID gt 10&/.test(url))).toBe(true)
    // a sample selects its order column only (the provider skips up to n rows for it), pages the target's columns
    expect(sampleUrls(urls).every(url => /\?\$select=ID&/.test(url))).toBe(true)
    expect(urls.filter(url => !url.includes('$skip=')).every(url => /\$select=ID,|\$select=[^&]*,ID[,&]/.test(url))).toBe(true)
    // a range's later pages carry one lower bound (after their last row), not also the range's start:
    // a source such as SQLite ranges its index scan on one of several and filters the rest
    const later = urls.filter(url => !url.includes('$skip=') && !url.includes('$count=true'))
    expect(later.length).toBeGreaterThan(4)
    expect(later.map(url => url.match(/ID g[te] /g)?.length)).toEqual(later.map(() => 1))
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

  test('a provider that serves one request at a time: parallel reduced for the rest of the run, said in the log; every row once', async () => {
    // 80 pages: the governor judges neither a range's first page nor its last (both also count), and
    // needs a round trip's worth of the others per level
    await ctx.provider.control.seed({ from: 1, count: 800, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'parallel-slow', mode: 'full', parallel: 8, source: { service: 'Provider', entity: 'Books', batchSize: 10 }, target: { entity: 'consumer.BooksParallelSlow' } })
    // each answer waits for the ones before it: twice the requests at once, twice the time per page
    await ctx.provider.control.faults({ delay: 100, serial: true })
    const logged: string[] = []
    const spy = vi.spyOn(console, 'info').mockImplementation((...args: unknown[]) => { logged.push(formatWithOptions({ depth: 4 }, ...args)) })
    try {
      expect(await ctx.run('parallel-slow')).toMatchObject({ status: 'completed', statistics: { created: 800 } })
    } finally {
      spy.mockRestore()
    }
    // the level it steps back from depends on how far it got up, and a loaded machine may step back once
    // more (governor: a level judged slower again than the one below it): at least one reduction, each
    // from the level the one before ended at to a lower one, never up again, each with the medians that made it
    const reduced = logged.filter(line => line.includes("pipeline 'parallel-slow': parallel reduced from "))
    expect(reduced.length, logged.join('\n')).toBeGreaterThanOrEqual(1)
    let level: number | undefined
    for (const line of reduced) {
      const [, from, to] = line.match(/reduced from (\d+) to (\d+) for the rest of the run/) ?? []
      if (level !== undefined) expect(Number(from), line).toBe(level)
      expect(Number(from), line).toBeGreaterThan(Number(to))
      expect(Number(to), line).toBeGreaterThanOrEqual(1)
      expect(line).toMatch(new RegExp(`median page \\d+ ms at ${from}, \\d+ ms at ${to}`))
      level = Number(to)
    }
    await expectCopy('consumer.BooksParallelSlow', 800)
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

  test('delta: a first run (rows without a watermark first) goes page after page; a large delta reads ranges of (modifiedAt, ID) at once and loses nothing at ties across the boundaries; a no-change delta is one request', async () => {
    await ctx.provider.control.seed({ from: 1, count: 100, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'parallel-delta', parallel: 4, source: { service: 'Provider', entity: 'Books', batchSize: 10 }, target: { entity: 'consumer.BooksParallelDelta' } })
    await ctx.provider.control.faults({ delay: 20 })
    expect(await ctx.run('parallel-delta')).toMatchObject({ status: 'completed', statistics: { created: 100 } })
    expect((await ctx.provider.control.stats()).maxInFlight).toBe(1)

    // 60 rows share T1 (the range boundaries at 30 and 50 of 90 fall inside that group), 30 share T2
    const T1 = '2026-02-01T00:00:00.000Z'
    const T2 = '2026-03-01T00:00:00.000Z'
    await ctx.provider.control.touch({ from: 1, count: 60, modifiedAt: T1, title: 'changed' })
    await ctx.provider.control.touch({ from: 61, count: 30, modifiedAt: T2, title: 'changed' })
    await ctx.provider.control.faults({ delay: 200 }) // a long round trip: more requests at once pay
    const before = await ctx.requestCount()
    expect(await ctx.run('parallel-delta')).toMatchObject({ status: 'completed', statistics: { created: 0, updated: 90, deleted: 0 } })
    const stats = await ctx.provider.control.stats()
    const urls = stats.urls.slice(-(stats.requests - before))
    // positions 30, 50, 70 of the delta, skipped from after the first page (10 rows)
    expect(sampleUrls(urls).map(url => /\$skip=(\d+)/.exec(url)![1]).sort()).toEqual(['20', '40', '60'])
    expect(stats.maxInFlight).toBeGreaterThan(1)
    expect(stats.maxInFlight).toBeLessThanOrEqual(4)
    await expectCopy('consumer.BooksParallelDelta', 100, id => (id <= 90 ? 'changed' : `Book ${id}`))
    // the watermark and its tie cursor: the last row of the last range
    const tracker = (await ql.SELECT.one.from('plugin.data_pipeline.Pipelines').where({ name: 'parallel-delta' })) as { lastSync: string; lastKey: string }
    expect(new Date(tracker.lastSync).toISOString()).toBe(T2)
    expect(JSON.parse(tracker.lastKey)).toMatchObject({ at: T2, after: { ID: 90 } })

    // nothing changed: exactly one request, nothing written
    const idle = await ctx.requestCount()
    expect(await ctx.run('parallel-delta')).toMatchObject({ status: 'completed', statistics: { created: 0, updated: 0, deleted: 0 } })
    expect((await ctx.readsSince(idle)).reads).toHaveLength(1)
  })

  test('OData V2: the same ranges with $inlinecount and typed literals', async () => {
    await ctx.provider.control.seed({ from: 1, count: 90, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'parallel-v2', mode: 'full', parallel: 3, source: { service: 'ProviderV2', entity: 'Books', batchSize: 10 }, target: { entity: 'consumer.BooksParallelV2' } })
    await ctx.provider.control.faults({ delay: 200 })
    expect(await ctx.run('parallel-v2')).toMatchObject({ status: 'completed', statistics: { created: 90 } })
    const { maxInFlight } = await ctx.provider.control.stats()
    expect(maxInFlight).toBeGreaterThanOrEqual(2)
    expect(maxInFlight).toBeLessThanOrEqual(3)
    await expectCopy('consumer.BooksParallelV2', 90)
  })
})
