/**
 * Event-driven replication (issue 23, docs/guide/event-driven.md): a real OData provider,
 * the consumer in-process, CAP's redis-messaging on the real Redis. The test plays the provider's
 * event side: it changes the provider's data, then emits the message a provider would emit.
 */
import cds from '@sap/cds'
import { useConsumer, ql } from '../helpers/consumer'
import { redisMessaging, type TestMessaging } from '../helpers/events'
import { waitFor } from '../helpers/wait'

const ctx = useConsumer()
let bus: TestMessaging

type Data = Record<string, any>
const SERVICE = 'ev-messaging'
const one = (entity: string, where: Data) => ql.SELECT.one.from(entity).where(where) as Promise<Data | undefined>
const all = (entity: string) => ql.SELECT.from(entity).orderBy('ID') as Promise<Data[]>
const tracker = (name: string) => ql.SELECT.one.from('plugin.data_pipeline.Pipelines').where({ name }) as Promise<Data>
const runs = (name: string) => ql.SELECT.from('plugin.data_pipeline.PipelineRuns').where({ pipeline_name: name }) as Promise<Data[]>
const control = (action: string, data: Data) => fetch(`${ctx.provider.url}/odata/v4/control/${action}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(data) })
  .then(async response => { if (!response.ok) throw new Error(`${action}: ${response.status} ${await response.text()}`) })
const engine = () => ctx.engine as unknown as { before(event: string, path: string, handler: (req: { data: Data }) => unknown): void }

beforeAll(async () => {
  bus = await redisMessaging(SERVICE)
})

describe('declarative subscriptions', () => {
  test("S/4-style topic with a key field: 'upsert' fetches the current row by key, 'delete' deletes; no run rows, the watermark stays", async () => {
    await ctx.provider.control.seed({ from: 1, count: 5 })
    await ctx.engine.addPipeline({
      name: 'ev-books', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.EvBooks' },
      events: { service: SERVICE, topics: [{ topic: 'sap.s4.beh.book.v1.Book.Changed.v1', key: 'BookID' }, { topic: 'sap.s4.beh.book.v1.Book.Deleted.v1', key: 'BookID', action: 'delete' }] },
    } as never)
    await ctx.run('ev-books')
    const before = await tracker('ev-books')

    await ctx.provider.control.touch({ from: 2, title: 'Changed 2' })
    await bus.emit('sap.s4.beh.book.v1.Book.Changed.v1', { BookID: 2 }, { time: new Date().toISOString() })
    await waitFor(async () => (await one('consumer.EvBooks', { ID: 2 }))?.title === 'Changed 2', 'the change of book 2 in the replica')
    await bus.emit('sap.s4.beh.book.v1.Book.Deleted.v1', { BookID: 3 })
    await waitFor(async () => !(await one('consumer.EvBooks', { ID: 3 })), 'book 3 deleted from the replica')
    expect((await all('consumer.EvBooks')).map(r => r.ID)).toEqual([1, 2, 4, 5])

    // the micro-batch releases the guard just after its commit made the change visible
    const after = await waitFor(async () => { const row = await tracker('ev-books'); return row.status === 'idle' && row }, 'the micro-batch guard released')
    expect(after.lastSync).toBe(before.lastSync) // events never move the watermark
    expect(after.currentRun).toBeNull()
    expect(await runs('ev-books')).toHaveLength(1) // the one run; micro-batches write no run rows
  })

  test('a key the source no longer returns is deleted from the replica (the pipeline\'s delete policy)', async () => {
    await control('seedItems', { from: 1, count: 3 })
    await ctx.engine.addPipeline({ name: 'ev-items', source: { service: 'Provider', entity: 'Items' }, target: { entity: 'consumer.EvItems' }, events: { service: SERVICE, topics: ['Item.Changed'] } } as never)
    await ctx.run('ev-items')
    expect(await all('consumer.EvItems')).toHaveLength(3)
    await control('removeItems', { from: 2, count: 1 })
    await bus.emit('Item.Changed', { ID: 2 })
    await waitFor(async () => !(await one('consumer.EvItems', { ID: 2 })), 'item 2 gone from the replica')
    expect((await all('consumer.EvItems')).map(r => r.ID)).toEqual([1, 3])
  })

  test("'payload': the message is the row, written without a provider request", async () => {
    await ctx.engine.addPipeline({
      name: 'ev-payload', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.EvBooksPayload' },
      events: { service: SERVICE, topics: [{ topic: 'Book.Snapshot', action: 'payload' }] },
    } as never)
    const requests = await ctx.requestCount()
    await bus.emit('Book.Snapshot', { ID: 77, title: 'From the message', stock: 3 })
    await waitFor(async () => (await one('consumer.EvBooksPayload', { ID: 77 }))?.title === 'From the message', 'the payload row')
    expect(await one('consumer.EvBooksPayload', { ID: 77 })).toMatchObject({ ID: 77, title: 'From the message', stock: 3 })
    expect(await ctx.requestCount()).toBe(requests)
  })

  test('compound keys: a mapping names each key element; the row is fetched by both, deleted by both', async () => {
    await control('seedAuthors', { count: 2, works: 2 })
    const topics = [{ topic: 'Work.Changed', key: { author_ID: 'work.author', number: 'work.no' } }, { topic: 'Work.Removed', key: { author_ID: 'work.author', number: 'work.no' }, action: 'delete' }]
    await ctx.engine.addPipeline({ name: 'ev-works', mode: 'full', source: { service: 'Provider', entity: 'Works' }, target: { entity: 'consumer.EvWorks' }, events: { service: SERVICE, topics } } as never)
    await ctx.run('ev-works')
    expect(await ql.SELECT.from('consumer.EvWorks')).toHaveLength(4)
    await control('seedAuthors', { count: 3, works: 3 }) // adds 1.3, 2.3, 3.1, 3.2, 3.3 at the provider
    await bus.emit('Work.Changed', { work: { author: 3, no: 2 } })
    await waitFor(async () => await one('consumer.EvWorks', { author_ID: 3, number: 2 }), 'work 3.2 in the replica')
    await bus.emit('Work.Removed', { work: { author: 1, no: 1 } })
    await waitFor(async () => !(await one('consumer.EvWorks', { author_ID: 1, number: 1 })), 'work 1.1 gone')
    const keys = ((await ql.SELECT.from('consumer.EvWorks').orderBy('author_ID', 'number')) as Data[]).map(r => `${r.author_ID}.${r.number}`)
    expect(keys).toEqual(['1.2', '2.1', '2.2', '3.2'])
  })

  test('a key field naming one element of a compound key is refused naming the setting', async () => {
    await expect(ctx.engine.addPipeline({ name: 'ev-works-bad', mode: 'full', source: { service: 'Provider', entity: 'Works' }, target: { entity: 'consumer.EvWorks' }, events: { service: SERVICE, topics: [{ topic: 'Work.Bad', key: 'workId' }] } } as never))
      .rejects.toMatchObject({ code: 'INVALID_CONFIG', target: 'events.topics[0].key' })
    await expect(ctx.engine.addPipeline({ name: 'ev-bad-service', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.EvBooks' }, events: { service: 'no-such-messaging', topics: ['X'] } } as never))
      .rejects.toMatchObject({ code: 'INVALID_CONFIG', target: 'events.service' })
    // refused before registration: nothing is left behind, the corrected config registers
    expect(ctx.engine.registry.has('ev-works-bad')).toBe(false)
    expect(ctx.engine.registry.has('ev-bad-service')).toBe(false)
  })
})

describe('the normal write path', () => {
  test("onError 'skip': a record the target's types refuse is set aside in PipelineRejects and counted skipped; the others are written", async () => {
    await ctx.engine.addPipeline({
      name: 'ev-skip', onError: 'skip', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.EvBooksPayload' },
      events: { service: SERVICE, topics: [{ topic: 'Skip.Snapshot', action: 'payload' }] },
    } as never)
    await bus.emit('Skip.Snapshot', [{ ID: 601, title: 'fine', stock: 1 }, { ID: 602, title: 'poison', stock: 'many' }])
    await waitFor(async () => (await one('consumer.EvBooksPayload', { ID: 601 }))?.title === 'fine', 'the good record')
    const rejects = await waitFor(async () => {
      const rows = (await ql.SELECT.from('plugin.data_pipeline.PipelineRejects').where({ pipeline_name: 'ev-skip' })) as Data[]
      return rows.length ? rows : undefined
    }, 'the reject')
    expect(rejects).toHaveLength(1)
    expect(rejects[0]).toMatchObject({ phase: 'validate', status: 'open', recordKey: JSON.stringify({ ID: 602 }) })
    expect(await one('consumer.EvBooksPayload', { ID: 602 })).toBeFalsy()
    await (ctx.engine as unknown as { eventReplication: { idle(name: string): Promise<void> } }).eventReplication.idle('ev-skip')
    const stats = (await ql.SELECT.from('plugin.data_pipeline.PipelineEventStats').where({ pipeline: 'ev-skip' })) as Data[]
    expect(stats.reduce((sum, row) => sum + row.skipped, 0)).toBe(1)
    expect(stats.reduce((sum, row) => sum + row.applied, 0)).toBe(1)
  })
})

describe('CAP to CAP', () => {
  test("events: '<service>' follows the provider's <entity>.Created/Updated/Deleted topics (@federation.emit), keyed by the entity's keys", async () => {
    await ctx.provider.control.seed({ from: 501, count: 2 })
    await ctx.engine.addPipeline({ name: 'ev-cap', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.EvBooksPayload' }, events: SERVICE } as never)
    await bus.emit('Provider.Books.Created', { ID: 501 }, { time: new Date().toISOString() })
    await bus.emit('Provider.Books.Created', { ID: 502 })
    await waitFor(async () => (await one('consumer.EvBooksPayload', { ID: 502 }))?.title === 'Book 502', 'the created rows')
    await ctx.provider.control.touch({ from: 501, title: 'updated at the provider' })
    await bus.emit('Provider.Books.Updated', { ID: 501 })
    await waitFor(async () => (await one('consumer.EvBooksPayload', { ID: 501 }))?.title === 'updated at the provider', 'the update')
    await bus.emit('Provider.Books.Deleted', { ID: 502 })
    await waitFor(async () => !(await one('consumer.EvBooksPayload', { ID: 502 })), 'the delete')
  })
})

describe('messages carrying many keys', () => {
  test("a message whose data is an array of keys (@federation.emit's transaction of 100 changes) applies all of them, beside one-key messages", async () => {
    await ctx.provider.control.seed({ from: 801, count: 101 })
    await ctx.engine.addPipeline({ name: 'ev-array', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.EvBurst' }, events: SERVICE } as never)
    await bus.emit('Provider.Books.Updated', Array.from({ length: 100 }, (_, i) => ({ ID: 801 + i })), { time: new Date().toISOString() })
    await bus.emit('Provider.Books.Created', { ID: 901 })
    await waitFor(async () => ((await all('consumer.EvBurst')) as Data[]).length === 101, 'the 100 keys of one message and the single one')
    expect((await all('consumer.EvBurst')).map(r => r.ID)).toEqual(Array.from({ length: 101 }, (_, i) => 801 + i))
  })
})

describe('CAP inbox', () => {
  test('a queued messaging service without inboxed: a warning when a pipeline subscribes (received messages go through the queue table first)', async () => {
    const log = cds.log('data-pipeline|events')
    const warn = vi.spyOn(log, 'warn')
    try {
      await redisMessaging('ev-queued', { outboxed: true })
      await ctx.engine.addPipeline({ name: 'ev-queued', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.EvBooksRun' }, events: { service: 'ev-queued', topics: ['Queued.Changed'] } } as never)
      expect(warn.mock.calls.map(c => String(c[0])).filter(m => m.includes("'ev-queued' is queued"))).toHaveLength(1)
      // the unqueued service of the other tests is not warned about
      expect(warn.mock.calls.some(c => String(c[0]).includes(`'${SERVICE}' is queued`))).toBe(false)
    } finally {
      warn.mockRestore()
    }
  })

  test("a messaging service with inboxed: true: the message goes through CAP's inbox, then its key is applied", async () => {
    const inboxed = await redisMessaging('ev-inboxed', { inboxed: true })
    await ctx.provider.control.seed({ from: 401, count: 2 })
    await ctx.engine.addPipeline({ name: 'ev-inbox', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.EvBooksLast' }, events: { service: 'ev-inboxed', topics: ['Inbox.Changed'] } } as never)
    await ctx.provider.control.touch({ from: 402, title: 'through the inbox' })
    await inboxed.emit('Inbox.Changed', { ID: 402 })
    await waitFor(async () => (await one('consumer.EvBooksLast', { ID: 402 }))?.title === 'through the inbox', 'the change through the inbox')
    // the consumer's model has CAP's task table: the message was a task of the persistent inbox, done and removed
    expect((cds.model as unknown as { definitions: Record<string, unknown> }).definitions['cds.outbox.Messages']).toBeDefined()
    await waitFor(async () => ((await ql.SELECT.from('cds.outbox.Messages')) as Data[]).length === 0, 'the inbox task removed once its key was stored')
  })
})

describe('ordering', () => {
  test('two quick changes of one key both arrive: the replica ends with the last', async () => {
    await ctx.provider.control.seed({ from: 201, count: 3 })
    await ctx.engine.addPipeline({ name: 'ev-last', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.EvBooksLast' }, events: { service: SERVICE, topics: [{ topic: 'Last.Changed', key: 'id' }] } } as never)
    await ctx.run('ev-last')
    await ctx.provider.control.touch({ from: 202, title: 'first' })
    await bus.emit('Last.Changed', { id: 202 })
    await waitFor(async () => (await one('consumer.EvBooksLast', { ID: 202 }))?.title === 'first', 'the first change')
    await ctx.provider.control.touch({ from: 202, title: 'second' })
    await bus.emit('Last.Changed', { id: 202 })
    await waitFor(async () => (await one('consumer.EvBooksLast', { ID: 202 }))?.title === 'second', 'the second change of the same key')
  })

  test('a late copy of an older message never replaces a newer state (payload: the newer row stays)', async () => {
    await ctx.engine.addPipeline({
      name: 'ev-late', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.EvBooksPayload' },
      events: { service: SERVICE, topics: [{ topic: 'Late.Snapshot', action: 'payload' }] },
    } as never)
    const older = { id: 'late-1', source: '/provider', time: '2026-03-01T10:00:00.000Z' }
    const newer = { id: 'late-2', source: '/provider', time: '2026-03-01T10:00:05.000Z' }
    // in one window: the newer first, then the older
    await bus.emit('Late.Snapshot', { ID: 88, title: 'newer', stock: 2 }, newer)
    await bus.emit('Late.Snapshot', { ID: 88, title: 'older', stock: 1 }, older)
    await waitFor(async () => (await one('consumer.EvBooksPayload', { ID: 88 })) !== undefined, 'the row of the messages')
    await (ctx.engine as unknown as { eventReplication: { idle(name: string): Promise<void> } }).eventReplication.idle('ev-late')
    expect(await one('consumer.EvBooksPayload', { ID: 88 })).toMatchObject({ title: 'newer', stock: 2 })
    // after it was applied: a copy of the older message arrives late
    await bus.emit('Late.Snapshot', { ID: 88, title: 'older', stock: 1 }, older)
    await bus.emit('Late.Snapshot', { ID: 89, title: 'marker', stock: 0 }, { id: 'late-3', source: '/provider', time: '2026-03-01T10:00:06.000Z' })
    await waitFor(async () => (await one('consumer.EvBooksPayload', { ID: 89 })) !== undefined, 'a message sent after the late copy')
    expect(await one('consumer.EvBooksPayload', { ID: 88 })).toMatchObject({ title: 'newer', stock: 2 })
  })

  test('a message arriving during an active run waits for that run and is applied after it', async () => {
    await ctx.provider.control.seed({ from: 301, count: 4 })
    await ctx.engine.addPipeline({ name: 'ev-run', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.EvBooksRun' }, events: { service: SERVICE, topics: [{ topic: 'Run.Changed', key: 'ID' }] } } as never)
    await ctx.run('ev-run')
    let reached!: () => void
    const atWrite = new Promise<void>(resolve => { reached = resolve })
    let open!: () => void
    const opened = new Promise<void>(resolve => { open = resolve })
    let held = false
    engine().before('PIPELINE.WRITE', 'ev-run', async () => {
      if (held) return
      held = true
      reached()
      await opened
    })
    await ctx.provider.control.touch({ from: 301, title: 'by the run' })
    const { done } = await ctx.engine.execute('ev-run', { async: true })
    await atWrite // the run has read (book 301 only) and holds the pipeline
    await ctx.provider.control.touch({ from: 304, title: 'during the run' })
    await bus.emit('Run.Changed', { ID: 304 })
    await waitFor(async () => await ql.SELECT.one.from('plugin.data_pipeline.PipelineEventKeys').where({ pipeline: 'ev-run' }), 'the key waiting for the run')
    expect((await one('consumer.EvBooksRun', { ID: 304 }))?.title).not.toBe('during the run')
    open()
    expect((await done).statistics).toMatchObject({ updated: 1 }) // the run wrote 301 only
    await waitFor(async () => (await one('consumer.EvBooksRun', { ID: 304 }))?.title === 'during the run', 'the change applied after the run')
    expect(await ql.SELECT.one.from('plugin.data_pipeline.PipelineEventKeys').where({ pipeline: 'ev-run' })).toBeFalsy()
  })
})

afterAll(() => {
  ;(ctx.engine as unknown as { eventReplication?: { stop(): void } })?.eventReplication?.stop()
})
