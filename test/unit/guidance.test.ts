/**
 * lib/engine/run/guidance.ts: a failed run's next step from the error's facts, for every database's
 * way of saying "missing table" and every way a remote call fails (the shapes CAP's remote
 * client gives: the client's error in `reason`, its `code` and `response.status`). The running
 * cases (SQLite, PostgreSQL, a real provider) are in readme-quickstart and federation-replicate.
 */
import cds from '@sap/cds'
import { explainFailure } from '../../lib/engine/run/guidance'
import { PipelineError } from '../../lib/pipeline/errors'
import type { ResolvedPipeline } from '../../lib/pipeline/types'

const requires = cds.env.requires as unknown as Record<string, unknown>
const pipeline = (config: Partial<ResolvedPipeline['config']>, name = 'ReplicaService.Books') =>
  ({ name, config: { source: { service: 'Catalog', entity: 'Books' }, target: { entity: 'ReplicaService.Books' }, ...config } }) as ResolvedPipeline
const remoteError = (reason: object) => Object.assign(new Error(`Error during request to remote service: ${(reason as { message?: string }).message ?? ''}`), { statusCode: 502, reason })

beforeAll(() => {
  requires.Catalog = { kind: 'odata', credentials: { url: 'https://user:S3cret@provider.example.com/odata/v4/catalog' } }
  requires.Sink = { kind: 'odata', credentials: { destination: 'sink-dest' } }
})
afterAll(() => {
  delete requires.Catalog
  delete requires.Sink
})

describe('a table that is not deployed', () => {
  test.each([
    ['SQLite', Object.assign(new Error('no such table: ReplicaService_Books in: SELECT 1'), { code: 'SQLITE_ERROR' }), 'ReplicaService_Books'],
    ['PostgreSQL', Object.assign(new Error('relation "replicaservice_books" does not exist'), { code: '42P01', severity: 'ERROR' }), 'replicaservice_books'],
    ['HANA', Object.assign(new Error('invalid table name: Could not find table/view REPLICASERVICE_BOOKS in schema X'), { sqlState: 'HY000' }), 'REPLICASERVICE_BOOKS'],
  ])('%s: the replica table, named as the database names it, and cds deploy', (_db, error, table) => {
    expect(explainFailure(error, pipeline({}))).toBe(`The replica table of pipeline 'ReplicaService.Books' (${table}) is not deployed: run cds deploy and restart the app (for a tenant: upgrade its database), then run the pipeline again`)
  })

  test('a pipeline of its own name says target table; another table keeps the general message', () => {
    const error = Object.assign(new Error('no such table: my_Copy'), { code: 'SQLITE_ERROR' })
    expect(explainFailure(error, pipeline({ target: { entity: 'my.Copy' } }, 'copy'))).toMatch(/^The target table of pipeline 'copy' \(my_Copy\) is not deployed/)
    expect(explainFailure(Object.assign(new Error('no such table: other_Table'), { code: 'SQLITE_ERROR' }), pipeline({}))).toBeUndefined()
  })
})

describe('a provider that cannot be reached or refuses the binding', () => {
  test.each([
    ['connection refused', { code: 'ECONNREFUSED', message: 'connect ECONNREFUSED 127.0.0.1:1' }],
    ['host not found', { code: 'ENOTFOUND', message: 'getaddrinfo ENOTFOUND provider.example.com' }],
    ['connection timed out', { cause: { code: 'UND_ERR_CONNECT_TIMEOUT' } }],
  ])('%s: the service, its URL without credentials, the setting', (what, reason) => {
    const text = explainFailure(remoteError(reason), pipeline({}))
    expect(text).toBe(`Cannot reach Catalog at https://***@provider.example.com/odata/v4/catalog (${what}): check cds.requires.Catalog.credentials.url and that the provider is running`)
    expect(text).not.toContain('S3cret')
  })

  test.each([
    [401, /^Catalog at \S+ refused the request with 401 \(not authenticated\): check the binding cds\.requires\.Catalog \(its credentials/],
    [403, /^Catalog at \S+ refused the request with 403 \(not authorized\): check the binding cds\.requires\.Catalog/],
    [404, /^Catalog at \S+ answered 404 \(not found\): check the binding cds\.requires\.Catalog — credentials\.url must be the service root/],
  ])('HTTP %i names the binding', (status, expected) => {
    expect(explainFailure(remoteError({ code: 'ERR_BAD_REQUEST', status, response: { status } }), pipeline({}))).toMatch(expected)
  })

  test('a remote target whose host shows in the error is the one named, with its destination', () => {
    requires.Sink = { kind: 'odata', credentials: { url: 'http://sink.example.com:8080/odata' } }
    try {
      const error = remoteError({ code: 'ECONNREFUSED', message: 'connect ECONNREFUSED sink.example.com:8080' })
      expect(explainFailure(error, pipeline({ target: { service: 'Sink', entity: 'Books' } }))).toMatch(/^Cannot reach Sink at http:\/\/sink\.example\.com:8080\/odata/)
    } finally {
      requires.Sink = { kind: 'odata', credentials: { destination: 'sink-dest' } }
    }
    const onlyDestination = explainFailure(remoteError({ code: 'ENOTFOUND' }), pipeline({ source: { service: 'Sink', entity: 'Books' } }))
    expect(onlyDestination).toBe("Cannot reach Sink through destination 'sink-dest' (host not found): check its destination 'sink-dest' and that the provider is running")
  })

  test('other failures keep their own messages: 5xx, the plugin\'s errors, sources without a binding', () => {
    expect(explainFailure(remoteError({ status: 503, response: { status: 503 } }), pipeline({}))).toBeUndefined()
    expect(explainFailure(new PipelineError('SOURCE_FAILED', 'connect ECONNREFUSED'), pipeline({}))).toBeUndefined()
    expect(explainFailure(remoteError({ code: 'ECONNREFUSED' }), pipeline({ source: { service: 'db', entity: 'Books' } }))).toBeUndefined()
  })
})
