/**
 * Partitioned full reads (lib/adapters/source/partitions.ts): the key ranges are disjoint and
 * complete whatever order the sampled boundaries come back in, boundaries sit on page multiples,
 * and the merge of the ranges hands on every page once and holds at most one waiting page per range.
 */
import { boundaryPositions, depth, merged, rangesOf } from '../../lib/adapters/source/partitions'
import { matches } from '../../lib/adapters/predicate'

describe('rangesOf', () => {
  const keys = Array.from({ length: 100 }, (_, i) => i + 1)
  const inRanges = (boundaries: number[]) => keys.map(ID => rangesOf('ID', boundaries).filter(range => !range || matches({ ID }, range)).length)

  test('every key in exactly one range, for ordered, unordered and repeated boundaries', () => {
    for (const boundaries of [[25, 50, 75], [75, 25, 50], [50, 50], [90, 10], [1], [101]]) expect(inRanges(boundaries)).toEqual(keys.map(() => 1))
  })

  test('ordered boundaries give the plain ranges', () => {
    const ranges = rangesOf('ID', [25, 50])
    expect(keys.filter(ID => matches({ ID }, ranges[0]!))).toEqual(keys.slice(0, 24))
    expect(keys.filter(ID => matches({ ID }, ranges[1]!))).toEqual(keys.slice(24, 49))
    expect(keys.filter(ID => matches({ ID }, ranges[2]!))).toEqual(keys.slice(49))
  })
})

describe('boundaryPositions', () => {
  test('near k·n/p on multiples of the page size, inside the count, never the first page', () => {
    expect(boundaryPositions(200, 4, 10)).toEqual([50, 100, 150])
    expect(boundaryPositions(25, 2, 10)).toEqual([10])
    expect(boundaryPositions(100_000, 8, 1000)).toEqual([13_000, 25_000, 38_000, 50_000, 63_000, 75_000, 88_000])
    expect(boundaryPositions(30, 3, 10)).toEqual([10, 20])
  })
})

describe('depth', () => {
  test('one or two requests at a time when the round trip is short against a page; as many as fit into a round trip, at most parallel', () => {
    expect(depth(0.2, 12, 4)).toBe(1) // loopback
    expect(depth(2, 12, 8)).toBe(2)
    expect(depth(20, 30, 8)).toBe(3)
    expect(depth(50, 60, 8)).toBe(6)
    expect(depth(50, 200, 8)).toBe(2) // a slow provider: one request served while the next travels
    expect(depth(100, 110, 4)).toBe(4)
    expect(depth(50, 50, 4)).toBe(4) // the page faster than measurable: at most parallel
  })
})

describe('merged', () => {
  async function* pages(name: string, count: number, log: string[]) {
    for (let i = 0; i < count; i++) {
      log.push(`${name}${i} asked`)
      await new Promise(resolve => setTimeout(resolve, 1 + (name === 'b' ? 2 : 0)))
      yield `${name}${i}`
    }
  }

  test('every page of every range once; a range asks for its next page only once its last one was taken', async () => {
    const log: string[] = []
    const out: string[] = []
    for await (const page of merged([pages('a', 3, log), pages('b', 2, log), pages('c', 0, log)])) {
      // the range of this page has asked for its next one (or ended); no range is two pages ahead
      const asked = (name: string) => log.filter(l => l.startsWith(name)).length
      const taken = (name: string) => out.filter(p => p.startsWith(name)).length + (page.startsWith(name) ? 1 : 0)
      for (const name of ['a', 'b']) expect(asked(name) - taken(name)).toBeLessThanOrEqual(1)
      out.push(page)
    }
    expect(out.sort()).toEqual(['a0', 'a1', 'a2', 'b0', 'b1'])
  })

  test('at most `limit` ranges have a page under way or waiting; the others take turns', async () => {
    const log: string[] = []
    const out: string[] = []
    for await (const page of merged([pages('a', 3, log), pages('b', 3, log), pages('c', 3, log)], () => 2)) {
      // asked for, not yet handed on (the page in hand counts as handed on)
      expect(log.length - out.length - 1).toBeLessThanOrEqual(2)
      out.push(page)
    }
    expect(out.sort()).toEqual(['a0', 'a1', 'a2', 'b0', 'b1', 'b2', 'c0', 'c1', 'c2'])
  })

  test('the first failure ends the merge', async () => {
    async function* failing() {
      yield 'x'
      throw new Error('range failed')
    }
    const out: string[] = []
    await expect((async () => { for await (const page of merged([failing(), pages('a', 50, [])])) out.push(page) })()).rejects.toThrow('range failed')
    expect(out.length).toBeLessThan(50)
  })
})
