/**
 * How a partitioned read bounds and ends its ranges (lib/adapters/source/partitions.ts,
 * boundary-order.ts, pager.ts): boundaries known to ascend give ranges bounded by the next boundary
 * only, with their rows known from the sample positions (no count per range, short URLs); others
 * keep every later boundary and a count. Every range's first page goes out at once. A key listing
 * for a sweep ends on an empty page only, never on a count. The source here is an in-memory table
 * that evaluates the read's predicates. A delta's watermark bounds its first request (and the
 * boundary samples) only.
 */
import { compareRows, inSourceOrder } from '../../lib/adapters/source/boundary-order'
import { partitionedPages } from '../../lib/adapters/source/partitions'
import { pagesOf, segmentPages, type PageRequest, type PageResult } from '../../lib/adapters/source/pager'
import { readSegments, type DeltaPlan } from '../../lib/adapters/watermark'
import type { TrackerState } from '../../lib/adapters/types'
import { after, matches, type Predicate } from '../../lib/adapters/predicate'
import type { DataRecord } from '../../lib/pipeline/types'

const RETRY = { maxRetries: 0, baseDelay: 1, maxDelay: 1 }

/** An ordered in-memory source: filter, order (plain JS comparison), skip, top, count. */
function tableSource(rows: DataRecord[], gate?: Promise<void>) {
  const requests: PageRequest[] = []
  let inFlight = 0
  let peak = 0
  const fetchPage = async (request: PageRequest): Promise<PageResult> => {
    requests.push(request)
    inFlight++
    peak = Math.max(peak, inFlight)
    try {
      if (gate && !request.skip && requests.length > 1) await gate
      const order = request.order
      const matching = rows.filter(row => !request.filter || matches(row, request.filter)).sort((a, b) => {
        for (const column of order) if (a[column] !== b[column]) return (a[column] as number | string) < (b[column] as number | string) ? -1 : 1
        return 0
      })
      const records = matching.slice(request.skip ?? 0, (request.skip ?? 0) + request.top)
      return { records, ...(request.count ? { count: matching.length } : {}) }
    } finally {
      inFlight--
    }
  }
  return { fetchPage, requests, peak: () => peak }
}

/** How many upper bounds (`lt` on the last order column) a filter holds. */
const upperBounds = (filter: Predicate | undefined): number =>
  !filter ? 0 : 'and' in filter || 'or' in filter ? (('and' in filter ? filter.and : filter.or) as Predicate[]).reduce((n, p) => n + upperBounds(p), 0) : filter.op === 'lt' ? 1 : 0

async function readAll(read: AsyncIterable<DataRecord[]>): Promise<DataRecord[]> {
  const out: DataRecord[] = []
  for await (const page of read) out.push(...page)
  return out
}

describe('boundary order', () => {
  test('numbers, digit strings, canonical UUIDs of one case, ISO dates and UTC timestamps compare; other strings do not', () => {
    expect(compareRows(['ID'], { ID: 9 }, { ID: 10 })).toBe(-1)
    expect(compareRows(['ID'], { ID: '0000000010' }, { ID: '0000000009' })).toBe(1)
    expect(compareRows(['ID'], { ID: '0f8fad5b-d9cb-469f-a165-70867728950e' }, { ID: '7c9e6679-7425-40de-944b-e07fc1f90ae7' })).toBe(-1)
    expect(compareRows(['at', 'ID'], { at: '2026-01-01T00:00:00.000Z', ID: 2 }, { at: '2026-01-01T00:00:00.000Z', ID: 1 })).toBe(1)
    expect(compareRows(['day'], { day: '2026-02-01' }, { day: '2026-02-01' })).toBe(0)
    // collations differ for these: case, locale, lengths, offsets, mixed case UUIDs
    expect(compareRows(['ID'], { ID: 'apple' }, { ID: 'Banana' })).toBeUndefined()
    expect(compareRows(['ID'], { ID: '9' }, { ID: '10' })).toBeUndefined()
    expect(compareRows(['at'], { at: '2026-01-01T01:00:00+01:00' }, { at: '2026-01-01T00:30:00+00:00' })).toBeUndefined()
    expect(compareRows(['ID'], { ID: '0F8FAD5B-D9CB-469F-A165-70867728950E' }, { ID: '7c9e6679-7425-40de-944b-e07fc1f90ae7' })).toBeUndefined()
    expect(compareRows(['ID'], { ID: 1 }, { ID: '1' })).toBeUndefined()
  })

  test('in order only when every neighbour ascends for certain', () => {
    expect(inSourceOrder(['ID'], [{ ID: 1 }, { ID: 5 }, { ID: 9 }])).toBe(true)
    expect(inSourceOrder(['ID'], [{ ID: 1 }, { ID: 9 }, { ID: 5 }])).toBe(false)
    expect(inSourceOrder(['ID'], [{ ID: 1 }, { ID: 1 }])).toBe(false)
    expect(inSourceOrder(['ID'], [{ ID: 'a' }, { ID: 'b' }])).toBe(false)
  })
})

describe('partitioned read: range bounds and ends', () => {
  const numbered = Array.from({ length: 100 }, (_, i) => ({ ID: i + 1, name: `N${i + 1}` }))

  test('keys known to ascend: one upper bound per range, no count before a range\'s last page, no empty page, every row once', async () => {
    const source = tableSource(numbered)
    const rows = await readAll(partitionedPages({ name: 't', segment: { order: ['ID'] }, top: 10, parallel: 4, fetchPage: source.fetchPage, retry: RETRY }))
    expect(rows.map(row => row.ID).sort((a, b) => (a as number) - (b as number))).toEqual(numbered.map(row => row.ID))
    const pages = source.requests.filter(request => !request.skip)
    // the first request counts the read; a range counts only on the page expected to be its last
    // (the rows left from there: a row added since the samples would push its last row out)
    expect(pages[0].count).toBe(true)
    expect(pages.filter(request => request.count)).toHaveLength(1 + 4)
    expect(pages.every(request => upperBounds(request.filter) <= 1)).toBe(true)
    // 10 pages and 3 samples: every range ends at its known rows, without an empty page
    expect(source.requests).toHaveLength(10 + 3)
  })

  test('keys whose order a source may see differently (free-form strings): every later boundary bounds a range, and each range is counted', async () => {
    const named = Array.from({ length: 100 }, (_, i) => ({ ID: `key-${String(i).padStart(3, '0')}` }))
    const source = tableSource(named)
    const rows = await readAll(partitionedPages({ name: 't', segment: { order: ['ID'] }, top: 10, parallel: 4, fetchPage: source.fetchPage, retry: RETRY }))
    expect(new Set(rows.map(row => row.ID)).size).toBe(100)
    expect(rows).toHaveLength(100)
    const counted = source.requests.filter(request => request.count)
    // the first page, each range's first page, and each range's last page (2 or 3 pages a range)
    expect(counted).toHaveLength(1 + 4 + 4)
    // the first range after the first page is bounded by all three boundaries
    expect(Math.max(...counted.map(request => upperBounds(request.filter)))).toBe(3)
  })

  test("every range's first page goes out at once, beyond the level the read starts its pages at", async () => {
    let open!: () => void
    const gate = new Promise<void>(resolve => { open = resolve })
    const source = tableSource(numbered, gate)
    const read = readAll(partitionedPages({ name: 't', segment: { order: ['ID'] }, top: 10, parallel: 8, fetchPage: source.fetchPage, retry: RETRY }))
    // 90 rows after the first page in 8 ranges (the level starts at 2): all 8 first pages held at the gate
    const deadline = Date.now() + 10_000
    while (source.peak() < 8 && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 5))
    open()
    expect(await read).toHaveLength(100)
    expect(source.peak()).toBe(8)
  })
})

describe('key listings (sweeps) end on an empty page, never on a count', () => {
  test('a row added after the first page: the listing still reaches the last key', async () => {
    const keys = Array.from({ length: 20 }, (_, i) => ({ ID: (i + 1) * 10 }))
    const source = tableSource(keys)
    /** The source, gaining key 155 once its first page was read. */
    const growing = () => {
      let first = true
      return async (request: PageRequest): Promise<PageResult> => {
        const page = await source.fetchPage(request)
        if (first) keys.push({ ID: 155 })
        first = false
        return page
      }
    }
    const listed = await readAll(segmentPages({ order: ['ID'] }, 10, growing(), { exhaustive: true }))
    expect(listed).toHaveLength(21)
    expect(listed.map(row => row.ID)).toContain(200)
    // a read that ends on its first page's count stops at 20 rows and never lists 200
    // a read ended by a count confirms it on the page expected to be the last: it reaches key 200 as well
    keys.pop()
    const counted = await readAll(segmentPages({ order: ['ID'] }, 10, growing()))
    expect(counted).toHaveLength(21)
    expect(counted.map(row => row.ID)).toContain(200)
  })
})

describe('a row added inside a key range after the samples', () => {
  test('does not push the range\'s last row out of the read (its watermark would pass that row for good)', async () => {
    // numbers ascend for certain: each range knows its rows from the sample positions and asks no count up front
    const table: DataRecord[] = Array.from({ length: 100 }, (_, i) => ({ ID: (i + 1) * 10 }))
    const source = tableSource(table)
    let added = false
    const fetchPage = async (request: PageRequest): Promise<PageResult> => {
      const page = await source.fetchPage(request)
      // once the boundaries are sampled, a late commit lands in the first range (between keys 100 and 110)
      if (request.skip !== undefined && !added) { table.push({ ID: 105 }); added = true }
      return page
    }
    const rows = await readAll(partitionedPages({ name: 't', segment: { order: ['ID'] }, top: 10, parallel: 4, fetchPage, retry: RETRY }))
    const read = new Set(rows.map(row => row.ID))
    // every row there before the read started is read, the first range's last one included
    for (const row of table.filter(row => row.ID !== 105)) expect(read.has(row.ID), `ID ${row.ID}`).toBe(true)
    expect(rows).toHaveLength(read.size)
  })
})

describe("a delta's watermark bounds its first request only", () => {
  // 400 rows tied at the stored value (a bulk load), of which the last run read up to ID 300, then 200 later rows
  const V = '2026-01-05T00:00:00.000Z'
  const rows: DataRecord[] = [
    ...Array.from({ length: 400 }, (_, i) => ({ ID: i + 1, modifiedAt: V })),
    ...Array.from({ length: 200 }, (_, i) => ({ ID: 401 + i, modifiedAt: `2026-01-06T00:00:00.${String(i).padStart(3, '0')}Z` })),
  ]
  const plan: DeltaPlan = { mode: 'timestamp', field: 'modifiedAt', ties: { keys: ['ID'], precision: 1, settle: 60_000 } }
  const cursor = JSON.stringify({ at: V, after: { ID: 300 }, readAt: '2026-01-05T01:00:00.000Z' })
  const state = { mode: 'delta', lastSync: V, lastKey: cursor } as TrackerState
  const expected = rows.filter(row => row.modifiedAt !== V || (row.ID as number) > 300).map(row => row.ID)
  /** Requests whose filter holds the watermark bound (SQLite ranges its index scan on one lower bound: with two, each page walks the tie). */
  const bounded = (requests: PageRequest[], bound: Predicate) => requests.filter(request => JSON.stringify(request.filter ?? {}).includes(JSON.stringify(bound))).length

  test('page after page: the first page asks for the watermark, each later page for the rows after the last one read', async () => {
    const [segment] = readSegments(plan, state, ['ID'])
    const source = tableSource(rows)
    const read = await readAll(pagesOf([segment], 20, source.fetchPage))
    expect(read.map(row => row.ID)).toEqual(expected)
    expect(source.requests.length).toBeGreaterThan(10)
    expect(bounded(source.requests, segment.from!)).toBe(1)
  })

  test('partitioned: the first page asks for it; the boundary samples skip from after the first page, the ranges start at their boundaries', async () => {
    const [segment] = readSegments(plan, state, ['ID'])
    const source = tableSource(rows)
    const read = await readAll(partitionedPages({ name: 't', segment, top: 20, parallel: 4, fetchPage: source.fetchPage, retry: RETRY }))
    expect(read.map(row => row.ID).sort((a, b) => (a as number) - (b as number))).toEqual(expected)
    expect(bounded(source.requests, segment.from!)).toBe(1)
    // the first page read IDs 301–320: the samples seek past them (and past the tie) instead of skipping from the watermark
    const samples = source.requests.filter(request => request.skip !== undefined)
    expect(samples).toHaveLength(3)
    const firstPageEnd = after(['modifiedAt', 'ID'], { modifiedAt: V, ID: 320 })
    for (const sample of samples) expect(sample.filter).toEqual(firstPageEnd)
    expect(samples.every(sample => sample.skip! % 20 === 0)).toBe(true)
  })
})

describe('a read that a server pages by next links (offsets, below the page size asked for)', () => {
  test('a row added during its last window: one more counted request after the links finds the row pushed beyond them', async () => {
    const table: DataRecord[] = Array.from({ length: 10 }, (_, i) => ({ ID: 110 + i * 10 }))
    const windows = new Map<string, { filter?: Predicate; top: number; offset: number }>()
    const matching = (filter?: Predicate) => table.filter(row => !filter || matches(row, filter)).sort((a, b) => (a.ID as number) - (b.ID as number))
    /** At most 4 rows an answer; the rest of the window ($top) through a next link that skips by offset, as CAP's $skiptoken. */
    const answer = (window: { filter?: Predicate; top: number; offset: number }, count?: number): PageResult => {
      const end = Math.min(window.offset + 4, window.top)
      const records = matching(window.filter).slice(window.offset, end)
      const more = end < window.top && matching(window.filter).length > end
      const link = more ? `link-${windows.size}` : undefined
      if (link) windows.set(link, { ...window, offset: end })
      return { records, nextLink: link, ...(count === undefined ? {} : { count }) }
    }
    let requests = 0
    const fetchPage = async (request: PageRequest): Promise<PageResult> => {
      requests++
      if (request.nextLink) return answer(windows.get(request.nextLink)!)
      const page = answer({ filter: request.filter, top: request.top, offset: 0 }, request.count ? matching(request.filter).length : undefined)
      if (requests === 1) table.push({ ID: 165 }) // a late commit inside the read, once its count was taken
      return page
    }
    const read = await readAll(segmentPages({ order: ['ID'] }, 10, fetchPage, { rows: 10 }))
    expect(read.map(row => row.ID)).toContain(200)
    expect(read.map(row => row.ID)).toContain(165)
  })
})

describe('a source that answers a continuation with the same page again', () => {
  test('fails the read with a message naming the order, instead of asking forever', async () => {
    const page = Array.from({ length: 10 }, (_, i) => ({ ID: i + 1, modifiedAt: '2026-01-05T00:00:00.500Z' }))
    let requests = 0
    // as a V2 Edm.DateTime watermark sent in whole seconds: `gt …:00` takes the rows of that second again
    const fetchPage = async (): Promise<PageResult> => { requests++; return { records: page } }
    await expect(readAll(segmentPages({ order: ['modifiedAt', 'ID'] }, 10, fetchPage))).rejects.toThrow(/order of modifiedAt, ID.*cannot advance/)
    expect(requests).toBe(2)
  })
})
