/**
 * A message's identity (lib/events/subscribe.ts identityOf) and the version its keys are stored
 * under (lib/events/store.ts derivedVersion): the same for every fan-out copy of one message,
 * never the same for two messages; no identity without an `id`.
 */
import { identityOf } from '../../lib/events/subscribe'
import { derivedVersion } from '../../lib/events/store'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

test('copies of one message share an identity; no id, no identity', () => {
  const message = { data: { ID: 1 }, headers: { id: 'm-1', source: '/s4', time: '2026-01-01T00:00:00.000Z' } }
  expect(identityOf({ ...message, headers: { ...message.headers } }, 'T')).toBe(identityOf(message, 'T'))
  expect(identityOf({ data: { ID: 1 }, headers: { time: 't' } }, 'T')).toBeUndefined()
  expect(identityOf({ data: { ID: 1 }, headers: { id: '' } }, 'T')).toBeUndefined()
  expect(identityOf({ data: { ID: 1 } }, 'T')).toBeUndefined()
})

test('two messages never share an identity: another id, source, time or topic', () => {
  const base = { id: 'm-1', source: '/s4', time: 't1' }
  const of = (headers: Record<string, unknown>, topic = 'T') => identityOf({ headers: { ...base, ...headers } }, topic)
  const all = [of({}), of({ id: 'm-2' }), of({ source: '/other' }), of({ time: 't2' }), of({}, 'U')]
  expect(new Set(all).size).toBe(all.length)
})

test('a derived version: the same for the same identity and key index, another for either changed, in UUID form', () => {
  expect(derivedVersion('a', 0)).toBe(derivedVersion('a', 0))
  expect(derivedVersion('a', 0)).not.toBe(derivedVersion('a', 1))
  expect(derivedVersion('a', 0)).not.toBe(derivedVersion('b', 0))
  for (const v of [derivedVersion('a', 0), derivedVersion('x', 7)]) expect(v).toMatch(UUID)
  // a random version (randomUUID, digit 4) is never taken for a derived one
  expect(crypto.randomUUID()[14]).toBe('4')
})
