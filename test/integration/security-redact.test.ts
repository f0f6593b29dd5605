/**
 * Issue 20, findings 7 and 9: nothing the plugin answers, stores or logs carries credentials
 * or SQL.
 *
 * - Finding 7: the provider binding's URL carries user info and a key-like query parameter
 *   and points at a closed port. The password shows in no HTTP answer (management API as
 *   admin, a delegated read as a plain user), in no PipelineRuns.error / Pipelines.lastError,
 *   and in no log line.
 * - Finding 9: the target table of pipeline `copy` is dropped. Execute, flush and reads answer
 *   a message for the user with a correlation id, without SQL; the log has the database's own
 *   message under the same id.
 */
import cds from '@sap/cds'
import net from 'node:net'
import path from 'node:path'
import { formatWithOptions } from 'node:util'
import { FIXTURES } from '../helpers/apps'
import { BOUND, client, errorOf } from '../helpers/management'
import { ql } from '../helpers/consumer'
import { basicAuth } from '../helpers/auth'

const PASSWORD = 'Pa55-SECRET-word'
const API_KEY = 'KEY-SECRET-4711'
const ADMIN = basicAuth('admin')

// everything logged while the app runs, as the console would print it
const logged: string[] = []
const spies = (['log', 'info', 'warn', 'error', 'debug'] as const).map(method =>
  vi.spyOn(console, method).mockImplementation((...args: unknown[]) => { logged.push(formatWithOptions({ depth: 10 }, ...args)) }))
afterAll(() => spies.forEach(spy => spy.mockRestore()))

/** A loopback port nothing listens on. */
async function closedPort(): Promise<number> {
  const server = net.createServer()
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as net.AddressInfo
  await new Promise(resolve => server.close(resolve))
  return port
}

const test$ = cds.test(path.join(FIXTURES, 'security-redact'))
beforeAll(async () => {
  const requires = cds.env.requires as unknown as Record<string, { credentials?: object }>
  requires.Provider.credentials = { url: `http://pipeline:${PASSWORD}@127.0.0.1:${await closedPort()}/odata/v4/catalog?apikey=${API_KEY}` }
  await ql.INSERT.into('sec.Source').entries([{ ID: 1, name: 'one' }, { ID: 2, name: 'two' }])
})

/** Runs `call` on CAP's own HTTP client (as in an app without the Cloud SDK): Node's fetch refuses URLs with user info, naming them. */
async function withNativeFetch<T>(call: () => Promise<T>): Promise<T> {
  const remote = (cds.env as unknown as { remote: { native_fetch?: boolean } }).remote
  const saved = remote.native_fetch
  remote.native_fetch = true
  try {
    return await call()
  } finally {
    remote.native_fetch = saved
  }
}

const http = client(() => (test$ as unknown as { axios: any }).axios)
const { GET, POST } = http

const SQL = /no such table|SQLITE_|\bSELECT\b|\bINSERT\b|\bDELETE\s+FROM\b|\bFROM\s+\w+_\w+/i
const CORRELATION = /correlation id ([0-9a-f-]{36})/i

function expectNoSecrets(text: string) {
  expect(text).not.toContain(PASSWORD)
  expect(text).not.toContain(API_KEY)
  expect(text).not.toContain(encodeURIComponent(PASSWORD))
}

describe('credentials in the binding URL (finding 7)', () => {
  test('a failing execute answers 502 without the password; the run row, the pipeline row and the log neither', async () => {
    const res = await withNativeFetch(() => POST('/pipeline/execute', { name: 'books', mode: 'full' }, ADMIN))
    expectNoSecrets(JSON.stringify(res.data))
    expect(res.status, JSON.stringify(res.data)).toBe(502)
    const runs = await GET("/pipeline/PipelineRuns?$filter=pipeline_name eq 'books'&$orderby=startTime desc", ADMIN)
    expect(runs.status).toBe(200)
    expect(runs.data.value[0].status).toBe('failed')
    expect(runs.data.value[0].error).toBeTruthy()
    const pipeline = await GET("/pipeline/Pipelines('books')", ADMIN)
    expect(pipeline.data.lastError).toBeTruthy()
    const stored = await ql.SELECT.from('plugin.data_pipeline.PipelineRuns').columns('error').where({ pipeline_name: 'books' })
    const tracker = await ql.SELECT.one.from('plugin.data_pipeline.Pipelines').columns('lastError').where({ name: 'books' })
    for (const text of [JSON.stringify(res.data), JSON.stringify(runs.data), JSON.stringify(pipeline.data), JSON.stringify(stored), JSON.stringify(tracker)]) expectNoSecrets(text)
  })

  test('a plain user reading a delegated entity gets an error without the password', async () => {
    // (on CAP's own HTTP client as well as on the Cloud SDK's)
    expectNoSecrets(JSON.stringify((await withNativeFetch(() => GET('/odata/v4/catalog/RemoteBooks', basicAuth('alice')))).data))
    const res = await GET('/odata/v4/catalog/RemoteBooks', basicAuth('alice'))
    expectNoSecrets(JSON.stringify(res.data))
    expect(res.status, JSON.stringify(res.data)).toBeGreaterThanOrEqual(500)
    expect(errorOf(res).message).toMatch(CORRELATION)
    const one = await GET('/odata/v4/catalog/RemoteBooks(1)', basicAuth('alice'))
    expect(one.status).toBeGreaterThanOrEqual(500)
    expectNoSecrets(JSON.stringify(one.data))
  })

  test('management operations on the binding answer without the password (inspector, configView)', async () => {
    for (const res of [
      await GET(`${BOUND('books')}.inspectData(side='source')`, ADMIN),
      await GET(`${BOUND('books')}.configView()`, ADMIN),
      await POST(`${BOUND('books')}.start`, { mode: 'full' }, ADMIN),
    ]) expectNoSecrets(JSON.stringify(res.data))
  })
})

describe('no SQL in answers (finding 9)', () => {
  beforeAll(async () => {
    await cds.run('DROP TABLE sec_Copy')
  })

  test('execute on a pipeline whose target table is not deployed: a message to act on and a correlation id; the log has the SQL', async () => {
    const res = await POST('/pipeline/execute', { name: 'copy', mode: 'full' }, ADMIN)
    expect(res.status, JSON.stringify(res.data)).toBe(502)
    const message = errorOf(res).message as string
    expect(message).not.toMatch(SQL)
    expect(message).toMatch(/not deployed: run cds deploy/)
    const id = CORRELATION.exec(message)?.[1]
    expect(id).toBeTruthy()
    // the log line with the same id carries the database's own message
    expect(logged.find(line => line.includes(id!) && /no such table/.test(line))).toBeTruthy()

    const runs = await GET("/pipeline/PipelineRuns?$filter=pipeline_name eq 'copy'", ADMIN)
    const pipeline = await GET("/pipeline/Pipelines('copy')", ADMIN)
    for (const text of [JSON.stringify(runs.data), JSON.stringify(pipeline.data)]) expect(text).not.toMatch(SQL)
    expect(JSON.stringify(runs.data.value[0].error)).toContain(id!)
    expect(pipeline.data.lastError).toMatch(/not deployed/)
  })

  test('a management operation failing in the database (flush) answers without SQL, with a correlation id logged with the detail', async () => {
    const res = await POST('/pipeline/flush', { name: 'copy' }, ADMIN)
    expect(res.status).toBeGreaterThanOrEqual(500)
    const message = errorOf(res).message as string
    expect(message).not.toMatch(SQL)
    const id = CORRELATION.exec(message)?.[1]
    expect(id, message).toBeTruthy()
    expect(logged.find(line => line.includes(id!) && /no such table/.test(line))).toBeTruthy()
    const pipeline = await GET("/pipeline/Pipelines('copy')", ADMIN)
    expect(JSON.stringify(pipeline.data)).not.toMatch(SQL)
  })
})

describe('logs', () => {
  test('no captured log line carries the password or the key', () => {
    expect(logged.join('\n')).toMatch(/books/) // the failures were logged…
    for (const line of logged) expectNoSecrets(line) // …without the credentials
  })
})
