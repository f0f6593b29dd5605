/**
 * Registration validation: `resolvePipeline` rejects incoherent configs with one
 * INVALID_CONFIG error naming the offending key, and infers shape and defaults.
 */
import { resolvePipeline, serializable, configFingerprint } from '../../lib/engine/config/index'
import type { PipelineConfig } from '../../lib/pipeline/types'
import { PipelineError } from '../../lib/pipeline/errors'

const base = (): PipelineConfig => ({ name: 'p', source: { entity: 'consumer.LocalBooks' }, target: { entity: 'consumer.LocalCopies' } })
const query = () => ({ SELECT: {} })

/** Resolves and returns the error thrown, failing the test when nothing is thrown. */
function rejection(config: unknown, options?: Parameters<typeof resolvePipeline>[1]): PipelineError {
  try {
    resolvePipeline(config as PipelineConfig, options)
  } catch (error) {
    expect(error).toBeInstanceOf(PipelineError)
    return error as PipelineError
  }
  throw new Error('expected resolvePipeline to throw')
}

function expectInvalid(config: unknown, key: string, message?: RegExp, options?: Parameters<typeof resolvePipeline>[1]): void {
  const error = rejection(config, options)
  expect(error.code).toBe('INVALID_CONFIG')
  expect(error.status).toBe(400)
  expect(error.target).toBe(key)
  expect(error.message).toContain(key)
  if (message) expect(error.message).toMatch(message)
}

describe('resolvePipeline: inference', () => {
  test('entity-shape with a database target defaults to delta, batch size 1000, enabled, batch transactions, 3 retries', () => {
    const resolved = resolvePipeline(base())
    expect(resolved).toMatchObject({
      name: 'p', shape: 'entity', mode: 'delta', batchSize: 1000, enabled: true, transaction: 'batch',
      retry: { maxRetries: 3 }, schedule: undefined,
    })
  })

  test('source.query makes the pipeline query-shape with default mode full', () => {
    const resolved = resolvePipeline({ name: 'q', source: { query }, target: { entity: 'consumer.AuthorStats' } })
    expect(resolved.shape).toBe('query')
    expect(resolved.mode).toBe('full')
  })

  test('rest.path alone marks entity-shape', () => {
    expect(resolvePipeline({ name: 'r', source: { service: 'Api' }, target: { entity: 'T' }, rest: { path: '/items', pagination: { type: 'offset', pageSize: 10 } } }).shape).toBe('entity')
  })

  test('delta.mode defaults to timestamp when a delta object is given', () => {
    expect(resolvePipeline({ ...base(), delta: { field: 'changedAt' } }).delta).toEqual({ field: 'changedAt', mode: 'timestamp' })
  })

  test('target.service: db, a database kind, an explicit target.kind or a remote OData service are accepted', () => {
    expect(() => resolvePipeline({ ...base(), target: { service: 'db', entity: 'T' } })).not.toThrow()
    expect(() => resolvePipeline({ ...base(), target: { service: 'other', entity: 'T' } }, { serviceKind: () => 'sqlite' })).not.toThrow()
    expect(() => resolvePipeline({ ...base(), target: { service: 'Remote', entity: 'T', kind: 'odata' } })).not.toThrow()
    // SPEC: the OData target is also selected when the connected remote service advertises that kind
    expect(() => resolvePipeline({ ...base(), target: { service: 'Remote', entity: 'T' } }, { serviceKind: () => 'odata' })).not.toThrow()
  })

  test('schedule is parsed at registration', () => {
    expect(resolvePipeline({ ...base(), schedule: '30s' }).schedule).toEqual({ every: 30_000, engine: 'spawn' })
  })
})

describe('resolvePipeline: errors name the offending key', () => {
  test('config, name, source, target', () => {
    expectInvalid(null, 'config')
    expectInvalid({ ...base(), name: '' }, 'name')
    expectInvalid({ ...base(), name: 42 }, 'name')
    expectInvalid({ name: 'p', target: { entity: 'T' } }, 'source')
    expectInvalid({ ...base(), target: 'T' }, 'target')
    expectInvalid({ ...base(), target: {} }, 'target.entity', /required/)
  })

  test('both source.entity and source.query', () => {
    expectInvalid({ ...base(), source: { entity: 'E', query } }, 'source.query', /source\.entity/)
  })

  test('neither source.entity nor source.query (nor rest.path, nor adapter)', () => {
    expectInvalid({ ...base(), source: { service: 'db' } }, 'source.entity', /required/)
  })

  test('source.query must be a function', () => {
    expectInvalid({ ...base(), source: { query: 'SELECT * FROM x' } }, 'source.query', /function/)
  })

  test('source.query with mode delta', () => {
    expectInvalid({ name: 'q', source: { query }, target: { entity: 'T' }, mode: 'delta' }, 'mode', /source\.query/)
  })

  test('source.query with a delta object', () => {
    expectInvalid({ name: 'q', source: { query }, target: { entity: 'T' }, delta: { field: 'x' } }, 'delta')
  })

  test('unknown source.kind', () => {
    expectInvalid({ ...base(), source: { entity: 'E', kind: 'graphql' } }, 'source.kind', /'graphql' is unknown/)
  })

  test('extra known kinds are accepted', () => {
    expect(() => resolvePipeline({ ...base(), source: { entity: 'E', kind: 'graphql' } }, { knownKinds: ['graphql'] })).not.toThrow()
  })

  test('source.adapter / target.adapter must be classes', () => {
    expectInvalid({ ...base(), source: { entity: 'E', adapter: 'MyAdapter' } }, 'source.adapter')
    expectInvalid({ ...base(), target: { entity: 'T', adapter: {} } }, 'target.adapter')
  })

  test('non-db target.service without adapter or kind', () => {
    expectInvalid({ ...base(), target: { service: 'Remote', entity: 'T' } }, 'target.service', /'Remote' is not a database service/, { serviceKind: () => 'rest' })
    // an unknown (unconfigured) service is not a database either
    expectInvalid({ ...base(), target: { service: 'Nowhere', entity: 'T' } }, 'target.service')
  })

  test('unknown target.kind', () => {
    expectInvalid({ ...base(), target: { entity: 'T', kind: 'rest' } }, 'target.kind')
  })

  test('invalid mode', () => {
    expectInvalid({ ...base(), mode: 'partial' }, 'mode', /'partial' is invalid/)
    // partial-refresh is a run mode, not a pipeline mode
    expectInvalid({ ...base(), mode: 'partial-refresh' }, 'mode')
  })

  test('bad batchSize', () => {
    for (const batchSize of [0, -1, 1.5, '100', 100_001]) expectInvalid({ ...base(), source: { entity: 'E', batchSize } }, 'source.batchSize')
    expect(resolvePipeline({ ...base(), source: { entity: 'E', batchSize: 1 } }).batchSize).toBe(1)
  })

  test('delta settings', () => {
    expectInvalid({ ...base(), delta: 'modifiedAt' }, 'delta')
    expectInvalid({ ...base(), delta: { mode: 'version' } }, 'delta.mode', /'version' is invalid/)
    expectInvalid({ ...base(), delta: { mode: 'datetime-fields', timeField: 't' } }, 'delta.dateField', /datetime-fields/)
    expectInvalid({ ...base(), delta: { mode: 'datetime-fields', dateField: 'd' } }, 'delta.timeField', /datetime-fields/)
    expectInvalid({ ...base(), delta: { field: '' } }, 'delta.field')
  })

  test('schedule, enabled, transaction, description, retry, refresh, leaseDuration', () => {
    expectInvalid({ ...base(), schedule: { cron: '0 * * * *', engine: 'spawn' } }, 'schedule.engine', /cron needs engine 'queued'/)
    expectInvalid({ ...base(), schedule: '0 * * * * *' }, 'schedule', /6 fields; expected 5/)
    expectInvalid({ ...base(), enabled: 'yes' }, 'enabled')
    expectInvalid({ ...base(), transaction: 'row' }, 'transaction')
    expectInvalid({ ...base(), description: 5 }, 'description')
    expectInvalid({ ...base(), retry: { maxRetries: -1 } }, 'retry.maxRetries')
    expectInvalid({ ...base(), retry: { baseDelay: 1.5 } }, 'retry.baseDelay')
    expectInvalid({ ...base(), refresh: { slice: { a: 1 } } }, 'refresh.slice', /query-shape/)
    expectInvalid({ ...base(), leaseDuration: 100 }, 'leaseDuration')
  })

  test('parallel: an integer from 1 to 32, default 1; errors name the key', () => {
    for (const value of [0, -1, 1.5, '4', 33, true]) expectInvalid({ ...base(), parallel: value as never }, 'parallel', /integer between 1 and 32/)
    expect(resolvePipeline(base()).parallel).toBe(1)
    expect(resolvePipeline({ ...base(), parallel: 4 }).parallel).toBe(4)
    expect(resolvePipeline({ ...base(), parallel: 32 }).parallel).toBe(32)
  })

  test('source.origin', () => {
    expectInvalid({ ...base(), source: { entity: 'E', origin: '' } }, 'source.origin')
    expectInvalid({ name: 'q', source: { query, origin: 'a' }, target: { entity: 'T' } }, 'source.origin', /source\.query/)
  })

  test('retry.maxRetries 0 is allowed (disables retry)', () => {
    expect(resolvePipeline({ ...base(), retry: { maxRetries: 0 } }).retry.maxRetries).toBe(0)
  })
})

describe('serialization for the tracker', () => {
  test('functions become [Function], secrets are dropped, undefined skipped', () => {
    const out = serializable({ source: { query, entity: undefined }, headers: { authorization: 'x' }, rest: { apiKey: 'k', path: '/p' } })
    expect(out).toEqual({ source: { query: '[Function]' }, rest: { path: '/p' } })
  })

  test('fingerprint ignores key order and description, but sees real differences', () => {
    const a = configFingerprint({ name: 'p', description: 'one', source: { entity: 'E', batchSize: 5 }, target: { entity: 'T' } })
    const b = configFingerprint({ target: { entity: 'T' }, source: { batchSize: 5, entity: 'E' }, name: 'p', description: 'two' })
    const c = configFingerprint({ name: 'p', source: { entity: 'E', batchSize: 6 }, target: { entity: 'T' } })
    expect(a).toBe(b)
    expect(a).not.toBe(c)
  })
})
