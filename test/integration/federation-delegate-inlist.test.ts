/**
 * Key lists of the proxy's own reads to an OData V4 remote go out as `ID in (…)` (OData 4.01):
 * a local → remote expand over 1,000 parents is one provider request instead of ten chunks of
 * `ID eq 1 or ID eq 2 …`; a provider that rejects `in` gets CAP's rendering at once, and `in`
 * only once per remote service and process.
 */
import cds from '@sap/cds'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { ql } from '../helpers/consumer'
import { useFederation } from '../helpers/federation'

const S = '/odata/v4/federation'
const PARENTS = 1000

const ctx = useFederation({
  seed: async c => {
    await c.a.control.seed({ from: 301, count: PARENTS - 300 })
    const reviews = Array.from({ length: PARENTS }, (_, i) => ({ ID: i + 1, rating: (i % 5) + 1, text: `Review ${i + 1}`, book_ID: i + 1 }))
    await ql.INSERT.into('fed.Reviews').entries(reviews)
  },
})

/** `cds.env.remote.max_get_url_length` for `fn` (long GETs go out as they are, so the provider's log shows their filter). */
async function withLongUrls(fn: () => Promise<void>): Promise<void> {
  const env = cds.env as unknown as { remote?: { max_get_url_length?: number } }
  const remote = env.remote ?? (env.remote = {})
  const before = remote.max_get_url_length
  remote.max_get_url_length = 16000
  try {
    await fn()
  } finally {
    remote.max_get_url_length = before
  }
}

const idsIn = (url: string) => [...url.matchAll(/ID in \(([\d,]+)\)/g)].flatMap(m => m[1].split(',').map(Number))
const eqIds = (url: string) => [...url.matchAll(/ID eq (\d+)/g)].map(m => Number(m[1]))

function expectBooks(rows: Array<{ ID: number; book?: { name?: string } | null }>): void {
  expect(rows).toHaveLength(PARENTS)
  expect(rows.every(r => r.book?.name === `Book ${r.ID}`)).toBe(true)
}

describe('key lists to an OData V4 remote as `in`', () => {
  test('a 1,000-parent expand is one provider request with `ID in (…)`', async () => {
    await withLongUrls(async () => {
      await ctx.requests()
      const res = await ctx.http.GET(`${S}/Reviews?$top=${PARENTS}&$orderby=ID&$expand=book($select=name)`)
      expect(res.status).toBe(200)
      expectBooks(res.data.value)
      const { a } = await ctx.requests()
      // one key list; `$top` (the list is on the target's only key) spares the provider's next link at its 1,000-row page size
      expect(a).toHaveLength(1)
      expect(a[0]).toMatch(/&\$top=1000$/)
      expect(a[0]).toMatch(/^\/odata\/v4\/catalog\/Books\?\$select=title,ID&\$filter=ID in \(/)
      expect(idsIn(a[0])).toEqual(Array.from({ length: PARENTS }, (_, i) => i + 1))
      expect(eqIds(a[0])).toEqual([])
    })
    // with CAP's default URL limit the same single request travels inside a $batch
    const res = await ctx.http.GET(`${S}/Reviews?$top=${PARENTS}&$orderby=ID&$expand=book($select=name)`)
    expectBooks(res.data.value)
    expect((await ctx.requests()).a).toEqual(['/odata/v4/catalog/$batch'])
  })

  test('the rest of the expand ($filter, $orderby) is kept beside the key list; keyChunkSize, when set, caps the keys per call', async () => {
    await withLongUrls(async () => {
      await ctx.requests()
      const res = await ctx.http.GET(`${S}/Reviews?$filter=ID le 60&$select=ID&$expand=book($select=name,stock;$filter=stock ge 10;$orderby=stock desc)`)
      expect(res.status).toBe(200)
      expect(res.data.value).toHaveLength(60)
      for (const row of res.data.value) {
        if (row.ID >= 10) expect(row.book).toMatchObject({ name: `Book ${row.ID}`, stock: row.ID })
        else expect(row.book).toBeNull()
      }
      const { a } = await ctx.requests()
      expect(a).toHaveLength(1)
      expect(a[0]).toContain('$filter=ID in (1,2,3')
      expect(a[0]).toMatch(/\) and \(+stock ge 10\)+/)
      expect(a[0]).toContain('$orderby=stock desc')

      const conf = (cds.env.requires as any)['data-pipeline']
      const before = conf.federation
      conf.federation = { ...before, keyChunkSize: 25 }
      try {
        const chunked = await ctx.http.GET(`${S}/Reviews?$filter=ID le 60&$select=ID&$expand=book($select=name)`)
        expect(chunked.data.value.every((r: any) => r.book?.name === `Book ${r.ID}`)).toBe(true)
        const urls = (await ctx.requests()).a
        expect(urls.map(u => idsIn(u).length)).toEqual([25, 25, 10])
      } finally {
        conf.federation = before
      }
    })
  })

  test('key-list chunks go out at once, at most maxParallelReads of the process in flight; the rows are the same', async () => {
    const conf = (cds.env.requires as any)['data-pipeline']
    const before = { federation: conf.federation, maxParallelReads: conf.maxParallelReads }
    conf.federation = { ...before.federation, keyChunkSize: 25 }
    conf.maxParallelReads = 2
    await ctx.a.control.faults({ delay: 200 })
    try {
      await ctx.requests()
      const res = await ctx.http.GET(`${S}/Reviews?$filter=ID le 100&$select=ID&$expand=book($select=name)`)
      expect(res.data.value).toHaveLength(100)
      expect(res.data.value.every((r: any) => r.book?.name === `Book ${r.ID}`)).toBe(true)
      const urls = (await ctx.requests()).a
      expect(urls.flatMap(idsIn).sort((x, y) => x - y)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1))
      // four chunks, two at a time: the process cap, not the stitch's own
      expect(urls).toHaveLength(4)
      expect((await ctx.a.control.stats()).maxInFlight).toBe(2)
    } finally {
      await ctx.a.control.faults({})
      conf.federation = before.federation
      if (before.maxParallelReads === undefined) delete conf.maxParallelReads
      else conf.maxParallelReads = before.maxParallelReads
    }
  })

  // last in this file: the remote service remembers a rejection for the rest of the process
  test('a provider that rejects `in` gets CAP\'s rendering at once; `in` is sent only once', async () => {
    const remote = (await cds.connect.to('FedA')) as unknown as { destination: { url: string } }
    const upstream = new URL(remote.destination.url)
    const rejected: string[] = []
    // requests forwarded at once (each after a round trip of 100 ms)
    const forwarded = { inFlight: 0, max: 0 }
    // an OData 4.0 server in front of provider A: 400 to every `in`
    const proxy = http.createServer((req, res) => {
      const url = decodeURIComponent(req.url ?? '')
      if (/ in \(/.test(url)) {
        rejected.push(url)
        res.writeHead(400, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ error: { code: '400', message: "Operator 'in' is not supported" } }))
        return
      }
      forwarded.max = Math.max(forwarded.max, ++forwarded.inFlight)
      res.once('close', () => forwarded.inFlight--)
      const forward = http.request({ host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: req.headers }, answer => {
        res.writeHead(answer.statusCode ?? 502, answer.headers)
        answer.pipe(res)
      })
      req.pipe(forward, { end: false })
      req.once('end', () => setTimeout(() => forward.end(), 100))
    })
    await new Promise<void>(resolve => proxy.listen(0, '127.0.0.1', resolve))
    const before = remote.destination.url
    remote.destination.url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}${upstream.pathname}`
    try {
      await withLongUrls(async () => {
        await ctx.requests()
        // the provider pages at 40 rows: each fallback chunk is followed through its pages
        await ctx.a.control.pageLimit(40)
        try {
          const res = await ctx.http.GET(`${S}/Reviews?$top=${PARENTS}&$orderby=ID&$expand=book($select=name)`)
          expect(res.status).toBe(200)
          expectBooks(res.data.value)
        } finally {
          await ctx.a.control.pageLimit(0)
        }
        expect(rejected).toHaveLength(1)
        // the fallback's chunks at once (each followed through its pages)
        expect(forwarded.max).toBeGreaterThan(1)
        const { a: paged } = await ctx.requests()
        // CAP's `or` chains in chunks of keyChunkSize (100), all keys once, each in pages of 40 + 40 + 20
        const a = paged.filter(u => !u.includes('$skiptoken='))
        expect(paged).toHaveLength(3 * PARENTS / 100)
        expect(a).toHaveLength(PARENTS / 100)
        expect(a.every(u => !/ in \(/.test(u))).toBe(true)
        expect(a.flatMap(eqIds).sort((x, y) => x - y)).toEqual(Array.from({ length: PARENTS }, (_, i) => i + 1))

        const again = await ctx.http.GET(`${S}/Reviews?$filter=ID le 150&$select=ID&$expand=book($select=name)`)
        expect(again.data.value.every((r: any) => r.book?.name === `Book ${r.ID}`)).toBe(true)
        expect(rejected).toHaveLength(1)
        expect((await ctx.requests()).a).toHaveLength(2)
      })
    } finally {
      remote.destination.url = before
      await new Promise<void>(resolve => proxy.close(() => resolve()))
    }
  })
})
