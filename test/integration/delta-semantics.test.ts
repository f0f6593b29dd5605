/**
 * Delta semantics against a real provider over HTTP (DESIGN "No row is lost by delta",
 * "Stable paging"): ties at the watermark, changes during a run, key delta, datetime-fields
 * in a non-UTC process time zone, the one-request no-change run and ordered keyset paging.
 * Every test uses its own pipeline and target table.
 */
import { useConsumer, ql } from '../helpers/consumer'
import { waitFor } from '../helpers/wait'

const ctx = useConsumer()
const { run, requestCount, readsSince } = ctx

const T0 = '2026-01-01T00:00:00.000Z'

describe('delta semantics', () => {
  beforeEach(async () => {
    await ctx.provider.control.reset()
  })

  test('rows sharing the watermark value — also ones written later with that same value — are never lost', async () => {
    await ctx.provider.control.seed({ from: 1, count: 2500, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'ties', source: { service: 'Provider', entity: 'Books', batchSize: 1000 }, target: { entity: 'consumer.BooksTies' } })

    const first = await run('ties')
    expect(first.status).toBe('completed')
    expect(first.statistics).toEqual({ created: 2500, updated: 0, deleted: 0 })
    expect(await ql.SELECT.one.from('consumer.BooksTies').columns('count(1) as n')).toEqual({ n: 2500 })
    expect((await ctx.engine.status('ties')).lastSync).toBe(T0)

    // 700 new rows carrying exactly the watermark value of the previous run
    await ctx.provider.control.seed({ from: 5001, count: 700, modifiedAt: T0 })
    const second = await run('ties')
    expect(second.status).toBe('completed')
    // the tie rows are re-read (inclusive comparison) but unchanged, so not counted: only the 700 are new
    expect(second.statistics).toEqual({ created: 700, updated: 0, deleted: 0 })

    const rows = (await ql.SELECT.from('consumer.BooksTies').columns('ID')) as Array<{ ID: number }>
    expect(rows).toHaveLength(3200)
    const ids = new Set(rows.map(r => r.ID))
    for (let id = 1; id <= 2500; id++) expect(ids.has(id)).toBe(true)
    for (let id = 5001; id <= 5700; id++) expect(ids.has(id)).toBe(true)

    const tracker = await ctx.engine.status('ties')
    expect(tracker).toMatchObject({ status: 'idle', statistics_created: 3200, statistics_updated: 0, statistics_deleted: 0 })
  })

  test('a row changed at the source while a run reads arrives in that run or the next delta run', async () => {
    await ctx.provider.control.seed({ from: 1, count: 30, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'mid-run', source: { service: 'Provider', entity: 'Books', batchSize: 5 }, target: { entity: 'consumer.BooksMidRun' } })

    await ctx.provider.control.faults({ delay: 200 })
    const { done } = await ctx.engine.execute('mid-run', { async: true })
    // once the first batch (rows 1–5) is committed, change row 2 at the source "now"
    await waitFor(async () => ((await ql.SELECT.one.from('consumer.BooksMidRun').columns('count(1) as n')) as { n: number }).n >= 5)
    const changedAt = new Date().toISOString()
    await ctx.provider.control.touch({ from: 2, title: 'Changed mid-run', modifiedAt: changedAt })
    expect((await ctx.engine.status('mid-run')).status).toBe('running')
    const first = await done
    await ctx.provider.control.faults({})
    expect(first.status).toBe('completed')
    // run 1 read row 2 before the change; the changed row, now the last in watermark order, is read by
    // run 1 when the page expected to be its last finds a row more than the first page counted, else by run 2
    expect(['Book 2', 'Changed mid-run']).toContain((await ql.SELECT.one.from('consumer.BooksMidRun').where({ ID: 2 }))?.title)
    // the watermark is what was read, not the end-of-run clock (which is later than the change)
    const afterFirst = await ctx.engine.status('mid-run')
    expect(Date.parse(afterFirst.lastSync!)).toBeLessThanOrEqual(Date.parse(changedAt))

    const second = await run('mid-run')
    expect(second.status).toBe('completed')
    expect(await ql.SELECT.one.from('consumer.BooksMidRun').where({ ID: 2 })).toMatchObject({ title: 'Changed mid-run' })
    expect(await ql.SELECT.one.from('consumer.BooksMidRun').columns('count(1) as n')).toEqual({ n: 30 })
    expect((await ctx.engine.status('mid-run')).lastSync).toBe(changedAt)
  })

  test("key delta advances lastKey and the next run reads only keys above it", async () => {
    await ctx.provider.control.seed({ from: 1, count: 20, modifiedAt: T0 })
    await ctx.engine.addPipeline({
      name: 'by-key', source: { service: 'Provider', entity: 'Books', batchSize: 8 }, target: { entity: 'consumer.BooksByKey' },
      delta: { mode: 'key', field: 'ID' },
    })
    const first = await run('by-key')
    expect(first).toMatchObject({ status: 'completed', statistics: { created: 20, updated: 0, deleted: 0 } })
    expect((await ctx.engine.status('by-key')).lastKey).toBe('20')

    await ctx.provider.control.seed({ from: 21, count: 10, modifiedAt: T0 })
    const before = await requestCount()
    const second = await run('by-key')
    expect(second).toMatchObject({ status: 'completed', statistics: { created: 10, updated: 0, deleted: 0 } })
    expect((await ctx.engine.status('by-key')).lastKey).toBe('30')

    const { reads } = await readsSince(before)
    expect(reads.length).toBeGreaterThan(0)
    expect(reads[0]).toContain('$filter=ID gt 20')
    for (const url of reads) expect(url).toMatch(/ID gt (2\d|30)\b/)
    expect(await ql.SELECT.one.from('consumer.BooksByKey').columns('count(1) as n')).toEqual({ n: 30 })

    // nothing new: still one request, nothing written, lastKey unchanged
    const idle = await requestCount()
    const third = await run('by-key')
    expect(third.statistics).toEqual({ created: 0, updated: 0, deleted: 0 })
    expect((await readsSince(idle)).requests).toBe(1)
    expect((await ctx.engine.status('by-key')).lastKey).toBe('30')
  })

  test('datetime-fields delta is UTC-correct in a non-UTC process time zone and reads only changed rows', async () => {
    const zone = process.env.TZ
    // UTC-8: a date+time pair read as local time would move the watermark 8 h too late
    process.env.TZ = 'America/Los_Angeles'
    try {
      expect(new Date('2026-01-01T22:30:00').toISOString()).toBe('2026-01-02T06:30:00.000Z') // the zone is in effect
      await ctx.provider.control.seed({ from: 1, count: 10, modifiedAt: '2026-01-01T20:00:00.000Z' })
      await ctx.provider.control.touch({ from: 10, modifiedAt: '2026-01-01T22:30:00.000Z' })
      await ctx.engine.addPipeline({
        name: 'by-datetime', source: { service: 'Provider', entity: 'Books', batchSize: 4 }, target: { entity: 'consumer.BooksByDateTime' },
        delta: { mode: 'datetime-fields', dateField: 'changedDate', timeField: 'changedTime' },
      })
      const first = await run('by-datetime')
      expect(first).toMatchObject({ status: 'completed', statistics: { created: 10, updated: 0, deleted: 0 } })
      expect((await ctx.engine.status('by-datetime')).lastSync).toBe('2026-01-01T22:30:00.000Z')
      expect(await ql.SELECT.one.from('consumer.BooksByDateTime').where({ ID: 10 })).toMatchObject({ changedDate: '2026-01-01', changedTime: '22:30:00' })

      // two rows change 2.5 h later in UTC (next UTC day, still 2026-01-01 in Los Angeles)
      await ctx.provider.control.touch({ from: 3, count: 2, modifiedAt: '2026-01-02T01:00:00.000Z', title: 'Changed' })
      const before = await requestCount()
      const second = await run('by-datetime')
      expect(second.status).toBe('completed')
      // rows 3 and 4 changed; row 10 sits exactly on the watermark (re-read, unchanged, not counted); the other 7 are not read
      expect(second.statistics).toEqual({ created: 0, updated: 2, deleted: 0 })
      const changed = (await ql.SELECT.from('consumer.BooksByDateTime').where({ title: 'Changed' }).orderBy('ID')) as Array<Record<string, unknown>>
      expect(changed).toEqual([
        { ID: 3, title: 'Changed', changedDate: '2026-01-02', changedTime: '01:00:00' },
        { ID: 4, title: 'Changed', changedDate: '2026-01-02', changedTime: '01:00:00' },
      ])
      expect((await ctx.engine.status('by-datetime')).lastSync).toBe('2026-01-02T01:00:00.000Z')
      const { reads } = await readsSince(before)
      expect(reads[0]).toContain('changedDate gt 2026-01-01')
      expect(reads[0]).toContain('changedTime ge 22:30:00')
    } finally {
      if (zone === undefined) delete process.env.TZ
      else process.env.TZ = zone
    }
  })

  test('a delta run that finds no change sends exactly one request to the provider', async () => {
    await ctx.provider.control.seed({ from: 1, count: 10, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'no-change', source: { service: 'Provider', entity: 'Books', batchSize: 50 }, target: { entity: 'consumer.BooksNoChange' } })
    expect((await run('no-change')).status).toBe('completed')
    const target = await ql.SELECT.from('consumer.BooksNoChange').orderBy('ID')

    const before = await requestCount()
    const second = await run('no-change')
    expect(second.status).toBe('completed')
    const { requests, reads } = await readsSince(before)
    expect(requests).toBe(1)
    expect(reads).toHaveLength(1)
    expect(reads[0]).toContain('$count=true')
    expect(reads[0]).toContain(`modifiedAt ge ${T0}`)
    expect(await ql.SELECT.from('consumer.BooksNoChange').orderBy('ID')).toEqual(target)
    expect((await ctx.engine.status('no-change')).lastSync).toBe(T0)
  })

  test('reads are ordered keyset pages: every read URL has $orderby and none uses $skip', async () => {
    await ctx.provider.control.seed({ from: 1, count: 55, modifiedAt: T0 })
    await ctx.provider.control.touch({ from: 20, count: 10, modifiedAt: '2026-01-02T00:00:00.000Z' })
    // parallel 1: the sequential pager (partitioned full reads sample boundaries with $skip, partitioned-read.test.ts)
    await ctx.engine.addPipeline({ name: 'paging', parallel: 1, source: { service: 'Provider', entity: 'Books', batchSize: 10 }, target: { entity: 'consumer.BooksPaging' } })

    const before = await requestCount()
    const delta = await run('paging')
    expect(delta.statistics).toEqual({ created: 55, updated: 0, deleted: 0 })
    const full = await run('paging', { mode: 'full' })
    expect(full.statistics).toEqual({ created: 0, updated: 0, unchanged: 55, deleted: 0 })
    const { requests, reads } = await readsSince(before)
    expect(reads).toHaveLength(requests)
    // delta: one probe for rows without a watermark + 6 pages; full: 6 pages
    expect(reads).toHaveLength(1 + 6 + 6)
    for (const url of reads) {
      expect(url).toContain('$orderby=')
      expect(url).not.toMatch(/\$skip(token)?=/)
    }
    // continuation pages carry a keyset filter (rows after the last one read)
    const continuation = reads.filter(u => !u.includes('$count=true'))
    expect(continuation.length).toBeGreaterThan(0)
    for (const url of continuation) expect(url).toMatch(/ID gt \d+/)
    // the delta read is in watermark order, keys last; the full read in key order
    expect(reads[1]).toContain('$orderby=modifiedAt asc,ID asc')
    expect(reads[reads.length - 1]).toContain('$orderby=ID asc')

    const rows = (await ql.SELECT.from('consumer.BooksPaging').columns('ID').orderBy('ID')) as Array<{ ID: number }>
    expect(rows.map(r => r.ID)).toEqual(Array.from({ length: 55 }, (_, i) => i + 1))
  })
})
