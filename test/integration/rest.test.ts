/**
 * REST source (SPEC "REST source adapter", DESIGN "Secrets", "Retry") against a real plain
 * HTTP provider on loopback (test/fixtures/rest-provider/server.mjs), started in-process.
 * The consumer's binding `Rest` (kind 'rest') gets its url and an `x-api-key` canary header
 * after boot. Every test uses its own pipeline names and target tables.
 */
import cds from '@sap/cds'
import path from 'node:path'
import { randomUUID } from 'node:crypto'
import { format } from 'node:util'
import { FIXTURES } from '../helpers/apps'
import { ql } from '../helpers/consumer'
import { makeItems, startRestProvider, type RestProvider } from '../fixtures/rest-provider/server.mjs'
import type DataPipelineService from '../../srv/data-pipeline'

const CANARY = `CANARY-${randomUUID()}`
const PIPELINES = 'plugin.data_pipeline.Pipelines'
const RUNS = 'plugin.data_pipeline.PipelineRuns'
const T0 = Date.parse('2026-01-01T00:00:00.000Z')
const at = (minutes: number) => new Date(T0 + minutes * 60_000).toISOString()

let provider: RestProvider
let engine: DataPipelineService

beforeAll(async () => {
  provider = await startRestProvider({ apiKey: CANARY })
})
cds.test(path.join(FIXTURES, 'consumer'))
beforeAll(async () => {
  const requires = cds.env.requires as unknown as Record<string, { credentials?: object }>
  requires.Rest.credentials = { url: provider.url, headers: { 'x-api-key': CANARY } }
  engine = (await cds.connect.to('data-pipeline')) as unknown as DataPipelineService
})
afterAll(async () => {
  await provider?.close()
})
beforeEach(() => {
  provider.reset()
})

const source = { service: 'Rest' }
const queries = () => provider.state.requests.map(r => r.query)

async function run(name: string, options: Record<string, unknown> = {}) {
  const { done } = await engine.execute(name, options)
  return done
}

/** Rows a completed run found in the source: created, or unchanged where an earlier test wrote them already. */
function arrived(outcome: { status: string; statistics: { created: number; updated: number; unchanged?: number } }): number | string {
  return outcome.status === 'completed' ? outcome.statistics.created + outcome.statistics.updated + (outcome.statistics.unchanged ?? 0) : outcome.status
}

/** Runs and expects failure; returns the error and the failed run's stored error JSON. */
async function failingRun(name: string): Promise<{ error: Error; stored: { message: string; status?: number; code?: string } }> {
  const { done, runId } = await engine.execute(name)
  const error = await done.then(() => { throw new Error('run unexpectedly succeeded') }, (e: Error) => e)
  const row = await ql.SELECT.one.from(RUNS).where({ ID: runId })
  expect(row.status).toBe('failed')
  return { error, stored: JSON.parse(row.error) }
}

function rows(entity: string) {
  return ql.SELECT.from(`consumer.${entity}`).orderBy('id')
}

describe('pagination', () => {
  test('offset: offset advances by the records received, until an empty page; dataPath data.items', async () => {
    provider.state.items = makeItems(23)
    await engine.addPipeline({
      name: 'rest-offset', source, target: { entity: 'consumer.RestOffset' },
      rest: { path: '/items', dataPath: 'data.items', pagination: { type: 'offset', pageSize: 5 } },
    })
    expect(await run('rest-offset')).toMatchObject({ status: 'completed', statistics: { created: 23, updated: 0, deleted: 0 } })
    expect(queries()).toEqual([0, 5, 10, 15, 20, 23].map(offset => ({ offset: String(offset), limit: '5' })))
    expect(provider.state.requests.every(r => r.authorized && r.path === '/items')).toBe(true)
    const stored = await rows('RestOffset')
    expect(stored).toHaveLength(23)
    expect(stored[22]).toMatchObject({ id: 23, name: 'Item 23', price: 34.5, updatedAt: '2026-01-01T00:00:00.000Z' })
  })

  test('page: page=1.. with pageSize; a body that is the array needs no dataPath', async () => {
    provider.state.items = makeItems(23)
    await engine.addPipeline({
      name: 'rest-page', source, target: { entity: 'consumer.RestPage' },
      rest: { path: '/list', pagination: { type: 'page', pageSize: 10 } },
    })
    expect(await run('rest-page')).toMatchObject({ status: 'completed', statistics: { created: 23 } })
    expect(queries()).toEqual([1, 2, 3, 4].map(page => ({ page: String(page), pageSize: '10' })))
    expect(await rows('RestPage')).toHaveLength(23)
  })

  test('cursor: limit first, then the cursor from cursorPath until it is absent', async () => {
    provider.state.items = makeItems(23)
    await engine.addPipeline({
      name: 'rest-cursor', source, target: { entity: 'consumer.RestCursor' },
      rest: { path: '/items', dataPath: 'data.items', pagination: { type: 'cursor', pageSize: 10, cursorParam: 'cursor', cursorPath: 'paging.next' } },
    })
    expect(await run('rest-cursor')).toMatchObject({ status: 'completed', statistics: { created: 23 } })
    const sent = queries()
    expect(sent).toHaveLength(3)
    expect(sent[0]).toEqual({ limit: '10' })
    expect(sent[1]).toEqual({ limit: '10', cursor: expect.any(String) })
    expect(sent[2].cursor).not.toBe(sent[1].cursor)
    expect(await rows('RestCursor')).toHaveLength(23)
  })

  test('a server that caps the page size does not truncate the read (offset and page)', async () => {
    provider.state.items = makeItems(23)
    provider.state.maxPageSize = 4
    await engine.addPipeline({
      name: 'rest-capped-offset', mode: 'full', source, target: { entity: 'consumer.RestCapped' },
      rest: { path: '/items', dataPath: 'data.items', pagination: { type: 'offset', pageSize: 10 } },
    })
    expect(await run('rest-capped-offset')).toMatchObject({ status: 'completed', statistics: { created: 23 } })
    expect(queries().map(q => q.offset)).toEqual(['0', '4', '8', '12', '16', '20', '23'])
    expect(await rows('RestCapped')).toHaveLength(23)

    provider.state.requests = []
    await engine.addPipeline({
      name: 'rest-capped-page', mode: 'full', source, target: { entity: 'consumer.RestCapped' },
      rest: { path: '/items', dataPath: 'data.items', pagination: { type: 'page', pageSize: 10 } },
    })
    expect(await run('rest-capped-page')).toMatchObject({ status: 'completed', statistics: { created: 0, updated: 0, unchanged: 23, deleted: 0 } }) // the rows rest-capped-offset wrote
    expect(queries().map(q => q.page)).toEqual(['1', '2', '3', '4', '5', '6', '7'])
    expect(await rows('RestCapped')).toHaveLength(23)
  })
})

describe('delta', () => {
  test('deltaParam carries lastSync only after the first successful sync; ties are re-read', async () => {
    provider.state.items = makeItems(10).map(item => ({ ...item, updatedAt: at(item.id) }))
    await engine.addPipeline({
      name: 'rest-delta', source, target: { entity: 'consumer.RestDelta' }, delta: { field: 'updatedAt' },
      rest: { path: '/items', dataPath: 'data.items', deltaParam: 'updatedSince', pagination: { type: 'offset', pageSize: 4 } },
    })
    expect(await run('rest-delta')).toMatchObject({ status: 'completed', statistics: { created: 10, updated: 0 } })
    expect(queries().every(q => !('updatedSince' in q))).toBe(true)
    expect((await engine.status('rest-delta')).lastSync).toBe(at(10))

    provider.state.requests = []
    provider.state.items[2] = { ...provider.state.items[2], name: 'Changed 3', updatedAt: at(20) }
    provider.state.items.push({ id: 11, name: 'Item 11', price: 16.5, updatedAt: at(21) })
    // 3 changed, 10 re-read at the watermark but unchanged (not counted), 11 new
    expect(await run('rest-delta')).toMatchObject({ status: 'completed', statistics: { created: 1, updated: 1 } })
    expect(queries()).toEqual([{ updatedSince: at(10), offset: '0', limit: '4' }, { updatedSince: at(10), offset: '3', limit: '4' }])
    expect((await engine.status('rest-delta')).lastSync).toBe(at(21))
    expect(await ql.SELECT.one.from('consumer.RestDelta').where({ id: 3 })).toMatchObject({ name: 'Changed 3' })

    // a full run reads everything: no delta parameter
    provider.state.requests = []
    expect(await run('rest-delta', { mode: 'full' })).toMatchObject({ status: 'completed', statistics: { created: 0, updated: 0, unchanged: 11, deleted: 0 } })
    expect(queries().every(q => !('updatedSince' in q))).toBe(true)
  })

  test('unordered source: lastSync never passes the run start, and an unfinished run\'s checkpoint is not resumed from', async () => {
    // a value above the run's start (a row changed while the run read, or a server clock ahead):
    // in an unordered read, rows not yet read may carry lower values, so the run start is stored
    provider.state.items = [...makeItems(3), { id: 4, name: 'Item 4', price: 6, updatedAt: '2099-01-01T00:00:00.000Z' }]
    await engine.addPipeline({
      name: 'rest-delta-cap', source, target: { entity: 'consumer.RestDelta' }, delta: { field: 'updatedAt' },
      rest: { path: '/items', dataPath: 'data.items', deltaParam: 'updatedSince', pagination: { type: 'offset', pageSize: 10 } },
    })
    const before = Date.now()
    expect(await run('rest-delta-cap')).toMatchObject({ status: 'completed' })
    const { lastSync } = await engine.status('rest-delta-cap')
    expect(Date.parse(lastSync!)).toBeGreaterThanOrEqual(before - 1000)
    expect(Date.parse(lastSync!)).toBeLessThanOrEqual(Date.now())

    // a checkpoint left by an unfinished run holds the highest value of the pages it read:
    // meaningless for rows on pages it had not read yet — the next run reads from lastSync
    await ql.UPDATE.entity(PIPELINES).set({ checkpoint: JSON.stringify({ runId: 'crashed', lastSync: '2099-01-01T00:00:00.000Z', lastKey: null }) }).where({ name: 'rest-delta-cap' })
    provider.state.requests = []
    expect(await run('rest-delta-cap')).toMatchObject({ status: 'completed' })
    expect(queries()[0].updatedSince).toBe(new Date(lastSync!).toISOString())
  })
})

describe('PIPELINE.MAP', () => {
  test('an on-hook translates response field names to target names', async () => {
    provider.state.items = makeItems(7)
    provider.state.fields = 'renamed'
    await engine.addPipeline({
      name: 'rest-map', source, target: { entity: 'consumer.RestMapped' },
      rest: { path: '/items', dataPath: 'data.items', pagination: { type: 'offset', pageSize: 5 } },
    })
    engine.on('PIPELINE.MAP', 'rest-map', (req: { data: Record<string, any> }) => {
      req.data.targetRecords = req.data.sourceRecords.map((r: Record<string, unknown>) => ({ id: r.id, name: r.item_name, price: r.item_price, updatedAt: r.updatedAt }))
    })
    expect(await run('rest-map')).toMatchObject({ status: 'completed', statistics: { created: 7 } })
    const stored = await rows('RestMapped')
    expect(stored).toHaveLength(7)
    expect(stored[6]).toMatchObject({ id: 7, name: 'Item 7', price: 10.5 })
  })
})

describe('robustness', () => {
  const base = { path: '/items', dataPath: 'data.items' }

  test('a repeating cursor stops the run with a clear error instead of looping', async () => {
    provider.state.items = makeItems(5)
    provider.state.mode = 'repeat-cursor'
    await engine.addPipeline({
      name: 'rest-repeat', source, target: { entity: 'consumer.RestFailures' },
      rest: { ...base, pagination: { type: 'cursor', pageSize: 2, cursorParam: 'cursor', cursorPath: 'paging.next' } },
    })
    const { error, stored } = await failingRun('rest-repeat')
    expect(error.message).toMatch(/cursor 'c3R1Y2s' \(at 'paging.next'\) a second time/)
    expect(stored.message).toBe(error.message)
    expect(provider.state.requests).toHaveLength(2)
  })

  test('a server ignoring the offset parameter stops the run instead of looping', async () => {
    provider.state.items = makeItems(5)
    provider.state.mode = 'ignore-offset'
    await engine.addPipeline({
      name: 'rest-ignore-offset', source, target: { entity: 'consumer.RestFailures' },
      rest: { ...base, pagination: { type: 'offset', pageSize: 2 } },
    })
    const { error } = await failingRun('rest-ignore-offset')
    expect(error.message).toMatch(/same records as the page before.*'offset'/)
    expect(provider.state.requests).toHaveLength(2)
  })

  test('a response that is not JSON fails the run naming dataPath, without retry', async () => {
    provider.state.items = makeItems(5)
    provider.state.mode = 'non-json'
    await engine.addPipeline({
      name: 'rest-non-json', source, target: { entity: 'consumer.RestFailures' }, retry: { baseDelay: 10 },
      rest: { ...base, pagination: { type: 'offset', pageSize: 2 } },
    })
    const { error, stored } = await failingRun('rest-non-json')
    expect(error.message).toMatch(/GET \/items \(offset 0\) did not answer JSON; expected an object with an array at dataPath 'data.items'/)
    expect(stored).toMatchObject({ code: 'SOURCE_FAILED' })
    expect(provider.state.requests).toHaveLength(1)
  })

  test('a response without an array at dataPath fails the run naming the path', async () => {
    provider.state.items = makeItems(5)
    await engine.addPipeline({
      name: 'rest-wrong-path', source, target: { entity: 'consumer.RestFailures' },
      rest: { path: '/items', dataPath: 'data.records', pagination: { type: 'offset', pageSize: 2 } },
    })
    const { error } = await failingRun('rest-wrong-path')
    expect(error.message).toMatch(/no array at dataPath 'data.records' \(found nothing\)/)

    await engine.addPipeline({
      name: 'rest-no-path', source, target: { entity: 'consumer.RestFailures' },
      rest: { path: '/items', pagination: { type: 'offset', pageSize: 2 } },
    })
    const second = await failingRun('rest-no-path')
    expect(second.error.message).toMatch(/answered an object, not an array; set rest.dataPath/)
  })
})

describe('secrets and retry', () => {
  /** Everything written to the console and to stdout/stderr while `fn` runs (cds.log and the SDK's logger). */
  async function captureOutput(fn: () => Promise<void>): Promise<string> {
    let output = ''
    const original = global.console
    const capture = (...args: unknown[]) => { output += `${format(...args)}\n` }
    global.console = { __proto__: original, log: capture, info: capture, warn: capture, error: capture, debug: capture, trace: capture } as unknown as Console
    const writes = [process.stdout, process.stderr].map(stream => {
      const write = stream.write
      stream.write = ((chunk: unknown, ...rest: unknown[]) => { output += String(chunk); return (write as (...a: unknown[]) => boolean).call(stream, chunk, ...rest) }) as typeof stream.write
      return () => { stream.write = write }
    })
    // debug level, so the adapter's request lines are checked too
    const ids = ['data-pipeline', 'data-pipeline|rest']
    const levels = ids.map(id => cds.log(id).level)
    for (const id of ids) cds.log(id, 'debug')
    try {
      await fn()
    } finally {
      global.console = original
      writes.forEach(restore => restore())
      ids.forEach((id, i) => cds.log(id, levels[i] as never))
    }
    return output
  }

  test('401 fails fast: one request, no retry, no secret in the error, the logs, the run or Pipelines', async () => {
    provider.state.items = makeItems(5)
    provider.state.apiKey = 'another-key' // the binding's canary is now wrong
    try {
      await engine.addPipeline({
        name: 'rest-401', source, target: { entity: 'consumer.RestFailures' }, retry: { maxRetries: 3, baseDelay: 10 },
        rest: { path: '/items', dataPath: 'data.items', pagination: { type: 'offset', pageSize: 2 } },
      })
      let failure: Awaited<ReturnType<typeof failingRun>> | undefined
      const logs = await captureOutput(async () => { failure = await failingRun('rest-401') })
      const { error, stored } = failure!
      expect(provider.state.requests).toEqual([{ path: '/items', query: { offset: '0', limit: '2' }, authorized: false, status: 401, userAgent: expect.any(String) }])
      expect(error.message).toMatch(/REST source 'Rest': GET \/items \(offset 0\) answered 401 Unauthorized/)
      expect(logs).toContain('answered 401 Unauthorized') // the capture saw the failure being logged …
      expect(logs).toContain('GET /items?offset=0&limit=2') // … and the debug line of the request
      const tracker = await ql.SELECT.one.from(PIPELINES).where({ name: 'rest-401' })
      expect(tracker).toMatchObject({ status: 'failed', errorCount: 1 })
      const runs = await ql.SELECT.from(RUNS).where({ pipeline_name: 'rest-401' })
      for (const text of [error.message, String(error.stack), JSON.stringify(error), JSON.stringify(stored), logs, JSON.stringify(tracker), JSON.stringify(runs)])
        expect(text).not.toContain(CANARY)
      expect(JSON.parse(tracker.source)).toEqual({ service: 'Rest' })
    } finally {
      provider.state.apiKey = CANARY
    }
  })

  test('the canary header never appears in the Pipelines rows of any REST pipeline', async () => {
    const all = await ql.SELECT.from(PIPELINES)
    expect(all.length).toBeGreaterThan(0)
    expect(JSON.stringify(all)).not.toContain(CANARY)
    expect(JSON.stringify(await ql.SELECT.from(RUNS))).not.toContain(CANARY)
  })

  test('429 with Retry-After: 1 waits about a second, then succeeds', async () => {
    provider.state.items = makeItems(5)
    provider.state.faults = { status: 429, count: 1, retryAfter: 1 }
    await engine.addPipeline({
      name: 'rest-429', source, target: { entity: 'consumer.RestRetry' }, retry: { baseDelay: 10, maxDelay: 50 },
      rest: { path: '/items', dataPath: 'data.items', pagination: { type: 'offset', pageSize: 10 } },
    })
    const started = Date.now()
    expect(await run('rest-429')).toMatchObject({ status: 'completed', statistics: { created: 5 } })
    expect(Date.now() - started).toBeGreaterThanOrEqual(950)
    expect(provider.state.requests.map(r => [r.query.offset, r.status])).toEqual([['0', 429], ['0', 200], ['5', 200]])
  })

  test('a binding naming a destination reads through it (SAP Cloud SDK), binding headers added', async () => {
    provider.state.items = makeItems(3)
    const requires = cds.env.requires as unknown as Record<string, { credentials?: object }>
    const previous = requires.Rest.credentials
    const env = process.env.destinations
    process.env.destinations = JSON.stringify([{ name: 'rest-test-destination', url: provider.url, authentication: 'NoAuthentication' }])
    requires.Rest.credentials = { destination: 'rest-test-destination', headers: { 'x-api-key': CANARY } }
    try {
      await engine.addPipeline({
        name: 'rest-destination', mode: 'full', source, target: { entity: 'consumer.RestRetry' },
        rest: { path: '/items', dataPath: 'data.items', pagination: { type: 'offset', pageSize: 10 } },
      })
      expect(arrived(await run('rest-destination'))).toBe(3)
      expect(provider.state.requests.every(r => r.authorized)).toBe(true)
    } finally {
      requires.Rest.credentials = previous
      if (env === undefined) delete process.env.destinations
      else process.env.destinations = env
    }
  })

  test('5xx is retried with backoff; 404 is final', async () => {
    provider.state.items = makeItems(3)
    provider.state.faults = { status: 503, count: 2 }
    await engine.addPipeline({
      name: 'rest-503', mode: 'full', source, target: { entity: 'consumer.RestRetry' }, retry: { baseDelay: 10, maxDelay: 50 },
      rest: { path: '/items', dataPath: 'data.items', pagination: { type: 'offset', pageSize: 10 } },
    })
    expect(arrived(await run('rest-503'))).toBe(3)
    expect(provider.state.requests.map(r => r.status)).toEqual([503, 503, 200, 200])

    provider.state.requests = []
    await engine.addPipeline({
      name: 'rest-404', source, target: { entity: 'consumer.RestFailures' }, retry: { baseDelay: 10 },
      rest: { path: '/nothing-here', pagination: { type: 'offset', pageSize: 10 } },
    })
    const { error } = await failingRun('rest-404')
    expect(error.message).toMatch(/GET \/nothing-here \(offset 0\) answered 404 Not Found/)
    expect(provider.state.requests).toHaveLength(1)
  })
})

describe('registration', () => {
  const target = { entity: 'consumer.RestFailures' }
  const pagination = { type: 'offset', pageSize: 10 }

  test.each([
    ['rest.path + source.query', { source: { service: 'Rest', query: () => ({}) }, rest: { path: '/items', pagination } }, 'source.query'],
    ["kind 'rest' + source.query", { source: { service: 'Rest', kind: 'rest', query: () => ({}) }, mode: 'full' }, 'source.query'],
    ['missing pageSize', { source, rest: { path: '/items', pagination: { type: 'offset' } } }, 'rest.pagination.pageSize'],
    ['pageSize 0', { source, rest: { path: '/items', pagination: { type: 'page', pageSize: 0 } } }, 'rest.pagination.pageSize'],
    ['unknown pagination type', { source, rest: { path: '/items', pagination: { type: 'link', pageSize: 10 } } }, 'rest.pagination.type'],
    ['cursor without cursorPath', { source, rest: { path: '/items', pagination: { type: 'cursor', pageSize: 10, cursorParam: 'cursor' } } }, 'rest.pagination.cursorPath'],
    ['cursor without cursorParam', { source, rest: { path: '/items', pagination: { type: 'cursor', pageSize: 10, cursorPath: 'next' } } }, 'rest.pagination.cursorParam'],
    ['no pagination', { source, rest: { path: '/items' } }, 'rest.pagination'],
    ['no rest block on a rest binding', { source: { service: 'Rest', entity: 'items' } }, 'rest'],
    ['dataPath not a string', { source, rest: { path: '/items', dataPath: 42, pagination } }, 'rest.dataPath'],
    ['deltaParam not a string', { source, rest: { path: '/items', deltaParam: '', pagination } }, 'rest.deltaParam'],
    ['key delta mode', { source, delta: { mode: 'key', field: 'id' }, rest: { path: '/items', pagination } }, 'delta.mode'],
    ['no source.service', { source: {}, rest: { path: '/items', pagination } }, 'source.service'],
  ])('rejects %s', async (_label, config, key) => {
    await expect(engine.addPipeline({ name: `rest-invalid-${randomUUID()}`, target, ...(config as object) } as never))
      .rejects.toMatchObject({ code: 'INVALID_CONFIG', status: 400, target: key, message: expect.stringContaining(key) })
  })

  test('headers in the pipeline config are rejected without echoing their value', async () => {
    const error = await engine.addPipeline({
      name: 'rest-headers-in-config', source, target,
      rest: { path: '/items', pagination, headers: { 'x-api-key': CANARY } } as never,
    }).then(() => undefined, (e: Error & { target?: string }) => e)
    expect(error).toMatchObject({ code: 'INVALID_CONFIG', target: 'rest.headers' })
    expect(error!.message).toMatch(/belong in the service binding credentials/)
    expect(error!.message).not.toContain(CANARY)
  })
})

describe('HTTP client: the one CAP would use (cds.env.remote.native_fetch, else the SAP Cloud SDK when installed)', () => {
  // this repository has @sap-cloud-sdk/http-client installed (devDependency); an app without it is
  // covered by test/integration/new-user.test.ts. The User-Agent tells the clients apart:
  // Node's fetch sends `node`, the SDK (axios) `axios/<version>`.
  const FETCH_AGENT = /^node$/
  const SDK_AGENT = /^axios\//
  const remote = () => (cds.env as unknown as { remote: { native_fetch?: boolean } }).remote
  const agents = () => [...new Set(provider.state.requests.map(r => r.userAgent))]
  const useFetch = (native: boolean | undefined) => {
    if (native === undefined) delete remote().native_fetch
    else remote().native_fetch = native
  }
  afterEach(() => useFetch(undefined))

  test('not configured: the SAP Cloud SDK, as it is installed here; native_fetch: true → fetch; false → the SDK', async () => {
    provider.state.items = makeItems(3)
    await engine.addPipeline({
      name: 'rest-client-choice', mode: 'full', source, target: { entity: 'consumer.RestRetry' },
      rest: { path: '/items', dataPath: 'data.items', pagination: { type: 'offset', pageSize: 10 } },
    })
    for (const [native, agent] of [[undefined, SDK_AGENT], [true, FETCH_AGENT], [false, SDK_AGENT]] as const) {
      useFetch(native)
      provider.state.requests = []
      expect(arrived(await run('rest-client-choice')), `native_fetch ${native}`).toBe(3)
      expect(agents(), `native_fetch ${native}`).toEqual([expect.stringMatching(agent)])
      expect(provider.state.requests.every(r => r.authorized), 'binding headers sent').toBe(true)
    }
  })

  describe('native fetch', () => {
    beforeEach(() => useFetch(true))

    test('pages, binding headers and credentials.path; dataPath; delta parameter', async () => {
      provider.state.items = makeItems(12).map(item => ({ ...item, updatedAt: at(item.id) }))
      const requires = cds.env.requires as unknown as Record<string, { credentials?: object }>
      const previous = requires.Rest.credentials
      // url with a trailing slash + a path prefix: joined without double slashes
      requires.Rest.credentials = { url: `${provider.url}/`, path: '/', headers: { 'x-api-key': CANARY } }
      try {
        await engine.addPipeline({
          name: 'rest-fetch-read', source, target: { entity: 'consumer.RestOffset' }, delta: { field: 'updatedAt' },
          rest: { path: 'items', dataPath: 'data.items', deltaParam: 'updatedSince', pagination: { type: 'offset', pageSize: 5 } },
        })
        // the table may hold rows of the offset test above: created or updated, 12 in all
        const first = await run('rest-fetch-read')
        expect(first).toMatchObject({ status: 'completed' })
        expect(first.statistics.created + first.statistics.updated).toBe(12)
        expect(queries()).toEqual([0, 5, 10, 12].map(offset => ({ offset: String(offset), limit: '5' })))
        expect(provider.state.requests.every(r => r.authorized && r.path === '/items')).toBe(true)
        expect(agents()).toEqual([expect.stringMatching(FETCH_AGENT)])
        provider.state.requests = []
        expect(await run('rest-fetch-read')).toMatchObject({ status: 'completed', statistics: { created: 0, updated: 0 } })
        expect(queries()).toEqual([{ updatedSince: at(12), offset: '0', limit: '5' }, { updatedSince: at(12), offset: '1', limit: '5' }])
      } finally {
        requires.Rest.credentials = previous
      }
    })

    test('401 fails fast without the secret anywhere; 404 is final', async () => {
      provider.state.items = makeItems(5)
      provider.state.apiKey = 'another-key'
      try {
        await engine.addPipeline({
          name: 'rest-fetch-401', source, target: { entity: 'consumer.RestFailures' }, retry: { maxRetries: 3, baseDelay: 10 },
          rest: { path: '/items', dataPath: 'data.items', pagination: { type: 'offset', pageSize: 2 } },
        })
        const { error, stored } = await failingRun('rest-fetch-401')
        expect(provider.state.requests).toEqual([{ path: '/items', query: { offset: '0', limit: '2' }, authorized: false, status: 401, userAgent: 'node' }])
        expect(error.message).toBe("REST source 'Rest': GET /items (offset 0) answered 401 Unauthorized (check the credentials of the service binding)")
        expect(stored).toMatchObject({ code: 'SOURCE_FAILED', message: error.message })
        for (const text of [error.message, String(error.stack), JSON.stringify(error), JSON.stringify(stored)]) expect(text).not.toContain(CANARY)
        expect((error as Error & { cause?: unknown }).cause).toBeUndefined()
      } finally {
        provider.state.apiKey = CANARY
      }
      provider.state.requests = []
      await engine.addPipeline({
        name: 'rest-fetch-404', source, target: { entity: 'consumer.RestFailures' }, retry: { baseDelay: 10 },
        rest: { path: '/nothing-here', pagination: { type: 'offset', pageSize: 10 } },
      })
      const { error } = await failingRun('rest-fetch-404')
      expect(error).toMatchObject({ code: 'SOURCE_FAILED', response: { status: 404 } })
      expect(error.message).toMatch(/GET \/nothing-here \(offset 0\) answered 404 Not Found/)
      expect(provider.state.requests).toHaveLength(1)
    })

    test('429 with Retry-After: 1 waits about a second; 5xx is retried with backoff', async () => {
      provider.state.items = makeItems(5)
      provider.state.faults = { status: 429, count: 1, retryAfter: 1 }
      await engine.addPipeline({
        name: 'rest-fetch-429', mode: 'full', source, target: { entity: 'consumer.RestRetry' }, retry: { baseDelay: 10, maxDelay: 50 },
        rest: { path: '/items', dataPath: 'data.items', pagination: { type: 'offset', pageSize: 10 } },
      })
      const started = Date.now()
      expect(arrived(await run('rest-fetch-429'))).toBe(5)
      expect(Date.now() - started).toBeGreaterThanOrEqual(950)
      expect(provider.state.requests.map(r => [r.query.offset, r.status])).toEqual([['0', 429], ['0', 200], ['5', 200]])

      provider.state.requests = []
      provider.state.faults = { status: 503, count: 2 }
      expect(await run('rest-fetch-429')).toMatchObject({ status: 'completed', statistics: { created: 0, updated: 0, unchanged: 5, deleted: 0 } })
      expect(provider.state.requests.map(r => r.status)).toEqual([503, 503, 200, 200])
      expect(agents()).toEqual(['node'])
    })

    test('a connection refused is retried, then fails naming the code', async () => {
      const requires = cds.env.requires as unknown as Record<string, { credentials?: object }>
      const previous = requires.Rest.credentials
      const closed = await startRestProvider()
      await closed.close()
      requires.Rest.credentials = { url: closed.url, headers: { 'x-api-key': CANARY } }
      try {
        await engine.addPipeline({
          name: 'rest-fetch-refused', source, target: { entity: 'consumer.RestFailures' }, retry: { maxRetries: 1, baseDelay: 10 },
          rest: { path: '/items', pagination: { type: 'offset', pageSize: 10 } },
        })
        const { error } = await failingRun('rest-fetch-refused')
        expect(error.message).toBe("REST source 'Rest': GET /items (offset 0) failed: ECONNREFUSED")
      } finally {
        requires.Rest.credentials = previous
      }
    })

    test('a binding naming a destination still goes through the SAP Cloud SDK (it resolves destinations)', async () => {
      provider.state.items = makeItems(2)
      const requires = cds.env.requires as unknown as Record<string, { credentials?: object }>
      const previous = requires.Rest.credentials
      const env = process.env.destinations
      process.env.destinations = JSON.stringify([{ name: 'rest-fetch-destination', url: provider.url, authentication: 'NoAuthentication' }])
      requires.Rest.credentials = { destination: 'rest-fetch-destination', headers: { 'x-api-key': CANARY } }
      try {
        await engine.addPipeline({
          name: 'rest-fetch-destination', mode: 'full', source, target: { entity: 'consumer.RestRetry' },
          rest: { path: '/items', dataPath: 'data.items', pagination: { type: 'offset', pageSize: 10 } },
        })
        expect(arrived(await run('rest-fetch-destination'))).toBe(2)
        expect(provider.state.requests.every(r => r.authorized)).toBe(true)
        expect(agents()).toEqual([expect.stringMatching(SDK_AGENT)])
      } finally {
        requires.Rest.credentials = previous
        if (env === undefined) delete process.env.destinations
        else process.env.destinations = env
      }
    })
  })

  test.each([['native fetch', true], ['SAP Cloud SDK', false]] as const)('%s: rest.timeout bounds each request; a timeout is retried, then fails naming it', async (_client, native) => {
    useFetch(native)
    provider.state.items = makeItems(2)
    provider.state.delay = 1_000
    await engine.addPipeline({
      name: `rest-timeout-${native}`, source, target: { entity: 'consumer.RestFailures' }, retry: { maxRetries: 1, baseDelay: 10 },
      rest: { path: '/items', dataPath: 'data.items', timeout: 150, pagination: { type: 'offset', pageSize: 10 } },
    })
    const started = Date.now()
    const { error, stored } = await failingRun(`rest-timeout-${native}`)
    expect(Date.now() - started).toBeLessThan(900)
    expect(error.message).toBe("REST source 'Rest': GET /items (offset 0) timed out after 150 ms (rest.timeout)")
    expect(stored).toMatchObject({ code: 'SOURCE_FAILED' })
    expect(provider.state.requests).toHaveLength(2)
    expect(agents()).toEqual([expect.stringMatching(native ? FETCH_AGENT : SDK_AGENT)])
  })
})
