/**
 * The S/4HANA path of issue 23 (point 6), both halves as real processes: the Business Partner mock
 * (SAP's API_BUSINESS_PARTNER over OData V2, publishing `BusinessPartner.Changed.v1` as a CloudEvent on
 * redis-messaging) and a consumer app whose replica of A_BusinessPartner is configured by annotation
 * only (test/fixtures/s4-consumer/db/schema.cds): the configuration replaces the hand-written handler
 * of cap-js/incidents-app (xmpls/messaging). A change reaches the replica through the event; a
 * change whose event is lost is caught by the delta run over LastChangeDate + LastChangeTime.
 */
import path from 'node:path'
import { FIXTURES, startApp, type RunningApp } from '../helpers/apps'
import { uniquePrefix, waitForSubscribers } from '../helpers/emit'
import { waitFor } from '../helpers/wait'
import { basicAuth } from '../helpers/auth'

const CHANGED = 'sap.s4.beh.businesspartner.v1.BusinessPartner.Changed.v1'
const V2 = '/odata/v2/api-business-partner'
const PIPELINE = 's4consumer.BusinessPartners'

type Row = Record<string, any>
let mock: RunningApp
let consumer: RunningApp

beforeAll(async () => {
  const prefix = uniquePrefix('s4-replica')
  const messaging = { kind: 'redis-messaging', format: 'cloudevents', publishPrefix: prefix, subscribePrefix: prefix }
  mock = await startApp(path.join(FIXTURES, 's4-business-partner'), { env: { CDS_CONFIG: JSON.stringify({ requires: { messaging } }) } })
  consumer = await startApp(path.join(FIXTURES, 's4-consumer'), {
    env: { CDS_CONFIG: JSON.stringify({ requires: { messaging, API_BUSINESS_PARTNER: { credentials: { url: `${mock.url}${V2}` } } } }) },
    timeout: 60_000,
  })
  // redis-messaging subscribes once the app listens
  await waitForSubscribers([prefix + CHANGED])
}, 90_000)
afterAll(async () => {
  await consumer?.stop()
  await mock?.stop()
})


async function json(url: string, init: RequestInit = {}): Promise<any> {
  const response = await fetch(url, init)
  const text = await response.text()
  if (!response.ok) throw new Error(`${init.method ?? 'GET'} ${url}: ${response.status} ${text}`)
  return text ? JSON.parse(text) : undefined
}
/** A change at "S/4": V2 MERGE, as an S/4 client sends it; `drop` makes the mock lose the event. */
const change = (id: string, data: Row, drop = false) => json(`${mock.url}${V2}/A_BusinessPartner('${id}')`, {
  method: 'MERGE',
  headers: { accept: 'application/json', 'content-type': 'application/json', ...(drop ? { 'x-mock-drop-event': 'true' } : {}) },
  body: JSON.stringify(data),
})
const replica = async (id: string): Promise<Row | undefined> => (await json(`${consumer.url}/replica/BusinessPartners?$filter=BusinessPartner eq '${id}'`)).value[0]
const runs = async (): Promise<Row[]> => (await json(`${consumer.url}/pipeline/PipelineRuns?$filter=pipeline_name eq '${PIPELINE}'&$orderby=startTime`, { headers: basicAuth('viewer') })).value
const applied = async (): Promise<number> => ((await json(`${consumer.url}/pipeline/PipelineEventStats?$filter=pipeline eq '${PIPELINE}'`, { headers: basicAuth('viewer') })).value as Row[])
  .reduce((sum, row) => sum + Number(row.applied ?? 0), 0)
const replicaHas = (id: string, expected: Row, what: string, timeout = 10_000) =>
  waitFor(async () => {
    const row = await replica(id)
    return row && Object.entries(expected).every(([key, value]) => row[key] === value) ? row : undefined
  }, what, timeout)

describe('S/4 Business Partner replica by annotation only (events + datetime-fields delta)', () => {
  test('the initial load copied every partner (preload), one run', async () => {
    const rows = (await json(`${consumer.url}/replica/BusinessPartners?$orderby=BusinessPartner`)).value as Row[]
    expect(rows.map(row => row.BusinessPartner)).toEqual(['1000001', '1000002', '1000003', '1000004'])
    expect(rows[1]).toMatchObject({ FirstName: 'Grace', LastName: 'Hopper', LastChangeDate: '2025-02-01', LastChangeTime: '09:30:00' })
    expect((await runs()).map(run => [run.status, run.trigger])).toEqual([['idle', 'scheduled']]) // a finished run is 'idle'
  })

  test('a change at S/4 reaches the replica through BusinessPartner.Changed.v1, without a run', async () => {
    const started = Date.now()
    await change('1000002', { LastName: 'Hopper-Murray' })
    const row = await replicaHas('1000002', { LastName: 'Hopper-Murray' }, 'the change of 1000002 in the replica')
    console.log(`[s4-replica] change → replica in ${Date.now() - started} ms`)
    // the whole row as S/4 has it now, with S/4's change stamps
    const source = (await json(`${mock.url}${V2}/A_BusinessPartner('1000002')?$select=LastChangeDate,LastChangeTime`, { headers: { accept: 'application/json' } })).d
    expect(source.LastChangeDate).not.toBe('/Date(1738368000000)/')
    expect(row.LastChangeDate).not.toBe('2025-02-01')
    expect(await runs()).toHaveLength(1)
    // the event statistics (written after the micro-batch)
    await waitFor(async () => (await applied()) >= 1, 'applied events in PipelineEventStats')
  })

  test('two quick changes of one partner: the last wins', async () => {
    await change('1000003', { BusinessPartnerFullName: 'Difference Engines Ltd' })
    await change('1000003', { BusinessPartnerFullName: 'Analytical & Difference Engines Ltd' })
    await replicaHas('1000003', { BusinessPartnerFullName: 'Analytical & Difference Engines Ltd' }, 'the last change of 1000003 in the replica')
    // and it stays the last one: a later micro-batch of the first message does not bring back the first state
    await change('1000001', { LastName: 'King' })
    await replicaHas('1000001', { LastName: 'King' }, 'a later change of 1000001 in the replica')
    expect((await replica('1000003'))!.BusinessPartnerFullName).toBe('Analytical & Difference Engines Ltd')
    expect(await runs()).toHaveLength(1)
  })

  test('a change whose event is lost stays stale until the delta run catches it (the safety net)', async () => {
    await change('1000004', { BusinessPartnerIsBlocked: false }, true)
    // a following change with its event: once it is in the replica, the lost one would have been too
    await change('1000001', { FirstName: 'Augusta Ada' })
    await replicaHas('1000001', { FirstName: 'Augusta Ada' }, 'the change of 1000001 in the replica')
    expect((await replica('1000004'))!.BusinessPartnerIsBlocked).toBe(true)

    // the scheduled delta run, started now through the management API
    const result = await json(`${consumer.url}/pipeline/execute`, {
      method: 'POST', headers: { ...basicAuth('operator'), 'content-type': 'application/json' }, body: JSON.stringify({ name: PIPELINE, mode: 'delta' }),
    })
    expect(result.status).toBe('completed')
    expect((await replica('1000004'))!.BusinessPartnerIsBlocked).toBe(false)
    // the event path never moved the watermark: the run re-read every partner changed since the initial
    // load — the three the events applied already (unchanged) and the lost one
    expect(result.statistics).toMatchObject({ created: 0, updated: 1, unchanged: 3, deleted: 0 })
  })
})
