/**
 * Event-driven replication under bad input (issue 37): a poison message never stalls the
 * pipeline. A key no row of the source can have (`'not-a-number'` for an Integer key) is refused
 * when its message arrives — logged with the message id and the field, counted as skipped, never
 * stored — and a key of the right type the provider fails for is isolated: the other keys of its
 * micro-batch apply at once, it alone is retried. The real OData provider, the consumer in-process,
 * CAP's redis-messaging on the real Redis.
 */
import cds from '@sap/cds'
import { useConsumer, ql } from '../helpers/consumer'
import { redisMessaging, type TestMessaging } from '../helpers/events'
import { waitFor } from '../helpers/wait'
import type { EventReplication } from '../../lib/events/index'

const ctx = useConsumer()
let bus: TestMessaging

type Data = Record<string, any>
const SERVICE = 'ev-poison-messaging'
/** Well before a failing micro-batch's retries would let its keys through (1 s, 2 s, … ≈ 95 s), with room for a loaded machine. */
const PROMPTLY = 10_000
const LOG = cds.log('data-pipeline|events')
const replication = () => (ctx.engine as unknown as { eventReplication: EventReplication }).eventReplication
const IDs = async (entity: string) => ((await ql.SELECT.from(entity).columns('ID').orderBy('ID')) as Data[]).map(r => r.ID)
const waiting = async (pipeline: string) => ((await ql.SELECT.from('plugin.data_pipeline.PipelineEventKeys').where({ pipeline, appliedAt: null })) as Data[]).map(r => r.recordKey)
const stats = async (pipeline: string) => {
  await replication().stats.flush()
  const rows = (await ql.SELECT.from('plugin.data_pipeline.PipelineEventStats').where({ pipeline })) as Data[]
  return rows.reduce((sum, r) => ({ received: sum.received + r.received, applied: sum.applied + r.applied, skipped: sum.skipped + r.skipped }), { received: 0, applied: 0, skipped: 0 })
}
const time = () => ({ time: new Date().toISOString() })

beforeAll(async () => {
  bus = await redisMessaging(SERVICE)
})

afterEach(async () => {
  vi.restoreAllMocks()
  await ctx.provider.control.faults({})
})

/** A pipeline of the provider's Books into `entity`, following `topic` on the test's messaging service (window 200 ms). */
const follow = (name: string, entity: string, topic: string | { topic: string; key: string }) =>
  ctx.engine.addPipeline({ name, source: { service: 'Provider', entity: 'Books' }, target: { entity }, events: { service: SERVICE, topics: [topic], window: '200ms' } } as never)

test("a key of the wrong type ('not-a-number' for an Integer key) is refused at receipt, logged with its message id and field; the valid keys sent with it apply at once", async () => {
  await ctx.provider.control.seed({ from: 1, count: 6 })
  await follow('ev-poison', 'consumer.EvBooks', { topic: 'Poison.Changed', key: 'BookID' })
  const warn = vi.spyOn(LOG, 'warn')
  const requests = await ctx.requestCount()
  const sent = Date.now()
  // within one window: valid keys, the poison message, and a message with both
  await Promise.all([
    bus.emit('Poison.Changed', { BookID: 1 }, { id: 'valid-1', ...time() }),
    bus.emit('Poison.Changed', { BookID: 'not-a-number' }, { id: 'poison-1', ...time() }),
    bus.emit('Poison.Changed', { BookID: 2 }, { id: 'valid-2', ...time() }),
    bus.emit('Poison.Changed', [{ BookID: 3 }, { BookID: 4.5 }, { BookID: 4 }], { id: 'mixed-1', ...time() }),
  ])
  await waitFor(async () => (await IDs('consumer.EvBooks')).length === 4, 'the valid keys in the replica', PROMPTLY)
  console.log(`[events-poison] valid keys beside a poison message in the replica ${Date.now() - sent} ms after sending`)
  expect(await IDs('consumer.EvBooks')).toEqual([1, 2, 3, 4])

  // logged with the message id and the field
  const lines = warn.mock.calls.map(c => String(c[0]))
  expect(lines).toContainEqual(expect.stringMatching(/message 'poison-1' of 'Poison\.Changed': key element 'ID' \(payload field 'BookID'\): 'not-a-number' is not an integer \(Integer\); refused/))
  expect(lines).toContainEqual(expect.stringMatching(/message 'mixed-1' of 'Poison\.Changed': key element 'ID' \(payload field 'BookID'\): 4\.5 is not an integer/))
  // never stored, never asked for, counted as skipped
  await replication().idle('ev-poison')
  expect(await waiting('ev-poison')).toEqual([])
  expect(((await ql.SELECT.from('plugin.data_pipeline.PipelineEventKeys').where({ pipeline: 'ev-poison' })) as Data[]).map(r => r.recordKey)).not.toContainEqual(expect.stringContaining('not-a-number'))
  const { urls } = await ctx.readsSince(requests, () => true)
  expect(urls.filter(url => /not-a-number|4\.5/.test(url))).toEqual([])
  expect(await stats('ev-poison')).toEqual({ received: 6, applied: 4, skipped: 2 })
})

test('a key the provider fails for is isolated: the other keys of its micro-batch apply at once, it alone is retried and applies once the provider answers', async () => {
  await ctx.provider.control.seed({ from: 101, count: 10 })
  await follow('ev-isolate', 'consumer.EvBurst', 'Isolate.Changed')
  // the provider answers an error to every request that names book 107
  await ctx.provider.control.faults({ status: 422, match: '\\b107\\b' })
  const error = vi.spyOn(LOG, 'error')
  const requests = await ctx.requestCount()
  const sent = Date.now()
  await Promise.all(Array.from({ length: 10 }, (_, i) => bus.emit('Isolate.Changed', { ID: 101 + i }, time())))
  await waitFor(async () => (await IDs('consumer.EvBurst')).length === 9, 'the nine other keys in the replica', PROMPTLY)
  console.log(`[events-poison] nine keys beside one the provider fails for in the replica ${Date.now() - sent} ms after sending`)
  expect(await IDs('consumer.EvBurst')).toEqual([101, 102, 103, 104, 105, 106, 108, 109, 110])
  // the failing key waits, alone, logged with its key
  expect(await waiting('ev-isolate')).toEqual([JSON.stringify({ ID: 107 })])
  expect(error.mock.calls.map(c => String(c[0]))).toContainEqual(expect.stringMatching(/an event batch failed for key \{"ID":107\} \(attempt 1 of 8; the other \d+ keys of its batch were applied\); the key is tried again on its own in 1 s/))
  // isolating it cost a few requests, not one per key
  const { urls } = await ctx.readsSince(requests, () => true)
  expect(urls.length).toBeLessThanOrEqual(12)

  // a key arriving meanwhile does not wait for the failing key's pause
  await ctx.provider.control.seed({ from: 111, count: 1 })
  await bus.emit('Isolate.Changed', { ID: 111 }, time())
  await waitFor(async () => (await IDs('consumer.EvBurst')).includes(111), 'a later key', PROMPTLY)

  // the provider answers for it again: its own retry applies it
  await ctx.provider.control.faults({})
  await waitFor(async () => (await IDs('consumer.EvBurst')).includes(107), 'the isolated key after the provider recovered', 30_000)
  await waitFor(async () => (await waiting('ev-isolate')).length === 0, 'no key left waiting')
  await replication().idle('ev-isolate')
  expect(await stats('ev-isolate')).toEqual({ received: 11, applied: 11, skipped: 0 })
})

test('a micro-batch failing whole (the provider fails every request) is not taken apart key by key: it waits and is retried as before', async () => {
  await ctx.provider.control.seed({ from: 201, count: 8 })
  await follow('ev-down', 'consumer.EvBooksLast', 'Down.Changed')
  // the next three requests fail: the batch, then one key alone and another — the provider, not a key
  await ctx.provider.control.faults({ status: 422, count: 3 })
  const requests = await ctx.requestCount()
  await bus.emit('Down.Changed', Array.from({ length: 8 }, (_, i) => ({ ID: 201 + i })), time())
  await waitFor(async () => (await IDs('consumer.EvBooksLast')).length === 8, 'the batch after its retry')
  const { requests: sent } = await ctx.readsSince(requests, () => true)
  expect(sent).toBe(4)
  await replication().idle('ev-down')
  expect(await stats('ev-down')).toEqual({ received: 8, applied: 8, skipped: 0 })
})

afterAll(() => {
  replication()?.stop()
})
