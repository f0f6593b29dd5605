/**
 * Pure parts of the delegate proxy: key predicates and chunks, join pairs of associations,
 * and the response cache (single flight, TTL, tenant tags, isolation of returned copies).
 */
import { and, chunk, distinctTuples, keyPredicate, tupleId } from '../../lib/federation/delegate/keys'
import { joinPairs, type LinkedElement, type LinkedEntity } from '../../lib/federation/delegate/model'
import { ResponseCache } from '../../lib/federation/cache/response'
import type { DelegateInfo } from '../../lib/federation/delegate/model'
import { countOf, type RemoteResult } from '../../lib/federation/delegate/remote'
import { flatSelect } from '../../lib/federation/delegate/query'

describe('key predicates', () => {
  test('one key element: = for one value, in for several', () => {
    expect(keyPredicate(['ID'], [[1]])).toEqual([{ ref: ['ID'] }, '=', { val: 1 }])
    expect(keyPredicate(['ID'], [[1], [2]])).toEqual([{ ref: ['ID'] }, 'in', { list: [{ val: 1 }, { val: 2 }] }])
  })

  test('composite keys: an OR of parenthesized ANDs', () => {
    expect(keyPredicate(['a', 'b'], [[1, 'x'], [2, 'y']])).toEqual([
      { xpr: [{ ref: ['a'] }, '=', { val: 1 }, 'and', { ref: ['b'] }, '=', { val: 'x' }] },
      'or',
      { xpr: [{ ref: ['a'] }, '=', { val: 2 }, 'and', { ref: ['b'] }, '=', { val: 'y' }] },
    ])
  })

  test('and() parenthesizes every part, so an or inside never widens', () => {
    const keys = [{ ref: ['ID'] }, '=', { val: 1 }]
    const client = [{ ref: ['p'] }, '=', { val: 1 }, 'or', { ref: ['p'] }, '=', { val: 2 }]
    expect(and(keys, client)).toEqual([{ xpr: keys }, 'and', { xpr: client }])
    expect(and(keys, undefined)).toBe(keys)
    expect(and(undefined, [])).toBeUndefined()
  })

  test('distinct complete tuples, bounded chunks', () => {
    const rows = [{ a: 1, b: 2 }, { a: 1, b: 2 }, { a: 1, b: null }, { a: 2, b: 3 }]
    expect(distinctTuples(rows, ['a', 'b'])).toEqual([[1, 2], [2, 3]])
    expect(tupleId([1, 'x'])).toBe(tupleId(['1', 'x']))
    expect(chunk([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]])
  })
})

describe('join pairs', () => {
  const child: LinkedEntity = { name: 'Child', elements: {} }
  const parentRef: LinkedElement = { name: 'parent', target: 'Parent', keys: [{ ref: ['ID'] }] }
  child.elements.parent = parentRef

  test('managed to-one: generated foreign keys to target keys (composite too)', () => {
    expect(joinPairs({ name: 'book', target: 'Books', keys: [{ ref: ['ID'] }] })).toEqual([{ source: 'book_ID', target: 'ID' }])
    expect(joinPairs({ name: 'work', target: 'Works', keys: [{ ref: ['author_ID'] }, { ref: ['number'] }] }))
      .toEqual([{ source: 'work_author_ID', target: 'author_ID' }, { source: 'work_number', target: 'number' }])
  })

  test('unmanaged: equalities and $self backlinks', () => {
    expect(joinPairs({ name: 'works', target: 'Works', on: [{ ref: ['works', 'author_ID'] }, '=', { ref: ['ID'] }] }))
      .toEqual([{ source: 'ID', target: 'author_ID' }])
    expect(joinPairs({ name: 'children', _target: child, on: [{ ref: ['children', 'parent'] }, '=', { ref: ['$self'] }] }))
      .toEqual([{ source: 'ID', target: 'parent_ID' }])
    expect(joinPairs({ name: 'x', target: 'X', on: [{ ref: ['x', 'a'] }, '>', { ref: ['b'] }] })).toBeUndefined()
  })
})

describe('response cache', () => {
  const info = { entity: 'S.Books', remoteService: 'R', remoteEntity: 'R.Books', entitySet: 'Books', renames: new Map(), inverse: new Map(), options: { readonly: false } } as DelegateInfo
  const options = { ttl: 50, strategy: 'response' as const, tenantScoped: true }
  const result = (n: number): RemoteResult => ({ rows: [{ ID: n }], one: false })

  test('concurrent misses share one load; hits until the TTL; callers get their own copies', async () => {
    const cache = new ResponseCache()
    let loads = 0
    const load = async () => { loads++; await new Promise(r => setTimeout(r, 20)); return result(loads) }
    const all = await Promise.all(Array.from({ length: 5 }, () => cache.get(info, options, { q: 1 }, load)))
    expect(loads).toBe(1)
    expect(cache.stats).toMatchObject({ misses: 1, shared: 4, loads: 1 })
    all[0].rows[0].ID = 99 // a caller changing its copy changes nothing cached
    expect((await cache.get(info, options, { q: 1 }, load)).rows).toEqual([{ ID: 1 }])
    expect(cache.stats.hits).toBe(1)
    await cache.get(info, options, { q: 2 }, load)
    expect(loads).toBe(2)
    await new Promise(r => setTimeout(r, 60))
    await cache.get(info, options, { q: 1 }, load)
    expect(loads).toBe(3)
  })

  test('a failed load is not cached', async () => {
    const cache = new ResponseCache()
    await expect(cache.get(info, options, {}, async () => { throw new Error('down') })).rejects.toThrow('down')
    expect((await cache.get(info, options, {}, async () => result(1))).rows).toEqual([{ ID: 1 }])
  })

  test('invalidation drops the entity\'s entries', async () => {
    const cache = new ResponseCache()
    await cache.get(info, options, {}, async () => result(1))
    expect(cache.size).toBe(1)
    cache.invalidate(info, options)
    expect(cache.size).toBe(0)
  })
})

describe('copies of derived queries and remote counts (issue 22)', () => {
  test('a copy of a cds.ql clone keeps the options it inherits (CAP\'s draft handling derives every query)', async () => {
    const cds = (await import('@sap/cds')).default
    const original = cds.ql.SELECT.from('S.Customers').where({ ID: { '<=': 3 } }).orderBy('name desc').limit(3, 2)
    ;(original.SELECT as { count?: boolean }).count = true
    const derived = cds.ql.clone(original) as unknown as { SELECT: Record<string, unknown> }
    derived.SELECT.columns = [{ ref: ['ID'] }]
    expect({ ...derived.SELECT }.where).toBeUndefined() // what a spread keeps
    const copy = flatSelect(derived.SELECT)
    expect(Object.keys(copy).sort()).toEqual(['columns', 'count', 'from', 'limit', 'orderBy', 'where'])
    expect(copy.limit).toEqual({ rows: { val: 3 }, offset: { val: 2 } })
  })

  test('a remote $count: numbers, and the numeric strings of OData V2', () => {
    expect([countOf(3), countOf('3'), countOf(' 12 '), countOf(0), countOf('0')]).toEqual([3, 3, 12, 0, 0])
    expect([countOf(undefined), countOf(null), countOf('x'), countOf('-1'), countOf(Number.NaN)]).toEqual([undefined, undefined, undefined, undefined, undefined])
  })
})
