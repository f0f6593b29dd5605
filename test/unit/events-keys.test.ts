/**
 * The check of a message's keys against the source's key types at receipt (lib/events/subscribe.ts
 * checkKeys, lib/engine/records/index.ts keyProblem): a key no row can have is refused, naming the
 * element and why; keys of the right type pass, as do elements without a known type.
 */
import { checkKeys, keysOf, messageIdOf } from '../../lib/events/subscribe'
import type { CsnElement } from '../../lib/model/csn'

const elements: Record<string, CsnElement> = {
  ID: { type: 'cds.Integer', key: true },
  big: { type: 'cds.Int64', key: true },
  uuid: { type: 'cds.UUID', key: true },
  code: { type: 'cds.String', length: 10, key: true } as CsnElement,
  day: { type: 'cds.Date', key: true },
}
const check = (element: string, value: unknown) => {
  const { valid, refused } = checkKeys([{ key: { [element]: value }, action: 'upsert' }], elements)
  return refused.length ? refused[0] : valid.length
}

test.each([
  ['ID', 7], ['ID', '7'], ['ID', -2147483648], ['big', '9223372036854775807'], ['big', 9007199254740991],
  ['uuid', '0f8fad5b-d9cb-469f-a165-70867728950e'], ['uuid', '0F8FAD5B-D9CB-469F-A165-70867728950E'],
  ['code', 'ABCDEFGHIJ'], ['code', 'ÄÖÜ'], ['day', '2026-02-28'],
])('%s = %j is a key', (element, value) => {
  expect(check(element, value)).toBe(1)
})

test.each([
  ['ID', 'not-a-number', /'not-a-number' is not an integer \(Integer\)/],
  ['ID', 4.5, /4\.5 is not an integer/],
  ['ID', 2147483648, /out of range for Integer/],
  ['big', '9223372036854775808', /out of range for Int64/],
  ['uuid', 'not-a-uuid', /'not-a-uuid' is not a UUID/],
  ['uuid', '0f8fad5b-d9cb-469f-a165-70867728950', /is not a UUID/],
  ['code', 'ABCDEFGHIJK', /11 characters exceed String\(10\)/],
  ['day', '2026-02-30', /is not a Date/],
  ['day', 'yesterday', /is not a Date/],
])('%s = %j is refused naming the element', (element, value, problem) => {
  expect(check(element, value)).toEqual({ element, problem: expect.stringMatching(problem) })
})

test('a compound key is refused for any element; elements of unknown type are not checked', () => {
  const keys = [
    { key: { ID: 1, code: 'A' }, action: 'upsert' as const },
    { key: { ID: 2, code: 'far too long a code' }, action: 'upsert' as const },
    { key: { ID: 'x', code: 'B' }, action: 'delete' as const },
  ]
  const { valid, refused } = checkKeys(keys, elements)
  expect(valid).toEqual([keys[0]])
  expect(refused.map(r => r.element)).toEqual(['code', 'ID'])
  expect(checkKeys([{ key: { other: 'anything' }, action: 'upsert' }], { other: undefined }).valid).toHaveLength(1)
})

test("the keys of a message's data array are checked one by one; the message id for the log", () => {
  const message = { data: [{ BookID: 1 }, { BookID: 'not-a-number' }, { BookID: 3 }], headers: { id: 'm-7' } }
  const { keys } = keysOf(message, { topic: 'T', key: { ID: 'BookID' }, action: 'upsert' }, { ID: 'BookID' })
  const { valid, refused } = checkKeys(keys, elements)
  expect(valid.map(k => k.key.ID)).toEqual([1, 3])
  expect(refused).toEqual([{ element: 'ID', problem: expect.stringContaining("'not-a-number'") }])
  expect(messageIdOf(message)).toBe('m-7')
  expect(messageIdOf({ data: {} })).toBeUndefined()
})
