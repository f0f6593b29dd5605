/**
 * Caches of `@federation.delegate: { cache: { ttl, strategy, tenantScoped } }` against a real
 * provider: hits and misses by query shape, single flight, tenant isolation, invalidation by
 * writes and TTL, and the `entity` strategy's local copy (in memory, or one SQLite file per
 * tenant with `cds.requires['data-federation-cache']`).
 */
import cds from '@sap/cds'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { post, useFederation } from '../helpers/federation'
import { basicAuth } from '../helpers/auth'

const ctx = useFederation()
const S = '/odata/v4/federation'
const as = (user: string) => basicAuth(user, '')

/** The TTL of the fixture's ShortCached* entities (ms). */
const SHORT_TTL = 3000

/**
 * Runs `fn` once the TTL that began at `began` has surely passed: the clock (Date only; timers and
 * I/O stay real) is set forward instead of waiting it out. The caches take their time from Date.
 */
async function afterTtl<T>(began: number, fn: () => Promise<T>): Promise<T> {
  vi.useFakeTimers({ toFake: ['Date'], now: Date.now() })
  vi.setSystemTime(Math.max(Date.now(), began + SHORT_TTL + 50))
  try {
    return await fn()
  } finally {
    vi.useRealTimers()
  }
}

describe('response cache', () => {
  test('a repeated query is served from the cache; another query shape is a miss', async () => {
    await ctx.requests()
    const first = await ctx.http.GET(`${S}/CachedBooks?$filter=ID le 3&$orderby=ID`)
    expect(first.data.value).toEqual([{ ID: 1, name: 'Book 1', stock: 1 }, { ID: 2, name: 'Book 2', stock: 2 }, { ID: 3, name: 'Book 3', stock: 3 }])
    expect((await ctx.requests()).a).toHaveLength(1)
    const again = await ctx.http.GET(`${S}/CachedBooks?$filter=ID le 3&$orderby=ID`)
    expect(again.data.value).toEqual(first.data.value)
    expect((await ctx.requests()).a).toHaveLength(0)
    for (const other of ['$filter=ID le 3&$orderby=ID desc', '$filter=ID le 3&$orderby=ID&$top=2', '$filter=ID le 3&$orderby=ID&$select=name', '$filter=ID le 4&$orderby=ID', '$filter=ID le 3&$orderby=ID&$count=true']) {
      await ctx.http.GET(`${S}/CachedBooks?${other}`)
      expect((await ctx.requests()).a).toHaveLength(1)
    }
  })

  test('the cached remote call includes the expand payload', async () => {
    await ctx.requests()
    const url = `${S}/CachedWriters?$filter=ID le 2&$expand=works($select=label;$orderby=number)`
    const first = await ctx.http.GET(url)
    expect(first.data.value[1]).toMatchObject({ ID: 2, fullName: 'Author 2', works: [{ label: 'Work 2.1' }, { label: 'Work 2.2' }, { label: 'Work 2.3' }] })
    const second = await ctx.http.GET(url)
    expect(second.data.value).toEqual(first.data.value)
    expect((await ctx.requests()).a).toHaveLength(1)
  })

  test('concurrent misses for one key make a single remote call (single flight)', async () => {
    await ctx.a.control.faults({ delay: 300 })
    try {
      await ctx.requests()
      const url = `${S}/CachedBooks?$filter=ID ge 10 and ID le 12&$orderby=ID`
      const results = await Promise.all(Array.from({ length: 8 }, () => ctx.http.GET(url)))
      expect(results.every(r => r.status === 200 && r.data.value.length === 3)).toBe(true)
      expect(new Set(results.map(r => JSON.stringify(r.data.value))).size).toBe(1)
      expect((await ctx.requests()).a).toHaveLength(1)
    } finally {
      await ctx.a.control.faults({})
    }
  })

  test('a cache never serves another tenant\'s data', async () => {
    await ctx.requests()
    const url = `${S}/CachedBooks(20)`
    expect((await ctx.http.GET(url, as('alice'))).data.name).toBe('Book 20')
    await ctx.a.control.touch({ from: 20, title: 'Retitled 20' })
    await ctx.requests()
    expect((await ctx.http.GET(url, as('bob'))).data.name).toBe('Retitled 20') // t2 misses: never t1's entry
    expect((await ctx.requests()).a).toHaveLength(1)
    expect((await ctx.http.GET(url, as('alice'))).data.name).toBe('Book 20') // t1 still has its own
    expect((await ctx.http.GET(url, as('bob'))).data.name).toBe('Retitled 20')
    expect((await ctx.requests()).a).toHaveLength(0)

    // tenantScoped: false — tenant-independent data shares one cache
    await ctx.http.GET(`${S}/SharedBooks(21)`, as('alice'))
    await ctx.http.GET(`${S}/SharedBooks(21)`, as('bob'))
    expect((await ctx.requests()).a).toHaveLength(1)
  })

  test('writes through the proxy drop the cached entries; entries expire after their TTL', async () => {
    const url = `${S}/CachedBooks(30)`
    expect((await ctx.http.GET(url)).data.name).toBe('Book 30')
    expect((await ctx.http.PATCH(url, { name: 'Changed 30' })).status).toBe(200)
    await ctx.requests()
    expect((await ctx.http.GET(url)).data.name).toBe('Changed 30')
    expect((await ctx.requests()).a).toHaveLength(1)

    const short = `${S}/ShortCachedBooks(31)`
    const asked = Date.now()
    await ctx.http.GET(short)
    const cached = Date.now() // the entry's TTL began between `asked` and now
    await ctx.http.GET(short)
    // within the TTL the second read is a hit (a machine too busy to read twice in 3 s proves nothing here)
    if (Date.now() - asked < SHORT_TTL) expect((await ctx.requests()).a).toHaveLength(1)
    else await ctx.requests()
    await afterTtl(cached, () => ctx.http.GET(short))
    expect((await ctx.requests()).a).toHaveLength(1)
  })
})

describe('entity cache', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'federation-cache-'))
  beforeAll(() => {
    // one SQLite file per tenant (SPEC "Multi-tenancy settings")
    ;(cds.env.requires as any)['data-federation-cache'] = { kind: 'sqlite', entityCache: { baseDir: dir } }
  })
  afterAll(async () => {
    delete (cds.env.requires as any)['data-federation-cache']
    fs.rmSync(dir, { recursive: true, force: true })
  })

  test('loads the entity once, then any direct query runs on the local copy', async () => {
    await ctx.requests()
    const top = await ctx.http.GET(`${S}/CachedAuthors?$filter=country eq 'DE'&$orderby=fullName desc&$top=3&$count=true`)
    expect(top.status).toBe(200)
    expect(top.data['@odata.count']).toBe(10)
    expect(top.data.value).toEqual([
      { ID: 9, fullName: 'Author 9', country: 'DE', born: 1909 },
      { ID: 6, fullName: 'Author 6', country: 'DE', born: 1906 },
      { ID: 30, fullName: 'Author 30', country: 'DE', born: 1930 }, // string order
    ])
    const { a } = await ctx.requests()
    expect(a).toHaveLength(1)
    expect(a[0]).toMatch(/^\/odata\/v4\/catalog\/Authors\?\$select=ID,name,country,born$/) // all rows, no filter

    expect((await ctx.http.GET(`${S}/CachedAuthors(5)`)).data).toMatchObject({ ID: 5, fullName: 'Author 5', country: 'US' })
    expect((await ctx.http.GET(`${S}/CachedAuthors?$filter=born gt 1927&$select=ID`)).data.value).toEqual([{ ID: 28 }, { ID: 29 }, { ID: 30 }])
    expect((await ctx.http.GET(`${S}/CachedAuthors/$count`)).data).toBe(30)
    expect((await ctx.http.GET(`${S}/CachedAuthors?$search=Author 17&$select=ID`)).data.value).toEqual([{ ID: 17 }])
    expect((await ctx.requests()).a).toHaveLength(0)
    expect(fs.existsSync(path.join(dir, 'data-federation-cache-default.sqlite'))).toBe(true)
  })

  test('one store per tenant, loaded once for concurrent first reads', async () => {
    await ctx.requests()
    const reads = await Promise.all(['carol', 'carol', 'carol', 'dave', 'dave'].map(user => ctx.http.GET(`${S}/CachedAuthors?$filter=ID le 2&$orderby=ID`, as(user))))
    expect(reads.every(r => r.data.value.length === 2)).toBe(true)
    expect((await ctx.requests()).a).toHaveLength(2) // one load for t3, one for t4
    expect(fs.existsSync(path.join(dir, 'data-federation-cache-t3.sqlite'))).toBe(true)
    expect(fs.existsSync(path.join(dir, 'data-federation-cache-t4.sqlite'))).toBe(true)
  })

  test('the copy is refreshed when its TTL expired', async () => {
    const asked = Date.now()
    await ctx.http.GET(`${S}/ShortCachedAuthors(1)`)
    const loaded = Date.now() // the copy's TTL began between `asked` and now
    await post(ctx.a.url, 'seedAuthors', { count: 31, works: 0 })
    await ctx.requests()
    const count = (await ctx.http.GET(`${S}/ShortCachedAuthors/$count`)).data
    // still the old copy while the TTL runs (a machine too busy to get here within it proves nothing)
    if (Date.now() - asked < SHORT_TTL) expect(count).toBe(30)
    expect((await afterTtl(loaded, () => ctx.http.GET(`${S}/ShortCachedAuthors/$count`))).data).toBe(31)
    expect((await ctx.requests()).a).toHaveLength(1)
  })
})
