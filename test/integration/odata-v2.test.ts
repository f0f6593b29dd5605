/**
 * OData V2 source against a real V2 provider over HTTP: the provider fixture (a CAP app)
 * serves /odata/v2/catalog through @cap-js-community/odata-v2-adapter, which answers with
 * V2 JSON (`d.results`, `__count`, `__next`, `/Date(…)/`, `PT…S`). Full and all three delta
 * modes, ties across batch boundaries, typed V2 literals in `$filter`, `$select` restriction,
 * server-driven paging, and the one-request no-change run. Every test has its own pipeline
 * and target table (test/fixtures/consumer/db/v2.cds).
 */
import { useConsumer, ql } from '../helpers/consumer'

const ctx = useConsumer()
const { run, requestCount } = ctx
const readsSince = (before: number) => ctx.readsSince(before, url => url.startsWith(V2_BOOKS))

const V2_BOOKS = '/odata/v2/catalog/Books?'

async function rowsOf(entity: string): Promise<Array<Record<string, unknown>>> {
  return (await ql.SELECT.from(entity).orderBy('ID')) as Array<Record<string, unknown>>
}

/** No V2 wire format (`/Date(…)/`, `PT…S`, `__metadata`) reaches a target table. */
function expectPlainValues(rows: Array<Record<string, unknown>>): void {
  const text = JSON.stringify(rows)
  expect(text).not.toContain('/Date(')
  expect(text).not.toMatch(/"PT\d/)
  expect(text).not.toContain('__metadata')
}

describe('OData V2 source → database target', () => {
  beforeEach(async () => {
    await ctx.provider.control.reset()
  })

  test('full and timestamp delta: renames, $select restriction, ISO date/time values, one request when nothing changed', async () => {
    const T0 = '2026-01-01T08:00:00.000Z'
    const T1 = '2026-01-02T09:05:07.000Z'
    const T2 = '2026-01-03T23:59:59.000Z'
    await ctx.provider.control.seed({ from: 1, count: 20, modifiedAt: T0 })
    await ctx.provider.control.touch({ from: 15, count: 6, modifiedAt: T1 })
    await ctx.engine.addPipeline({ name: 'v2-books', source: { service: 'ProviderV2', entity: 'Books', batchSize: 8 }, target: { entity: 'consumer.BooksV2' } })

    let before = await requestCount()
    const first = await run('v2-books')
    expect(first).toMatchObject({ status: 'completed', statistics: { created: 20, updated: 0, deleted: 0 } })
    // progress: the V2 `__count` (a string on the wire) is the run's expected total (issue 22)
    const progress = (await ql.SELECT.one.from('plugin.data_pipeline.PipelineRuns').columns('expected', 'processed').where({ ID: first.runId })) as { expected: unknown; processed: unknown }
    expect([Number(progress.expected), Number(progress.processed)]).toEqual([20, 20])
    const rows = await rowsOf('consumer.BooksV2')
    expect(rows).toHaveLength(20)
    expect(rows[0]).toEqual({ ID: 1, name: 'Book 1', author: 'Author 1', stock: 1, modifiedAt: T0, changedDate: '2026-01-01', changedTime: '08:00:00' })
    expect(rows[19]).toEqual({ ID: 20, name: 'Book 20', author: 'Author 20', stock: 20, modifiedAt: T1, changedDate: '2026-01-02', changedTime: '09:05:07' })
    expectPlainValues(rows)
    expect((await ctx.engine.status('v2-books')).lastSync).toBe(T1)

    let { requests, reads } = await readsSince(before)
    expect(reads).toHaveLength(requests)
    // probe for rows without a watermark, then 20 rows in pages of 8 (the count on the first page ends the read)
    expect(reads).toHaveLength(1 + 3)
    for (const url of reads) {
      expect(url).toMatch(/\$select=[^&]*\bmodifiedAt\b/)
      expect(url).not.toContain('price')
      expect(url).toContain('$orderby=')
      expect(url).not.toMatch(/\$skip=|\$count=/)
    }
    expect(reads[0]).toContain('$filter=modifiedAt eq null')
    expect(reads[1]).toContain('$inlinecount=allpages')
    expect(reads[1]).toContain('$orderby=modifiedAt asc,ID asc')
    // keyset continuation compares the watermark as an Edm.DateTimeOffset literal
    expect(reads[2]).toContain(`modifiedAt gt datetimeoffset'${T0}'`)
    expect(reads[2]).toContain(`(modifiedAt eq datetimeoffset'${T0}') and (ID gt 8)`)

    // two rows change later: the delta reads from the watermark on (ties at T1 re-read, unchanged, not counted)
    await ctx.provider.control.touch({ from: 3, count: 2, modifiedAt: T2, title: 'Changed' })
    before = await requestCount()
    const second = await run('v2-books')
    expect(second).toMatchObject({ status: 'completed', statistics: { created: 0, updated: 2, deleted: 0 } })
    ;({ reads } = await readsSince(before))
    expect(reads[0]).toContain(`modifiedAt ge datetimeoffset'${T1}'`)
    expect(await ql.SELECT.one.from('consumer.BooksV2').where({ ID: 3 })).toMatchObject({ name: 'Changed', modifiedAt: T2, changedDate: '2026-01-03', changedTime: '23:59:59' })
    expect((await ctx.engine.status('v2-books')).lastSync).toBe(T2)

    // nothing new: exactly one request (its $inlinecount covers the rows tied at the watermark)
    const target = await rowsOf('consumer.BooksV2')
    before = await requestCount()
    const third = await run('v2-books')
    expect(third.status).toBe('completed')
    ;({ requests, reads } = await readsSince(before))
    expect(requests).toBe(1)
    expect(reads[0]).toContain(`modifiedAt ge datetimeoffset'${T2}'`)
    expect(reads[0]).toContain('$inlinecount=allpages')
    expect(await rowsOf('consumer.BooksV2')).toEqual(target)
    expect((await ctx.engine.status('v2-books')).lastSync).toBe(T2)

    // full refresh: same content, key order, still restricted to the target's columns
    before = await requestCount()
    const full = await run('v2-books', { mode: 'full' })
    expect(full).toMatchObject({ status: 'completed', statistics: { created: 0, updated: 0, unchanged: 20, deleted: 0 } })
    expect(await rowsOf('consumer.BooksV2')).toEqual(target)
    ;({ reads } = await readsSince(before))
    expect(reads.length).toBeGreaterThan(1)
    for (const url of reads) {
      expect(url).toContain('$orderby=ID asc')
      expect(url).not.toContain('price')
    }
  })

  test('rows sharing the watermark value across batch boundaries are never lost', async () => {
    const T0 = '2026-02-01T12:00:00.000Z'
    await ctx.provider.control.seed({ from: 1, count: 25, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'v2-ties', source: { service: 'ProviderV2', entity: 'Books', batchSize: 10 }, target: { entity: 'consumer.BooksV2Ties' } })

    const first = await run('v2-ties')
    expect(first).toMatchObject({ status: 'completed', statistics: { created: 25, updated: 0, deleted: 0 } })
    expect((await ctx.engine.status('v2-ties')).lastSync).toBe(T0)

    // rows written later with exactly the watermark value
    await ctx.provider.control.seed({ from: 101, count: 7, modifiedAt: T0 })
    const before = await requestCount()
    const second = await run('v2-ties')
    // the 25 tied rows are not read again (T0 has settled): only the 7 new ones
    expect(second).toMatchObject({ status: 'completed', statistics: { created: 7, updated: 0, deleted: 0 } })
    const rows = await rowsOf('consumer.BooksV2Ties')
    expect(rows.map(r => r.ID)).toEqual([...Array.from({ length: 25 }, (_, i) => i + 1), ...Array.from({ length: 7 }, (_, i) => i + 101)])
    expect(new Set(rows.map(r => r.modifiedAt))).toEqual(new Set([T0]))
    // one page: the read continues after the last key read at T0
    const { reads } = await readsSince(before)
    expect(reads).toHaveLength(1)
    expect(reads[0]).toContain(`(modifiedAt gt datetimeoffset'${T0}') or (ID gt 25)`)
  })

  test('key delta advances lastKey; a run with nothing new costs one request', async () => {
    await ctx.provider.control.seed({ from: 1, count: 20, modifiedAt: '2026-01-01T00:00:00.000Z' })
    await ctx.engine.addPipeline({
      name: 'v2-by-key', source: { service: 'ProviderV2', entity: 'Books', batchSize: 8 }, target: { entity: 'consumer.BooksV2ByKey' },
      delta: { mode: 'key', field: 'ID' },
    })
    expect(await run('v2-by-key')).toMatchObject({ status: 'completed', statistics: { created: 20, updated: 0, deleted: 0 } })
    expect((await ctx.engine.status('v2-by-key')).lastKey).toBe('20')

    await ctx.provider.control.seed({ from: 21, count: 10, modifiedAt: '2026-01-05T00:00:00.000Z' })
    let before = await requestCount()
    expect(await run('v2-by-key')).toMatchObject({ status: 'completed', statistics: { created: 10, updated: 0, deleted: 0 } })
    expect((await ctx.engine.status('v2-by-key')).lastKey).toBe('30')
    const { reads } = await readsSince(before)
    expect(reads[0]).toContain('$filter=ID gt 20')
    expect(reads[0]).toContain('$inlinecount=allpages')
    for (const url of reads) expect(url).toMatch(/ID gt (2\d|30)\b/)
    const rows = await rowsOf('consumer.BooksV2ByKey')
    expect(rows).toHaveLength(30)
    expect(rows[29]).toEqual({ ID: 30, title: 'Book 30', modifiedAt: '2026-01-05T00:00:00.000Z' })
    expectPlainValues(rows)

    before = await requestCount()
    expect(await run('v2-by-key')).toMatchObject({ status: 'completed', statistics: { created: 0, updated: 0, deleted: 0 } })
    expect((await readsSince(before)).requests).toBe(1)
    expect((await ctx.engine.status('v2-by-key')).lastKey).toBe('30')
  })

  test("datetime-fields delta: datetime'…' and time'PT…' literals, UTC-correct in a non-UTC process time zone", async () => {
    const zone = process.env.TZ
    process.env.TZ = 'America/Los_Angeles'
    try {
      await ctx.provider.control.seed({ from: 1, count: 10, modifiedAt: '2026-01-01T08:00:00.000Z' })
      await ctx.provider.control.touch({ from: 10, modifiedAt: '2026-01-01T09:05:00.000Z' })
      await ctx.engine.addPipeline({
        name: 'v2-by-datetime', source: { service: 'ProviderV2', entity: 'Books', batchSize: 4 }, target: { entity: 'consumer.BooksV2ByDateTime' },
        delta: { mode: 'datetime-fields', dateField: 'changedDate', timeField: 'changedTime' },
      })
      let before = await requestCount()
      expect(await run('v2-by-datetime')).toMatchObject({ status: 'completed', statistics: { created: 10, updated: 0, deleted: 0 } })
      expect((await ctx.engine.status('v2-by-datetime')).lastSync).toBe('2026-01-01T09:05:00.000Z')
      const rows = await rowsOf('consumer.BooksV2ByDateTime')
      expect(rows[0]).toEqual({ ID: 1, title: 'Book 1', changedDate: '2026-01-01', changedTime: '08:00:00' })
      expect(rows[9]).toEqual({ ID: 10, title: 'Book 10', changedDate: '2026-01-01', changedTime: '09:05:00' })
      expectPlainValues(rows)
      let { reads } = await readsSince(before)
      // keyset continuation inside the (date, time) order uses Edm.DateTime and Edm.Time literals
      expect(reads.some(u => u.includes("(changedDate eq datetime'2026-01-01T00:00:00') and (changedTime gt time'PT08H00M00S')"))).toBe(true)

      // two rows change on the next UTC day (still 2026-01-01 in Los Angeles)
      await ctx.provider.control.touch({ from: 3, count: 2, modifiedAt: '2026-01-02T01:00:00.000Z', title: 'Changed' })
      before = await requestCount()
      const second = await run('v2-by-datetime')
      // rows 3 and 4 changed; row 10 sits exactly on the watermark (re-read, unchanged, not counted); the other 7 are not read
      expect(second).toMatchObject({ status: 'completed', statistics: { created: 0, updated: 2, deleted: 0 } })
      ;({ reads } = await readsSince(before))
      expect(reads[0]).toContain("(changedDate gt datetime'2026-01-01T00:00:00') or ((changedDate eq datetime'2026-01-01T00:00:00') and (changedTime ge time'PT09H05M00S'))")
      expect(await ql.SELECT.from('consumer.BooksV2ByDateTime').where({ title: 'Changed' }).orderBy('ID')).toEqual([
        { ID: 3, title: 'Changed', changedDate: '2026-01-02', changedTime: '01:00:00' },
        { ID: 4, title: 'Changed', changedDate: '2026-01-02', changedTime: '01:00:00' },
      ])
      expect((await ctx.engine.status('v2-by-datetime')).lastSync).toBe('2026-01-02T01:00:00.000Z')
    } finally {
      if (zone === undefined) delete process.env.TZ
      else process.env.TZ = zone
    }
  })

  test('server-driven paging: a provider that caps its page size is followed through __next without losing rows', async () => {
    const T0 = '2026-03-01T00:00:00.000Z'
    await ctx.provider.control.seed({ from: 1, count: 30, modifiedAt: T0 })
    // the provider returns at most 7 rows per response and a __next link ($skiptoken) for the rest
    await ctx.provider.control.pageLimit(7)
    await ctx.engine.addPipeline({ name: 'v2-paging', source: { service: 'ProviderV2', entity: 'Books', batchSize: 20 }, target: { entity: 'consumer.BooksV2Paging' } })

    const before = await requestCount()
    const first = await run('v2-paging')
    expect(first).toMatchObject({ status: 'completed', statistics: { created: 30, updated: 0, deleted: 0 } })
    const rows = await rowsOf('consumer.BooksV2Paging')
    expect(rows.map(r => r.ID)).toEqual(Array.from({ length: 30 }, (_, i) => i + 1))
    expectPlainValues(rows)

    const { requests, reads } = await readsSince(before)
    expect(reads).toHaveLength(requests)
    const followed = reads.filter(u => u.includes('$skiptoken='))
    // probe + ($top=20: 7 + 7 + 6 via two __next links) + keyset page ($top=20: 7 + 3 via one __next link)
    // + one keyset request counting what is left after the links (a row added meanwhile may lie beyond them)
    expect(followed).toHaveLength(3)
    expect(reads).toHaveLength(1 + 3 + 2 + 1)
    // next links keep the original query: $select, $filter and $orderby
    for (const url of followed) {
      expect(url).toContain('$select=')
      expect(url).toContain('$orderby=modifiedAt asc,ID asc')
      expect(url).not.toContain('price')
    }
    // after the server's pages run out, the reader continues by keyset, not by $skip
    expect(reads.find(u => !u.includes('$skiptoken=') && u.includes('ID gt 20'))).toBeDefined()
  })
})
