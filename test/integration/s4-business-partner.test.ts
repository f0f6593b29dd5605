/**
 * The S/4HANA path of issue 23 (point 6), provider half: a Business Partner mock built from SAP's real
 * API_BUSINESS_PARTNER EDMX (`cds import`, test/fixtures/imports.json) serves the API over OData V2 and,
 * like S/4, publishes `sap.s4.beh.businesspartner.v1.BusinessPartner.Changed.v1` with
 * `{ BusinessPartner }` when a partner changes — the event cap-js/incidents-app subscribes to — on
 * CAP's redis-messaging and the real Redis; a plain CAP subscriber receives it.
 */
import path from 'node:path'
import { FIXTURES, startApp, type RunningApp } from '../helpers/apps'
import { messagingConfig, startSubscriber, uniquePrefix, type Received, type Subscriber } from '../helpers/emit'
import { fetchMetadata } from '../fixtures/import-apis.mjs'

const CHANGED = 'sap.s4.beh.businesspartner.v1.BusinessPartner.Changed.v1'
const V2 = '/odata/v2/api-business-partner'

let mock: RunningApp
let subscriber: Subscriber

beforeAll(async () => {
  const prefix = uniquePrefix('s4')
  subscriber = await startSubscriber(prefix, [CHANGED])
  mock = await startApp(path.join(FIXTURES, 's4-business-partner'), { env: { CDS_CONFIG: messagingConfig(prefix, { format: 'cloudevents' }) } })
})
afterAll(async () => {
  await mock?.stop()
  await subscriber?.stop()
})

async function v2(method: string, url: string, body?: object): Promise<{ status: number; data: any }> {
  const response = await fetch(`${mock.url}${V2}/${url}`, {
    method,
    headers: { accept: 'application/json', ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  })
  const text = await response.text()
  return { status: response.status, data: text ? JSON.parse(text) : undefined }
}
const partner = async (id: string) => (await v2('GET', `A_BusinessPartner('${id}')?$select=BusinessPartner,FirstName,LastName,LastChangeDate,LastChangeTime`)).data.d
const changed = (id: string) => (m: Received) => m.event === CHANGED && m.data.BusinessPartner === id

describe('S/4HANA Business Partner mock (API_BUSINESS_PARTNER, OData V2)', () => {
  test('serves the imported API over OData V2 with its rows', async () => {
    const metadata = await fetchMetadata(`${mock.url}${V2}`)
    expect(metadata).toMatch(/<edmx:Edmx Version="1\.0"/)
    expect(metadata).toContain('EntitySet Name="A_BusinessPartner"')
    expect(metadata).toContain('Name="LastChangeTime"')
    const list = await v2('GET', "A_BusinessPartner?$select=BusinessPartner,BusinessPartnerFullName&$orderby=BusinessPartner&$inlinecount=allpages")
    expect(list.status).toBe(200)
    expect(list.data.d.__count).toBe('4')
    expect(list.data.d.results.map((p: { BusinessPartner: string }) => p.BusinessPartner)).toEqual(['1000001', '1000002', '1000003', '1000004'])
    // V2 representations: /Date(…)/ and an edm:Time duration
    expect(await partner('1000002')).toMatchObject({ FirstName: 'Grace', LastChangeDate: '/Date(1738368000000)/', LastChangeTime: 'PT09H30M00S' })
  })

  test('an update (V2 MERGE) stamps LastChangeDate/LastChangeTime and emits BusinessPartner.Changed.v1 with the key', async () => {
    const before = await partner('1000002')
    const merge = await v2('MERGE', "A_BusinessPartner('1000002')", { LastName: 'Hopper-Murray' })
    expect(merge.status).toBeGreaterThanOrEqual(200)
    expect(merge.status).toBeLessThan(300)
    const message = await subscriber.waitFor(changed('1000002'), 'BusinessPartner.Changed.v1 of 1000002')
    expect(message.data).toEqual({ BusinessPartner: '1000002' })
    // a CloudEvent, as S/4HANA publishes them
    expect(message.headers).toMatchObject({ type: CHANGED, specversion: '1.0' })
    expect(Date.parse(String(message.headers.time))).toBeGreaterThan(0)
    const after = await partner('1000002')
    expect(after.LastName).toBe('Hopper-Murray')
    expect(after.LastChangeDate).not.toBe(before.LastChangeDate)
  })

  test('each changed partner is announced, and only changed ones', async () => {
    expect((await v2('PATCH', "A_BusinessPartner('1000003')", { BusinessPartnerName: 'Difference Engines Ltd' })).status).toBeLessThan(300)
    await subscriber.waitFor(changed('1000003'), 'BusinessPartner.Changed.v1 of 1000003')
    const all = (await subscriber.received()).filter(m => m.event === CHANGED).map(m => m.data.BusinessPartner)
    expect(all.sort()).toEqual(['1000002', '1000003'])
  })
})
