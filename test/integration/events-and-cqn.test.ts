/**
 * Pipeline events (CAP before/on/after keyed by pipeline name), the CQN source in both
 * shapes, run bookkeeping (history rows, tracker success/failure path, trigger whitelist),
 * async execution, flush and in-process schedules. Everything runs against local tables of
 * the consumer app (the provider is started by the shared helper but not used here).
 */
import cds from '@sap/cds'
import { useConsumer, ql } from '../helpers/consumer'
import { sleep, waitFor } from '../helpers/wait'

const ctx = useConsumer()

const PIPELINES = 'plugin.data_pipeline.Pipelines'
const RUNS = 'plugin.data_pipeline.PipelineRuns'
const EVENT_NAMES = ['PIPELINE.START', 'PIPELINE.READ', 'PIPELINE.MAP', 'PIPELINE.WRITE', 'PIPELINE.DONE']

type Data = Record<string, any>
type Req = { event: string; data: Data }
/** CAP's handler registration, loosely typed (event, pipeline name, handler). */
const engine = () => ctx.engine as unknown as {
  before(event: string, path: string, handler: (req: Req) => unknown): void
  on(event: string, path: string, handler: (req: Req, next: () => Promise<unknown>) => unknown): void
  after(event: string, path: string, handler: (result: unknown, req: Req) => unknown): void
}

/** A promise the test opens when it wants a held run to go on. */
function gate() {
  let open!: () => void
  const opened = new Promise<void>(resolve => { open = resolve })
  return { open, opened }
}

const book = (ID: number, author: string, stock: number, modifiedAt: string) => ({ ID, title: `Book ${ID}`, author, stock, modifiedAt })

async function seedBooks(rows: Data[]) {
  await ql.INSERT.into('consumer.LocalBooks').entries(rows)
}

const copies = () => ql.SELECT.from('consumer.LocalCopies').orderBy('ID') as Promise<Data[]>
const stats = () => ql.SELECT.from('consumer.AuthorStats').orderBy('author') as Promise<Data[]>
const runsOf = (name: string) => ql.SELECT.from(RUNS).where({ pipeline_name: name }).orderBy('startTime') as Promise<Data[]>
const runRow = (ID: string) => ql.SELECT.one.from(RUNS).where({ ID }) as Promise<Data>

/** Entity-shape CQN pipeline LocalBooks → LocalCopies (delta on modifiedAt by inference). */
const copyPipeline = (name: string, extra: Data = {}) => {
  const { source, ...rest } = extra
  return { name, source: { entity: 'consumer.LocalBooks', ...source }, target: { entity: 'consumer.LocalCopies' }, ...rest }
}

/** Query-shape pipeline: author aggregate → AuthorStats. */
const statsQuery = () => ql.SELECT.from('consumer.LocalBooks').columns('author', 'count(1) as books', 'sum(stock) as stock').groupBy('author')
const statsPipeline = (name: string, extra: Data = {}) => ({ name, source: { query: statsQuery }, target: { entity: 'consumer.AuthorStats' }, ...extra })

beforeEach(async () => {
  await ql.DELETE.from('consumer.LocalBooks')
  await ql.DELETE.from('consumer.LocalCopies')
  await ql.DELETE.from('consumer.AuthorStats')
})

describe('pipeline events', () => {
  test('START → READ → MAP → WRITE (per batch) → DONE with the req.data of SPEC Events; other pipelines\' handlers do not fire', async () => {
    await seedBooks([book(1, 'A', 1, '2026-01-01T00:00:00.000Z'), book(2, 'A', 2, '2026-01-02T00:00:00.000Z'), book(3, 'B', 3, '2026-01-03T00:00:00.000Z')])
    await ctx.engine.addPipeline(copyPipeline('ev-order', { source: { batchSize: 2 } }) as never)
    await ctx.engine.addPipeline(copyPipeline('ev-other') as never)
    const seen: Array<{ event: string; data: Data }> = []
    const foreign: string[] = []
    for (const event of EVENT_NAMES) {
      if (event === 'PIPELINE.DONE') engine().after(event, 'ev-order', (_result, req) => { seen.push({ event: req.event, data: { ...req.data } }) })
      else engine().before(event, 'ev-order', req => { seen.push({ event: req.event, data: { ...req.data } }) })
      engine().before(event, 'ev-other', req => { foreign.push(req.event) })
    }

    const { runId, name, done } = await ctx.engine.execute('ev-order')
    expect(name).toBe('ev-order')
    const outcome = await done
    expect(outcome).toMatchObject({ runId, status: 'completed', statistics: { created: 3, updated: 0, deleted: 0 } })

    expect(seen.map(s => s.event)).toEqual(['PIPELINE.START', 'PIPELINE.READ', 'PIPELINE.MAP', 'PIPELINE.WRITE', 'PIPELINE.MAP', 'PIPELINE.WRITE', 'PIPELINE.DONE'])
    for (const { data } of seen) expect(data.runId).toBe(runId)
    expect(foreign).toEqual([])

    const [start, read, map0, write0, map1, write1, doneEvent] = seen.map(s => s.data)
    expect(start).toMatchObject({ mode: 'delta', trigger: 'manual' })
    expect(start.config).toMatchObject({ name: 'ev-order', source: { entity: 'consumer.LocalBooks' } })
    expect(start.tracker).toMatchObject({ name: 'ev-order', status: 'running' })
    expect(read.config).toMatchObject({ name: 'ev-order' })
    expect(read.source).toBeDefined()
    expect(read.target).toBeDefined()
    expect(typeof read.source.readStream).toBe('function')
    expect(map0.batchIndex).toBe(0)
    expect(map0.sourceRecords.map((r: Data) => r.ID)).toEqual([1, 2])
    expect(map0.targetRecords).toEqual([])
    expect(map1.batchIndex).toBe(1)
    expect(map1.sourceRecords.map((r: Data) => r.ID)).toEqual([3])
    expect(write0.batchIndex).toBe(0)
    expect(write0.targetRecords).toEqual([{ ID: 1, title: 'Book 1', author: 'A', stock: 1 }, { ID: 2, title: 'Book 2', author: 'A', stock: 2 }])
    expect(write1.batchIndex).toBe(1)
    expect(doneEvent).toMatchObject({ status: 'completed', mode: 'delta', trigger: 'manual', statistics: { created: 3, updated: 0, deleted: 0 } })
    expect(doneEvent.error).toBeUndefined()
    expect(Date.parse(doneEvent.startTime)).toBeLessThanOrEqual(Date.parse(doneEvent.endTime))
    expect(new Date(doneEvent.startTime).toISOString()).toBe(doneEvent.startTime)

    // the other pipeline runs only its own handlers
    const other = await ctx.engine.execute('ev-other')
    await other.done
    expect(foreign).toEqual(['PIPELINE.START', 'PIPELINE.READ', 'PIPELINE.MAP', 'PIPELINE.WRITE', 'PIPELINE.DONE'])
    expect(seen).toHaveLength(7)
  })

  test('a before MAP handler filtering sourceRecords reduces what is written', async () => {
    await seedBooks([book(1, 'A', 1, '2026-01-01T00:00:00.000Z'), book(2, 'B', 2, '2026-01-01T00:00:00.000Z'), book(3, 'A', 3, '2026-01-01T00:00:00.000Z')])
    await ctx.engine.addPipeline(copyPipeline('ev-filter') as never)
    engine().before('PIPELINE.MAP', 'ev-filter', req => {
      req.data.sourceRecords = req.data.sourceRecords.filter((r: Data) => r.author === 'A')
    })
    const { done } = await ctx.engine.execute('ev-filter')
    expect((await done).statistics).toEqual({ created: 2, updated: 0, deleted: 0 })
    expect((await copies()).map(r => r.ID)).toEqual([1, 3])
  })

  test('a custom on MAP handler replaces the default mapping', async () => {
    await seedBooks([book(1, 'A', 1, '2026-01-01T00:00:00.000Z'), book(2, 'B', 2, '2026-01-01T00:00:00.000Z')])
    await ctx.engine.addPipeline(copyPipeline('ev-custom-map') as never)
    engine().on('PIPELINE.MAP', 'ev-custom-map', req => {
      req.data.targetRecords = req.data.sourceRecords.map((r: Data) => ({ ID: r.ID + 100, title: String(r.title).toUpperCase(), author: `by ${r.author}`, stock: r.stock * 10 }))
    })
    await (await ctx.engine.execute('ev-custom-map')).done
    expect(await copies()).toEqual([
      { ID: 101, title: 'BOOK 1', author: 'by A', stock: 10 },
      { ID: 102, title: 'BOOK 2', author: 'by B', stock: 20 },
    ])
  })

  test('a custom on handler can delegate to the built-in through next()', async () => {
    await seedBooks([book(1, 'A', 1, '2026-01-01T00:00:00.000Z')])
    await ctx.engine.addPipeline(copyPipeline('ev-next') as never)
    const calls: number[] = []
    engine().on('PIPELINE.WRITE', 'ev-next', async (req, next) => {
      calls.push(req.data.targetRecords.length)
      return next()
    })
    const { done } = await ctx.engine.execute('ev-next')
    expect((await done).statistics.created).toBe(1)
    expect(calls).toEqual([1])
    expect(await copies()).toHaveLength(1)
  })

  test('a READ handler can supply its own sourceStream (the built-in read is skipped)', async () => {
    await seedBooks([book(1, 'A', 1, '2026-01-01T00:00:00.000Z')])
    await ctx.engine.addPipeline(copyPipeline('ev-stream') as never)
    engine().before('PIPELINE.READ', 'ev-stream', req => {
      req.data.sourceStream = (async function* () {
        yield [{ ID: 7, title: 'Seven', author: 'S', stock: 7 }]
        yield [{ ID: 8, title: 'Eight', author: 'S', stock: 8 }]
      })()
    })
    const { done } = await ctx.engine.execute('ev-stream')
    expect((await done).statistics).toEqual({ created: 2, updated: 0, deleted: 0 })
    expect((await copies()).map(r => r.ID)).toEqual([7, 8])
  })

  test('an after DONE handler runs for sync and async runs', async () => {
    await seedBooks([book(1, 'A', 1, '2026-01-01T00:00:00.000Z')])
    await ctx.engine.addPipeline(copyPipeline('ev-done') as never)
    const done: Data[] = []
    engine().after('PIPELINE.DONE', 'ev-done', (_result, req) => { done.push({ ...req.data }) })

    const sync = await ctx.engine.execute('ev-done')
    // sync: DONE handlers have run when execute resolves
    expect(done).toHaveLength(1)
    expect(done[0]).toMatchObject({ runId: sync.runId, status: 'completed', trigger: 'manual' })

    const async = await ctx.engine.execute('ev-done', { async: true, trigger: 'event' })
    await async.done
    expect(done).toHaveLength(2)
    expect(done[1]).toMatchObject({ runId: async.runId, status: 'completed', trigger: 'event' })
  })

  test('a failing run fires DONE with status failed and the error', async () => {
    await seedBooks([book(1, 'A', 1, '2026-01-01T00:00:00.000Z')])
    await ctx.engine.addPipeline(copyPipeline('ev-fail') as never)
    engine().on('PIPELINE.WRITE', 'ev-fail', () => { throw new Error('target exploded') })
    const done: Data[] = []
    engine().after('PIPELINE.DONE', 'ev-fail', (_result, req) => { done.push({ ...req.data }) })

    const run = await ctx.engine.execute('ev-fail')
    await expect(run.done).rejects.toThrow('target exploded')
    expect(done).toHaveLength(1)
    expect(done[0]).toMatchObject({ runId: run.runId, status: 'failed', mode: 'delta', trigger: 'manual', error: { message: 'target exploded' } })
    expect(done[0].endTime).toBeTruthy()
    const row = await runRow(run.runId)
    expect(row.status).toBe('failed')
    expect(JSON.parse(row.error)).toMatchObject({ message: 'target exploded' })
    expect(await copies()).toEqual([])
  })

  test('a failing DONE handler does not turn a completed run into a failed one', async () => {
    await seedBooks([book(1, 'A', 1, '2026-01-01T00:00:00.000Z')])
    await ctx.engine.addPipeline(copyPipeline('ev-done-throws') as never)
    engine().after('PIPELINE.DONE', 'ev-done-throws', () => { throw new Error('notification failed') })
    const { done } = await ctx.engine.execute('ev-done-throws')
    expect((await done).status).toBe('completed')
    expect((await ctx.engine.status('ev-done-throws')).status).toBe('idle')
  })
})

describe('registration', () => {
  test('a duplicate name with the same config is accepted; with a different config it is rejected naming the key', async () => {
    await ctx.engine.addPipeline(copyPipeline('reg-dup') as never)
    await expect(ctx.engine.addPipeline(copyPipeline('reg-dup') as never)).resolves.toMatchObject({ name: 'reg-dup' })
    await expect(ctx.engine.addPipeline(copyPipeline('reg-dup', { source: { batchSize: 7 } }) as never))
      .rejects.toMatchObject({ code: 'INVALID_CONFIG', target: 'name', message: expect.stringMatching(/'reg-dup' is already registered with a different config/) })
  })

  test('invalid configs are rejected before anything is written', async () => {
    await expect(ctx.engine.addPipeline({ name: 'reg-both', source: { entity: 'consumer.LocalBooks', query: statsQuery }, target: { entity: 'consumer.LocalCopies' } } as never))
      .rejects.toMatchObject({ code: 'INVALID_CONFIG', target: 'source.query' })
    await expect(ctx.engine.addPipeline({ name: 'reg-remote', source: { entity: 'consumer.LocalBooks' }, target: { service: 'Nowhere', entity: 'Books' } } as never))
      .rejects.toMatchObject({ code: 'INVALID_CONFIG', target: 'target.service' })
    expect(await ql.SELECT.from(PIPELINES).where({ name: { in: ['reg-both', 'reg-remote'] } })).toEqual([])
  })

  test('the tracker row holds the serialized config: functions as [Function], mode, description', async () => {
    await ctx.engine.addPipeline(statsPipeline('reg-row', { description: 'author statistics' }) as never)
    const row = await ctx.engine.status('reg-row')
    expect(row).toMatchObject({ name: 'reg-row', mode: 'full', description: 'author statistics', status: 'idle', enabled: true, errorCount: 0, schedule: null })
    expect(JSON.parse(row.source!)).toEqual({ query: '[Function]' })
    expect(JSON.parse(row.target!)).toEqual({ entity: 'consumer.AuthorStats' })
    expect(JSON.parse(row.baseConfig!)).toMatchObject({ name: 'reg-row', source: { query: '[Function]' } })
  })
})

describe('CQN source, entity shape', () => {
  test('delta via modifiedAt: inclusive re-read of the watermark rows, older rows untouched, cumulative statistics', async () => {
    await seedBooks([book(1, 'A', 1, '2026-01-01T00:00:00.000Z'), book(2, 'A', 2, '2026-01-02T00:00:00.000Z'), book(3, 'B', 3, '2026-01-03T00:00:00.000Z')])
    await ctx.engine.addPipeline(copyPipeline('cqn-delta') as never)
    const first = await (await ctx.engine.execute('cqn-delta')).done
    expect(first.statistics).toEqual({ created: 3, updated: 0, deleted: 0 })
    expect(await copies()).toEqual([
      { ID: 1, title: 'Book 1', author: 'A', stock: 1 },
      { ID: 2, title: 'Book 2', author: 'A', stock: 2 },
      { ID: 3, title: 'Book 3', author: 'B', stock: 3 },
    ])
    let tracker = await ctx.engine.status('cqn-delta')
    expect(tracker).toMatchObject({ status: 'idle', mode: 'delta', statistics_created: 3 })
    expect(new Date(tracker.lastSync!).toISOString()).toBe('2026-01-03T00:00:00.000Z')

    // a local edit of an unchanged row proves the next delta does not re-read it
    await ql.UPDATE('consumer.LocalCopies').set({ title: 'local edit' }).where({ ID: 1 })
    await ql.UPDATE('consumer.LocalBooks').set({ stock: 20, modifiedAt: '2026-01-04T00:00:00.000Z' }).where({ ID: 2 })
    await seedBooks([book(4, 'C', 4, '2026-01-05T00:00:00.000Z')])

    const second = await (await ctx.engine.execute('cqn-delta')).done
    // book 3 (at the watermark) is re-read but unchanged (not counted), book 2 updated, book 4 created
    expect(second.statistics).toEqual({ created: 1, updated: 1, deleted: 0 })
    expect(await copies()).toEqual([
      { ID: 1, title: 'local edit', author: 'A', stock: 1 },
      { ID: 2, title: 'Book 2', author: 'A', stock: 20 },
      { ID: 3, title: 'Book 3', author: 'B', stock: 3 },
      { ID: 4, title: 'Book 4', author: 'C', stock: 4 },
    ])
    tracker = await ctx.engine.status('cqn-delta')
    expect(new Date(tracker.lastSync!).toISOString()).toBe('2026-01-05T00:00:00.000Z')
    expect(tracker).toMatchObject({ statistics_created: 4, statistics_updated: 1, statistics_deleted: 0, errorCount: 0 })

    // mode full on an entity-shape pipeline replaces everything, including the local edit
    const full = await (await ctx.engine.execute('cqn-delta', { mode: 'full' })).done
    // counted by key against the rows before: the local edit is undone (updated), the rest identical
    expect(full.statistics).toEqual({ created: 0, updated: 1, unchanged: 3, deleted: 0 })
    expect((await copies())[0].title).toBe('Book 1')
  })

  test('a pipeline whose mode is full stores the time its data reflects as lastSync, not a source timestamp', async () => {
    await seedBooks([book(1, 'A', 1, '2026-01-01T00:00:00.000Z')])
    await ctx.engine.addPipeline(copyPipeline('cqn-full-pipeline', { mode: 'full' }) as never)
    const before = Date.now()
    await (await ctx.engine.execute('cqn-full-pipeline')).done
    const lastSync = Date.parse((await ctx.engine.status('cqn-full-pipeline')).lastSync!)
    expect(lastSync).toBeGreaterThanOrEqual(before - 5)
    expect(lastSync).toBeLessThanOrEqual(Date.now())
  })

  test('a full run stores the highest modifiedAt read (not the clock), so the next delta misses nothing', async () => {
    await seedBooks([book(1, 'A', 1, '2026-01-01T00:00:00.000Z'), book(2, 'A', 2, '2026-01-03T00:00:00.000Z')])
    await ctx.engine.addPipeline(copyPipeline('cqn-full-watermark') as never)
    await (await ctx.engine.execute('cqn-full-watermark', { mode: 'full' })).done
    expect(new Date((await ctx.engine.status('cqn-full-watermark')).lastSync!).toISOString()).toBe('2026-01-03T00:00:00.000Z')
    // a row committed after the read with an older stamp (long source transaction, clock skew)
    await seedBooks([book(3, 'B', 3, '2026-01-04T00:00:00.000Z')])
    const delta = await (await ctx.engine.execute('cqn-full-watermark')).done
    expect(delta.statistics.created).toBe(1)
    expect((await copies()).map(r => r.ID)).toEqual([1, 2, 3])
  })

  test('rows without modifiedAt are read on the first delta run', async () => {
    await seedBooks([{ ID: 1, title: 'no stamp', author: 'A', stock: 1, modifiedAt: null }, book(2, 'A', 2, '2026-01-02T00:00:00.000Z')])
    await ctx.engine.addPipeline(copyPipeline('cqn-null-stamp', { source: { batchSize: 1 } }) as never)
    const { done } = await ctx.engine.execute('cqn-null-stamp')
    expect((await done).statistics.created).toBe(2)
    expect((await copies()).map(r => r.ID)).toEqual([1, 2])
  })

  test('partial-refresh is refused for entity-shape pipelines', async () => {
    await ctx.engine.addPipeline(copyPipeline('cqn-no-partial') as never)
    await expect(ctx.engine.execute('cqn-no-partial', { mode: 'partial-refresh' })).rejects.toMatchObject({ code: 'INVALID_PARAMETER', target: 'mode' })
    await expect(ctx.engine.execute('cqn-no-partial', { mode: 'sometimes' as never })).rejects.toMatchObject({ code: 'INVALID_PARAMETER', target: 'mode' })
    expect(await runsOf('cqn-no-partial')).toEqual([])
  })
})

describe('CQN source, query shape', () => {
  test('aggregate snapshot: default mode full replaces the snapshot with honest deleted/created counts', async () => {
    await seedBooks([book(1, 'A', 1, '2026-01-01T00:00:00.000Z'), book(2, 'A', 2, '2026-01-01T00:00:00.000Z'), book(3, 'B', 5, '2026-01-01T00:00:00.000Z')])
    const resolved = await ctx.engine.addPipeline(statsPipeline('q-stats') as never)
    expect(resolved).toMatchObject({ shape: 'query', mode: 'full' })
    const first = await (await ctx.engine.execute('q-stats')).done
    expect(first.statistics).toEqual({ created: 2, updated: 0, deleted: 0 })
    expect(await stats()).toEqual([{ author: 'A', books: 2, stock: 3 }, { author: 'B', books: 1, stock: 5 }])

    // author B disappears, C appears
    await ql.DELETE.from('consumer.LocalBooks').where({ author: 'B' })
    await seedBooks([book(4, 'C', 7, '2026-01-01T00:00:00.000Z'), book(5, 'C', 1, '2026-01-01T00:00:00.000Z'), book(6, 'D', 1, '2026-01-01T00:00:00.000Z')])
    const second = await (await ctx.engine.execute('q-stats')).done
    // A identical, B gone, C and D new
    expect(second.statistics).toEqual({ created: 2, updated: 0, unchanged: 1, deleted: 1 })
    expect(await stats()).toEqual([{ author: 'A', books: 2, stock: 3 }, { author: 'C', books: 2, stock: 8 }, { author: 'D', books: 1, stock: 1 }])
    const runs = await runsOf('q-stats')
    expect(runs.map(r => r.mode)).toEqual(['full', 'full'])
  })

  test('the query is paged in a stable order (batch size smaller than the result)', async () => {
    await seedBooks(Array.from({ length: 7 }, (_, i) => book(i + 1, `Author ${String.fromCharCode(71 - i)}`, i, '2026-01-01T00:00:00.000Z')))
    await ctx.engine.addPipeline(statsPipeline('q-paged', { source: { query: statsQuery, batchSize: 2 } }) as never)
    const batches: number[] = []
    engine().before('PIPELINE.MAP', 'q-paged', req => { batches.push(req.data.sourceRecords.length) })
    const { done } = await ctx.engine.execute('q-paged')
    expect((await done).statistics.created).toBe(7)
    expect(batches).toEqual([2, 2, 2, 1])
    expect(await stats()).toHaveLength(7)
  })

  test('partial-refresh rebuilds only the refresh.slice rows, even when the query ignores the slice', async () => {
    await seedBooks([book(1, 'A', 1, '2026-01-01T00:00:00.000Z'), book(2, 'B', 2, '2026-01-01T00:00:00.000Z'), book(3, 'C', 3, '2026-01-01T00:00:00.000Z')])
    const contexts: Data[] = []
    await ctx.engine.addPipeline(statsPipeline('q-partial', {
      source: { query: (context: Data) => { contexts.push(context); return statsQuery() } }, // ignores the slice
      refresh: { slice: { author: 'A' } },
    }) as never)
    await (await ctx.engine.execute('q-partial')).done
    contexts.length = 0
    // both A and B change at the source; B's target row is also edited locally
    await ql.UPDATE('consumer.LocalBooks').set({ stock: 100 }).where({ author: { in: ['A', 'B'] } })
    await ql.UPDATE('consumer.AuthorStats').set({ books: 999 }).where({ author: 'B' })

    const run = await ctx.engine.execute('q-partial', { mode: 'partial-refresh' })
    const outcome = await run.done
    expect(outcome.statistics).toEqual({ created: 1, updated: 0, deleted: 1 })
    expect(contexts[0]).toEqual({ mode: 'partial-refresh', slice: { author: 'A' } })
    expect(await stats()).toEqual([
      { author: 'A', books: 1, stock: 100 }, // rebuilt
      { author: 'B', books: 999, stock: 2 }, // untouched: the source change and the local edit are both outside the slice
      { author: 'C', books: 1, stock: 3 },
    ])
    // history rows only know full/delta
    expect((await runRow(run.runId)).mode).toBe('full')
  })

  test('partial-refresh with a query that narrows itself to the slice', async () => {
    await seedBooks([book(1, 'A', 1, '2026-01-01T00:00:00.000Z'), book(2, 'B', 2, '2026-01-01T00:00:00.000Z')])
    await ctx.engine.addPipeline(statsPipeline('q-partial-narrow', {
      source: { query: ({ slice }: Data) => (slice ? statsQuery().where(slice) : statsQuery()) },
      refresh: { slice: () => ({ author: 'B' }) },
    }) as never)
    await (await ctx.engine.execute('q-partial-narrow')).done
    await seedBooks([book(3, 'B', 10, '2026-01-01T00:00:00.000Z'), book(4, 'A', 10, '2026-01-01T00:00:00.000Z')])
    const outcome = await (await ctx.engine.execute('q-partial-narrow', { mode: 'partial-refresh' })).done
    expect(outcome.statistics).toEqual({ created: 1, updated: 0, deleted: 1 })
    expect(await stats()).toEqual([{ author: 'A', books: 1, stock: 1 }, { author: 'B', books: 2, stock: 12 }])
  })

  test('partial-refresh without refresh.slice fails the run naming the key', async () => {
    await ctx.engine.addPipeline(statsPipeline('q-partial-noslice') as never)
    const run = await ctx.engine.execute('q-partial-noslice', { mode: 'partial-refresh' })
    await expect(run.done).rejects.toMatchObject({ target: 'refresh.slice' })
  })

  test('mode delta is rejected for query-shape pipelines, at registration and per run', async () => {
    await expect(ctx.engine.addPipeline(statsPipeline('q-delta', { mode: 'delta' }) as never))
      .rejects.toMatchObject({ code: 'INVALID_CONFIG', target: 'mode' })
    await ctx.engine.addPipeline(statsPipeline('q-delta-run') as never)
    await expect(ctx.engine.execute('q-delta-run', { mode: 'delta' })).rejects.toMatchObject({ code: 'INVALID_PARAMETER', target: 'mode' })
    expect(await runsOf('q-delta-run')).toEqual([])
    expect((await ctx.engine.status('q-delta-run')).status).toBe('idle')
  })

  test('a failing full refresh leaves the old snapshot', async () => {
    await seedBooks([book(1, 'A', 1, '2026-01-01T00:00:00.000Z'), book(2, 'B', 2, '2026-01-01T00:00:00.000Z')])
    await ctx.engine.addPipeline(statsPipeline('q-atomic', { source: { query: statsQuery, batchSize: 1 } }) as never)
    await (await ctx.engine.execute('q-atomic')).done
    let calls = 0
    engine().before('PIPELINE.WRITE', 'q-atomic', () => { if (++calls === 2) throw new Error('second batch failed') })
    await seedBooks([book(3, 'C', 3, '2026-01-01T00:00:00.000Z')])
    await expect((await ctx.engine.execute('q-atomic')).done).rejects.toThrow('second batch failed')
    expect(await stats()).toEqual([{ author: 'A', books: 1, stock: 1 }, { author: 'B', books: 1, stock: 2 }])
  })
})

describe('run bookkeeping', () => {
  test('trigger is whitelisted: bogus → manual, external kept; one PipelineRuns row per run with mode and statistics', async () => {
    await seedBooks([book(1, 'A', 1, '2026-01-01T00:00:00.000Z')])
    await ctx.engine.addPipeline(copyPipeline('bk-trigger') as never)
    const triggers: string[] = []
    engine().before('PIPELINE.START', 'bk-trigger', req => { triggers.push(req.data.trigger) })
    const bogus = await ctx.engine.execute('bk-trigger', { trigger: 'bogus' })
    await bogus.done
    const external = await ctx.engine.execute('bk-trigger', { trigger: 'external', mode: 'full' })
    await external.done
    expect(triggers).toEqual(['manual', 'external'])

    const runs = await runsOf('bk-trigger')
    expect(runs).toHaveLength(2)
    const byId = (ID: string) => runs.find(r => r.ID === ID)
    expect(byId(bogus.runId)).toMatchObject({ ID: bogus.runId, trigger: 'manual', mode: 'delta', status: 'idle', statistics_created: 1, statistics_updated: 0, statistics_deleted: 0, error: null })
    expect(byId(external.runId)).toMatchObject({ ID: external.runId, trigger: 'external', mode: 'full', status: 'idle', statistics_created: 0, statistics_unchanged: 1, statistics_deleted: 0 })
    for (const run of runs) {
      expect(run.startTime).toBeTruthy()
      expect(Date.parse(run.endTime)).toBeGreaterThanOrEqual(Date.parse(run.startTime))
    }
  })

  test('tracker: failures count up and set lastError; success resets errorCount and adds statistics cumulatively', async () => {
    await seedBooks([book(1, 'A', 1, '2026-01-01T00:00:00.000Z'), book(2, 'A', 1, '2026-01-02T00:00:00.000Z')])
    await ctx.engine.addPipeline(copyPipeline('bk-tracker') as never)
    let failing = true
    engine().before('PIPELINE.READ', 'bk-tracker', () => { if (failing) throw new Error('source is down') })

    const runIds: string[] = []
    for (const expected of [1, 2]) {
      const run = await ctx.engine.execute('bk-tracker')
      runIds.push(run.runId)
      await expect(run.done).rejects.toThrow('source is down')
      const tracker = await ctx.engine.status('bk-tracker')
      expect(tracker).toMatchObject({ status: 'failed', errorCount: expected, lastSync: null, currentRun: null })
      expect(tracker.lastError).toContain('source is down')
    }

    failing = false
    const okRun = await ctx.engine.execute('bk-tracker')
    runIds.push(okRun.runId)
    const ok = await okRun.done
    expect(ok.statistics).toEqual({ created: 2, updated: 0, deleted: 0 })
    let tracker = await ctx.engine.status('bk-tracker')
    expect(tracker).toMatchObject({ status: 'idle', errorCount: 0, lastError: null, statistics_created: 2, statistics_updated: 0 })
    expect(tracker.lastSync).toBeTruthy()

    await ql.UPDATE('consumer.LocalBooks').set({ modifiedAt: '2026-01-03T00:00:00.000Z' }).where({ ID: 1 })
    const againRun = await ctx.engine.execute('bk-tracker')
    runIds.push(againRun.runId)
    const again = await againRun.done
    // book 1 changed only in modifiedAt, which the target does not store: read, identical, not
    // written (book 2's settled watermark is not re-read)
    expect(again.statistics).toEqual({ created: 0, updated: 0, unchanged: 1, deleted: 0 })
    await ql.UPDATE('consumer.LocalBooks').set({ stock: 99, modifiedAt: '2026-01-04T00:00:00.000Z' }).where({ ID: 1 })
    const changedRun = await ctx.engine.execute('bk-tracker')
    runIds.push(changedRun.runId)
    expect((await changedRun.done).statistics).toEqual({ created: 0, updated: 1, deleted: 0 })
    tracker = await ctx.engine.status('bk-tracker')
    expect(tracker).toMatchObject({ statistics_created: 2, statistics_updated: 1, statistics_deleted: 0 })

    const runs = await runsOf('bk-tracker')
    expect(runs).toHaveLength(5)
    const statusOf = (ID: string) => runs.find(r => r.ID === ID)!
    expect(runIds.map(ID => statusOf(ID).status)).toEqual(['failed', 'failed', 'idle', 'idle', 'idle'])
    expect(JSON.parse(statusOf(runIds[0]).error)).toMatchObject({ message: 'source is down' })
    expect(statusOf(runIds[2]).error).toBeNull()
  })

  test('lastError is truncated', async () => {
    await ctx.engine.addPipeline(copyPipeline('bk-long-error') as never)
    engine().before('PIPELINE.READ', 'bk-long-error', () => { throw new Error('x'.repeat(1100)) })
    await expect((await ctx.engine.execute('bk-long-error')).done).rejects.toThrow()
    const tracker = await ctx.engine.status('bk-long-error')
    expect(tracker.lastError!.length).toBeLessThanOrEqual(1000)
    expect(tracker.lastError!.endsWith('…')).toBe(true)
  })

  test('run(name) runs with the default mode and resolves with the outcome', async () => {
    await seedBooks([book(1, 'A', 1, '2026-01-01T00:00:00.000Z')])
    await ctx.engine.addPipeline(copyPipeline('bk-run') as never)
    const outcome = await ctx.engine.run('bk-run') as Data
    expect(outcome).toMatchObject({ status: 'completed', statistics: { created: 1 } })
    await expect(ctx.engine.execute('bk-unknown')).rejects.toMatchObject({ code: 'UNKNOWN_PIPELINE' })
  })
})

describe('async execute', () => {
  test('returns before completion (status running visible); a second trigger is rejected; done resolves later', async () => {
    await seedBooks([book(1, 'A', 1, '2026-01-01T00:00:00.000Z')])
    await ctx.engine.addPipeline(copyPipeline('as-running') as never)
    const held = gate()
    engine().before('PIPELINE.READ', 'as-running', () => held.opened)

    const { runId, done } = await ctx.engine.execute('as-running', { async: true })
    let settled = false
    done.then(() => { settled = true }, () => { settled = true })
    expect((await ctx.engine.status('as-running')).status).toBe('running')
    expect(await runRow(runId)).toMatchObject({ status: 'running', endTime: null })
    await expect(ctx.engine.execute('as-running')).rejects.toMatchObject({ code: 'PIPELINE_RUNNING' })
    expect(settled).toBe(false)

    held.open()
    expect(await done).toMatchObject({ runId, status: 'completed', statistics: { created: 1 } })
    expect((await ctx.engine.status('as-running')).status).toBe('idle')
    // the rejected trigger left no history row
    expect(await runsOf('as-running')).toHaveLength(1)
  })

  test('done rejects on failure and the failure is recorded', async () => {
    await ctx.engine.addPipeline(copyPipeline('as-fail') as never)
    engine().before('PIPELINE.READ', 'as-fail', async () => { await sleep(20); throw new Error('async boom') })
    const { runId, done } = await ctx.engine.execute('as-fail', { async: true })
    await expect(done).rejects.toThrow('async boom')
    expect(await runRow(runId)).toMatchObject({ status: 'failed' })
    expect((await ctx.engine.status('as-fail')).status).toBe('failed')
  })

  test('an unobserved failed async run does not crash the process and is logged at error level', async () => {
    await ctx.engine.addPipeline(copyPipeline('as-unobserved') as never)
    engine().before('PIPELINE.READ', 'as-unobserved', async () => { await sleep(20); throw new Error('nobody listens') })
    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown) => { unhandled.push(reason) }
    process.on('unhandledRejection', onUnhandled)
    const logger = cds.log('data-pipeline')
    const errors = vi.spyOn(logger, 'error')
    try {
      const { runId } = await ctx.engine.execute('as-unobserved', { async: true }) // done deliberately ignored
      await waitFor(async () => (await runRow(runId))?.status === 'failed', 'the failed run row')
      await waitFor(() => errors.mock.calls.some(call => String(call[0]).includes(runId) && String(call[0]).includes('nobody awaited')), 'the unobserved-failure log')
      await sleep(50)
      expect(unhandled).toEqual([])
    } finally {
      process.off('unhandledRejection', onUnhandled)
      errors.mockRestore()
    }
  })

  test('an observed failure is not reported as unobserved', async () => {
    await ctx.engine.addPipeline(copyPipeline('as-observed') as never)
    engine().before('PIPELINE.READ', 'as-observed', async () => { await sleep(20); throw new Error('observed boom') })
    const errors = vi.spyOn(cds.log('data-pipeline'), 'error')
    try {
      const { runId, done } = await ctx.engine.execute('as-observed', { async: true })
      await expect(done).rejects.toThrow('observed boom')
      await sleep(20)
      expect(errors.mock.calls.some(call => String(call[0]).includes(runId) && String(call[0]).includes('nobody awaited'))).toBe(false)
    } finally {
      errors.mockRestore()
    }
  })
})

describe('flush', () => {
  test('clears the target and resets lastSync so the next delta reads everything', async () => {
    await seedBooks([book(1, 'A', 1, '2026-01-01T00:00:00.000Z'), book(2, 'B', 2, '2026-01-02T00:00:00.000Z')])
    await ctx.engine.addPipeline(copyPipeline('fl-reset') as never)
    await (await ctx.engine.execute('fl-reset')).done
    expect(await copies()).toHaveLength(2)
    expect((await ctx.engine.status('fl-reset')).lastSync).toBeTruthy()

    const row = await ctx.engine.flushPipeline('fl-reset')
    expect(row).toMatchObject({ status: 'idle', lastSync: null, lastKey: null, currentRun: null })
    expect(await copies()).toEqual([])

    const next = await (await ctx.engine.execute('fl-reset')).done
    expect(next.statistics).toEqual({ created: 2, updated: 0, deleted: 0 })
    expect(await copies()).toHaveLength(2)

    await ctx.engine.flush('fl-reset')
    expect(await copies()).toEqual([])
    expect((await ctx.engine.status('fl-reset')).lastSync).toBeNull()
  })

  test('flush while a run is active is rejected with PIPELINE_RUNNING and changes nothing', async () => {
    await seedBooks([book(1, 'A', 1, '2026-01-01T00:00:00.000Z')])
    await ctx.engine.addPipeline(copyPipeline('fl-running') as never)
    await (await ctx.engine.execute('fl-running')).done
    await ql.UPDATE('consumer.LocalBooks').set({ modifiedAt: '2026-01-02T00:00:00.000Z' }).where({ ID: 1 })
    const held = gate()
    engine().before('PIPELINE.READ', 'fl-running', () => held.opened)
    const { done } = await ctx.engine.execute('fl-running', { async: true })
    try {
      await expect(ctx.engine.flushPipeline('fl-running')).rejects.toMatchObject({ code: 'PIPELINE_RUNNING' })
      expect(await copies()).toHaveLength(1)
    } finally {
      held.open()
    }
    expect((await done).status).toBe('completed')
    const tracker = await ctx.engine.status('fl-running')
    expect(tracker.status).toBe('idle')
    expect(new Date(tracker.lastSync!).toISOString()).toBe('2026-01-02T00:00:00.000Z')
  })
})

describe('schedules', () => {
  test('schedule { every: "10m" } is labelled in the tracker; cron with spawn and malformed cron are rejected with a clear message', async () => {
    await ctx.engine.addPipeline(copyPipeline('sc-label', { schedule: { every: '10m' } }) as never)
    expect((await ctx.engine.status('sc-label')).schedule).toBe('every 10 min (spawn)')
    await ctx.engine.addPipeline(copyPipeline('sc-default', { schedule: {} }) as never)
    expect((await ctx.engine.status('sc-default')).schedule).toBe('every 10 min (spawn)')

    // queued schedules themselves: test/integration/queued-schedule.test.ts (on a file database)
    await expect(ctx.engine.addPipeline(copyPipeline('sc-cron-spawn', { schedule: { cron: '*/5 * * * *', engine: 'spawn' } }) as never))
      .rejects.toMatchObject({ code: 'INVALID_CONFIG', target: 'schedule.engine', message: expect.stringMatching(/cron needs engine 'queued'/) })
    await expect(ctx.engine.addPipeline(copyPipeline('sc-cron-bad', { schedule: '*/5 * * *' }) as never))
      .rejects.toMatchObject({ code: 'INVALID_CONFIG', message: expect.stringMatching(/has 4 fields; expected 5/) })
    expect(ctx.engine.getPipelineNames()).not.toContain('sc-cron-spawn')
    expect(ctx.engine.getPipelineNames()).not.toContain('sc-cron-bad')
  })

  test('schedule: 300 runs by itself with trigger scheduled; setEnabled(false) stops ticks while execute still works', async () => {
    await seedBooks([book(1, 'A', 1, '2026-01-01T00:00:00.000Z')])
    const done: Data[] = []
    engine().after('PIPELINE.DONE', 'sc-tick', (_result, req) => { done.push({ ...req.data }) })
    await ctx.engine.addPipeline({ name: 'sc-tick', source: { entity: 'consumer.LocalBooks' }, target: { entity: 'consumer.ScheduledCopies' }, schedule: 300 } as never)
    try {
      expect((await ctx.engine.status('sc-tick')).schedule).toBe('every 300 ms (spawn)')
      const scheduled = async () => (await runsOf('sc-tick')).filter(r => r.trigger === 'scheduled' && r.status === 'idle')
      await waitFor(async () => (await scheduled()).length >= 2, 'two scheduled runs', 60_000)
      expect(await ql.SELECT.from('consumer.ScheduledCopies')).toHaveLength(1)
      expect(done.some(d => d.trigger === 'scheduled' && d.status === 'completed')).toBe(true)

      await ctx.engine.setEnabled('sc-tick', false)
      const atDisable = (await runsOf('sc-tick')).length
      expect((await ctx.engine.status('sc-tick')).enabled).toBe(false)
      await sleep(1000) // three ticks' time: a tick that passed the enabled check just before has started its run by now
      await waitFor(async () => (await ctx.engine.status('sc-tick')).status !== 'running', 'the last scheduled run to end')
      const before = (await runsOf('sc-tick')).length
      expect(before).toBeLessThanOrEqual(atDisable + 1) // at most that one tick
      await sleep(1000)
      expect((await runsOf('sc-tick')).length).toBe(before)

      const manual = await ctx.engine.execute('sc-tick')
      expect((await manual.done).status).toBe('completed')
      const runs = await runsOf('sc-tick')
      expect(runs).toHaveLength(before + 1)
      expect(runs.find(r => r.ID === manual.runId)).toMatchObject({ trigger: 'manual', status: 'idle' })

      // re-enabling resumes the ticks
      await ctx.engine.setEnabled('sc-tick', true)
      await waitFor(async () => (await runsOf('sc-tick')).length > before + 1, 'ticks after re-enabling', 60_000)
    } finally {
      await ctx.engine.setEnabled('sc-tick', false)
    }
  })
})
