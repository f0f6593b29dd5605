/**
 * Partitioned full reads (lib/adapters/source/partitions.ts): the key ranges are disjoint and
 * complete whatever order the sampled boundaries come back in, boundaries sit on page multiples,
 * and the merge of the ranges hands on every page once and holds at most one waiting page per range.
 * (How many requests at once: test/unit/governor.test.ts.)
 */
import { boundaryPositions, merged, partitionSender, rangeBounds } from '../../lib/adapters/source/partitions'
import { and, matches } from '../../lib/adapters/predicate'
import type { DataRecord } from '../../lib/pipeline/types'

/** Each range's whole filter. */
const rangesOf = (order: string[], boundaries: DataRecord[]) => rangeBounds(order, boundaries).map(({ from, to }) => and(from, to))

describe('rangeBounds', () => {
  const keys = Array.from({ length: 100 }, (_, i) => i + 1)
  const bounds = (values: number[]) => values.map(ID => ({ ID }))
  const inRanges = (boundaries: number[]) => keys.map(ID => rangesOf(['ID'], bounds(boundaries)).filter(range => !range || matches({ ID }, range)).length)

  test('every key in exactly one range, for ordered, unordered and repeated boundaries', () => {
    for (const boundaries of [[25, 50, 75], [75, 25, 50], [50, 50], [90, 10], [1], [101]]) expect(inRanges(boundaries)).toEqual(keys.map(() => 1))
  })

  test('ordered boundaries give the plain ranges', () => {
    const ranges = rangesOf(['ID'], bounds([25, 50]))
    expect(keys.filter(ID => matches({ ID }, ranges[0]!))).toEqual(keys.slice(0, 24))
    expect(keys.filter(ID => matches({ ID }, ranges[1]!))).toEqual(keys.slice(24, 49))
    expect(keys.filter(ID => matches({ ID }, ranges[2]!))).toEqual(keys.slice(49))
  })

  test('a delta order (watermark, then key) with ties across the boundaries: every row in exactly one range, in order', () => {
    // 60 rows, 20 each at three timestamps: the boundaries fall inside the groups of equal value
    const rows = Array.from({ length: 60 }, (_, i) => ({ modifiedAt: `2026-01-0${1 + Math.floor(i / 20)}T00:00:00.000Z`, ID: i + 1 }))
    const order = ['modifiedAt', 'ID']
    for (const boundaries of [[rows[10], rows[30], rows[45]], [rows[45], rows[10]], [rows[20], rows[20]]]) {
      const ranges = rangesOf(order, boundaries)
      const owners = rows.map(row => ranges.map((range, k) => (!range || matches(row, range) ? k : -1)).filter(k => k >= 0))
      expect(owners.every(list => list.length === 1)).toBe(true)
    }
    const ranges = rangesOf(order, [rows[10], rows[30]])
    expect(rows.filter(row => matches(row, ranges[1]!)).map(row => row.ID)).toEqual(Array.from({ length: 20 }, (_, i) => i + 11))
  })

  test('composite keys: ranges of the key tuple', () => {
    const rows = [1, 2, 3].flatMap(a => [1, 2, 3].map(b => ({ a, b })))
    const ranges = rangesOf(['a', 'b'], [{ a: 1, b: 3 }, { a: 2, b: 2 }])
    expect(ranges.map(range => rows.filter(row => matches(row, range!)).map(({ a, b }) => `${a}${b}`))).toEqual([['11', '12'], ['13', '21'], ['22', '23', '31', '32', '33']])
  })
})

describe('boundaryPositions', () => {
  test('near k·n/p on multiples of the page size, inside the count, never the first page', () => {
    expect(boundaryPositions(200, 4, 10)).toEqual([50, 100, 150])
    expect(boundaryPositions(25, 2, 10)).toEqual([10])
    expect(boundaryPositions(100_000, 8, 1000)).toEqual([13_000, 25_000, 38_000, 50_000, 63_000, 75_000, 88_000])
    expect(boundaryPositions(30, 3, 10)).toEqual([10, 20])
  })

  test('after a first page already read (a partitioned read): the rest split, no range empty by construction', () => {
    // 5,000 rows, pages of 1,000, the first page read: ranges of one page each, none ending where the first page ends
    expect(boundaryPositions(5000, 4, 1000, 1000)).toEqual([2000, 3000, 4000])
    expect(boundaryPositions(100_000, 8, 1000, 1000)).toEqual([13_000, 26_000, 38_000, 51_000, 63_000, 75_000, 88_000])
    for (const [count, ranges] of [[3000, 2], [5000, 8], [9999, 8], [20_000, 8], [100_000, 8]]) {
      const positions = boundaryPositions(count, ranges, 1000, 1000)
      expect(positions[0], `${count} rows in ${ranges} ranges`).toBeGreaterThanOrEqual(2000)
      expect(positions.length).toBeLessThan(ranges)
    }
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
    const ended: number[] = []
    for await (const { index, value: page, last } of merged([pages('a', 3, log), pages('b', 2, log), pages('c', 0, log)])) {
      if (last) {
        ended.push(index)
        continue
      }
      // the range of this page has asked for its next one (or ended); no range is two pages ahead
      const asked = (name: string) => log.filter(l => l.startsWith(name)).length
      const taken = (name: string) => out.filter(p => p.startsWith(name)).length + (page.startsWith(name) ? 1 : 0)
      for (const name of ['a', 'b']) expect(asked(name) - taken(name)).toBeLessThanOrEqual(1)
      expect(ended).not.toContain(index) // a range ends after its last page
      out.push(page!)
    }
    expect(out.sort()).toEqual(['a0', 'a1', 'a2', 'b0', 'b1'])
    expect(ended.sort()).toEqual([0, 1, 2])
  })

  test('at most `limit` ranges have a page under way or waiting; the others take turns', async () => {
    const log: string[] = []
    const out: string[] = []
    for await (const { value: page } of merged([pages('a', 3, log), pages('b', 3, log), pages('c', 3, log)], () => 2)) {
      if (!page) continue
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
    await expect((async () => { for await (const { value } of merged([failing(), pages('a', 50, [])])) if (value) out.push(value) })()).rejects.toThrow('range failed')
    expect(out.length).toBeLessThan(50)
  })
})

describe('partitionSender', () => {
  test('the governor gets the time of plain pages; a range\'s first page (it also counts the range) is not judged; one-row samples are neither', async () => {
    // at 1M rows each range's count made the pages beside it look slow, and the read stepped back for the rest of the run
    const sender = partitionSender({ name: 'judged', top: 10, parallel: 8, retry: { maxRetries: 0, baseDelay: 1, maxDelay: 1 }, fetchPage: async () => ({ records: [] }) })
    const observe = vi.spyOn(sender.concurrency, 'observe')
    await sender.send({ order: ['ID'], top: 1, skip: 10, count: false })
    expect(observe).not.toHaveBeenCalled()
    await sender.send({ order: ['ID'], top: 10, count: true })
    expect(observe).toHaveBeenLastCalledWith(2, undefined)
    await sender.send({ order: ['ID'], top: 10, count: false })
    expect(observe).toHaveBeenLastCalledWith(2, expect.any(Number))
    expect(observe).toHaveBeenCalledTimes(2)
  })

  test('a page answered while the consumer held its event loop (a synchronous write) counts the source\'s time, not the wait', async () => {
    const sender = partitionSender({ name: 'busy', top: 10, parallel: 8, retry: { maxRetries: 0, baseDelay: 1, maxDelay: 1 }, fetchPage: () => new Promise(resolve => setTimeout(() => resolve({ records: [] }), 20)) })
    const observe = vi.spyOn(sender.concurrency, 'observe')
    const HOLD = 400
    // the write of an earlier page: holds the event loop while the answer comes in
    setTimeout(() => { const start = performance.now(); while (performance.now() - start < HOLD) { /* a synchronous write */ } }, 1)
    const sent = performance.now()
    await sender.send({ order: ['ID'], top: 10, count: false })
    expect(performance.now() - sent).toBeGreaterThanOrEqual(HOLD)
    const judged = observe.mock.calls[0][1] as number
    expect(judged).toBeLessThan(HOLD / 2)
  })
})
