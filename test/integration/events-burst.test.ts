/**
 * Event-driven replication under a burst (issue 23): 500 changes as 500 messages on Redis reach
 * the replica in a few micro-batches, each reading its keys with one key-list request, and the
 * tracker keeps bounded aggregates (one PipelineEventStats row per pipeline and minute). The waiting
 * keys cost a few statements, not one per message or per hundred keys: the keys of messages arriving
 * together are written together, and a micro-batch removes its keys with one DELETE.
 */
import cds from '@sap/cds'
import { useConsumer, ql } from '../helpers/consumer'
import { redisMessaging, type TestMessaging } from '../helpers/events'
import { waitFor } from '../helpers/wait'
import type { EventReplication } from '../../lib/events/index'

const ctx = useConsumer()
let bus: TestMessaging
const SERVICE = 'ev-burst-messaging'
const COUNT = 500
const replication = () => (ctx.engine as unknown as { eventReplication: EventReplication }).eventReplication

beforeAll(async () => {
  bus = await redisMessaging(SERVICE)
})

test(`a burst of ${COUNT} changes: few provider requests, every row right, bounded statistics`, async () => {
  await ctx.provider.control.seed({ from: 1, count: COUNT })
  await ctx.engine.addPipeline({ name: 'ev-burst', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.EvBurst' }, events: { service: SERVICE, topics: ['Burst.Changed'], window: '200ms' } } as never)
  await ctx.run('ev-burst')
  await ctx.provider.control.touch({ from: 1, count: COUNT, title: 'burst' })
  const before = await ctx.requestCount()
  // statements on the waiting keys during the burst
  const statements = { UPSERT: 0, DELETE: 0 }
  let counting = true
  const db = await cds.connect.to('db')
  db.before(['UPSERT', 'DELETE'], 'plugin.data_pipeline.PipelineEventKeys', (req: { event: string }) => {
    if (counting) statements[req.event as keyof typeof statements]++
  })
  const sent = Date.now()
  // a burst: all messages published at once
  await Promise.all(Array.from({ length: COUNT }, (_, i) => bus.emit('Burst.Changed', { ID: i + 1 }, { time: new Date().toISOString() })))
  const published = Date.now() - sent
  await waitFor(async () => ((await ql.SELECT.one.from('consumer.EvBurst').columns('count(1) as n').where({ title: 'burst' })) as { n: number }).n === COUNT, `all ${COUNT} changes in the replica`, 30_000)
  const elapsed = Date.now() - sent
  const { requests, urls } = await ctx.readsSince(before, () => true)
  // a handful of micro-batches, each one `ID in (…)` request (not one request or run per message)
  expect(requests).toBeLessThanOrEqual(10)
  expect(requests / COUNT).toBeLessThanOrEqual(0.05)
  // (CAP's remote service sends a long key list inside a $batch)
  expect(urls.map(url => decodeURIComponent(url).replace(/\(.*\)/, '(…)'))).toEqual(urls.map(() => expect.stringMatching(/\/Books\?.*\$filter=ID in \(…\)|\/\$batch$/)))
  console.log(`[events-burst] ${COUNT} messages (published in ${published} ms) → ${requests} provider requests; all in the replica ${elapsed} ms after the first was sent`)
  await replication().idle('ev-burst')
  counting = false
  console.log(`[events-burst] waiting keys: ${statements.UPSERT} writes, ${statements.DELETE} removals`)
  // one removal per micro-batch (each micro-batch reads its keys with at least one request), whatever its size
  expect(statements.DELETE).toBeGreaterThanOrEqual(1)
  expect(statements.DELETE).toBeLessThanOrEqual(requests)
  // messages arriving together share a write
  expect(statements.UPSERT).toBeLessThanOrEqual(COUNT / 10)

  await replication().idle('ev-burst')
  const stats = (await ql.SELECT.from('plugin.data_pipeline.PipelineEventStats').where({ pipeline: 'ev-burst' })) as Array<Record<string, number | string | null>>
  expect(stats.length).toBeGreaterThanOrEqual(1)
  expect(stats.length).toBeLessThanOrEqual(2) // one row per minute (the burst may straddle a minute)
  const sum = (field: string) => stats.reduce((total, row) => total + Number(row[field] ?? 0), 0)
  expect(sum('received')).toBe(COUNT)
  expect(sum('applied')).toBe(COUNT)
  expect(sum('skipped')).toBe(0)
  const latest = stats.sort((a, b) => String(b.minute).localeCompare(String(a.minute)))[0]
  expect(Number(latest.lagP50)).toBeGreaterThanOrEqual(0)
  expect(Number(latest.lagP95)).toBeGreaterThanOrEqual(Number(latest.lagP50))
  // the last event is in the minute the last message was received in (the newest row may only hold applies)
  expect(stats.filter(row => row.lastEvent)).not.toHaveLength(0)
  console.log(`[events-burst] lag (message time → replica write): p50 ${latest.lagP50} ms, p95 ${latest.lagP95} ms`)
  expect(await ql.SELECT.from('plugin.data_pipeline.PipelineRuns').where({ pipeline_name: 'ev-burst' })).toHaveLength(1)
})
