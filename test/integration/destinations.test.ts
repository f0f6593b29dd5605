/**
 * Issue 33 point 5: a source bound by `credentials.destination` resolves through the SAP Cloud SDK
 * as on BTP — locally from the `destinations` environment variable the SDK reads — with basic and
 * bearer authentication, against real providers that refuse requests without them.
 *
 * Providers: the CAP OData V4 provider fixture (a child process) and the REST provider fixture
 * (in-process), each reached only through an authenticating gateway on loopback
 * (test/helpers/auth-gateway.ts): Basic with its one user, or Bearer with a token its OAuth2 token
 * endpoint issued; anything else is a 401 and never reaches the provider. The consumer app runs
 * in-process (cds.test); its bindings name destinations only — `Provider`:
 * `{ destination: 'books-provider' }`, `Rest`: `{ destination: 'items-api', headers }` — and each
 * test writes those destinations into `process.env.destinations` (restored afterwards).
 *
 * Bearer: the SDK runs no OAuth2 flow for a destination from the environment (it sends the token in
 * the destination's `authTokens`, which on BTP the destination service fills after running the
 * flow itself). The bearer tests play the destination service's part — client-credentials grant at
 * the gateway's token endpoint, the token into `authTokens` —, and a test shows that an environment
 * destination without `authTokens` fails the run clearly, the token endpoint never asked and the
 * client secret in no error.
 */
import cds from '@sap/cds'
import path from 'node:path'
import { randomUUID } from 'node:crypto'
import { formatWithOptions } from 'node:util'
import { FIXTURES, startProvider, type ProviderControl, type RunningApp } from '../helpers/apps'
import { ql } from '../helpers/consumer'
import { startAuthGateway, type AuthGateway, type GatewayRequest } from '../helpers/auth-gateway'
import { makeItems, startRestProvider, type RestProvider } from '../fixtures/rest-provider/server.mjs'
import type DataPipelineService from '../../srv/data-pipeline'
import { basic } from '../helpers/auth'

const BOOKS_DESTINATION = 'books-provider'
const ITEMS_DESTINATION = 'items-api'
const API_KEY = `KEY-${randomUUID()}`
const RUNS = 'plugin.data_pipeline.PipelineRuns'
const PIPELINES = 'plugin.data_pipeline.Pipelines'
const BOOKS = 12

// everything the app logs while this file runs: cds.log writes through console's methods, the SAP
// Cloud SDK's (winston) logger to console._stdout / console._stderr
const logged: string[] = []
const consoleStreams = console as unknown as { _stdout?: NodeJS.WritableStream; _stderr?: NodeJS.WritableStream }
const streams = [...new Set([process.stdout, process.stderr, consoleStreams._stdout, consoleStreams._stderr])].filter(stream => !!stream)
const spies = [
  ...(['log', 'info', 'warn', 'error', 'debug', 'trace'] as const).map(method =>
    vi.spyOn(console, method).mockImplementation((...args: unknown[]) => { logged.push(formatWithOptions({ depth: 10 }, ...args)) })),
  ...streams.map(stream => vi.spyOn(stream, 'write').mockImplementation((chunk: unknown) => { logged.push(String(chunk)); return true })),
]

let provider: RunningApp & { control: ProviderControl }
let books: AuthGateway
let rest: RestProvider
let items: AuthGateway
let engine: DataPipelineService
const savedDestinations = process.env.destinations

// the OData provider starts while the consumer boots
const providerStarted = startProvider()
beforeAll(async () => {
  provider = await providerStarted
  books = await startAuthGateway(provider.url)
  rest = await startRestProvider({ apiKey: API_KEY })
  items = await startAuthGateway(rest.url)
})
cds.test(path.join(FIXTURES, 'consumer'))
beforeAll(async () => {
  // what the app's package.json would say: destination names, no URL, no user, no password
  const requires = cds.env.requires as unknown as Record<string, { credentials?: object }>
  requires.Provider.credentials = { destination: BOOKS_DESTINATION }
  requires.Rest.credentials = { destination: ITEMS_DESTINATION, headers: { 'x-api-key': API_KEY } }
  engine = (await cds.connect.to('data-pipeline')) as unknown as DataPipelineService
  await provider.control.seed({ from: 1, count: BOOKS, modifiedAt: '2026-03-01T10:00:00.000Z' })
  rest.state.items = makeItems(7)
})
afterAll(async () => {
  if (savedDestinations === undefined) delete process.env.destinations
  else process.env.destinations = savedDestinations
  spies.forEach(spy => spy.mockRestore())
  await Promise.all([books?.close(), items?.close(), rest?.close()])
  await (provider ?? (await providerStarted.catch(() => undefined)))?.stop()
})

/** `process.env.destinations` with the given destinations, as the BTP cockpit exports them (the destination service's property names). */
function useDestinations(destinations: { books?: Record<string, unknown>; items?: Record<string, unknown> }): void {
  process.env.destinations = JSON.stringify([
    ...(destinations.books ? [{ Name: BOOKS_DESTINATION, Type: 'HTTP', ProxyType: 'Internet', URL: `${books.url}/odata/v4/catalog`, ...destinations.books }] : []),
    ...(destinations.items ? [{ Name: ITEMS_DESTINATION, Type: 'HTTP', ProxyType: 'Internet', URL: items.url, ...destinations.items }] : []),
  ])
}

const basicAuth = (gateway: AuthGateway, password = gateway.password) => ({ Authentication: 'BasicAuthentication', User: gateway.user, Password: password })
const oauth = (gateway: AuthGateway) => ({ Authentication: 'OAuth2ClientCredentials', tokenServiceURL: gateway.tokenUrl, clientId: gateway.clientId, clientSecret: gateway.clientSecret })

/** What the BTP destination service does for an OAuth2ClientCredentials destination: the grant, its token as `authTokens`. */
async function asDestinationService(configuration: Record<string, string>): Promise<{ token: string; destination: Record<string, unknown> }> {
  const response = await fetch(configuration.tokenServiceURL, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(configuration.clientId, configuration.clientSecret) },
    body: 'grant_type=client_credentials',
  })
  expect(response.status).toBe(200)
  const { access_token: token, expires_in: expiresIn } = (await response.json()) as { access_token: string; expires_in: number }
  const authTokens = [{ type: 'bearer', value: token, expires_in: String(expiresIn), http_header: { key: 'Authorization', value: `Bearer ${token}` } }]
  return { token, destination: { ...configuration, authTokens } }
}

/** Gateway requests from `from` on, without the token endpoint's. */
const dataRequests = (gateway: AuthGateway, from: number): GatewayRequest[] => gateway.seen.slice(from).filter(r => !r.path.startsWith('/oauth/'))

const targetBooks = (entity: string) => ql.SELECT.from(entity).orderBy('ID') as Promise<Array<Record<string, unknown>>>

/** The provider's books in the target's shape (read directly, not through the gateway). */
async function providerBooks(): Promise<Array<Record<string, unknown>>> {
  return (await provider.control.books('?$select=ID,title,author,stock&$orderby=ID')).map(({ ID, title, author, stock }) => ({ ID, title, author, stock }))
}

/** Runs and expects failure: the stored run error and every text the failure left (rejection, run row, pipeline row). */
async function failingRun(name: string): Promise<{ stored: { message: string }; texts: string[] }> {
  const { done, runId } = await engine.execute(name)
  const error = await done.then(() => { throw new Error('run unexpectedly succeeded') }, (e: Error) => e)
  const run = await ql.SELECT.one.from(RUNS).where({ ID: runId })
  expect(run.status).toBe('failed')
  const pipeline = await ql.SELECT.one.from(PIPELINES).where({ name })
  const texts = [error.message, String(error.stack), formatWithOptions({ depth: 10 }, error), JSON.stringify(error), String(run.error), String(pipeline.lastError)]
  return { stored: JSON.parse(run.error), texts }
}

/** A secret (and its Base64 form, as in a Basic header) in none of the texts and no log line. */
function expectNowhere(secret: string, texts: string[]): void {
  for (const text of [...texts, logged.join('\n')]) {
    expect(text).not.toContain(secret)
    expect(text).not.toContain(Buffer.from(secret).toString('base64'))
  }
}

test('the providers refuse requests without credentials (401), and the REST provider also without the API key', async () => {
  for (const url of [`${books.url}/odata/v4/catalog/Books`, `${items.url}/items`]) {
    const response = await fetch(url, { headers: { 'x-api-key': API_KEY } })
    expect(response.status).toBe(401)
    expect(response.headers.get('www-authenticate')).toMatch(/^Basic /)
  }
  expect((await fetch(`${items.url}/items`, { headers: { authorization: basic(items.user, items.password) } })).status).toBe(401)
})

describe('BasicAuthentication', () => {
  test('an OData V4 source reads through the destination with its user and password; every provider request carried them', async () => {
    useDestinations({ books: basicAuth(books) })
    await engine.addPipeline({ name: 'destination-basic', mode: 'full', source: { service: 'Provider', entity: 'Books', batchSize: 5 }, target: { entity: 'consumer.BooksFullBatch' } })
    const from = books.seen.length
    const { done } = await engine.execute('destination-basic')
    expect(await done).toMatchObject({ status: 'completed', statistics: { created: BOOKS, updated: 0, deleted: 0 } })
    expect(await targetBooks('consumer.BooksFullBatch')).toEqual(await providerBooks())

    const requests = dataRequests(books, from)
    expect(requests.filter(r => r.path.startsWith('/odata/v4/catalog/Books')).length).toBeGreaterThanOrEqual(3) // 12 rows in pages of 5
    for (const request of requests) expect(request).toMatchObject({ authorization: basic(books.user, books.password), status: 200 })
  })

  test('a wrong password fails the run at once with a clear error; the password shows in no error, run row or log line', async () => {
    const wrong = `wrong-${books.password}`
    useDestinations({ books: basicAuth(books, wrong) })
    await engine.addPipeline({ name: 'destination-basic-wrong', mode: 'full', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.BooksByKey' } })
    const from = books.seen.length
    const loggedBefore = logged.length
    const { stored, texts } = await failingRun('destination-basic-wrong')

    expect(stored.message).toBe(
      "Provider through destination 'books-provider' refused the request with 401 (not authenticated): " +
      'check the binding cds.requires.Provider (its credentials — user and password or headers — or its destination)')
    // the destination's credentials went out and were refused; a 401 is not retried (another request may be the drift check's $metadata)
    const requests = dataRequests(books, from)
    expect(requests.filter(r => r.path.startsWith('/odata/v4/catalog/Books'))).toHaveLength(1)
    for (const request of requests) expect(request).toMatchObject({ authorization: basic(books.user, wrong), status: 401 })
    expect(await ql.SELECT.from('consumer.BooksByKey')).toEqual([])
    // the capture sees both CAP's log (the failed request) and the SDK's (the destination lookup)
    const log = logged.slice(loggedBefore).join('\n')
    expect(log).toContain("pipeline 'destination-basic-wrong' full run")
    expect(log).toContain("Successfully retrieved destination 'books-provider' from environment variable")
    expectNowhere(wrong, texts)
    expectNowhere(books.password, texts)
    expectNowhere(Buffer.from(`${books.user}:${wrong}`).toString('base64'), texts) // the Basic header's value
  })
})

describe('bearer: OAuth2ClientCredentials', () => {
  test('an OData V4 source sends the destination token as Authorization: Bearer; the provider saw only that token', async () => {
    const { token, destination } = await asDestinationService(oauth(books))
    useDestinations({ books: destination })
    await provider.control.touch({ from: 2, count: 3, modifiedAt: '2026-03-02T10:00:00.000Z', title: 'Bearer' })
    await engine.addPipeline({ name: 'destination-bearer', mode: 'full', source: { service: 'Provider', entity: 'Books', batchSize: 5 }, target: { entity: 'consumer.BooksFull' } })
    const from = books.seen.length
    const { done } = await engine.execute('destination-bearer')
    expect(await done).toMatchObject({ status: 'completed', statistics: { created: BOOKS, updated: 0, deleted: 0 } })
    const copied = await targetBooks('consumer.BooksFull')
    expect(copied).toEqual(await providerBooks())
    expect(copied.filter(row => row.title === 'Bearer').map(row => row.ID)).toEqual([2, 3, 4])

    const requests = dataRequests(books, from)
    expect(requests.filter(r => r.path.startsWith('/odata/v4/catalog/Books')).length).toBeGreaterThanOrEqual(3)
    for (const request of requests) expect(request).toMatchObject({ authorization: `Bearer ${token}`, status: 200 })
    // the SDK sent the token it was given and asked the token endpoint nothing
    expect(books.seen.slice(from).filter(r => r.path.startsWith('/oauth/'))).toEqual([])
  })

  test('a REST source reads through a bearer destination too, the binding\'s headers added', async () => {
    const { token, destination } = await asDestinationService(oauth(items))
    useDestinations({ items: destination })
    await engine.addPipeline({
      name: 'destination-rest-bearer', mode: 'full', source: { service: 'Rest' }, target: { entity: 'consumer.RestList' },
      rest: { path: '/items', dataPath: 'data.items', pagination: { type: 'offset', pageSize: 5 } },
    })
    const from = items.seen.length
    rest.state.requests = []
    const { done } = await engine.execute('destination-rest-bearer')
    expect(await done).toMatchObject({ status: 'completed', statistics: { created: 7, updated: 0, deleted: 0 } })
    expect(await ql.SELECT.from('consumer.RestList').orderBy('id')).toEqual(makeItems(7))

    const requests = dataRequests(items, from)
    expect(requests.map(r => r.path)).toEqual(['/items?offset=0&limit=5', '/items?offset=5&limit=5', '/items?offset=7&limit=5'])
    for (const request of requests) expect(request).toMatchObject({ authorization: `Bearer ${token}`, status: 200 })
    // behind the gateway: every request reached the provider with the binding's API key
    expect(rest.state.requests.map(r => r.authorized)).toEqual([true, true, true])
  })

  test('a destination from the environment without authTokens fails the run clearly: no token is fetched, the secret shows nowhere', async () => {
    useDestinations({ books: oauth(books) })
    await engine.addPipeline({ name: 'destination-oauth-env', mode: 'full', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.BooksByKey' }, retry: { maxRetries: 0 } })
    const from = books.seen.length
    const { stored, texts } = await failingRun('destination-oauth-env')
    // today: "… could not be used: Failed to build headers. Caused by: `AuthenticationType` is "OAuth2ClientCredentials", but no auth tokens could be fetched from the destination service."
    expect(stored.message).toMatch(/^Provider through destination 'books-provider' could not be used: Failed to build headers\. Caused by: .*"OAuth2ClientCredentials", but no auth tokens/)
    expect(books.seen.slice(from)).toEqual([])
    expectNowhere(books.clientSecret, texts)
  })
})

test('a destination the SDK finds nowhere fails the run naming it and the SDK\'s reason', async () => {
  useDestinations({ items: { Authentication: 'NoAuthentication' } })
  await engine.addPipeline({ name: 'destination-missing', mode: 'full', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.BooksByKey' }, retry: { maxRetries: 0 } })
  const from = books.seen.length
  const { stored } = await failingRun('destination-missing')
  // today: "… could not be used: Failed to load destination. Caused by: Could not find service binding of type 'destination'."
  expect(stored.message).toMatch(/^Provider through destination 'books-provider' could not be used: Failed to load destination\. Caused by: \S/)
  expect(books.seen.slice(from)).toEqual([])
})
