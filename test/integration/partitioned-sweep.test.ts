/**
 * Deletes sweep with `parallel` > 1 (issue 24, docs/concepts/deletes.md): the source's keys
 * are listed in key ranges at once, each merged with the replica's keys of the same range. The
 * provider (a child process) counts the requests open at once and when each arrived
 * (test/fixtures/provider/srv/faults.js).
 */
import cds from '@sap/cds'
import { ql, useConsumer } from '../helpers/consumer'

const ctx = useConsumer()
const T0 = '2026-01-01T00:00:00.000Z'
const TARGET = 'consumer.ItemsParallelSweep'
const DELAY = 200

const ids = async () => ((await ql.SELECT.from(TARGET).columns('ID').orderBy('ID')) as Array<{ ID: number }>).map(row => row.ID)
const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)
const lastSweep = async (name: string) => JSON.parse(((await ql.SELECT.one.from('plugin.data_pipeline.Pipelines').where({ name })) as { lastSweep: string }).lastSweep) as Record<string, unknown>

/** The counted requests since `before`, each with its URL and arrival time (ms). */
async function requestsSince(before: number) {
  const stats = await ctx.provider.control.stats()
  const n = stats.requests - before
  return { stats, requests: stats.urls.slice(-n).map((url, i) => ({ url, at: stats.times.slice(-n)[i].at })) }
}

describe('partitioned deletes sweep', () => {
  beforeEach(async () => {
    await ctx.provider.control.reset()
    await ctx.provider.control.faults({})
  })

  test('parallel 4: key ranges listed at once, at most 4 requests in flight; exactly the vanished rows deleted, at the boundaries and after the last key', async () => {
    await ctx.provider.control.seedItems({ from: 1, count: 200, modifiedAt: T0 })
    const name = 'parallel-sweep'
    await ctx.engine.addPipeline({ name, parallel: 4, source: { service: 'Provider', entity: 'Items', batchSize: 10 }, target: { entity: TARGET }, delta: { field: 'modifiedAt' }, deletes: { sweep: 'always' } })
    expect(await ctx.run(name)).toMatchObject({ status: 'completed', statistics: { created: 200, deleted: 0 } })
    expect(await ids()).toEqual(range(1, 200))

    // gone at the source: three near the start, ten across the boundary at position 100, the last five
    await ctx.provider.control.removeItems({ from: 5, count: 3 })
    await ctx.provider.control.removeItems({ from: 95, count: 10 })
    await ctx.provider.control.removeItems({ from: 196, count: 5 })
    await ctx.provider.control.faults({ delay: DELAY }) // a long round trip: ranges at once pay
    // the replica's key pages: each with one lower bound (its range's start, or after its previous page's
    // last key), never both: SQLite ranges its index scan on one and would scan from the range's start
    const replicaLowerBounds: number[] = []
    const db = await cds.connect.to('db')
    db.before('READ', TARGET, req => {
      const where = JSON.stringify((req.query as { SELECT?: { where?: unknown } }).SELECT?.where ?? [])
      replicaLowerBounds.push((where.match(/"(>|>=)"/g) ?? []).length)
    })
    const before = await ctx.requestCount()
    expect(await ctx.run(name)).toMatchObject({ status: 'completed', statistics: { created: 0, updated: 0, deleted: 18 } })
    expect(await ids()).toEqual([...range(1, 4), ...range(8, 94), ...range(105, 195)])
    expect(await lastSweep(name)).toMatchObject({ status: 'completed', deleted: 18, sourceKeys: 182, targetKeys: 200 })
    expect(replicaLowerBounds.filter(n => n > 0).length).toBeGreaterThan(4)
    expect(Math.max(...replicaLowerBounds)).toBe(1)

    const { stats, requests } = await requestsSince(before)
    expect(stats.maxInFlight).toBeGreaterThan(1)
    expect(stats.maxInFlight).toBeLessThanOrEqual(4)
    const keyReads = requests.filter(r => r.url.includes('/Items?') && r.url.includes('$select=ID&'))
    // boundary samples (one key each) near k·182/4, on whole pages: 50, 90, 140
    expect(keyReads.filter(r => r.url.includes('$skip=')).map(r => /\$skip=(\d+)/.exec(r.url)![1]).sort()).toEqual(['140', '50', '90'])
    // key pages of different ranges in flight at once: one arrived before another's answer (≥ DELAY) was back
    const pages = keyReads.filter(r => !r.url.includes('$skip=') && r.url.includes('$filter='))
    const arrivals = pages.map(r => r.at).sort((a, b) => a - b)
    expect(arrivals.some((at, i) => i > 0 && at - arrivals[i - 1] < DELAY)).toBe(true)
  })

  test('a range failing for good fails the sweep and the run; nothing is deleted', async () => {
    await ctx.provider.control.seedItems({ from: 1, count: 120, modifiedAt: T0 })
    const name = 'parallel-sweep-fail'
    await ctx.engine.addPipeline({ name, parallel: 3, retry: { maxRetries: 1, baseDelay: 10, maxDelay: 20 }, source: { service: 'Provider', entity: 'Items', batchSize: 10 }, target: { entity: TARGET }, delta: { field: 'modifiedAt' }, deletes: { sweep: 'always' } })
    await ql.DELETE.from(TARGET)
    expect(await ctx.run(name)).toMatchObject({ status: 'completed', statistics: { created: 120 } })
    await ctx.provider.control.removeItems({ from: 1, count: 10 })
    await ctx.provider.control.removeItems({ from: 111, count: 10 })
    // the delta read (one request, nothing new), the count and the two samples pass, then every request fails
    await ctx.provider.control.faults({ status: 503, count: 1000, after: 4 })
    const { done } = await ctx.engine.execute(name)
    await expect(done).rejects.toThrow(/503/)
    await ctx.provider.control.faults({})
    expect(await ids()).toEqual(range(1, 120))
    expect(await lastSweep(name)).toMatchObject({ status: 'failed', deleted: 0 })
  })
})
