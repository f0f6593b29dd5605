/**
 * CAP-to-CAP over HCQL against a real provider process (test/fixtures/provider, CatalogService
 * served with `@protocol: ['odata', 'hcql']`). The consumer (test/fixtures/hcql-consumer)
 * imported the provider's API with `cds import` from its OData `$metadata` (service
 * `CatalogAPI`, not the provider's `CatalogService`) and binds it with `kind: 'hcql'`.
 *
 * Between consumer and provider sits a recording HTTP proxy: it keeps every CQN the consumer
 * POSTs (the provider's control API counts OData requests only) and injects faults shaped
 * like CAP's own HCQL error responses (`{ errors: [...] }`).
 */
import cds from '@sap/cds'
import http from 'node:http'
import path from 'node:path'
import type { AddressInfo } from 'node:net'
import { FIXTURES, type ProviderControl, type RunningApp } from '../helpers/apps'
import { sharedProvider } from '../helpers/shared-provider'
import { ql, rowCount } from '../helpers/consumer'
import type DataPipelineService from '../../srv/data-pipeline'

type Cqn = Record<string, any>

/** A recording, fault-injecting proxy in front of the provider's /hcql/catalog. */
function hcqlProxy(target: () => string) {
  const state = {
    bodies: [] as Cqn[],
    sizes: [] as number[],
    /** Answered instead of the provider, in order; `when` picks the request, `drop` forwards it and closes the connection unanswered. */
    faults: [] as Array<{ status?: number; message?: string; when?: (body: Cqn) => boolean; drop?: boolean }>,
    /** Runs before a request is forwarded (a concurrent writer at the provider). */
    beforeForward: undefined as ((body: Cqn) => Promise<void>) | undefined,
  }
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = []
    req.on('data', chunk => chunks.push(chunk))
    req.on('end', async () => {
      const body = Buffer.concat(chunks)
      let parsed: Cqn
      try { parsed = JSON.parse(body.toString() || '{}') } catch { parsed = { raw: body.toString() } }
      state.bodies.push(parsed)
      state.sizes.push(body.length)
      const index = state.faults.findIndex(f => !f.when || f.when(parsed))
      const fault = index < 0 ? undefined : state.faults.splice(index, 1)[0]
      await state.beforeForward?.(parsed)
      if (fault && !fault.drop) {
        res.writeHead(fault.status ?? 500, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ errors: [{ message: fault.message }] }))
        return
      }
      const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !['host', 'content-length', 'connection'].includes(k))) as Record<string, string>
      const response = await fetch(`${target()}${req.url}`, { method: req.method, headers, body: req.method === 'GET' ? undefined : body })
      const out = Buffer.from(await response.arrayBuffer())
      if (fault?.drop) return void res.socket?.destroy()
      const passed = Object.fromEntries([...response.headers].filter(([k]) => !['content-length', 'transfer-encoding', 'connection', 'content-encoding'].includes(k)))
      res.writeHead(response.status, passed)
      res.end(out)
    })
  })
  return {
    state,
    async start(): Promise<string> {
      await new Promise<void>(resolve => server.listen(0, '127.0.0.1', () => resolve()))
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    },
    stop: () => new Promise<void>(resolve => server.close(() => resolve())),
    /** The CQN statements received since the last call. */
    take(): Cqn[] {
      state.sizes.length = 0
      return state.bodies.splice(0)
    },
  }
}

let provider: RunningApp & { control: ProviderControl }
let engine: DataPipelineService
const proxy = hcqlProxy(() => provider.url)

beforeAll(async () => {
  provider = await sharedProvider()
})
const test_ = cds.test(path.join(FIXTURES, 'hcql-consumer'))
beforeAll(async () => {
  const proxyUrl = await proxy.start()
  const requires = cds.env.requires as unknown as Record<string, { credentials?: { url: string } }>
  requires.CatalogAPI.credentials = { url: `${proxyUrl}/hcql/catalog` }
  engine = (await cds.connect.to('data-pipeline')) as unknown as DataPipelineService
})
afterAll(async () => {
  await proxy.stop()
  await provider?.stop()
})

async function run(name: string, options: Record<string, unknown> = {}) {
  const { done } = await engine.execute(name, options)
  return done
}
const selects = (bodies: Cqn[]) => bodies.filter(b => b.SELECT).map(b => b.SELECT)
const kinds = (bodies: Cqn[]) => bodies.map(b => Object.keys(b)[0])

const T0 = '2026-01-01T00:00:00.000Z'
const T1 = '2026-02-01T10:20:30.000Z'

describe('HCQL source', () => {
  beforeEach(async () => {
    await provider.control.reset()
    proxy.take()
  })

  test('routes kind hcql to the HCQL adapter, sends service-relative names and reads everything', async () => {
    await provider.control.seed({ from: 1, count: 25, modifiedAt: T0 })
    await engine.addPipeline({ name: 'hcql-full', source: { service: 'CatalogAPI', entity: 'Books' }, target: { entity: 'hcql.BooksFull' }, mode: 'full' })
    const outcome = await run('hcql-full')
    expect(outcome).toMatchObject({ status: 'completed', statistics: { created: 25, updated: 0, deleted: 0 } })
    expect(await ql.SELECT.one.from('hcql.BooksFull').where({ ID: 7 })).toMatchObject({
      ID: 7, title: 'Book 7', author: 'Author 7', stock: 7, modifiedAt: T0, changedDate: '2026-01-01', changedTime: '00:00:00',
    })
    expect(Number((await ql.SELECT.one.from('hcql.BooksFull').where({ ID: 7 })).price)).toBe(0.7)
    const reads = selects(proxy.take())
    expect(reads.length).toBeGreaterThan(0)
    // CAP's remote service would send the consumer's name 'CatalogAPI.Books', which the provider rejects
    for (const read of reads) expect(read.from).toEqual({ ref: ['Books'] })
  })

  test('keyset paging: ordered pages continue after the last row, never by offset; the first page counts', async () => {
    await provider.control.seed({ from: 1, count: 25, modifiedAt: T0 })
    // parallel 1: the sequential pager (partitioned reads: the next test)
    await engine.addPipeline({ name: 'hcql-paged', parallel: 1, source: { service: 'CatalogAPI', entity: 'Books', batchSize: 10 }, target: { entity: 'hcql.BooksPaged' }, mode: 'full' })
    const outcome = await run('hcql-paged')
    expect(outcome).toMatchObject({ status: 'completed', statistics: { created: 25 } })
    expect(await rowCount('hcql.BooksPaged')).toBe(25)
    const reads = selects(proxy.take())
    // 25 rows in pages of 10: three requests, the count of the first ends the read (no empty page)
    expect(reads).toHaveLength(3)
    for (const read of reads) {
      expect(read.limit.rows.val).toBe(10)
      expect(read.limit.offset).toBeUndefined()
      expect(read.orderBy).toEqual([{ ref: ['ID'] }])
    }
    expect(reads[0].count).toBe(true)
    expect(reads[0].where).toBeUndefined()
    expect(reads[1].count).toBeUndefined()
    expect(JSON.stringify(reads[1].where)).toBe(JSON.stringify([{ ref: ['ID'] }, '>', { val: 10 }]))
    expect(JSON.stringify(reads[2].where)).toBe(JSON.stringify([{ ref: ['ID'] }, '>', { val: 20 }]))
  })

  test('a provider that caps its page size is paged on until the count is reached', async () => {
    await provider.control.seed({ from: 1, count: 23, modifiedAt: T0 })
    await provider.control.pageLimit(5)
    try {
      await engine.addPipeline({ name: 'hcql-capped', parallel: 1, source: { service: 'CatalogAPI', entity: 'Books', batchSize: 10 }, target: { entity: 'hcql.BooksPaged' }, mode: 'full' })
      const outcome = await run('hcql-capped')
      expect(outcome).toMatchObject({ status: 'completed' })
      expect(await rowCount('hcql.BooksPaged')).toBe(23)
      expect(selects(proxy.take())).toHaveLength(5) // 5+5+5+5+3
    } finally {
      await provider.control.pageLimit(0)
    }
  })

  test('parallel 3: a full read in key ranges, boundaries sampled by offset, every row once', async () => {
    await provider.control.seed({ from: 1, count: 60, modifiedAt: T0 })
    await engine.addPipeline({ name: 'hcql-ranges', parallel: 3, source: { service: 'CatalogAPI', entity: 'Books', batchSize: 10 }, target: { entity: 'hcql.BooksPaged' }, mode: 'full' })
    const outcome = await run('hcql-ranges')
    // the table holds the previous test's 23 rows: counted by key against them
    expect(outcome).toMatchObject({ status: 'completed', statistics: { created: 37, unchanged: 23, deleted: 0 } })
    const rows = (await ql.SELECT.from('hcql.BooksPaged').columns('ID').orderBy('ID')) as Array<{ ID: number }>
    expect(rows.map(r => r.ID)).toEqual(Array.from({ length: 60 }, (_, i) => i + 1))
    const reads = selects(proxy.take())
    // the boundary samples: one row at positions 30 and 40 of the key order (the 50 rows after the first
    // page split in three), offsets 20 and 30 from after the first page's last row
    expect(reads.filter(read => read.limit.offset).map(read => [read.limit.rows.val, read.limit.offset.val])).toEqual(expect.arrayContaining([[1, 20], [1, 30]]))
    // 6 pages, 2 samples, at most one empty end page per range
    expect(reads.length).toBeLessThanOrEqual(6 + 2 + 3)
  })

  test('timestamp delta: inclusive watermark, ties and rows written later with the same value are not lost', async () => {
    await provider.control.seed({ from: 1, count: 20, modifiedAt: T0 })
    await engine.addPipeline({ name: 'hcql-ties', source: { service: 'CatalogAPI', entity: 'Books', batchSize: 8 }, target: { entity: 'hcql.BooksTies' } })
    expect(await run('hcql-ties')).toMatchObject({ status: 'completed', statistics: { created: 20, updated: 0 } })
    expect((await engine.status('hcql-ties')).lastSync).toBe(T0)
    proxy.take()

    // 5 new rows carrying exactly the watermark value, and one row changed later
    await provider.control.seed({ from: 101, count: 5, modifiedAt: T0 })
    await provider.control.touch({ from: 3, modifiedAt: T1, title: 'Changed' })
    const second = await run('hcql-ties')
    expect(second).toMatchObject({ status: 'completed', statistics: { created: 5, updated: 1, deleted: 0 } })
    expect(await rowCount('hcql.BooksTies')).toBe(25)
    expect(await ql.SELECT.one.from('hcql.BooksTies').where({ ID: 3 })).toMatchObject({ title: 'Changed', modifiedAt: T1 })
    expect((await engine.status('hcql-ties')).lastSync).toBe(T1)
    const [first] = selects(proxy.take())
    // the 20 rows read at T0 are not read again: only later values and T0 rows above the last key read
    expect(JSON.stringify(first.where)).toBe(JSON.stringify([{ xpr: [{ ref: ['modifiedAt'] }, '>=', { val: T0 }] }, 'and', { xpr: [{ xpr: [{ ref: ['modifiedAt'] }, '>', { val: T0 }] }, 'or', { xpr: [{ ref: ['ID'] }, '>', { val: 20 }] }] }]))
    expect(first.orderBy).toEqual([{ ref: ['modifiedAt'] }, { ref: ['ID'] }])
  })

  test('key delta advances lastKey and reads only keys above it', async () => {
    await provider.control.seed({ from: 1, count: 12, modifiedAt: T0 })
    await engine.addPipeline({ name: 'hcql-key', source: { service: 'CatalogAPI', entity: 'Books', batchSize: 5 }, target: { entity: 'hcql.BooksByKey' }, delta: { mode: 'key', field: 'ID' } })
    expect(await run('hcql-key')).toMatchObject({ status: 'completed', statistics: { created: 12 } })
    expect((await engine.status('hcql-key')).lastKey).toBe('12')
    await provider.control.seed({ from: 13, count: 3, modifiedAt: T0 })
    proxy.take()
    expect(await run('hcql-key')).toMatchObject({ status: 'completed', statistics: { created: 3, updated: 0 } })
    expect((await engine.status('hcql-key')).lastKey).toBe('15')
    const reads = selects(proxy.take())
    expect(reads).toHaveLength(1)
    expect(JSON.stringify(reads[0].where)).toBe(JSON.stringify([{ ref: ['ID'] }, '>', { val: 12 }]))
  })

  test('datetime-fields delta compares date and time in UTC', async () => {
    await provider.control.seed({ from: 1, count: 6, modifiedAt: T0 })
    await engine.addPipeline({
      name: 'hcql-datetime', source: { service: 'CatalogAPI', entity: 'Books' }, target: { entity: 'hcql.BooksDateTime' },
      delta: { mode: 'datetime-fields', dateField: 'changedDate', timeField: 'changedTime' },
    })
    expect(await run('hcql-datetime')).toMatchObject({ status: 'completed', statistics: { created: 6 } })
    expect((await engine.status('hcql-datetime')).lastSync).toBe(T0)
    await provider.control.touch({ from: 2, modifiedAt: T1, title: 'Later' })
    proxy.take()
    expect(await run('hcql-datetime')).toMatchObject({ status: 'completed', statistics: { created: 0, updated: 1 } })
    expect(await ql.SELECT.one.from('hcql.BooksDateTime').where({ ID: 2 })).toMatchObject({ title: 'Later', changedTime: '10:20:30' })
    expect((await engine.status('hcql-datetime')).lastSync).toBe(T1)
    const [read] = selects(proxy.take())
    expect(JSON.stringify(read.where)).toContain('"changedDate"')
    expect(JSON.stringify(read.where)).toContain('{"val":"2026-01-01"}')
    expect(JSON.stringify(read.where)).toContain('{"val":"00:00:00"}')
  })

  test('column restriction: only the columns the target needs (and the watermark) are selected', async () => {
    await provider.control.seed({ from: 1, count: 4, modifiedAt: T0 })
    await engine.addPipeline({ name: 'hcql-titles', source: { service: 'CatalogAPI', entity: 'Books' }, target: { entity: 'hcql.BookTitles' } })
    expect(await run('hcql-titles')).toMatchObject({ status: 'completed', statistics: { created: 4 } })
    expect(await ql.SELECT.from('hcql.BookTitles').orderBy('ID')).toEqual([1, 2, 3, 4].map(ID => ({ ID, title: `Book ${ID}` })))
    for (const read of selects(proxy.take())) {
      const columns = read.columns.map((c: { ref: string[] }) => c.ref[0]).sort()
      expect(columns).toEqual(['ID', 'modifiedAt', 'title'])
    }
  })

  test('query-shape: source.query runs at the provider (grouped there), paged in a stable order', async () => {
    await provider.control.seed({ from: 1, count: 10, modifiedAt: T0, author: 'A' })
    await provider.control.seed({ from: 11, count: 5, modifiedAt: T0, author: 'B' })
    await engine.addPipeline({
      name: 'hcql-stats', source: { service: 'CatalogAPI', batchSize: 1, query: () => ql.SELECT.from('CatalogAPI.Books').columns('author', 'count(1) as books', 'sum(stock) as stock').groupBy('author') },
      target: { entity: 'hcql.AuthorStats' },
    })
    expect(await run('hcql-stats')).toMatchObject({ status: 'completed', statistics: { created: 2 } })
    expect(await ql.SELECT.from('hcql.AuthorStats').orderBy('author')).toEqual([
      { author: 'A', books: 10, stock: 55 },
      { author: 'B', books: 5, stock: 65 },
    ])
    const reads = selects(proxy.take())
    expect(reads[0].from).toEqual({ ref: ['Books'] })
    expect(reads[0].groupBy).toEqual([{ ref: ['author'] }])
    expect(reads[0].orderBy).toEqual([{ ref: ['author'] }])
    expect(reads.map(r => [r.limit.rows.val, r.limit.offset?.val ?? 0])).toEqual([[1, 0], [1, 1], [1, 2]])
  })

  test('retries: a 5xx or 429 from the provider is retried, a 4xx fails at once', async () => {
    await provider.control.seed({ from: 1, count: 3, modifiedAt: T0 })
    await engine.addPipeline({ name: 'hcql-retry', source: { service: 'CatalogAPI', entity: 'Books' }, target: { entity: 'hcql.BooksRetry' }, mode: 'full', retry: { maxRetries: 3, baseDelay: 10, maxDelay: 50 } })
    proxy.state.faults.push({ status: 503, message: 'unavailable' }, { status: 429, message: 'slow down' })
    expect(await run('hcql-retry')).toMatchObject({ status: 'completed', statistics: { created: 3 } })
    expect(selects(proxy.take())).toHaveLength(3) // 503, 429, then the page

    proxy.state.faults.push({ status: 400, message: 'bad query' }, { status: 400, message: 'bad query' })
    const failed = await run('hcql-retry').then(() => undefined, error => error as Error)
    expect(failed?.message).toMatch(/status 400: bad query/)
    expect(selects(proxy.take())).toHaveLength(1)
    proxy.state.faults.length = 0
  })
})

describe('HCQL target', () => {
  const authors = async (from: number) =>
    (await (await fetch(`${provider.url}/odata/v4/catalog/Authors?$filter=ID ge ${from}&$orderby=ID`)).json()).value as Array<Record<string, unknown>>

  test('upserts with honest counts; a rerun writes nothing', async () => {
    await ql.INSERT.into('hcql.OutgoingAuthors').entries([1, 2, 3, 4].map(i => ({ ID: 9000 + i, name: `Out ${i}`, country: 'DE', born: 1990 + i })))
    await engine.addPipeline({ name: 'hcql-out', source: { service: 'db', entity: 'hcql.OutgoingAuthors' }, target: { service: 'CatalogAPI', entity: 'Authors' } })
    proxy.take()
    expect(await run('hcql-out')).toMatchObject({ status: 'completed', statistics: { created: 4, updated: 0, deleted: 0 } })
    expect(await authors(9000)).toEqual([1, 2, 3, 4].map(i => ({ ID: 9000 + i, name: `Out ${i}`, country: 'DE', born: 1990 + i })))
    const writes = proxy.take()
    expect(writes.filter(b => b.UPSERT)).toHaveLength(1)
    expect(writes.find(b => b.UPSERT)!.UPSERT.into).toEqual({ ref: ['Authors'] })

    await ql.UPDATE('hcql.OutgoingAuthors').set({ name: 'Renamed' }).where({ ID: 9002 })
    await ql.INSERT.into('hcql.OutgoingAuthors').entries({ ID: 9005, name: 'Out 5', country: 'FR', born: 1995 })
    expect(await run('hcql-out')).toMatchObject({ status: 'completed', statistics: { created: 1, updated: 1, deleted: 0 } })
    expect((await authors(9000)).map(a => a.name)).toEqual(['Out 1', 'Renamed', 'Out 3', 'Out 4', 'Out 5'])
    proxy.take()

    expect(await run('hcql-out')).toMatchObject({ status: 'completed', statistics: { created: 0, updated: 0, deleted: 0 } })
    expect(proxy.take().filter(b => b.UPSERT)).toHaveLength(0)
    expect(await authors(9000)).toHaveLength(5)
  })

  test('a full run replaces the target: one DELETE at the provider, counted', async () => {
    await provider.control.reset()
    await fetch(`${provider.url}/odata/v4/control/seedAuthors`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ count: 3, works: 0 }) })
    await engine.addPipeline({ name: 'hcql-out-full', source: { service: 'db', entity: 'hcql.OutgoingAuthors' }, target: { service: 'CatalogAPI', entity: 'Authors' }, mode: 'full' })
    const before = (await authors(0)).length
    proxy.take()
    const outcome = await run('hcql-out-full')
    expect(outcome).toMatchObject({ status: 'completed', statistics: { deleted: before } })
    expect((await authors(0)).map(a => a.ID)).toEqual([9001, 9002, 9003, 9004, 9005])
    expect(proxy.take().filter(b => b.DELETE)).toHaveLength(1)
  })
})

describe('HCQL target: bulk writes', () => {
  const book = (ID: number, title = `Local ${ID}`) => ({ ID, title, author: `Author ${ID % 7}`, stock: ID % 10 })
  const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)
  const providerCount = async () => Number(await (await fetch(`${provider.url}/odata/v4/catalog/Books/$count`)).text())
  const firstId = (body: Cqn) => body.INSERT?.entries?.[0]?.ID as number | undefined
  async function localBooks(rows: Array<Record<string, unknown>>) {
    await ql.DELETE.from('hcql.OutgoingBooks')
    for (let i = 0; i < rows.length; i += 1000) await ql.INSERT.into('hcql.OutgoingBooks').entries(rows.slice(i, i + 1000))
  }
  async function pipeline(name: string, options: Record<string, unknown> = {}) {
    await engine.addPipeline({ name, source: { service: 'db', entity: 'hcql.OutgoingBooks', batchSize: 10 }, target: { service: 'CatalogAPI', entity: 'Books' }, mode: 'full', ...options })
  }
  beforeEach(async () => {
    await provider.control.reset()
    proxy.state.faults.length = 0
    proxy.state.beforeForward = undefined
    proxy.take()
  })

  test('a full run into an empty target: one DELETE, then one INSERT per batch and no lookups; a re-run counts its deletes', async () => {
    await localBooks(range(1, 25).map(ID => book(ID)))
    await pipeline('hcql-bulk')
    // the empty target's DELETE is answered 404 by CAP; one SELECT confirms the entity answers (0 rows)
    expect(await run('hcql-bulk')).toMatchObject({ status: 'completed', statistics: { created: 25, updated: 0, deleted: 0 } })
    expect(kinds(proxy.take())).toEqual(['DELETE', 'SELECT', 'INSERT', 'INSERT', 'INSERT'])
    expect(await provider.control.books('?$filter=ID eq 7')).toMatchObject([book(7)])
    expect(await providerCount()).toBe(25)

    expect(await run('hcql-bulk')).toMatchObject({ status: 'completed', statistics: { created: 25, updated: 0, deleted: 25 } })
    expect(kinds(proxy.take())).toEqual(['DELETE', 'INSERT', 'INSERT', 'INSERT'])
    expect(await providerCount()).toBe(25)
  })

  test('a full refresh after partial writes replaces them: counted deletes, every row created once', async () => {
    await localBooks(range(1, 25).map(ID => book(ID)))
    await pipeline('hcql-partial', { retry: { maxRetries: 0 } })
    // the second batch's INSERT and then its lookup are refused: the run fails after batch 1 was written
    proxy.state.faults.push({ status: 400, message: 'refused', when: b => firstId(b) === 11 }, { status: 400, message: 'refused', when: b => Boolean(b.SELECT?.where) })
    const failed = await run('hcql-partial').then(() => undefined, (error: Error) => error)
    expect(failed?.message).toMatch(/refused/)
    expect(await providerCount()).toBe(10)
    proxy.take()

    expect(await run('hcql-partial')).toMatchObject({ status: 'completed', statistics: { created: 25, updated: 0, deleted: 10 } })
    expect(kinds(proxy.take())).toEqual(['DELETE', 'INSERT', 'INSERT', 'INSERT'])
    expect(await providerCount()).toBe(25)
    expect(await provider.control.books('?$filter=ID eq 12')).toMatchObject([book(12)])
  })

  test('a key written by someone else during a refill: that batch falls back to lookup + UPSERT, counts stay honest', async () => {
    await localBooks(range(1, 25).map(ID => book(ID)))
    await pipeline('hcql-conflict')
    proxy.state.beforeForward = async body => {
      if (firstId(body) !== 11) return
      proxy.state.beforeForward = undefined
      await provider.control.seed({ from: 12, count: 1, modifiedAt: T0 }) // 'Book 12' at the provider
    }
    expect(await run('hcql-conflict')).toMatchObject({ status: 'completed', statistics: { created: 24, updated: 1, deleted: 0 } })
    // the refused INSERT is not retried; after a batch that found a key, the next one is counted too
    expect(kinds(proxy.take())).toEqual(['DELETE', 'SELECT', 'INSERT', 'INSERT', 'SELECT', 'UPSERT', 'SELECT', 'UPSERT'])
    expect(await provider.control.books('?$filter=ID eq 12')).toMatchObject([book(12)])
    expect(await providerCount()).toBe(25)
  })

  test('an INSERT whose answer is lost: its rows, found as sent, count as created once', async () => {
    await localBooks(range(1, 25).map(ID => book(ID)))
    await pipeline('hcql-lost')
    proxy.state.faults.push({ drop: true, when: b => firstId(b) === 11 })
    expect(await run('hcql-lost')).toMatchObject({ status: 'completed', statistics: { created: 25, updated: 0, deleted: 0 } })
    expect(kinds(proxy.take())).toEqual(['DELETE', 'SELECT', 'INSERT', 'INSERT', 'SELECT', 'INSERT'])
    expect(await providerCount()).toBe(25)
  })

  test('request bodies stay within the provider\'s limit: a batch over 100 KB is split, a 413 splits further', async () => {
    const long = (ID: number) => book(ID, `Local ${ID} ${'x'.repeat(120)}`)
    await localBooks(range(1, 1500).map(long))
    await pipeline('hcql-large', { source: { service: 'db', entity: 'hcql.OutgoingBooks', batchSize: 1500 } })
    expect(await run('hcql-large')).toMatchObject({ status: 'completed', statistics: { created: 1500 } })
    const sizes = [...proxy.state.sizes]
    const bodies = proxy.take()
    const inserts = bodies.map((b, i) => ({ kind: Object.keys(b)[0], size: sizes[i] })).filter(b => b.kind === 'INSERT')
    expect(inserts).toHaveLength(3) // ~230 KB in bodies below CAP's default 100 KB
    for (const { size } of inserts) expect(size).toBeLessThanOrEqual(100 * 1024)
    expect(await providerCount()).toBe(1500)

    // a provider with a lower limit answers 413: the rows go again in smaller bodies
    proxy.state.faults.push({ status: 413, message: 'request entity too large', when: b => Boolean(b.INSERT) })
    expect(await run('hcql-large')).toMatchObject({ status: 'completed', statistics: { created: 1500, deleted: 1500 } })
    const after = [...proxy.state.sizes]
    const kindsAfter = kinds(proxy.take())
    expect(kindsAfter.filter(k => k === 'INSERT').length).toBeGreaterThan(4) // the refused one, then halves
    expect(Math.max(...after.filter((_, i) => kindsAfter[i] === 'INSERT').slice(1))).toBeLessThanOrEqual(50 * 1024)
    expect(await providerCount()).toBe(1500)
  })

  test('delta: after a batch that found none of its keys, the next batches are one INSERT each; re-reads stay counted and never duplicate', async () => {
    await localBooks(range(1, 25).map(ID => book(ID)))
    await pipeline('hcql-appends', { mode: 'delta' })
    expect(await run('hcql-appends')).toMatchObject({ status: 'completed', statistics: { created: 25, updated: 0, deleted: 0 } })
    expect(kinds(proxy.take())).toEqual(['SELECT', 'UPSERT', 'INSERT', 'INSERT'])

    await ql.UPDATE('hcql.OutgoingBooks').set({ title: 'Changed' }).where({ ID: 5 })
    await ql.INSERT.into('hcql.OutgoingBooks').entries(range(26, 30).map(ID => book(ID)))
    expect(await run('hcql-appends')).toMatchObject({ status: 'completed', statistics: { created: 5, updated: 1, deleted: 0 } })
    expect(kinds(proxy.take())).toEqual(['SELECT', 'UPSERT', 'SELECT', 'SELECT', 'UPSERT'])
    expect(await provider.control.books('?$filter=ID eq 5')).toMatchObject([{ ID: 5, title: 'Changed' }])

    expect(await run('hcql-appends')).toMatchObject({ status: 'completed', statistics: { created: 0, updated: 0, deleted: 0 } })
    expect(kinds(proxy.take())).toEqual(['SELECT', 'SELECT', 'SELECT'])
    expect(await providerCount()).toBe(30)
  })
})

describe('federation over HCQL', () => {
  const S = '/odata/v4/hcql-consumer'
  beforeAll(async () => {
    await provider.control.reset()
    await provider.control.seed({ from: 1, count: 30, modifiedAt: T0 })
    await fetch(`${provider.url}/odata/v4/control/seedAuthors`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ count: 5, works: 3 }) })
  })
  beforeEach(() => { proxy.take() })

  test('@federation.replicate: the projection becomes a pipeline that fills the local table through HCQL', async () => {
    const outcome = await run('hcql.ReplicatedBooks')
    expect(outcome).toMatchObject({ status: 'completed', statistics: { created: 30 } })
    expect(await ql.SELECT.one.from('hcql.ReplicatedBooks').where({ ID: 5 })).toEqual({ ID: 5, name: 'Book 5', author: 'Author 5', changedAt: T0 })
    const reads = selects(proxy.take())
    expect(reads[0].from).toEqual({ ref: ['Books'] })
    expect(reads[0].columns.map((c: { ref: string[] }) => c.ref[0]).sort()).toEqual(['ID', 'author', 'modifiedAt', 'title'])
    const { data } = await test_.GET(`${S}/ReplicatedBooks?$filter=ID le 2&$orderby=ID`)
    expect(data.value.map((r: { name: string }) => r.name)).toEqual(['Book 1', 'Book 2'])
    expect(selects(proxy.take())).toHaveLength(0) // served locally
  })

  test('@federation.delegate: live reads with renames, column restriction, $filter, $orderby, $top, $skip, $count', async () => {
    const { data } = await test_.GET(`${S}/LiveBooks?$select=ID,name,writer&$filter=stock ge 10 and contains(name,'2')&$orderby=ID desc&$top=2&$skip=1&$count=true`)
    expect(data['@odata.count']).toBe(11) // 12, 20..29
    expect(data.value).toEqual([
      { ID: 28, name: 'Book 28', writer: 'Author 28' },
      { ID: 27, name: 'Book 27', writer: 'Author 27' },
    ])
    const reads = selects(proxy.take())
    expect(reads).toHaveLength(1)
    const [read] = reads
    expect(read.from).toEqual({ ref: ['Books'] })
    expect(read.columns.map((c: { ref: string[] }) => c.ref[0])).toEqual(['ID', 'title', 'author'])
    expect(JSON.stringify(read.where)).toContain('"title"')
    expect(read.orderBy).toEqual([{ ref: ['ID'], sort: 'desc' }])
    expect(read.limit).toEqual({ rows: { val: 2 }, offset: { val: 1 } })
    expect(read.count).toBe(true)
  })

  test('@federation.delegate: a provider that caps its pages is read on until $top (HCQL has no next links)', async () => {
    await provider.control.pageLimit(4)
    try {
      const { data } = await test_.GET(`${S}/LiveBooks?$select=ID,name&$orderby=ID&$top=10&$skip=2`)
      expect(data.value.map((r: { ID: number }) => r.ID)).toEqual([3, 4, 5, 6, 7, 8, 9, 10, 11, 12])
      expect(data.value[0]).toEqual({ ID: 3, name: 'Book 3' })
      expect(data['@odata.count']).toBeUndefined() // counted for paging only
      const reads = selects(proxy.take())
      expect(reads.map(r => [r.limit.offset?.val ?? 0, r.limit.rows.val])).toEqual([[2, 10], [6, 6], [10, 2]])
    } finally {
      await provider.control.pageLimit(0)
    }
  })

  test('@federation.delegate: by key, and an excluded column is never requested', async () => {
    const { data } = await test_.GET(`${S}/LiveBooks(4)`)
    expect(data).toMatchObject({ ID: 4, name: 'Book 4', writer: 'Author 4', stock: 4 })
    expect(data).not.toHaveProperty('price')
    const [read] = selects(proxy.take())
    expect(read.columns.map((c: { ref: string[] }) => c.ref[0])).not.toContain('price')
  })

  test('@federation.delegate: expands among delegated entities of the provider are forwarded as one CQN', async () => {
    const { data } = await test_.GET(`${S}/LiveAuthors?$select=ID,fullName&$expand=works($select=number,label;$orderby=number desc)&$filter=ID le 2&$orderby=ID`)
    expect(data.value).toEqual([
      { ID: 1, fullName: 'Author 1', works: [{ author_ID: 1, number: 3, label: 'Work 1.3' }, { author_ID: 1, number: 2, label: 'Work 1.2' }, { author_ID: 1, number: 1, label: 'Work 1.1' }] },
      { ID: 2, fullName: 'Author 2', works: [{ author_ID: 2, number: 3, label: 'Work 2.3' }, { author_ID: 2, number: 2, label: 'Work 2.2' }, { author_ID: 2, number: 1, label: 'Work 2.1' }] },
    ])
    expect(selects(proxy.take())).toHaveLength(1)
  })

  test('@federation.delegate: writes are forwarded live under remote names', async () => {
    const created = await test_.POST(`${S}/LiveBooks`, { ID: 500, name: 'Live', writer: 'Someone', stock: 1 })
    expect(created.status).toBe(201)
    await test_.PATCH(`${S}/LiveBooks(500)`, { name: 'Live, renamed' })
    expect(await provider.control.books('?$filter=ID eq 500')).toMatchObject([{ ID: 500, title: 'Live, renamed', author: 'Someone', stock: 1 }])
    const writes = proxy.take().filter(b => !b.SELECT)
    expect(writes.map(b => Object.keys(b)[0])).toEqual(['INSERT', 'UPDATE'])
    expect(writes[1].UPDATE.data ?? writes[1].UPDATE.with).toMatchObject({ title: 'Live, renamed' })
  })
})
