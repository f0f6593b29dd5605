/**
 * Issue 20, finding 1: delegate caches never cross users. The provider is a real CAP app whose
 * Notes are readable by their owner only (`@restrict … where: 'owner = $user'`); the consumer's
 * binding forwards the user's token (`forwardAuthToken: true` — CAP forwards bearer JWTs, so
 * both apps authenticate users by a signed test token). Two users read every cache strategy
 * (none, response, entity): each sees only their own rows, also when asking for the other's
 * with `$filter`. The consumer logs at startup which delegates keep per-user caches and why.
 */
import { formatWithOptions } from 'node:util'
import { privateNotes, sign } from '../helpers/private-notes'

// everything logged from the consumer's start on (the startup line about per-user caches)
const logged: string[] = []
const spies = (['log', 'info', 'warn', 'error'] as const).map(method =>
  vi.spyOn(console, method).mockImplementation((...args: unknown[]) => { logged.push(formatWithOptions({ depth: 6 }, ...args)) }))
afterAll(() => spies.forEach(spy => spy.mockRestore()))

const { test$, providerUrl } = privateNotes()

const S = '/odata/v4/private'
async function read(user: string, url: string): Promise<{ status: number; data: any }> {
  const axios = (test$ as unknown as { axios: { get(url: string, config: object): Promise<{ status: number; data: any }> } }).axios
  return axios.get(url, { validateStatus: () => true, headers: { authorization: `Bearer ${sign(user)}` } })
}
const owners = (res: { status: number; data: any }) => {
  expect(res.status, JSON.stringify(res.data)).toBe(200)
  return (res.data.value as Array<{ owner: string }>).map(row => row.owner)
}

describe('delegate caches with a binding that forwards the user', () => {
  test('the provider answers per user: alice and bob see their own notes only', async () => {
    const direct = async (user: string) => (await fetch(`${providerUrl()}/odata/v4/notes/Notes`, { headers: { authorization: `Bearer ${sign(user)}` } })).json() as Promise<{ value: Array<{ owner: string }> }>
    expect((await direct('alice')).value.map(row => row.owner)).toEqual(['alice', 'alice'])
    expect((await direct('bob')).value.map(row => row.owner)).toEqual(['bob'])
  })

  for (const entity of ['LiveNotes', 'ResponseNotes', 'EntityNotes']) {
    test(`${entity}: two users each see only their own rows, also with $filter on the other's`, async () => {
      expect(owners(await read('alice', `${S}/${entity}?$orderby=ID`))).toEqual(['alice', 'alice'])
      expect(owners(await read('bob', `${S}/${entity}?$orderby=ID`))).toEqual(['bob'])
      expect(owners(await read('bob', `${S}/${entity}?$filter=owner eq 'alice'`))).toEqual([])
      expect(owners(await read('bob', `${S}/${entity}?$filter=ID eq 1`))).toEqual([])
      expect((await read('bob', `${S}/${entity}(1)`)).status).toBe(404)
      expect(owners(await read('carol', `${S}/${entity}?$filter=owner ne 'carol'`))).toEqual([])
      // alice again (from the cache where there is one): still her own rows only
      expect(owners(await read('alice', `${S}/${entity}?$orderby=ID`))).toEqual(['alice', 'alice'])
      expect(owners(await read('alice', `${S}/${entity}?$filter=owner eq 'bob'`))).toEqual([])
    })
  }

  for (const entity of ['MyResponseNotes', 'MyEntityNotes']) {
    test(`${entity} (@restrict where owner = $user on the consumer, technical binding): each user sees only their own rows`, async () => {
      expect(owners(await read('alice', `${S}/${entity}?$orderby=ID`))).toEqual(['alice', 'alice'])
      expect(owners(await read('bob', `${S}/${entity}?$orderby=ID`))).toEqual(['bob'])
      expect(owners(await read('bob', `${S}/${entity}?$filter=owner eq 'alice'`))).toEqual([])
      expect(owners(await read('alice', `${S}/${entity}?$orderby=ID`))).toEqual(['alice', 'alice'])
    })
  }

  test('a delegate whose answer does not depend on the caller keeps one shared copy', async () => {
    // the plugin's own module instance, as the consumer loaded it
    const { entityCache } = require('cap-data-pipeline/dist/lib/federation/cache/entity.js') as typeof import('../../lib/federation/cache/entity')
    const before = entityCache.stats.loads
    expect(owners(await read('alice', `${S}/SharedNotes?$orderby=ID`))).toEqual(['alice', 'alice', 'bob', 'carol'])
    expect(owners(await read('bob', `${S}/SharedNotes?$orderby=ID`))).toEqual(['alice', 'alice', 'bob', 'carol'])
    expect(entityCache.stats.loads - before).toBe(1)
  })

  test('the startup log names the delegates whose caches are kept per user, and why', () => {
    const lines = logged.filter(line => line.includes('per user and tenant'))
    expect(lines.find(line => line.includes('EntityNotes'))).toMatch(/entity cache .*forwardAuthToken/)
    expect(lines.find(line => line.includes('ResponseNotes'))).toMatch(/response cache .*forwardAuthToken/)
    expect(lines.find(line => line.includes('MyEntityNotes'))).toMatch(/entity cache .*@restrict of .*MyEntityNotes uses \$user/)
    expect(lines.some(line => line.includes('LiveNotes') || line.includes('SharedNotes'))).toBe(false) // no cache / shared: nothing to say
  })
})
