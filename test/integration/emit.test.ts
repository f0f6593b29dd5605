/**
 * `@federation.emit` (issue 23 point 5, provider side): a provider CAP app that uses the plugin
 * emits `<entity>.<Created|Updated|Deleted>` with the keys and a `time` header on its messaging
 * service after every committed change, and a plain CAP subscriber (no plugin) receives them —
 * both real apps in child processes on CAP's redis-messaging and the real Redis.
 */
import path from 'node:path'
import { FIXTURES, startApp, type RunningApp } from '../helpers/apps'
import { messagingConfig, startSubscriber, uniquePrefix, type Received, type Subscriber } from '../helpers/emit'

const ENTITY = 'ProviderService.Orders'
const LINES = 'ProviderService.Lines'
const TOPICS = [
  ...['Created', 'Updated', 'Deleted'].flatMap(suffix => [`${ENTITY}.${suffix}`, `${LINES}.${suffix}`]),
  'ProviderService.Notes.Created',
  ...['Created', 'Updated', 'Deleted'].map(suffix => `ProviderService.Articles.${suffix}`),
]

let provider: RunningApp
let subscriber: Subscriber
const prefix = uniquePrefix('emit')

beforeAll(async () => {
  subscriber = await startSubscriber(prefix, TOPICS)
  provider = await startApp(path.join(FIXTURES, 'emit-provider'), { env: { CDS_CONFIG: messagingConfig(prefix) } })
})
afterAll(async () => {
  await provider?.stop()
  await subscriber?.stop()
})

async function call(method: string, url: string, body?: object, app = provider): Promise<{ status: number; data: any }> {
  const response = await fetch(`${app.url}/odata/v4/provider/${url}`, {
    method,
    headers: body ? { 'content-type': 'application/json' } : {},
    body: body ? JSON.stringify(body) : undefined,
  })
  const text = await response.text()
  return { status: response.status, data: text ? JSON.parse(text) : undefined }
}
async function ok(method: string, url: string, body?: object, app = provider): Promise<any> {
  const { status, data } = await call(method, url, body, app)
  if (status >= 300) throw new Error(`${method} ${url}: ${status} ${JSON.stringify(data)}`)
  return data
}

/** The keys a message carries: one (`data` the keys) or several (`data` an array of them). */
const keysIn = (m: Received) => (Array.isArray(m.data) ? m.data : [m.data]) as Array<Record<string, unknown>>
const is = (event: string, keys: Record<string, unknown>) => (m: Received) =>
  m.event === event && keysIn(m).some(k => JSON.stringify(k) === JSON.stringify(keys))
const messagesFor = async (event: string, keys: Record<string, unknown>) => (await subscriber.received()).filter(is(event, keys))

describe('@federation.emit on a provider app', () => {
  test('create, update and delete emit Created, Updated, Deleted with the keys and the change time', async () => {
    const created = await ok('POST', 'Orders', { ID: 1, status: 'open', amount: 10 })
    const message = await subscriber.waitFor(is(`${ENTITY}.Created`, { ID: 1 }), 'Orders.Created')
    expect(message.headers.time).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    // the time of the change: the same timestamp CAP writes into managed fields
    expect(message.headers.time).toBe(created.modifiedAt)

    const updated = await ok('PATCH', 'Orders(1)', { status: 'paid' })
    const update = await subscriber.waitFor(is(`${ENTITY}.Updated`, { ID: 1 }), 'Orders.Updated')
    expect(update.headers.time).toBe(updated.modifiedAt)

    await ok('DELETE', 'Orders(1)')
    const deleted = await subscriber.waitFor(is(`${ENTITY}.Deleted`, { ID: 1 }), 'Orders.Deleted')
    expect(Date.parse(String(deleted.headers.time))).toBeGreaterThanOrEqual(Date.parse(update.headers.time as string))
  })

  test('only the keys are sent: hidden, @cds.api.ignore and personal fields never are', async () => {
    await ok('POST', 'Orders', { ID: 2, status: 'open', secret: 'hidden value', taxId: 'DE123' })
    await ok('PATCH', 'Orders(2)', { secret: 'another hidden value', taxId: 'DE456' })
    const created = await subscriber.waitFor(is(`${ENTITY}.Created`, { ID: 2 }), 'Orders.Created of 2')
    const updated = await subscriber.waitFor(is(`${ENTITY}.Updated`, { ID: 2 }), 'Orders.Updated of 2')
    for (const message of [created, updated]) {
      expect(Object.keys(message.data)).toEqual(['ID'])
      expect(JSON.stringify(message)).not.toMatch(/hidden value|DE123|DE456|secret|taxId|internal/)
    }
  })

  test('compound keys are sent by element name', async () => {
    await ok('POST', 'Lines', { orderID: 7, pos: 2, quantity: 3 })
    await ok('PATCH', 'Lines(orderID=7,pos=2)', { quantity: 4 })
    await ok('DELETE', 'Lines(orderID=7,pos=2)')
    for (const suffix of ['Created', 'Updated', 'Deleted'])
      await subscriber.waitFor(is(`${LINES}.${suffix}`, { orderID: 7, pos: 2 }), `Lines.${suffix}`)
  })

  test('a rolled-back change emits nothing', async () => {
    await ok('POST', 'Orders', { ID: 3, status: 'open' })
    await subscriber.waitFor(is(`${ENTITY}.Created`, { ID: 3 }), 'Orders.Created of 3')
    const failed = await call('POST', 'updateThenFail', { ID: 3, status: 'never' })
    expect(failed.status).toBe(409)
    expect((await ok('GET', 'Orders(3)')).status).toBe('open')
    // a later committed change of another row arrives: had the failed one been emitted, it would have been first
    await ok('POST', 'Orders', { ID: 4, status: 'open' })
    await subscriber.waitFor(is(`${ENTITY}.Created`, { ID: 4 }), 'Orders.Created of 4')
    expect(await messagesFor(`${ENTITY}.Updated`, { ID: 3 })).toEqual([])
  })

  test("the messages are written into CAP's outbox inside the transaction: a commit failing after that write emits nothing", async () => {
    await ok('POST', 'Orders', { ID: 5, status: 'open' })
    await subscriber.waitFor(is(`${ENTITY}.Created`, { ID: 5 }), 'Orders.Created of 5')
    const failed = await call('POST', 'updateThenFailAtCommit', { ID: 5, status: 'never' })
    expect(failed.status).toBe(409)
    expect((await ok('GET', 'Orders(5)')).status).toBe('open')
    await ok('POST', 'Orders', { ID: 6, status: 'open' })
    await subscriber.waitFor(is(`${ENTITY}.Created`, { ID: 6 }), 'Orders.Created of 6')
    expect(await messagesFor(`${ENTITY}.Updated`, { ID: 5 })).toEqual([])
  })

  test('a transaction changing 100 rows one by one emits one message carrying all 100 keys, in order', async () => {
    const IDs = Array.from({ length: 100 }, (_, i) => 1001 + i)
    await ok('POST', 'seed', { count: 100, from: 1001 }) // rows 1001..1100 straight into the database: nothing emitted
    await ok('POST', 'touch', { IDs, from: 1 }) // one UPDATE per row, one transaction
    const message = await subscriber.waitFor(is(`${ENTITY}.Updated`, { ID: 1100 }), 'the Updated of the last row')
    const carrying = (await subscriber.received()).filter(m => m.event === `${ENTITY}.Updated` && keysIn(m).some(k => IDs.includes(k.ID as number)))
    expect(carrying).toHaveLength(1)
    expect(keysIn(message)).toEqual(IDs.map(ID => ({ ID })))
    expect(message.headers.time).toMatch(/^\d{4}-\d\d-\d\dT/)
  })

  test('a bulk update and a bulk delete with a where emit one message with every affected key', async () => {
    for (const ID of [10, 11, 12, 13]) await ok('POST', 'Orders', { ID, status: ID === 13 ? 'other' : 'bulk' })
    await ok('POST', 'setStatus', { from: 'bulk', to: 'bulk-done' })
    for (const ID of [10, 11, 12]) await subscriber.waitFor(is(`${ENTITY}.Updated`, { ID }), `Orders.Updated of ${ID}`)
    await ok('POST', 'deleteByStatus', { status: 'bulk-done' })
    for (const ID of [10, 11, 12]) await subscriber.waitFor(is(`${ENTITY}.Deleted`, { ID }), `Orders.Deleted of ${ID}`)
    // the row the where did not match: created, nothing else
    await ok('DELETE', 'Orders(13)')
    await subscriber.waitFor(is(`${ENTITY}.Deleted`, { ID: 13 }), 'Orders.Deleted of 13')
    expect(await messagesFor(`${ENTITY}.Updated`, { ID: 13 })).toEqual([])
    for (const ID of [10, 11, 12]) expect(await messagesFor(`${ENTITY}.Updated`, { ID })).toHaveLength(1)
    // each bulk statement: one message, its data the array of the keys
    const updates = (await subscriber.received()).filter(m => m.event === `${ENTITY}.Updated` && keysIn(m).some(k => k.ID === 10))
    expect(updates.map(m => keysIn(m).map(k => k.ID).sort())).toEqual([[10, 11, 12]])
  })

  test('changes of other topics in between keep their order: one message per run of a topic', async () => {
    await ok('POST', 'createDeleteCreate', { ID: 40 }) // one transaction: create 40, delete 40, create 40, create 41
    await subscriber.waitFor(m => m.event === `${ENTITY}.Created` && keysIn(m).some(k => k.ID === 41), 'the Created of 40 and 41')
    const forKey = (await subscriber.received()).filter(m => m.event.startsWith(ENTITY) && keysIn(m).some(k => k.ID === 40))
    // CAP's outbox may send them in any order; a consumer keeps the last state per key as it receives them
    const runs = forKey.map(m => JSON.stringify([m.event.slice(ENTITY.length + 1), keysIn(m).map(k => k.ID)])).sort()
    expect(runs).toEqual([['Created', [40]], ['Created', [40, 41]], ['Deleted', [40]]].map(r => JSON.stringify(r)).sort())
  })

  test('an upsert emits Created for a new row and Updated for an existing one', async () => {
    await ok('POST', 'upsertOrder', { ID: 20, status: 'new' })
    await subscriber.waitFor(is(`${ENTITY}.Created`, { ID: 20 }), 'Orders.Created of 20 (upsert)')
    await ok('POST', 'upsertOrder', { ID: 20, status: 'again' })
    await subscriber.waitFor(is(`${ENTITY}.Updated`, { ID: 20 }), 'Orders.Updated of 20 (upsert)')
    expect(await messagesFor(`${ENTITY}.Created`, { ID: 20 })).toHaveLength(1)
  })

  test('a draft-enabled entity emits on activation, never for draft edits', async () => {
    const ARTICLES = 'ProviderService.Articles'
    const { ID } = await ok('POST', 'Articles', { title: 'draft' })
    await ok('PATCH', `Articles(ID=${ID},IsActiveEntity=false)`, { title: 'still a draft' })
    await ok('POST', `Articles(ID=${ID},IsActiveEntity=false)/ProviderService.draftActivate`, {})
    const created = await subscriber.waitFor(is(`${ARTICLES}.Created`, { ID }), 'Articles.Created on activation')
    expect(Object.keys(created.data)).toEqual(['ID']) // not IsActiveEntity
    await ok('POST', `Articles(ID=${ID},IsActiveEntity=true)/ProviderService.draftEdit`, { PreserveChanges: true })
    await ok('PATCH', `Articles(ID=${ID},IsActiveEntity=false)`, { title: 'edited' })
    await ok('POST', `Articles(ID=${ID},IsActiveEntity=false)/ProviderService.draftActivate`, {})
    await subscriber.waitFor(is(`${ARTICLES}.Updated`, { ID }), 'Articles.Updated on activation')
    expect((await subscriber.received()).filter(m => m.event.startsWith(ARTICLES))).toHaveLength(2)
  })

  test('an entity without the annotation emits nothing', async () => {
    await ok('POST', 'Notes', { ID: 1, text: 'quiet' })
    await ok('POST', 'Orders', { ID: 30, status: 'marker' })
    await subscriber.waitFor(is(`${ENTITY}.Created`, { ID: 30 }), 'Orders.Created of 30')
    expect((await subscriber.received()).filter(m => m.event.startsWith('ProviderService.Notes'))).toEqual([])
  })
})

describe('@federation.emit on a messaging service without the outbox (outboxed: false), emit.keysPerMessage 2', () => {
  let direct: RunningApp
  beforeAll(async () => {
    const config = JSON.parse(messagingConfig(prefix, { outboxed: false }))
    config.requires['data-pipeline'] = { emit: { keysPerMessage: 2 } }
    direct = await startApp(path.join(FIXTURES, 'emit-provider'), { env: { CDS_CONFIG: JSON.stringify(config) } })
  })
  afterAll(async () => { await direct?.stop() })

  test('emits after the commit all the same, and nothing for a rolled-back change', async () => {
    await ok('POST', 'Orders', { ID: 100, status: 'open' }, direct)
    await subscriber.waitFor(is(`${ENTITY}.Created`, { ID: 100 }), 'Orders.Created of 100')
    expect((await call('POST', 'updateThenFail', { ID: 100, status: 'never' }, direct)).status).toBe(409)
    await ok('PATCH', 'Orders(100)', { status: 'paid' }, direct)
    await subscriber.waitFor(is(`${ENTITY}.Updated`, { ID: 100 }), 'Orders.Updated of 100')
    expect(await messagesFor(`${ENTITY}.Updated`, { ID: 100 })).toHaveLength(1)
  })

  test('a transaction of 5 changes: messages of at most 2 keys, a lone key as the keys themselves', async () => {
    await ok('POST', 'seed', { count: 5, from: 2001 }, direct)
    await ok('POST', 'touch', { IDs: [2001, 2002, 2003, 2004, 2005], from: 1 }, direct)
    await subscriber.waitFor(is(`${ENTITY}.Updated`, { ID: 2005 }), 'the Updated of the last row')
    const messages = (await subscriber.received()).filter(m => m.event === `${ENTITY}.Updated` && keysIn(m).some(k => (k.ID as number) > 2000))
    expect(messages.map(m => m.data).sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))))
      .toEqual([[{ ID: 2001 }, { ID: 2002 }], [{ ID: 2003 }, { ID: 2004 }], { ID: 2005 }])
  })
})
