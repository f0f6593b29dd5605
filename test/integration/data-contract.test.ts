/**
 * One data contract (issue 22; docs/concepts/): mapped records are checked against the
 * target's CDS types — length, precision/scale, integer range, enum, not null, type — the same
 * way under `onError: 'fail'` (the run stops atomically, naming the record's key and the field)
 * and `onError: 'skip'` (the record is set aside), on every database: SQLite would store what
 * PostgreSQL refuses, and PostgreSQL stores what no database checks (an enum). Also part of the
 * `postgres` project. And a target narrower than the source is configuration, not schema drift.
 *
 * Real provider over HTTP; the bad value is set on book 3 by the application's MAP handler.
 */
import { formatWithOptions } from 'node:util'
import { useConsumer, ql } from '../helpers/consumer'

const ctx = useConsumer()

const T0 = '2026-01-01T00:00:00.000Z'
const T1 = '2026-01-02T00:00:00.000Z'
const TITLE_28 = 'A title of 28 characters ...'

/** Each kind of check: the field, a value book 3 gets that the target cannot take, and the message. */
const KINDS: Array<[kind: string, field: string, value: unknown, message: string]> = [
  ['length', 'title', TITLE_28, "'title': 28 characters exceed String(12)"],
  ['precision', 'price', 1234.5, "'price': 1234.5 exceeds Decimal(5, 2) (3 integer digits)"],
  ['scale', 'price', 1.234, "'price': 1.234 has 3 decimal places, Decimal(5, 2) allows 2"],
  ['integer range', 'stock', 70000, "'stock': 70000 is out of range for Int16"],
  ['enum', 'author', 'Nobody', "'author': 'Nobody' is not one of the enum values 'Author 1', 'Author 2', 'Author 3', 'Author 4', 'Author 5'"],
  ['not null', 'changedDate', null, "'changedDate' is null but declared not null"],
  ['type', 'changedTime', 'noon', "'changedTime': 'noon' is not a Time (hh:mm:ss)"],
]

interface Row { ID: number; title: string; author: string; stock: number; price: string | number; changedDate: string }
const rowsOf = async (entity: string): Promise<Row[]> =>
  (await ql.SELECT.from(entity).columns('ID', 'title', 'author', 'stock', 'price', 'changedDate').orderBy('ID')) as Row[]
const idsOf = async (entity: string): Promise<number[]> => ((await ql.SELECT.from(entity).columns('ID').orderBy('ID')) as Row[]).map(r => r.ID)
const slug = (kind: string) => kind.replace(/\W+/g, '-')

/** Registers a pipeline whose MAP handler gives book 3 `value` in `field` while `bad.on`. */
async function register(name: string, target: string, options: Record<string, unknown>, field: string, value: unknown): Promise<{ on: boolean }> {
  await ctx.engine.addPipeline({ name, source: { service: 'Provider', entity: 'Books', batchSize: 2 }, target: { entity: target }, ...options } as never)
  const bad = { on: true }
  ctx.engine.before('PIPELINE.MAP', name, function breakBook3(req: { data: { sourceRecords: Array<Record<string, unknown>> } }) {
    if (bad.on) for (const record of req.data.sourceRecords) if (record.ID === 3) record[field] = value
  })
  return bad
}

describe("onError 'fail' checks the target's types as 'skip' does, on every database", () => {
  // the provider's five books for every run of this block (the bad values are set by MAP handlers)
  beforeAll(async () => {
    await ctx.provider.control.reset()
    await ctx.provider.control.seed({ from: 1, count: 5, modifiedAt: T0 })
  })

  describe('full refresh', () => {
    let before: Row[]
    // the previous content every failing full refresh below must leave: one good full refresh of the five books
    beforeAll(async () => {
      await ql.DELETE.from('consumer.ContractFull')
      await ctx.engine.addPipeline({ name: 'contract-full', mode: 'full', source: { service: 'Provider', entity: 'Books', batchSize: 2 }, target: { entity: 'consumer.ContractFull' } })
      expect(await ctx.run('contract-full')).toMatchObject({ status: 'completed', statistics: { created: 5 } })
      before = await rowsOf('consumer.ContractFull')
      expect(before.map(r => r.ID)).toEqual([1, 2, 3, 4, 5])
    })

    test.each(KINDS)('%s: a full refresh fails naming the record and the field; the previous content stays', async (kind, field, value, message) => {
      const name = `contract-full-${slug(kind)}`
      await register(name, 'consumer.ContractFull', { mode: 'full' }, field, value)
      const error = await ctx.run(name).catch(e => e)
      expect(error).toMatchObject({ code: 'TARGET_FAILED', target: field })
      expect(error.message).toContain(`record {"ID":3} does not fit target 'consumer.ContractFull': ${message}`)
      // atomic: the truncate and the first batch (books 1, 2) were rolled back with it
      expect(await rowsOf('consumer.ContractFull')).toEqual(before)
      const tracker = await ctx.engine.status(name)
      expect(tracker.status).toBe('failed')
      expect(tracker.lastError).toContain(message)
    })
  })

  test.each(KINDS)('%s: a delta run fails at the batch holding the record; that batch is not committed', async (kind, field, value, message) => {
    const name = `contract-delta-${slug(kind)}`
    await ql.DELETE.from('consumer.ContractDelta')
    await register(name, 'consumer.ContractDelta', {}, field, value)
    const error = await ctx.run(name).catch(e => e)
    expect(error).toMatchObject({ code: 'TARGET_FAILED', target: field })
    expect(error.message).toContain(`record {"ID":3} does not fit target 'consumer.ContractDelta': ${message}`)
    expect(await idsOf('consumer.ContractDelta')).toEqual([1, 2]) // batch 1 committed; batch 2 (books 3, 4) not at all
    expect(await ctx.engine.status(name)).toMatchObject({ status: 'failed', statistics_created: 2 })
  })

  test('values that fit pass under fail: decimal text with trailing zeros, integer bounds, enum values', async () => {
    const name = 'contract-fits'
    await ql.DELETE.from('consumer.ContractDelta')
    await register(name, 'consumer.ContractDelta', {}, 'price', '999.990')
    ctx.engine.before('PIPELINE.MAP', name, function edges(req: { data: { sourceRecords: Array<Record<string, unknown>> } }) {
      for (const record of req.data.sourceRecords) if (record.ID === 4) Object.assign(record, { stock: -32768, price: -0.05, title: 'x'.repeat(12) })
    })
    expect(await ctx.run(name)).toMatchObject({ status: 'completed', statistics: { created: 5 } })
    const rows = await rowsOf('consumer.ContractDelta')
    expect(rows.map(r => [r.ID, Number(r.price), r.stock])).toContainEqual([3, 999.99, 3])
    expect(rows.map(r => [r.ID, Number(r.price), r.stock, r.title])).toContainEqual([4, -0.05, -32768, 'x'.repeat(12)])
  })

  test("onError 'skip' sets each record aside with the message 'fail' gives (every kind in one run: books 3 to 9); the others are written", async () => {
    // five more books (by one of the enum's authors): every kind breaks a book of its own
    await ctx.provider.control.seed({ from: 6, count: 5, modifiedAt: T0, author: 'Author 1' })
    const name = 'contract-skip'
    await ql.DELETE.from('consumer.ContractSkip')
    await ctx.engine.addPipeline({ name, source: { service: 'Provider', entity: 'Books', batchSize: 2 }, target: { entity: 'consumer.ContractSkip' }, onError: 'skip' } as never)
    const broken = new Map(KINDS.map(([, field, value], i) => [i + 3, { field, value }]))
    ctx.engine.before('PIPELINE.MAP', name, function breakBooks(req: { data: { sourceRecords: Array<Record<string, unknown>> } }) {
      for (const record of req.data.sourceRecords) {
        const bad = broken.get(record.ID as number)
        if (bad) record[bad.field] = bad.value
      }
    })
    expect(await ctx.run(name)).toMatchObject({ status: 'completed', statistics: { created: 3, skipped: KINDS.length } })
    expect(await idsOf('consumer.ContractSkip')).toEqual([1, 2, 10])
    const rejects = await ql.SELECT.from('plugin.data_pipeline.PipelineRejects').columns('recordKey', 'phase', 'error').where({ pipeline_name: name })
    expect(rejects).toHaveLength(KINDS.length)
    for (const [i, [kind, , , message]] of KINDS.entries())
      expect(rejects, kind).toContainEqual({ recordKey: `{"ID":${i + 3}}`, phase: 'validate', error: message })
  })
})

describe('a target narrower than the source is configuration, not schema drift', () => {
  test("String(200) into String(12) with onError 'skip' and schemaDrift 'fail': runs succeed, the long row is rejected, no drift; one warning naming the field", async () => {
    await ctx.provider.control.reset()
    await ctx.provider.control.seed({ from: 1, count: 5, modifiedAt: T0 })
    await ctx.provider.control.touch({ from: 3, modifiedAt: T0, title: TITLE_28 })
    await ctx.engine.addPipeline({ name: 'narrow', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.ContractNarrow' }, onError: 'skip', schemaDrift: 'fail' })

    const logged: string[] = []
    const spy = vi.spyOn(console, 'warn').mockImplementation((...args: unknown[]) => { logged.push(formatWithOptions({ depth: 5 }, ...args)) })
    let first, second
    try {
      first = await ctx.run('narrow')
      await ctx.provider.control.touch({ from: 4, modifiedAt: T1 })
      second = await ctx.run('narrow')
    } finally {
      spy.mockRestore()
    }
    expect(first).toMatchObject({ status: 'completed', statistics: { created: 4, skipped: 1 } })
    expect(second).toMatchObject({ status: 'completed', statistics: { skipped: 0 } })
    expect(await idsOf('consumer.ContractNarrow')).toEqual([1, 2, 4, 5])
    const rejects = await ql.SELECT.from('plugin.data_pipeline.PipelineRejects').where({ pipeline_name: 'narrow' })
    expect(rejects).toMatchObject([{ recordKey: '{"ID":3}', phase: 'validate', error: "'title': 28 characters exceed String(12)", status: 'open' }])
    const runs = await ql.SELECT.from('plugin.data_pipeline.PipelineRuns').columns('ID', 'drift').where({ pipeline_name: 'narrow' })
    expect(runs).toHaveLength(2)
    for (const run of runs) expect(run.drift).toBeNull()
    // said once (when the pipeline was prepared), naming the field and both types
    const warnings = logged.filter(line => line.includes("pipeline 'narrow'") && line.includes('narrower'))
    expect(warnings).toHaveLength(1)
    expect(warnings[0]).toContain("'title' String(200) into String(12)")
    expect(logged.join('\n')).not.toContain('Schema drift at source')
  })
})
