/**
 * Counts that tell the truth (issue 22, README "Statistics"): a run counts created (keys new to
 * the target), updated (present before, a value changed), unchanged (present and identical) and
 * deleted (gone from the source) — for full refreshes and delta runs, on the fast write path
 * (prepared statements, plain table) and CAP's path (a view), on SQLite and (project `postgres`)
 * PostgreSQL. The run's outcome, its PipelineRuns row and the pipeline's cumulative statistics
 * all carry them.
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

  test('delta: re-read identical rows count unchanged, a changed row updated, a new row created, a swept row deleted', async () => {
    const name = `counts-delta-${slug}`
    // stamps of now: the newest is not settled, so each later run re-reads it (README "Watermarks")
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
