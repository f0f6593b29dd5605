/**
 * Poison records (issue 12, DESIGN "Poison records"): with `onError: 'skip'` a record that fails
 * MAP, the check against the target's types, or the database write is set aside in
 * PipelineRejects with its key, phase, error and record, counted as skipped, and every other
 * record of the batch is written. Real provider over HTTP, the management API at /pipeline of
 * the consumer, a database constraint (a unique index) for the write failures. Also part of the
 * `postgres` project, where a failed statement would abort the batch's whole transaction.
 */
import cds from '@sap/cds'
import { useConsumer, ql } from '../helpers/consumer'
import { BOUND, client, errorOf } from '../helpers/management'

// the consumer with the management API at /pipeline (merged into the postgres project's CDS_CONFIG)
process.env.CDS_CONFIG = JSON.stringify({
  ...JSON.parse(process.env.CDS_CONFIG || '{}'),
  requires: { 'data-pipeline': { management: { reuse: { api: true } } } },
})

const ctx = useConsumer()
// PostgreSQL: the suite's `cds deploy` ran without the setting above; add the management service's views
beforeAll(async () => {
  const db = cds.db as unknown as { kind: string; run(sql: string): Promise<unknown> }
  if (db.kind !== 'postgres') return
  const facade = cds as unknown as { load(files: string[]): Promise<unknown>; model: { $sources: string[] }; compile: { to: { sql(model: unknown, options: object): string[] } } }
  const ddl = facade.compile.to.sql(await facade.load(facade.model.$sources), { dialect: 'postgres' })
  for (const statement of ddl.filter(sql => /^CREATE VIEW DataPipelineManagementService_/i.test(sql.trim()))) await db.run(statement)
})
const { GET, POST } = client(() => (ctx.test as unknown as { axios: any }).axios)

const T0 = '2026-01-01T00:00:00.000Z'
const T1 = '2026-01-02T00:00:00.000Z'
const LONG = 'A title far too long for String(8)'

interface Reject {
  ID: string
  run_ID: string
  pipeline_name: string
  recordKey: string
  phase: string
  error: string
  record: string | null
  mapped: string | null
  status: string
}

const rejectsOf = async (name: string, status?: string): Promise<Reject[]> =>
  (await ql.SELECT.from('plugin.data_pipeline.PipelineRejects').where({ pipeline_name: name, ...(status ? { status } : {}) }).orderBy('recordKey')) as Reject[]
const ids = async (entity: string): Promise<number[]> => ((await ql.SELECT.from(entity).columns('ID').orderBy('ID')) as Array<{ ID: number }>).map(r => r.ID)
const range = (from: number, to: number, except: number[] = []) => Array.from({ length: to - from + 1 }, (_, i) => from + i).filter(i => !except.includes(i))

/** Counts INSERT/UPSERT statements the database receives for one entity. */
function countWrites(entity: string): { count: number } {
  const counter = { count: 0 }
  const db = cds.db as unknown as { before(event: string, handler: (req: { event: string; target?: { name?: string } }) => void): void }
  db.before('*', req => {
    if (['CREATE', 'INSERT', 'UPSERT'].includes(req.event) && req.target?.name === entity) counter.count++
  })
  return counter
}

describe('onError: skip', () => {
  beforeEach(async () => {
    await ctx.provider.control.reset()
  })

  test('config: onError and onError.maxSkipped are validated naming the key', async () => {
    const base = { source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.RejectsFail' } }
    for (const [onError, key] of [
      ['ignore', 'onError'], [{ mode: 'drop' }, 'onError.mode'], [{ mode: 'skip', maxSkipped: -1 }, 'onError.maxSkipped'],
      [{ mode: 'skip', maxSkipped: 1.5 }, 'onError.maxSkipped'], [{ mode: 'skip', maxSkipped: '120%' }, 'onError.maxSkipped'],
      [{ mode: 'fail', maxSkipped: 5 }, 'onError.maxSkipped'], [{ mode: 'skip', limit: 5 }, 'onError.limit'],
    ] as const) {
      const error = await ctx.engine.addPipeline({ ...base, name: `bad-${key}-${JSON.stringify(onError)}`, onError } as never).catch(e => e)
      expect(error, JSON.stringify(onError)).toMatchObject({ code: 'INVALID_CONFIG', target: key })
      expect(error.message).toContain(key)
    }
    for (const onError of ['fail', 'skip', { mode: 'skip', maxSkipped: 100 }, { mode: 'skip', maxSkipped: 0.05 }, { mode: 'skip', maxSkipped: '5%' }] as const)
      await expect(ctx.engine.addPipeline({ ...base, name: `good-${JSON.stringify(onError)}`, onError } as never)).resolves.toBeTruthy()
  })

  test('a value that does not fit the target type is rejected at validation; the rest of the batch is written; replay after the fix writes it', async () => {
    await ctx.provider.control.seed({ from: 1, count: 20, modifiedAt: T0 })
    await ctx.provider.control.touch({ from: 3, modifiedAt: T0, title: LONG })
    await ctx.provider.control.touch({ from: 17, modifiedAt: T0, title: LONG })
    await ctx.engine.addPipeline({ name: 'too-long', source: { service: 'Provider', entity: 'Books', batchSize: 20 }, target: { entity: 'consumer.RejectsTooLong' }, onError: 'skip' })

    const outcome = await ctx.run('too-long')
    expect(outcome).toMatchObject({ status: 'completed', statistics: { created: 18, updated: 0, deleted: 0, skipped: 2 } })
    expect(await ids('consumer.RejectsTooLong')).toEqual(range(1, 20, [3, 17]))
    const rejects = await rejectsOf('too-long')
    expect(rejects.map(r => [r.recordKey, r.phase, r.status, r.run_ID])).toEqual([['{"ID":17}', 'validate', 'open', outcome.runId], ['{"ID":3}', 'validate', 'open', outcome.runId]])
    expect(rejects[1].error).toBe(`'title': ${LONG.length} characters exceed String(8)`)
    expect(JSON.parse(rejects[1].record!)).toMatchObject({ ID: 3, title: LONG }) // the source record as read
    const tracker = await ctx.engine.status('too-long')
    expect(tracker).toMatchObject({ statistics_created: 18, statistics_skipped: 2 })
    expect(((await GET(`/pipeline/PipelineRuns(${outcome.runId})`)).data)).toMatchObject({ statistics_created: 18, statistics_skipped: 2 })

    // the API: read-only, filtered by pipeline, paged, and as the run's navigation
    const page = await GET(`/pipeline/PipelineRejects?$filter=pipeline_name eq 'too-long'&$orderby=recordKey&$top=1&$skip=1&$count=true`)
    expect(page.status).toBe(200)
    expect(page.data['@odata.count']).toBe(2)
    expect(page.data.value).toHaveLength(1)
    expect(page.data.value[0]).toMatchObject({ recordKey: '{"ID":3}', phase: 'validate', status: 'open', run_ID: outcome.runId, pipeline_name: 'too-long' })
    const ofRun = await GET(`/pipeline/PipelineRuns(${outcome.runId})/rejects?$count=true`)
    expect(ofRun.data['@odata.count']).toBe(2)
    const expanded = await GET(`/pipeline/Pipelines('too-long')?$expand=rejects($filter=status eq 'open';$select=recordKey)`)
    expect(expanded.data.rejects).toHaveLength(2)
    expect((await POST('/pipeline/PipelineRejects', { recordKey: 'x' })).status).toBeGreaterThanOrEqual(400)

    // the fix (a MAP handler shortens titles), then replay: both written, rejects marked replayed
    ctx.engine.before('PIPELINE.MAP', 'too-long', function shortenTitles(req: { data: { sourceRecords: Array<{ title?: string }> } }) {
      for (const record of req.data.sourceRecords) if (record.title && record.title.length > 8) record.title = `${record.title.slice(0, 7)}…`
    })
    const replay = await POST(`${BOUND('too-long')}.replayRejects`, {})
    expect(replay.status, JSON.stringify(replay.data)).toBe(200)
    expect(replay.data).toMatchObject({ name: 'too-long', status: 'completed', statistics: { created: 2, updated: 0, skipped: 0 } })
    expect(await ids('consumer.RejectsTooLong')).toEqual(range(1, 20))
    expect(await ql.SELECT.one.from('consumer.RejectsTooLong').where({ ID: 3 })).toMatchObject({ title: 'A title…' })
    expect((await rejectsOf('too-long')).map(r => [r.status, r.recordKey])).toEqual([['replayed', '{"ID":17}'], ['replayed', '{"ID":3}']])
    expect((await GET(`/pipeline/PipelineRejects?$filter=pipeline_name eq 'too-long' and status eq 'open'&$count=true`)).data['@odata.count']).toBe(0)
    // the replay is a run of its own; the watermark is untouched
    expect(await ctx.engine.status('too-long')).toMatchObject({ lastSync: T0, statistics_created: 20, statistics_skipped: 2, status: 'idle' })
    // nothing left: a second replay writes nothing
    expect((await POST(`${BOUND('too-long')}.replayRejects`, {})).data).toMatchObject({ status: 'completed', statistics: { created: 0, updated: 0, skipped: 0 } })
  })

  test('a MAP handler throwing for one record: that record is rejected at map, the others are mapped and written', async () => {
    await ctx.provider.control.seed({ from: 1, count: 12, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'map-fails', source: { service: 'Provider', entity: 'Books', batchSize: 12 }, target: { entity: 'consumer.RejectsMapped' }, onError: 'skip' })
    let broken = true
    let calls = 0
    ctx.engine.before('PIPELINE.MAP', 'map-fails', function failOnBook5(req: { data: { sourceRecords: Array<{ ID: number }> } }) {
      calls++
      if (broken && req.data.sourceRecords.some(r => r.ID === 5)) throw new Error('cannot map book 5')
    })
    const outcome = await ctx.run('map-fails')
    expect(outcome).toMatchObject({ status: 'completed', statistics: { created: 11, skipped: 1 } })
    expect(await ids('consumer.RejectsMapped')).toEqual(range(1, 12, [5]))
    const [reject] = await rejectsOf('map-fails')
    expect(reject).toMatchObject({ recordKey: '{"ID":5}', phase: 'map', error: 'cannot map book 5', mapped: null })
    expect(JSON.parse(reject.record!)).toMatchObject({ ID: 5, title: 'Book 5' })
    // the batch, then halves down to the record: 1 + 2·ceil(log2 12) MAP calls
    expect(calls).toBe(9)

    broken = false
    const replay = await POST(`${BOUND('map-fails')}.replayRejects`, {})
    expect(replay.data).toMatchObject({ status: 'completed', statistics: { created: 1, skipped: 0 } })
    expect(await ids('consumer.RejectsMapped')).toEqual(range(1, 12))
    expect((await rejectsOf('map-fails'))[0].status).toBe('replayed')
  })

  test('a database write failure of one row: found by halving only when the batch fails; the reject clears when the source fixes the row', async () => {
    await ctx.provider.control.seed({ from: 1, count: 32, modifiedAt: T0 })
    const writes = countWrites('consumer.RejectsUnique')
    await ctx.engine.addPipeline({ name: 'unique', source: { service: 'Provider', entity: 'Books', batchSize: 16 }, target: { entity: 'consumer.RejectsUnique' }, onError: 'skip' })

    // rows 1–16 clean, rows 17–32 with one duplicate title (unique index): 20 and 29 carry 'Same'
    await ctx.provider.control.touch({ from: 20, modifiedAt: T0, title: 'Same' })
    await ctx.provider.control.touch({ from: 29, modifiedAt: T0, title: 'Same' })
    const outcome = await ctx.run('unique')
    expect(outcome).toMatchObject({ status: 'completed', statistics: { created: 31, skipped: 1 } })
    expect(await ids('consumer.RejectsUnique')).toEqual(range(1, 32, [29]))
    const [reject] = await rejectsOf('unique')
    expect(reject).toMatchObject({ recordKey: '{"ID":29}', phase: 'write', status: 'open' })
    expect(reject.error).toMatch(/unique|duplicate/i)
    // the clean batch: one write; the batch with one bad row: 1 + 2·log2(16) = 9
    expect(writes.count).toBe(1 + 9)

    // the source fixes the row: the next delta run writes it and resolves the reject
    await ctx.provider.control.touch({ from: 29, modifiedAt: T1, title: 'Other' })
    const second = await ctx.run('unique')
    expect(second).toMatchObject({ status: 'completed', statistics: { created: 1, skipped: 0 } })
    expect(await ids('consumer.RejectsUnique')).toEqual(range(1, 32))
    expect(await rejectsOf('unique')).toMatchObject([{ recordKey: '{"ID":29}', status: 'written' }])
  })

  test("onError 'fail' (the default) is unchanged: the failing batch fails the run, nothing of it is written, no rejects", async () => {
    await ctx.provider.control.seed({ from: 1, count: 10, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'fails', source: { service: 'Provider', entity: 'Books', batchSize: 5 }, target: { entity: 'consumer.RejectsFail' } })
    ctx.engine.before('PIPELINE.MAP', 'fails', function failOnBook7(req: { data: { sourceRecords: Array<{ ID: number }> } }) {
      if (req.data.sourceRecords.some(r => r.ID === 7)) throw new Error('cannot map book 7')
    })
    const error = await ctx.run('fails').catch(e => e)
    expect(error.message).toBe('cannot map book 7')
    expect(await ids('consumer.RejectsFail')).toEqual(range(1, 5)) // the first batch committed, the second not at all
    expect(await ctx.engine.status('fails')).toMatchObject({ status: 'failed', statistics_created: 5, statistics_skipped: 0 })
    expect(await rejectsOf('fails')).toEqual([])
  })

  test('maxSkipped as a count: exceeding it fails the run naming onError.maxSkipped; committed batches and their rejects stay', async () => {
    await ctx.provider.control.seed({ from: 1, count: 20, modifiedAt: T0 })
    await ctx.provider.control.touch({ from: 2, count: 3, modifiedAt: T0, title: LONG })
    await ctx.engine.addPipeline({ name: 'limit', source: { service: 'Provider', entity: 'Books', batchSize: 10 }, target: { entity: 'consumer.RejectsLimit' }, onError: { mode: 'skip', maxSkipped: 2 } })
    const error = await ctx.run('limit').catch(e => e)
    expect(error.message).toContain('onError.maxSkipped')
    expect(error.message).toContain('3 of 10 records read were skipped')
    const tracker = await ctx.engine.status('limit')
    expect(tracker.status).toBe('failed')
    expect(tracker.lastError).toContain('more than onError.maxSkipped allows (2)')
    // the first batch committed (per-batch transactions of a delta run), then the run stopped
    expect(await ids('consumer.RejectsLimit')).toEqual(range(1, 10, [2, 3, 4]))
    expect((await rejectsOf('limit')).map(r => r.recordKey)).toEqual(['{"ID":2}', '{"ID":3}', '{"ID":4}'])
  })

  test("maxSkipped as a share ('50%'): a Decimal price into an Integer column is rejected, the run fails naming the limit", async () => {
    // prices are ID/10 (0.10 … 2.00), sent by OData as decimal text: none is an integer ('1.00' neither: PostgreSQL refuses it)
    await ctx.provider.control.seed({ from: 1, count: 20, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'price', source: { service: 'Provider', entity: 'Books', batchSize: 20 }, target: { entity: 'consumer.RejectsPrice' }, onError: { mode: 'skip', maxSkipped: '50%' } })
    const error = await ctx.run('price').catch(e => e)
    expect(error.message).toContain('20 of 20 records read were skipped, more than onError.maxSkipped allows (50%)')
    const rejects = await rejectsOf('price')
    expect(rejects).toHaveLength(20)
    expect(rejects.find(r => r.recordKey === '{"ID":5}')?.error).toBe("'price': '0.50' is not an integer (Integer)")
    expect(rejects.find(r => r.recordKey === '{"ID":10}')?.error).toBe("'price': '1.00' is not an integer (Integer)")
  })

  test('a full refresh (one transaction) over the limit is rolled back, keeping the previous content; its rejects are kept for examination', async () => {
    await ctx.provider.control.seed({ from: 1, count: 10, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'full', mode: 'full', source: { service: 'Provider', entity: 'Books', batchSize: 5 }, target: { entity: 'consumer.RejectsFull' }, onError: { mode: 'skip', maxSkipped: 1 } })
    expect(await ctx.run('full')).toMatchObject({ status: 'completed', statistics: { created: 10, skipped: 0 } })
    await ctx.provider.control.touch({ from: 6, count: 2, modifiedAt: T1, title: LONG })
    const error = await ctx.run('full').catch(e => e)
    expect(error.message).toContain('onError.maxSkipped')
    expect(await ids('consumer.RejectsFull')).toEqual(range(1, 10)) // rolled back: the truncate too
    expect((await ctx.engine.status('full')).statistics_created).toBe(10)
    expect((await rejectsOf('full')).map(r => r.recordKey)).toEqual(['{"ID":6}', '{"ID":7}'])
  })

  test('replay while the pipeline runs is 409; an unknown pipeline is 404', async () => {
    expect((await POST(`${BOUND('nope')}.replayRejects`, {})).status).toBe(404)
    await ctx.provider.control.seed({ from: 1, count: 10, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'busy', source: { service: 'Provider', entity: 'Books', batchSize: 2 }, target: { entity: 'consumer.RejectsCount' }, onError: 'skip' })
    await ctx.provider.control.faults({ delay: 300 })
    const { done } = await ctx.engine.execute('busy', { async: true })
    const res = await POST(`${BOUND('busy')}.replayRejects`, {})
    expect(res.status).toBe(409)
    expect(errorOf(res).code).toBe('PIPELINE_RUNNING')
    await ctx.provider.control.faults({}) // answered: the rest of the run need not be slow
    await done
  })
})
