/**
 * A `@federation.delegate` view's own `where` holds on every delegated read path. CAP's remote
 * services resolve a query on a consumer view through its projection chain but drop the view's
 * where; the proxy applies it itself (lib/federation/delegate/where.ts). The provider is a real CAP
 * app whose technical service answers every note to everyone; the consumer's views narrow them
 * with a static where (`owner = 'alice'`) and with one on the caller (`owner = $user`, also on an
 * element the view does not project), each live, with the response cache and with the entity
 * cache. Two users (signed test tokens, see the fixtures' token-auth.js) read collections,
 * `$filter`s aimed at rows outside the where, single rows by key, `$count`, expands in both
 * directions and navigation. (Writes through a view with a where: federation-delegate.test.ts.)
 */
import { privateNotes, sign } from '../helpers/private-notes'

const { test$, providerUrl } = privateNotes()

const S = '/odata/v4/where'
interface Answer { status: number; data: any }
async function read(user: string, url: string): Promise<Answer> {
  const axios = (test$ as unknown as { axios: { get(url: string, config: object): Promise<Answer> } }).axios
  return axios.get(url, { validateStatus: () => true, headers: { authorization: `Bearer ${sign(user)}` } })
}
const ok = (res: Answer) => {
  expect(res.status, JSON.stringify(res.data)).toBe(200)
  return res.data
}
const ids = (res: Answer) => (ok(res).value as Array<{ ID: number }>).map(row => row.ID)

describe('the where of a delegated view holds on every path', () => {
  test('the provider answers every note to everyone (the where is the consumer\'s only narrowing)', async () => {
    const direct = await (await fetch(`${providerUrl()}/odata/v4/all-notes/Notes?$orderby=ID`)).json() as { value: Array<{ ID: number }> }
    expect(direct.value.map(row => row.ID)).toEqual([1, 2, 3, 4])
  })

  for (const entity of ['AliceLive', 'AliceResponse', 'AliceCopy']) {
    test(`${entity} (where owner = 'alice'): collection, $filter outside the where, by key, $count`, async () => {
      for (const user of ['alice', 'bob', 'bob']) { // bob twice: the second read may come from the cache
        expect(ids(await read(user, `${S}/${entity}?$orderby=ID`))).toEqual([1, 2])
        expect(ids(await read(user, `${S}/${entity}?$filter=owner eq 'bob'`))).toEqual([])
        expect(ids(await read(user, `${S}/${entity}?$filter=ID ge 2&$orderby=ID`))).toEqual([2])
        expect(ids(await read(user, `${S}/${entity}?$filter=owner ne 'alice' or ID eq 3`))).toEqual([])
        expect(ids(await read(user, `${S}/${entity}?$orderby=ID desc&$top=1&$skip=1`))).toEqual([1])
        expect(ok(await read(user, `${S}/${entity}(1)`)).owner).toBe('alice')
        expect((await read(user, `${S}/${entity}(3)`)).status).toBe(404)
        expect((await read(user, `${S}/${entity}(4)`)).status).toBe(404)
        expect(ok(await read(user, `${S}/${entity}?$count=true&$top=1`))['@odata.count']).toBe(2)
        expect(ok(await read(user, `${S}/${entity}?$count=true&$filter=ID gt 1`))['@odata.count']).toBe(1)
        expect(ok(await read(user, `${S}/${entity}/$count`))).toBe(2)
      }
    })
  }

  for (const entity of ['MineResponse', 'MineCopy']) {
    test(`${entity} (where owner = $user): each user sees only their own rows, also from the cache`, async () => {
      for (const round of [1, 2]) {
        expect(ids(await read('alice', `${S}/${entity}?$orderby=ID`)), `round ${round}`).toEqual([1, 2])
        expect(ids(await read('bob', `${S}/${entity}?$orderby=ID`)), `round ${round}`).toEqual([3])
        expect(ids(await read('bob', `${S}/${entity}?$filter=owner eq 'alice'`))).toEqual([])
        expect(ids(await read('bob', `${S}/${entity}?$filter=ID eq 1 or ID eq 4`))).toEqual([])
        expect((await read('bob', `${S}/${entity}(1)`)).status).toBe(404)
        expect(ok(await read('bob', `${S}/${entity}(3)`)).owner).toBe('bob')
        expect((await read('alice', `${S}/${entity}(3)`)).status).toBe(404)
        expect(ok(await read('alice', `${S}/${entity}?$count=true`))['@odata.count']).toBe(2)
        expect(ok(await read('bob', `${S}/${entity}/$count`))).toBe(1)
        expect(ids(await read('dave', `${S}/${entity}`))).toEqual([])
      }
    })
  }

  test('MineLive (where owner = $user on an element it does not project): collection, filter, key, $count', async () => {
    expect(ids(await read('alice', `${S}/MineLive?$orderby=ID`))).toEqual([1, 2])
    expect(ids(await read('bob', `${S}/MineLive?$orderby=ID`))).toEqual([3])
    expect(ids(await read('bob', `${S}/MineLive?$filter=contains(text,'alice')`))).toEqual([])
    expect((await read('bob', `${S}/MineLive(1)`)).status).toBe(404)
    expect(ok(await read('bob', `${S}/MineLive(3)`)).text).toBe('bob private 3')
    expect(ok(await read('carol', `${S}/MineLive?$count=true&$top=0`))['@odata.count']).toBe(1)
  })

  test('$expand from the delegate to local rows (remote → local) and navigation: only where-rows, 404 outside', async () => {
    const rows = ok(await read('alice', `${S}/MineLive?$expand=labels($select=ID)&$orderby=ID`)).value as Array<{ ID: number; labels: Array<{ ID: number }> }>
    expect(rows.map(row => [row.ID, row.labels.map(l => l.ID)])).toEqual([[1, [11]], [2, [12]]])
    expect(ids(await read('alice', `${S}/MineLive(1)/labels`))).toEqual([11])
    expect((await read('alice', `${S}/MineLive(3)/labels`)).status).toBe(404)
    expect((await read('bob', `${S}/MineLive(1)?$expand=labels`)).status).toBe(404)
  })

  test('$expand from local rows into the delegate (local → remote), filters and navigation through it', async () => {
    const rows = ok(await read('bob', `${S}/Labels?$expand=note&$orderby=ID`)).value as Array<{ ID: number; note: { ID: number } | null }>
    expect(rows.map(row => [row.ID, row.note?.ID ?? null])).toEqual([[11, null], [12, null], [13, 3], [14, null]])
    expect(ids(await read('bob', `${S}/Labels?$filter=note/text eq 'alice private 1'`))).toEqual([])
    expect(ids(await read('bob', `${S}/Labels?$filter=note/ID ne 0&$orderby=ID`))).toEqual([13])
    expect(ok(await read('alice', `${S}/Labels(11)/note`)).text).toBe('alice private 1')
    const outside = await read('bob', `${S}/Labels(11)/note`)
    expect([204, 404], JSON.stringify(outside.data)).toContain(outside.status)
    expect(outside.data?.text).toBeUndefined()
  })
})
