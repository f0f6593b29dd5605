/**
 * The `events` option (docs/guide/event-driven.md): defaults, shorthands, and one
 * INVALID_CONFIG error naming the offending key for every misfit.
 */
import { eventsOf, resolveEvents } from '../../lib/events/config'
import { keyPaths, keysOf, eventTimeOf } from '../../lib/events/subscribe'
import { PipelineError } from '../../lib/pipeline/errors'
import type { PipelineConfig } from '../../lib/pipeline/types'

function rejection(input: unknown): PipelineError {
  try {
    resolveEvents(input)
  } catch (error) {
    expect(error).toBeInstanceOf(PipelineError)
    return error as PipelineError
  }
  throw new Error('expected resolveEvents to throw')
}

test('shorthands and defaults', () => {
  expect(resolveEvents(undefined)).toBeUndefined()
  expect(resolveEvents(false)).toBeUndefined()
  expect(resolveEvents(true)).toEqual({ service: 'messaging', window: 200, maxBatch: 1000 })
  expect(resolveEvents('bus')).toEqual({ service: 'bus', window: 200, maxBatch: 1000 })
  expect(resolveEvents({ service: 'bus', topics: ['A', { topic: 'B', key: 'BP', action: 'delete' }, { topic: 'C', key: { a: 'x.a', b: 'y' }, action: 'payload' }], window: '1s', maxBatch: 50 })).toEqual({
    service: 'bus', window: 1000, maxBatch: 50,
    topics: [{ topic: 'A', action: 'upsert' }, { topic: 'B', key: { '': 'BP' }, action: 'delete' }, { topic: 'C', key: { a: 'x.a', b: 'y' }, action: 'payload' }],
  })
})

test.each([
  [42, 'events'],
  ['', 'events'],
  [{ services: 'x' }, 'events.services'],
  [{ service: 3 }, 'events.service'],
  [{ window: 'soon' }, 'events.window'],
  [{ window: '2h' }, 'events.window'],
  [{ maxBatch: 0 }, 'events.maxBatch'],
  [{ maxBatch: 1.5 }, 'events.maxBatch'],
  [{ topics: [] }, 'events.topics'],
  [{ topics: 'A' }, 'events.topics'],
  [{ topics: [''] }, 'events.topics[0]'],
  [{ topics: ['A', { topic: 'B', action: 'merge' }] }, 'events.topics[1].action'],
  [{ topics: [{ key: 'ID' }] }, 'events.topics[0].topic'],
  [{ topics: [{ topic: 'A', keys: 'ID' }] }, 'events.topics[0].keys'],
  [{ topics: [{ topic: 'A', key: 'a b' }] }, 'events.topics[0].key'],
  [{ topics: [{ topic: 'A', key: { ID: 3 } }] }, 'events.topics[0].key.ID'],
  [{ topics: ['A', 'A'] }, 'events.topics[1].topic'],
])('%j is refused naming %s', (input, key) => {
  const error = rejection(input)
  expect(error.code).toBe('INVALID_CONFIG')
  expect(error.status).toBe(400)
  expect(error.target).toBe(key)
  expect(error.message).toContain(key)
})

test('a query-shape pipeline cannot subscribe', () => {
  const config = { name: 'q', source: { query: () => ({}) }, target: { entity: 'T' }, events: true } as unknown as PipelineConfig
  expect(() => eventsOf(config)).toThrow(expect.objectContaining({ target: 'events' }))
})

test('key paths: defaults, one field for a single key, mappings checked against the source keys', () => {
  expect(keyPaths({ topic: 't', action: 'upsert' }, 0, ['ID'])).toEqual({ ID: 'ID' })
  expect(keyPaths({ topic: 't', action: 'upsert', key: { '': 'BusinessPartner' } }, 0, ['BP'])).toEqual({ BP: 'BusinessPartner' })
  expect(() => keyPaths({ topic: 't', action: 'upsert', key: { '': 'x' } }, 2, ['a', 'b'])).toThrow(expect.objectContaining({ target: 'events.topics[2].key' }))
  expect(() => keyPaths({ topic: 't', action: 'upsert', key: { a: 'x', c: 'y' } }, 0, ['a', 'b'])).toThrow(expect.objectContaining({ target: 'events.topics[0].key.c' }))
  expect(() => keyPaths({ topic: 't', action: 'upsert', key: { a: 'x' } }, 0, ['a', 'b'])).toThrow(expect.objectContaining({ target: 'events.topics[0].key' }))
})

test('keys of a message: nested paths, arrays of records, incomplete keys counted apart', () => {
  const topic = { topic: 't', action: 'upsert' as const }
  expect(keysOf({ data: { w: { a: 1 }, b: 'x' } }, topic, { a: 'w.a', b: 'b' })).toEqual({ keys: [{ key: { a: 1, b: 'x' }, action: 'upsert' }], unnamed: 0 })
  expect(keysOf({ data: [{ ID: 1 }, { ID: 2 }, { other: 3 }] }, topic, { ID: 'ID' })).toEqual({ keys: [{ key: { ID: 1 }, action: 'upsert' }, { key: { ID: 2 }, action: 'upsert' }], unnamed: 1 })
  expect(keysOf({ data: { ID: 5, title: 'x' } }, { topic: 't', action: 'payload' }, { ID: 'ID' }).keys[0]).toEqual({ key: { ID: 5 }, action: 'payload', payload: { ID: 5, title: 'x' } })
})

test('the event time: the message header when sensible, else now', () => {
  expect(eventTimeOf({ headers: { time: '2026-01-02T03:04:05.000Z' } })).toBe('2026-01-02T03:04:05.000Z')
  const now = Date.now()
  expect(Date.parse(eventTimeOf({ headers: { time: 'garbage' } }))).toBeGreaterThanOrEqual(now - 5)
  expect(Date.parse(eventTimeOf({ headers: { time: '2999-01-01T00:00:00Z' } }))).toBeLessThan(Date.parse('2999-01-01'))
})
