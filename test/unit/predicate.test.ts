/**
 * The predicate language: CQN tokens for databases/in-process services, `$filter` text for
 * OData with literals typed by the element, keyset continuation, in-memory evaluation and
 * the slice objects of partial refresh.
 */
import { after, and, before, fromSlice, matches, notBefore, odataLiteral, toCqn, toODataFilter, type Predicate } from '../../lib/adapters/predicate'

const types: Record<string, string> = {
  ID: 'cds.Integer', big: 'cds.Int64', price: 'cds.Decimal', title: 'cds.String', active: 'cds.Boolean',
  day: 'cds.Date', time: 'cds.Time', at: 'cds.Timestamp', dt: 'cds.DateTime', uid: 'cds.UUID', ratio: 'cds.Double',
}
const typeOf = (field: string) => types[field]

describe('toCqn', () => {
  test('comparison → ref, operator, bound val', () => {
    expect(toCqn({ field: 'ID', op: 'eq', value: 5 })).toEqual([{ ref: ['ID'] }, '=', { val: 5 }])
    expect(toCqn({ field: 'ID', op: 'ne', value: 5 })).toEqual([{ ref: ['ID'] }, '!=', { val: 5 }])
    expect(toCqn({ field: 'at', op: 'ge', value: '2026-01-01T00:00:00.000Z' })).toEqual([{ ref: ['at'] }, '>=', { val: '2026-01-01T00:00:00.000Z' }])
    expect(toCqn({ field: 'ID', op: 'lt', value: 1 })[1]).toBe('<')
    expect(toCqn({ field: 'ID', op: 'le', value: 1 })[1]).toBe('<=')
    expect(toCqn({ field: 'ID', op: 'gt', value: 1 })[1]).toBe('>')
  })

  test('values are bound, never spliced: a quote stays inside the val', () => {
    expect(toCqn({ field: 'title', op: 'eq', value: "O'Brien' or 1=1 --" })).toEqual([{ ref: ['title'] }, '=', { val: "O'Brien' or 1=1 --" }])
  })

  test('null comparisons become is [not] null', () => {
    expect(toCqn({ field: 'at', op: 'eq', value: null })).toEqual([{ ref: ['at'] }, 'is', 'null'])
    expect(toCqn({ field: 'at', op: 'ne', value: null })).toEqual([{ ref: ['at'] }, 'is', 'not', 'null'])
  })

  test('contains → func', () => {
    expect(toCqn({ field: 'title', op: 'contains', value: 'abc' })).toEqual([{ func: 'contains', args: [{ ref: ['title'] }, { val: 'abc' }] }])
  })

  test('and/or groups are parenthesised (xpr) so an or never widens a combined filter', () => {
    const predicate: Predicate = { and: [{ field: 'ID', op: 'gt', value: 1 }, { or: [{ field: 'title', op: 'eq', value: 'a' }, { field: 'title', op: 'eq', value: 'b' }] }] }
    expect(toCqn(predicate)).toEqual([
      { xpr: [{ ref: ['ID'] }, '>', { val: 1 }] },
      'and',
      { xpr: [{ xpr: [{ ref: ['title'] }, '=', { val: 'a' }] }, 'or', { xpr: [{ ref: ['title'] }, '=', { val: 'b' }] }] },
    ])
  })
})

describe('odataLiteral: typed by the element', () => {
  test.each([
    ['abc', 'cds.String', 'v4', "'abc'"],
    ["O'Brien", 'cds.String', 'v4', "'O''Brien'"],
    ["it''s", undefined, 'v2', "'it''''s'"],
    [42, 'cds.Integer', 'v4', '42'],
    ['42', 'cds.Integer', 'v4', '42'],
    [-1.5, 'cds.Double', 'v4', '-1.5'],
    [9007199254740993n, 'cds.Int64', 'v4', '9007199254740993'],
    ['12', 'cds.Int64', 'v2', '12L'],
    ['12.50', 'cds.Decimal', 'v4', '12.50'],
    ['12.50', 'cds.Decimal', 'v2', '12.50M'],
    [true, 'cds.Boolean', 'v4', 'true'],
    ['false', 'cds.Boolean', 'v4', 'false'],
    ['2026-03-01', 'cds.Date', 'v4', '2026-03-01'],
    ['2026-03-01', 'cds.Date', 'v2', "datetime'2026-03-01T00:00:00'"],
    ['10:20:30', 'cds.Time', 'v4', '10:20:30'],
    ['10:20:30', 'cds.Time', 'v2', "time'PT10H20M30S'"],
    ['2026-03-01T10:20:30.123Z', 'cds.Timestamp', 'v4', '2026-03-01T10:20:30.123Z'],
    ['2026-03-01T10:20:30.123Z', 'cds.DateTime', 'v4', '2026-03-01T10:20:30Z'],
    ['2026-03-01T10:20:30Z', 'cds.Timestamp', 'v2', "datetimeoffset'2026-03-01T10:20:30.000Z'"],
    [new Date('2026-03-01T10:20:30.000Z'), 'cds.Timestamp', 'v4', '2026-03-01T10:20:30.000Z'],
    ['0f9c0d62-1b2a-4c55-9d3e-111111111111', 'cds.UUID', 'v4', '0f9c0d62-1b2a-4c55-9d3e-111111111111'],
    ['0f9c0d62-1b2a-4c55-9d3e-111111111111', 'cds.UUID', 'v2', "guid'0f9c0d62-1b2a-4c55-9d3e-111111111111'"],
    [null, 'cds.String', 'v4', 'null'],
  ] as Array<[unknown, string | undefined, 'v4' | 'v2', string]>)('%s as %s (%s) → %s', (value, type, version, literal) => {
    expect(odataLiteral(value, type, version)).toBe(literal)
  })

  test('a non-numeric value for a numeric element is refused, not spliced', () => {
    expect(() => odataLiteral('1 or 1 eq 1', 'cds.Integer', 'v4')).toThrow(TypeError)
    expect(() => odataLiteral('12abc', 'cds.Decimal', 'v2')).toThrow(/not a number/)
  })
})

describe('toODataFilter', () => {
  test('comparison with typed literal', () => {
    expect(toODataFilter({ field: 'ID', op: 'gt', value: 10 }, typeOf, 'v4')).toBe('ID gt 10')
    expect(toODataFilter({ field: 'title', op: 'eq', value: "O'Brien" }, typeOf, 'v4')).toBe("title eq 'O''Brien'")
    expect(toODataFilter({ field: 'at', op: 'ge', value: '2026-01-01T00:00:00.000Z' }, typeOf, 'v4')).toBe('at ge 2026-01-01T00:00:00.000Z')
    expect(toODataFilter({ field: 'at', op: 'eq', value: null }, typeOf, 'v4')).toBe('at eq null')
    expect(toODataFilter({ field: 'big', op: 'gt', value: 5 }, typeOf, 'v2')).toBe('big gt 5L')
  })

  test('contains: V4 contains(), V2 substringof(); quotes escaped', () => {
    expect(toODataFilter({ field: 'title', op: 'contains', value: "a'b" }, typeOf, 'v4')).toBe("contains(title,'a''b')")
    expect(toODataFilter({ field: 'title', op: 'contains', value: 'x' }, typeOf, 'v2')).toBe("substringof('x',title)")
  })

  test('groups are parenthesised: an or inside an and stays an or', () => {
    const predicate: Predicate = {
      and: [
        { field: 'at', op: 'ge', value: '2026-01-01T00:00:00.000Z' },
        { or: [{ field: 'ID', op: 'gt', value: 5 }, { and: [{ field: 'ID', op: 'eq', value: 5 }, { field: 'title', op: 'gt', value: 'm' }] }] },
      ],
    }
    expect(toODataFilter(predicate, typeOf, 'v4')).toBe("(at ge 2026-01-01T00:00:00.000Z) and ((ID gt 5) or ((ID eq 5) and (title gt 'm')))")
  })
})

describe('and()', () => {
  test('drops undefined parts, unwraps single parts', () => {
    const a: Predicate = { field: 'ID', op: 'eq', value: 1 }
    const b: Predicate = { field: 'title', op: 'eq', value: 'x' }
    expect(and()).toBeUndefined()
    expect(and(undefined, undefined)).toBeUndefined()
    expect(and(a, undefined)).toBe(a)
    expect(and(a, b)).toEqual({ and: [a, b] })
  })
})

describe('after(): keyset continuation', () => {
  test('one column → strictly greater', () => {
    expect(after(['ID'], { ID: 7, title: 'x' })).toEqual({ field: 'ID', op: 'gt', value: 7 })
  })

  test('several columns → lexicographic, led by the first column\'s plain comparison: a >= x and (a > x or (a = x and b > y) or …)', () => {
    // the lead keeps a database's index scan in order once a delta's later pages carry the continuation alone
    const last = { modifiedAt: '2026-01-01T00:00:00.000Z', ID: 7, sub: 'b' }
    expect(after(['modifiedAt', 'ID', 'sub'], last)).toEqual({
      and: [
        { field: 'modifiedAt', op: 'ge', value: last.modifiedAt },
        {
          or: [
            { field: 'modifiedAt', op: 'gt', value: last.modifiedAt },
            { and: [{ field: 'modifiedAt', op: 'eq', value: last.modifiedAt }, { field: 'ID', op: 'gt', value: 7 }] },
            { and: [{ field: 'modifiedAt', op: 'eq', value: last.modifiedAt }, { field: 'ID', op: 'eq', value: 7 }, { field: 'sub', op: 'gt', value: 'b' }] },
          ],
        },
      ],
    })
  })

  test('a last row whose first column is null: no lead (`a ge null` matches nothing), the alternatives alone', () => {
    const continuation = after(['seq', 'ID'], { seq: null, ID: 2 })
    expect(continuation).toEqual({ or: [{ field: 'seq', op: 'gt', value: null }, { and: [{ field: 'seq', op: 'eq', value: null }, { field: 'ID', op: 'gt', value: 2 }] }] })
    expect([{ seq: null, ID: 2 }, { seq: null, ID: 3 }].filter(row => matches(row, continuation))).toEqual([{ seq: null, ID: 3 }])
  })

  test('selects exactly the rows after the last one in that order (ties on the first column included)', () => {
    const rows = [
      { t: 1, ID: 1 }, { t: 1, ID: 2 }, { t: 2, ID: 1 }, { t: 2, ID: 3 }, { t: 2, ID: 4 }, { t: 3, ID: 0 },
    ]
    const continuation = after(['t', 'ID'], { t: 2, ID: 3 })
    expect(rows.filter(row => matches(row, continuation))).toEqual([{ t: 2, ID: 4 }, { t: 3, ID: 0 }])
    expect(toODataFilter(continuation, () => 'cds.Integer', 'v4')).toBe('(t ge 2) and ((t gt 2) or ((t eq 2) and (ID gt 3)))')
  })
})

describe('notBefore() / before(): range bounds', () => {
  const rows = [1, 2, 3].flatMap(t => [1, 2, 3].map(ID => ({ t, ID })))
  test('over several columns they lead with the first column\'s plain comparison, so a database ranges its index scan on it in order', () => {
    expect(before(['t', 'ID'], { t: 2, ID: 2 })).toEqual({ and: [{ field: 't', op: 'le', value: 2 }, { or: [{ field: 't', op: 'lt', value: 2 }, { and: [{ field: 't', op: 'eq', value: 2 }, { field: 'ID', op: 'lt', value: 2 }] }] }] })
    expect((notBefore(['t', 'ID'], { t: 2, ID: 2 }) as { and: Array<{ op?: string }> }).and[0]).toEqual({ field: 't', op: 'ge', value: 2 })
    expect(before(['ID'], { ID: 2 })).toEqual({ field: 'ID', op: 'lt', value: 2 })
  })

  test('and select exactly the rows before / at or after the bound in that order', () => {
    expect(rows.filter(row => matches(row, before(['t', 'ID'], { t: 2, ID: 2 })))).toEqual([{ t: 1, ID: 1 }, { t: 1, ID: 2 }, { t: 1, ID: 3 }, { t: 2, ID: 1 }])
    expect(rows.filter(row => matches(row, notBefore(['t', 'ID'], { t: 2, ID: 2 })))).toEqual([{ t: 2, ID: 2 }, { t: 2, ID: 3 }, { t: 3, ID: 1 }, { t: 3, ID: 2 }, { t: 3, ID: 3 }])
  })
})

describe('matches(): in-memory evaluation', () => {
  const row = { ID: 10, title: 'Hello World', author: null, at: '2026-01-02T00:00:00.000Z' }
  test.each([
    [{ field: 'ID', op: 'eq', value: 10 }, true],
    [{ field: 'ID', op: 'eq', value: '10' }, true],
    [{ field: 'ID', op: 'ne', value: 10 }, false],
    [{ field: 'ID', op: 'gt', value: 9 }, true],
    [{ field: 'ID', op: 'gt', value: '9' }, true], // numeric, not text, comparison
    [{ field: 'ID', op: 'le', value: 9 }, false],
    [{ field: 'title', op: 'contains', value: 'world' }, true],
    [{ field: 'author', op: 'eq', value: null }, true],
    [{ field: 'author', op: 'gt', value: 'a' }, false],
    [{ field: 'at', op: 'ge', value: '2026-01-01T00:00:00.000Z' }, true],
    [{ or: [{ field: 'ID', op: 'eq', value: 1 }, { field: 'ID', op: 'eq', value: 10 }] }, true],
    [{ and: [{ field: 'ID', op: 'eq', value: 10 }, { field: 'title', op: 'eq', value: 'x' }] }, false],
  ] as Array<[Predicate, boolean]>)('%j → %s', (predicate, expected) => {
    expect(matches(row, predicate)).toBe(expected)
  })
})

describe('fromSlice(): partial-refresh slices', () => {
  test('plain values are equality', () => {
    expect(fromSlice({ author: 'X' })).toEqual({ field: 'author', op: 'eq', value: 'X' })
    expect(fromSlice({ author: 'X', year: 2026 })).toEqual({ and: [{ field: 'author', op: 'eq', value: 'X' }, { field: 'year', op: 'eq', value: 2026 }] })
  })

  test('operator objects: symbols and names', () => {
    expect(fromSlice({ day: { '>=': '2026-01-01', '<': '2026-02-01' } })).toEqual({
      and: [{ field: 'day', op: 'ge', value: '2026-01-01' }, { field: 'day', op: 'lt', value: '2026-02-01' }],
    })
    expect(fromSlice({ n: { ne: 3 } })).toEqual({ field: 'n', op: 'ne', value: 3 })
    expect(fromSlice({ n: { '<>': 3 } })).toEqual({ field: 'n', op: 'ne', value: 3 })
  })

  test('null and Date values are equality, not operator objects', () => {
    const when = new Date('2026-01-01T00:00:00.000Z')
    expect(fromSlice({ author: null })).toEqual({ field: 'author', op: 'eq', value: null })
    expect(fromSlice({ at: when })).toEqual({ field: 'at', op: 'eq', value: when })
  })

  test('unsupported operators are rejected naming field and operator', () => {
    expect(() => fromSlice({ author: { like: 'X%' } })).toThrow(/operator 'like' on 'author'/)
  })

  test('an empty slice is no predicate', () => {
    expect(fromSlice({})).toBeUndefined()
  })

  test('slice → CQN deletes exactly that slice', () => {
    expect(toCqn(fromSlice({ author: "O'Hara" })!)).toEqual([{ ref: ['author'] }, '=', { val: "O'Hara" }])
  })
})
