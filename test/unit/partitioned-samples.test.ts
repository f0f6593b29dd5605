/**
 * A partitioned read's boundary samples are all on the wire before its first page is handed on
 * (lib/adapters/source/partitions.ts, on-the-wire.ts): the write of that page runs synchronously
 * (node:sqlite) and would hold back every sample still waiting for its connection, so the ranges
 * would start one batch write later. The provider runs in a worker thread, so it notes when each
 * request arrived while the test's event loop is held.
 */
import { Worker } from 'node:worker_threads'
import { partitionedPages } from '../../lib/adapters/source/partitions'
import type { PageRequest, PageResult } from '../../lib/adapters/source/pager'

const PROVIDER = `
const http = require('node:http')
const { parentPort } = require('node:worker_threads')
const server = http.createServer((req, res) => {
  const url = new URL(req.url, 'http://x')
  parentPort.postMessage({ skip: url.searchParams.get('skip'), at: Date.now() })
  const skip = url.searchParams.get('skip')
  const top = Number(url.searchParams.get('top'))
  const records = skip ? [{ ID: Number(skip) + 1 }] : Array.from({ length: top }, (_, i) => ({ ID: i + 1 }))
  res.setHeader('content-type', 'application/json')
  res.end(JSON.stringify({ records, count: 100 }))
})
server.keepAliveTimeout = 60000
server.listen(0, '127.0.0.1', () => parentPort.postMessage({ port: server.address().port }))
`

/** How long the first page's (simulated) write holds the event loop. */
const HOLD = 1000

describe('partitioned read: boundary samples', () => {
  let worker: Worker
  let base: string
  const arrivals: Array<{ skip: string | null; at: number }> = []

  beforeAll(async () => {
    worker = new Worker(PROVIDER, { eval: true })
    base = await new Promise<string>(resolve => worker.on('message', message => {
      if (message.port) resolve(`http://127.0.0.1:${message.port}`)
      else arrivals.push(message)
    }))
  })
  afterAll(async () => { await worker.terminate() })

  test('all on the wire before the first page is written, also when they need new connections', async () => {
    const fetchPage = async (request: PageRequest): Promise<PageResult> => {
      const body = await (await fetch(`${base}/?top=${request.top}${request.skip ? `&skip=${request.skip}` : ''}`)).json() as PageResult
      return { records: body.records, count: body.count }
    }
    const read = partitionedPages({ name: 'samples', segment: { order: ['ID'] }, top: 10, parallel: 8, fetchPage, retry: { maxRetries: 0, baseDelay: 1, maxDelay: 1 } })
    let written = 0
    for await (const page of read) {
      expect(page).toHaveLength(10)
      // the first page's write: synchronous, as node:sqlite's statements are
      const start = Date.now()
      while (Date.now() - start < HOLD) { /* holds the event loop */ }
      written = Date.now()
      break
    }
    // 90 rows after the first page in 8 ranges: 7 samples, each sent before the write began
    await vi.waitFor(() => expect(arrivals.filter(a => a.skip)).toHaveLength(7))
    // without the fix they arrive once the write is over; with it before it began (the provider's
    // thread may be scheduled late on a busy machine: a margin of most of the write)
    const late = arrivals.filter(a => a.skip && a.at >= written - HOLD * 0.7)
    expect(late, 'samples that arrived only once the write was over').toEqual([])
  })
})
