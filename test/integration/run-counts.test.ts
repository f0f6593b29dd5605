/**
 * Counts that tell the truth (issue 22, docs/concepts/counts.md "Statistics"): a run counts created (keys new to
 * the target), updated (present before, a value changed), unchanged (present and identical) and
 * deleted (gone from the source) — for full refreshes and delta runs, on the fast write path
 * (prepared statements, plain table) and CAP's path (a view), on SQLite and (project `postgres`)
 * PostgreSQL. The run's outcome, its PipelineRuns row and the pipeline's cumulative statistics
 * all carry them, and a run's events count the same way (issue 37): each write batch reports its
 * rows by key as the run does, and the batches with the `sweep` event (rows gone from the source)
 * add up to the run's counts.
 */
import cds from '@sap/cds'
import path from 'node:path'
import { FIXTURES } from '../helpers/apps'
import { ql } from '../helpers/consumer'
import type DataPipelineService from '../../srv/data-pipeline'
import type { DatabaseTargetAdapter } from '../../lib/adapters/target/db'

cds.test(path.join(FIXTURES, 'fast-write'))

type Row = Record<string, unknown>
interface Db { run(query: unknown): Promise<any>; tx<T>(fn: () => Promise<T>): Promise<T> }
const db = () => (cds as unknown as { db: Db }).db
let engine: DataPipelineService

beforeAll(async () => {
  engine = (await cds.connect.to('data-pipeline')) as unknown as DataPipelineService
})

const ID = (n: number) => `00000000-0000-4000-8000-00000000000${n}`

async function source(rows: Row[]): Promise<void> {
  await db().tx(async () => {
    await db().run(ql.DELETE.from('fastwrite.Source'))
    await db().run(ql.DELETE.from('fastwrite.ViaFast'))
    await db().run(ql.INSERT.into('fastwrite.Source').entries(rows))
  })
}

async function run(name: string, mode: 'full' | 'delta'): Promise<Row> {
  const { done, runId } = await engine.execute(name, { mode }) as unknown as { done: Promise<{ statistics: Row }>; runId: string }
  const { statistics } = await done
  const stored = await db().run(ql.SELECT.one.from('plugin.data_pipeline.PipelineRuns').columns('statistics_created', 'statistics_updated', 'statistics_unchanged', 'statistics_deleted').where({ ID: runId }))
  // the history row says the same as the outcome (unchanged is 0 there when none)
  expect(stored).toEqual({
    statistics_created: statistics.created, statistics_updated: statistics.updated,
    statistics_unchanged: statistics.unchanged ?? 0, statistics_deleted: statistics.deleted,
  })
  return statistics
}

const COUNTS = ['created', 'updated', 'unchanged', 'deleted'] as const

/** A run's stored counts and the sum of what its batch and sweep events report, per count. */
async function countsAndEvents(runId: string): Promise<{ run: Record<string, number>; events: Record<string, number>; batches: Row[] }> {
  const stored = await db().run(ql.SELECT.one.from('plugin.data_pipeline.PipelineRuns').columns(...COUNTS.map(c => `statistics_${c}`)).where({ ID: runId }))
  const events = (await db().run(ql.SELECT.from('plugin.data_pipeline.PipelineRunEvents').columns('kind', 'rows', 'details').where({ run_ID: runId }).orderBy('seq'))) as Row[]
  const sum = Object.fromEntries(COUNTS.map(c => [c, 0]))
  for (const event of events.filter(e => e.kind === 'batch' || e.kind === 'sweep'))
    for (const [key, value] of Object.entries(JSON.parse(String(event.details ?? '{}')) as Record<string, number>)) if (key in sum) sum[key] += value
  return { run: Object.fromEntries(COUNTS.map(c => [c, Number(stored[`statistics_${c}`] ?? 0)])), events: sum, batches: events.filter(e => e.kind === 'batch') }
}

const titles = async () => ((await db().run(ql.SELECT.from('fastwrite.ViaFast').columns('ID', 'title').orderBy('ID'))) as Row[]).map(r => `${String(r.ID).slice(-1)}:${r.title}`)

describe.each([
  ['fast path (prepared statements)', 'fastwrite.ViaFast', 'prepared'],
  ["CAP's path (a view)", 'fastwrite.FastView', 'cap'],
])('run counts, %s', (_label, entity, kind) => {
  const slug = kind

  test('full refresh: first run creates, an unchanged rerun counts unchanged, then one changed + one new + one deleted', async () => {
    const name = `counts-full-${slug}`
    await source([1, 2, 3].map(n => ({ ID: ID(n), title: `t${n}`, qty: n })))
    await engine.addPipeline({ name, source: { entity: 'fastwrite.Source' }, target: { entity }, mode: 'full' } as never)
    expect(((await engine.registry.prepare(name)).target as DatabaseTargetAdapter).writePath.kind).toBe(kind)

    expect(await run(name, 'full')).toEqual({ created: 3, updated: 0, deleted: 0 })
    expect(await run(name, 'full')).toEqual({ created: 0, updated: 0, unchanged: 3, deleted: 0 })

    await db().tx(async () => {
      await db().run(ql.UPDATE('fastwrite.Source').set({ title: 't1 changed' }).where({ ID: ID(1) }))
      await db().run(ql.DELETE.from('fastwrite.Source').where({ ID: ID(3) }))
      await db().run(ql.INSERT.into('fastwrite.Source').entries({ ID: ID(4), title: 't4', qty: 4 }))
    })
    expect(await run(name, 'full')).toEqual({ created: 1, updated: 1, unchanged: 1, deleted: 1 })
    expect(await titles()).toEqual(['1:t1 changed', '2:t2', '4:t4'])

    // the pipeline's cumulative statistics add the runs up
    const pipeline = await db().run(ql.SELECT.one.from('plugin.data_pipeline.Pipelines').columns('statistics_created', 'statistics_updated', 'statistics_unchanged', 'statistics_deleted').where({ name }))
    expect(pipeline).toEqual({ statistics_created: 4, statistics_updated: 1, statistics_unchanged: 4, statistics_deleted: 1 })
  })

  test('a full refresh of already-replicated rows in 15 batches: each batch reports its 200 rows unchanged, the events add up to the run', async () => {
    const name = `counts-batches-${slug}`
    const N = 3000
    const key = (i: number) => `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`
    await source(Array.from({ length: N }, (_, i) => ({ ID: key(i), title: `t${i}`, qty: i })))
    await engine.addPipeline({ name, source: { entity: 'fastwrite.Source', batchSize: 200 }, target: { entity }, mode: 'full' } as never)

    const runOf = async () => (await engine.execute(name, { mode: 'full' }) as unknown as { runId: string; done: Promise<unknown> })
    const first = await runOf()
    await first.done
    expect(await countsAndEvents(first.runId)).toMatchObject({ run: { created: N, updated: 0, unchanged: 0, deleted: 0 }, events: { created: N, updated: 0, unchanged: 0, deleted: 0 } })

    // the same rows again: the run row says N unchanged, and so does every batch (not "created 200")
    const again = await runOf()
    await again.done
    const unchanged = await countsAndEvents(again.runId)
    expect(unchanged.run).toEqual({ created: 0, updated: 0, unchanged: N, deleted: 0 })
    expect(unchanged.batches).toHaveLength(N / 200)
    for (const batch of unchanged.batches) expect(JSON.parse(String(batch.details))).toEqual({ unchanged: 200 })
    expect(unchanged.events).toEqual(unchanged.run)

    // 5 changed, 7 gone from the source, 3 new: the batches count created/updated/unchanged, the sweep event the deleted
    await db().tx(async () => {
      for (let i = 0; i < 5; i++) await db().run(ql.UPDATE('fastwrite.Source').set({ title: `changed ${i}` }).where({ ID: key(i * 400) }))
      for (let i = 0; i < 7; i++) await db().run(ql.DELETE.from('fastwrite.Source').where({ ID: key(i * 300 + 1) }))
      await db().run(ql.INSERT.into('fastwrite.Source').entries([0, 1, 2].map(i => ({ ID: key(N + i), title: `new ${i}`, qty: i }))))
    })
    const mixed = await runOf()
    await mixed.done
    const counts = await countsAndEvents(mixed.runId)
    expect(counts.run).toEqual({ created: 3, updated: 5, unchanged: N - 5 - 7, deleted: 7 })
    expect(counts.events).toEqual(counts.run)
  })

  test('delta: re-read identical rows count unchanged, a changed row updated, a new row created, a swept row deleted', async () => {
    const name = `counts-delta-${slug}`
    // stamps of now: the newest is not settled, so each later run re-reads it (docs/concepts/delta.md "Watermarks, loss-free delta")
    const t = Date.now()
    const at = (s: number) => new Date(t + s * 1000).toISOString()
    await source([1, 2, 3].map(n => ({ ID: ID(n), title: `t${n}`, qty: n, stamp: at(n - 3) })))
    await engine.addPipeline({ name, source: { entity: 'fastwrite.Source' }, target: { entity }, mode: 'delta', delta: { field: 'stamp' }, deletes: { sweep: 'always' } } as never)

    expect(await run(name, 'delta')).toEqual({ created: 3, updated: 0, deleted: 0 })
    expect(await run(name, 'delta')).toEqual({ created: 0, updated: 0, unchanged: 1, deleted: 0 })

    await db().tx(async () => {
      await db().run(ql.UPDATE('fastwrite.Source').set({ title: 't1 changed', stamp: at(1) }).where({ ID: ID(1) }))
      await db().run(ql.DELETE.from('fastwrite.Source').where({ ID: ID(2) }))
      await db().run(ql.INSERT.into('fastwrite.Source').entries({ ID: ID(4), title: 't4', qty: 4, stamp: at(2) }))
    })
    expect(await run(name, 'delta')).toEqual({ created: 1, updated: 1, unchanged: 1, deleted: 1 })
    expect(await titles()).toEqual(['1:t1 changed', '3:t3', '4:t4'])
  })
})

test('a full refresh into a composite key counts each batch by key against the rows before it (adapter level)', async () => {
  const name = 'counts-composite'
  await engine.addPipeline({ name, source: { entity: 'fastwrite.Source' }, target: { entity: 'fastwrite.Composite' }, mode: 'full' } as never)
  const target = (await engine.registry.prepare(name)).target as DatabaseTargetAdapter
  const rows = (from: number, to: number, title = (i: number) => `t${i}`) => Array.from({ length: to - from }, (_, n) => ({ code: `c${(from + n) % 3}`, line: from + n, title: title(from + n) }))
  await db().tx(async () => {
    await db().run(ql.DELETE.from('fastwrite.Composite'))
    await db().run(ql.INSERT.into('fastwrite.Composite').entries(rows(0, 10)))
  })
  const context = { runId: 'composite-run', mode: 'full', batchIndex: 0, atomic: true } as never
  const result = await db().tx(async () => {
    const truncated = await target.truncate(context)
    // rows 0–9 before; rows 2–14 written, 4 and 7 with a new title
    const batches = [
      await target.writeBatch(rows(2, 7, i => i === 4 ? 'changed' : `t${i}`), context),
      await target.writeBatch(rows(7, 15, i => i === 7 ? 'changed' : `t${i}`), context),
    ]
    return { truncated, batches, total: await target.reconcileRefresh(context) }
  })
  expect(result.truncated).toBe(0) // counted by key at the end
  expect(result.batches).toEqual([{ created: 0, updated: 1, unchanged: 4, deleted: 0 }, { created: 5, updated: 1, unchanged: 2, deleted: 0 }])
  expect(result.total).toEqual({ created: 5, updated: 2, unchanged: 6, deleted: 2 })
})
