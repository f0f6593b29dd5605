/**
 * Key lists as OData 4.01 `k in (…)` (lib/federation/delegate/inlist.ts): which `where` shapes
 * qualify, literals per key type (quotes doubled, UUIDs bare, anything unsafe left to CAP), the
 * combined `$filter`, and chunks bounded by characters.
 */
import { addFilter, chunkByLength, inListCost, inListFilter, inListLiteral, splitInList, usesInList } from '../../lib/federation/delegate/inlist'

const ID = { ref: ['ID'] }
const list = (...values: unknown[]) => ({ list: values.map(val => ({ val })) })

describe('inListLiteral', () => {
  test('integers, as numbers or numeric strings (Int64), unquoted', () => {
    expect(inListLiteral(42, 'cds.Integer')).toBe('42')
    expect(inListLiteral(-7, 'cds.Int32')).toBe('-7')
    expect(inListLiteral('9007199254740993', 'cds.Int64')).toBe('9007199254740993')
    expect(inListLiteral(1.5, 'cds.Integer')).toBeUndefined()
    expect(inListLiteral('1 or 1 eq 1', 'cds.Integer')).toBeUndefined()
    expect(inListLiteral(2 ** 60, 'cds.Int64')).toBeUndefined() // not exact as a JS number
  })

  test('strings quoted, a quote doubled; UUIDs bare in V4, only when they are UUIDs', () => {
    expect(inListLiteral("O'Brien", 'cds.String')).toBe("'O''Brien'")
    expect(inListLiteral("a&b=c'd", 'cds.String')).toBe("'a&b=c''d'")
    expect(inListLiteral('5f0c8e0a-1b2c-4d3e-8f4a-0123456789ab', 'cds.UUID')).toBe('5f0c8e0a-1b2c-4d3e-8f4a-0123456789ab')
    expect(inListLiteral("x') or (1 eq 1", 'cds.UUID')).toBeUndefined()
    expect(inListLiteral(12, 'cds.String')).toBeUndefined()
  })

  test('other types, unknown types and nulls stay with CAP', () => {
    expect(inListLiteral('2024-01-01', 'cds.Date')).toBeUndefined()
    expect(inListLiteral(1, undefined)).toBeUndefined()
    expect(inListLiteral(null, 'cds.Integer')).toBeUndefined()
  })
})

describe('inListFilter and addFilter', () => {
  test('literals are URL-encoded like CAP encodes its own', () => {
    expect(inListFilter('ID', ['1', '2'])).toBe('ID%20in%20(1,2)')
    expect(decodeURIComponent(inListFilter('code', ["'O''Brien'", "'a&b'"]))).toBe("code in ('O''Brien','a&b')")
    expect(inListFilter('code', ["'a&b'"])).not.toContain('&b')
  })

  test('the key list goes first, an existing $filter is kept in parentheses', () => {
    expect(addFilter('/Books', 'ID%20in%20(1)')).toBe('/Books?$filter=ID%20in%20(1)')
    expect(addFilter('/Books?$select=ID,title&$orderby=title%20desc', 'ID%20in%20(1)')).toBe('/Books?$select=ID,title&$orderby=title%20desc&$filter=ID%20in%20(1)')
    expect(addFilter('/Books?$select=ID&$filter=stock%20ge%2010&$top=5', 'ID%20in%20(1)')).toBe('/Books?$select=ID&$filter=ID%20in%20(1)%20and%20(stock%20ge%2010)&$top=5')
  })
})

describe('splitInList', () => {
  test('a key list alone or as the first conjunct', () => {
    const alone = splitInList([ID, 'in', list(1, 2)])
    expect(alone).toMatchObject({ field: 'ID', values: [1, 2], rest: undefined })
    expect(alone!.withList([3])).toEqual([ID, 'in', list(3)])
    const rest = [{ ref: ['stock'] }, '>=', { val: 10 }]
    const combined = splitInList([{ xpr: [ID, 'in', list('a', 'b')] }, 'and', { xpr: rest }])
    expect(combined).toMatchObject({ field: 'ID', values: ['a', 'b'], rest: [{ xpr: rest }] })
    expect(combined!.withList(['c'])).toEqual([{ xpr: [ID, 'in', list('c')] }, 'and', { xpr: [{ xpr: rest }] }])
  })

  test('anything an `or`, a `not`, a non-value list or a path could widen or change is left to CAP', () => {
    expect(splitInList([ID, 'in', list(1), 'or', { ref: ['x'] }, '=', { val: 1 }])).toBeUndefined()
    expect(splitInList(['not', ID, 'in', list(1)])).toBeUndefined()
    expect(splitInList([ID, 'not', 'in', list(1)])).toBeUndefined()
    expect(splitInList([ID, 'in', { list: [{ ref: ['y'] }] }])).toBeUndefined()
    expect(splitInList([{ ref: ['author', 'ID'] }, 'in', list(1)])).toBeUndefined()
    expect(splitInList([ID, 'in', { list: [] }])).toBeUndefined()
    expect(splitInList([ID, '=', { val: 1 }])).toBeUndefined()
    expect(splitInList(undefined)).toBeUndefined()
  })
})

describe('chunkByLength', () => {
  test('bounded by characters (at least one key per chunk) and by a cap when given', () => {
    const ints = Array.from({ length: 1000 }, (_, i) => i + 1)
    expect(chunkByLength(ints, inListCost, 6000)).toHaveLength(1)
    expect(chunkByLength(ints, inListCost, 6000, 100).map(c => c.length)).toEqual(Array(10).fill(100))
    const uuids = Array.from({ length: 1000 }, (_, i) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`)
    const chunks = chunkByLength(uuids, inListCost, 6000)
    expect(chunks.length).toBe(Math.ceil(1000 / Math.floor(6000 / 39)))
    expect(chunks.flat()).toEqual(uuids)
    expect(chunkByLength(['x'.repeat(10000)], inListCost, 6000)).toHaveLength(1)
  })
})

test('only OData V4 remote services use `in`', () => {
  expect(usesInList({ kind: 'odata' })).toBe(true)
  expect(usesInList({ kind: 'odata-v2' })).toBe(false)
  expect(usesInList({ kind: 'hcql' })).toBe(false)
})
