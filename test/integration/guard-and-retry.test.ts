/**
 * Atomic full refresh, the one-run-per-pipeline guard and retries, against a real provider
 * that injects faults over HTTP (DESIGN "Atomic full refresh", "One run per pipeline",
 * "Retry"). Every test uses its own pipeline and target table.
 */
import cds from '@sap/cds'
import { useConsumer, ql } from '../helpers/consumer'

const ctx = useConsumer()
const { run, requestCount } = ctx
const urlsSince = async (before: number) => (await ctx.readsSince(before)).urls

const T0 = '2026-01-01T00:00:00.000Z'
const RUNS = 'plugin.data_pipeline.PipelineRuns'
const PIPELINES = 'plugin.data_pipeline.Pipelines'

function runsOf(name: string): Promise<Array<Record<string, any>>> {
  return ql.SELECT.from(RUNS).where({ pipeline_name: name }).orderBy('startTime')
}

describe('atomic full refresh', () => {
  beforeEach(async () => {
    await ctx.provider.control.reset()
  })

  test('a full refresh failing midway leaves the previous target content intact and is recorded failed', async () => {
    await ctx.provider.control.seed({ from: 1, count: 30, modifiedAt: T0 })
    await ctx.engine.addPipeline({
      name: 'full-atomic', mode: 'full', retry: { maxRetries: 0 },
      source: { service: 'Provider', entity: 'Books', batchSize: 10 }, target: { entity: 'consumer.BooksFull' },
    })
    const first = await run('full-atomic')
    expect(first).toMatchObject({ status: 'completed', statistics: { created: 30, updated: 0, deleted: 0 } })
    const previous = await ql.SELECT.from('consumer.BooksFull').orderBy('ID')
    expect(previous).toHaveLength(30)

    // the source changes, then fails on the third page (two batches were already written)
    await ctx.provider.control.touch({ from: 1, count: 30, title: 'Rewritten' })
    await ctx.provider.control.faults({ status: 500, count: 1000, after: 2 })
    const before = await requestCount()
    const { done } = await ctx.engine.execute('full-atomic')
    await expect(done).rejects.toThrow()
    await ctx.provider.control.faults({})
    expect(await urlsSince(before)).toHaveLength(3) // maxRetries 0: the failing page is not retried

    expect(await ql.SELECT.from('consumer.BooksFull').orderBy('ID')).toEqual(previous)

    const runs = await runsOf('full-atomic')
    expect(runs).toHaveLength(2)
    expect(runs[0]).toMatchObject({ status: 'idle', mode: 'full' })
    // the run's transaction was rolled back: it recorded no writes (honest statistics)
    expect(runs[1]).toMatchObject({ status: 'failed', mode: 'full', statistics_created: 0, statistics_updated: 0, statistics_deleted: 0 })
    expect(runs[1].endTime).toBeTruthy()
    const error = JSON.parse(runs[1].error)
    expect(error).toMatchObject({ status: 500 })
    expect(error.message).toMatch(/500/)

    const tracker = await ctx.engine.status('full-atomic')
    expect(tracker).toMatchObject({ status: 'failed', errorCount: 1, currentRun: null, leaseOwner: null, statistics_created: 30, statistics_deleted: 0 })
    expect(tracker.lastError).toBeTruthy()
  })

  test("with transaction: 'batch' a full refresh commits per batch instead: a failure keeps what was committed", async () => {
    await ctx.provider.control.seed({ from: 1, count: 30, modifiedAt: T0 })
    await ctx.engine.addPipeline({
      // parallel 1: pages in key order, the first two commit; no retry: the third page fails the run at once
      name: 'full-per-batch', mode: 'full', transaction: 'batch', parallel: 1, retry: { maxRetries: 0 },
      source: { service: 'Provider', entity: 'Books', batchSize: 10 }, target: { entity: 'consumer.BooksFullBatch' },
    })
    expect(await run('full-per-batch')).toMatchObject({ status: 'completed', statistics: { created: 30, deleted: 0 } })
    await ctx.provider.control.touch({ from: 1, count: 30, title: 'Rewritten' })
    await ctx.provider.control.faults({ status: 500, count: 1000, after: 2 })
    const { done } = await ctx.engine.execute('full-per-batch')
    await expect(done).rejects.toThrow()
    await ctx.provider.control.faults({})
    // the truncate and the two batches before the failure were committed on their own
    const rows = (await ql.SELECT.from('consumer.BooksFullBatch').orderBy('ID')) as Array<{ ID: number; title: string }>
    expect(rows.map(r => r.ID)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1))
    expect(new Set(rows.map(r => r.title))).toEqual(new Set(['Rewritten']))
    const runs = await runsOf('full-per-batch')
    expect(runs[1]).toMatchObject({ status: 'failed', statistics_created: 20, statistics_deleted: 30 })
    // the next successful run completes the copy
    expect(await run('full-per-batch')).toMatchObject({ status: 'completed', statistics: { created: 30, deleted: 20 } })
  })
})

describe('one run per pipeline', () => {
  beforeEach(async () => {
    await ctx.provider.control.reset()
  })

  test('20 concurrent triggers start exactly one run; the other 19 are rejected with PIPELINE_RUNNING (409)', async () => {
    await ctx.provider.control.seed({ from: 1, count: 20, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'guard', source: { service: 'Provider', entity: 'Books', batchSize: 10 }, target: { entity: 'consumer.BooksGuard' } })
    await ctx.provider.control.faults({ delay: 200 }) // keep the winning run busy while the others try
    // guard attempts on the database: one — the others wait for its decision in this process
    // (lib/engine/registry/local-runs.ts) instead of 19 transactions queuing for the pool
    const tracker = (ctx.engine as unknown as { registry: { tracker: { acquire: (...args: unknown[]) => Promise<unknown> } } }).registry.tracker
    const acquire = vi.spyOn(tracker, 'acquire')

    const attempts = await Promise.allSettled(Array.from({ length: 20 }, () => ctx.engine.execute('guard', { async: true })))
    const started = attempts.filter(a => a.status === 'fulfilled')
    const rejected = attempts.filter((a): a is PromiseRejectedResult => a.status === 'rejected')
    expect(started).toHaveLength(1)
    expect(rejected).toHaveLength(19)
    for (const { reason } of rejected) expect(reason).toMatchObject({ code: 'PIPELINE_RUNNING', status: 409 })
    expect(acquire).toHaveBeenCalledTimes(1)
    acquire.mockRestore()

    const outcome = await started[0].value.done
    expect(outcome).toMatchObject({ status: 'completed', statistics: { created: 20, updated: 0, deleted: 0 } })
    const runs = await runsOf('guard')
    expect(runs).toHaveLength(1)
    expect(runs[0]).toMatchObject({ ID: started[0].value.runId, status: 'idle' })
    expect(await ctx.engine.status('guard')).toMatchObject({ status: 'idle', errorCount: 0, currentRun: null })
  })
})

describe('retry', () => {
  beforeEach(async () => {
    await ctx.provider.control.reset()
  })

  test('503 twice, then success: the read is retried and the run completes', async () => {
    await ctx.provider.control.seed({ from: 1, count: 5, modifiedAt: T0 })
    await ctx.engine.addPipeline({
      name: 'retry-503', mode: 'full', retry: { baseDelay: 20, maxDelay: 100 },
      source: { service: 'Provider', entity: 'Books', batchSize: 100 }, target: { entity: 'consumer.BooksRetry503' },
    })
    await ctx.provider.control.faults({ status: 503, count: 2 })
    const before = await requestCount()
    const outcome = await run('retry-503')
    expect(outcome).toMatchObject({ status: 'completed', statistics: { created: 5, updated: 0, deleted: 0 } })
    const urls = await urlsSince(before)
    expect(urls).toHaveLength(3) // 503, 503, 200: the same page requested three times
    expect(new Set(urls).size).toBe(1)
    expect(await ql.SELECT.one.from('consumer.BooksRetry503').columns('count(1) as n')).toEqual({ n: 5 })
  })

  test('400 is final: the run fails after exactly one request', async () => {
    await ctx.provider.control.seed({ from: 1, count: 5, modifiedAt: T0 })
    await ctx.engine.addPipeline({
      name: 'retry-400', mode: 'full', retry: { baseDelay: 20, maxDelay: 100 },
      source: { service: 'Provider', entity: 'Books', batchSize: 100 }, target: { entity: 'consumer.BooksRetry400' },
    })
    await ctx.provider.control.faults({ status: 400, count: 10 })
    const before = await requestCount()
    const { done } = await ctx.engine.execute('retry-400')
    await expect(done).rejects.toThrow()
    expect(await urlsSince(before)).toHaveLength(1)
    const runs = await runsOf('retry-400')
    expect(runs).toHaveLength(1)
    expect(runs[0].status).toBe('failed')
    expect(await ctx.engine.status('retry-400')).toMatchObject({ status: 'failed', errorCount: 1 })
  })

  test('429 with Retry-After: 1 waits about a second, then succeeds', async () => {
    await ctx.provider.control.seed({ from: 1, count: 5, modifiedAt: T0 })
    await ctx.engine.addPipeline({
      name: 'retry-429', mode: 'full', retry: { baseDelay: 10, maxDelay: 50 },
      source: { service: 'Provider', entity: 'Books', batchSize: 100 }, target: { entity: 'consumer.BooksRetry429' },
    })
    await ctx.provider.control.faults({ status: 429, count: 1, retryAfter: 1 })
    const before = await requestCount()
    const started = Date.now()
    const outcome = await run('retry-429')
    const elapsed = Date.now() - started
    expect(outcome).toMatchObject({ status: 'completed', statistics: { created: 5, updated: 0, deleted: 0 } })
    expect(await urlsSince(before)).toHaveLength(2)
    // without Retry-After the backoff would be at most 10 ms
    expect(elapsed).toBeGreaterThanOrEqual(950)
    expect(elapsed).toBeLessThan(4000)
  })
})

// the guard's and the tracker's UPDATEs (engine/tracker/rendered-update.ts): SQL of each database, affected rows as its driver counts them
describe('tracker UPDATEs rendered once per shape', () => {
  beforeEach(async () => {
    await ctx.provider.control.reset()
  })

  test('the finish of a run is CAP\'s SQL with the run\'s values; increments, nulls and counts as through CAP', async () => {
    await ctx.provider.control.seed({ from: 1, count: 3, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'ahead-sql', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.BooksAheadSql' } })
    const sql: string[] = []
    const db = cds.db as unknown as { before(event: string, handler: (req: { query?: unknown }) => void): void }
    db.before('*', req => { if (typeof req.query === 'string' && /^UPDATE/i.test(req.query)) sql.push(req.query) })
    const outcome = await run('ahead-sql')
    expect(outcome.statistics.created).toBe(3)
    expect(sql.some(text => /plugin_data_pipeline_Pipelines/i.test(text) && /statistics_created\s*=.*statistics_created\s*\+/i.test(text))).toBe(true)
    expect(sql.some(text => /plugin_data_pipeline_PipelineRuns/i.test(text))).toBe(true)
    expect(await ctx.engine.status('ahead-sql')).toMatchObject({ status: 'idle', statistics_created: 3, currentRun: null, leaseOwner: null, lastError: null, errorCount: 0 })

    // the same class on its own: CAP's values, and CAP's path where a value needs CAP's conversion
    // imported here: loading lib modules early would load cds.env before cds.test picks the folder
    const { RenderedUpdates } = await import('../../lib/engine/tracker/rendered-update')
    const updates = new RenderedUpdates()
    const tx = cds.db as unknown as Parameters<InstanceType<typeof RenderedUpdates>['run']>[0]
    expect(await updates.run(tx, PIPELINES, { lastError: 'x', errorCount: { '+=': 2 }, checkpoint: null }, { name: 'ahead-sql' })).toBe(1)
    expect(await updates.run(tx, PIPELINES, { lastError: 'y', errorCount: { '+=': 3 }, checkpoint: null }, { name: 'ahead-sql' })).toBe(1)
    expect(await updates.run(tx, PIPELINES, { lastError: 'z', errorCount: { '+=': 1 }, checkpoint: null }, { name: 'no such pipeline' })).toBe(0)
    expect(await updates.run(tx, PIPELINES, { enabled: false }, { name: 'ahead-sql' })).toBe(1)
    expect(await ql.SELECT.one.from(PIPELINES).columns('lastError', 'errorCount', 'checkpoint', 'enabled').where({ name: 'ahead-sql' })).toEqual({ lastError: 'y', errorCount: 5, checkpoint: null, enabled: false })
  })
})
