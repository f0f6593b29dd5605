/**
 * docs/reference/management-api.md "Run events" (issue 25, point 1: run events are retained with their run): after a run
 * ended, the runs of its pipeline beyond `retention.runs` (maxAge, maxCount) are deleted through
 * CAP with their events — never a running run, the last successful and the last failed run, or a
 * run with open rejects. Real provider over HTTP, the consumer's engine in process on SQLite (and,
 * in the `postgres` project, on PostgreSQL).
 */
import cds from '@sap/cds'
import path from 'node:path'
import { FIXTURES, startApp, type ProviderControl, type RunningApp } from '../helpers/apps'
import { sharedProvider } from '../helpers/shared-provider'
import { ql } from '../helpers/consumer'
import { waitFor } from '../helpers/wait'
import type DataPipelineService from '../../srv/data-pipeline'
import type { RunOutcome } from '../../lib/engine/run/index'

const ctx = {} as { provider: RunningApp & { control: ProviderControl }; engine: DataPipelineService }
beforeAll(async () => {
  ctx.provider = await sharedProvider()
})
cds.test(path.join(FIXTURES, 'management'))
beforeAll(async () => {
  const requires = cds.env.requires as unknown as Record<string, { credentials?: object }>
  requires.Provider.credentials = { url: `${ctx.provider.url}/odata/v4/catalog` }
  ctx.engine = (await cds.connect.to('data-pipeline')) as unknown as DataPipelineService
})
afterAll(async () => {
  await ctx.provider?.stop()
})
beforeEach(async () => {
  await ctx.provider.control.reset()
})
afterEach(() => {
  delete settings().retention
})

const T0 = '2026-01-01T00:00:00.000Z'
const RUNS = 'plugin.data_pipeline.PipelineRuns'
const EVENTS = 'plugin.data_pipeline.PipelineRunEvents'
const REJECTS = 'plugin.data_pipeline.PipelineRejects'
const DAY = 86_400_000
/** Runs per DELETE (lib/retention/prune.ts; not imported: loading lib/ here would read cds.env before cds.test chose the app). */
const PRUNE_CHUNK = 50
/** Pruning is throttled per pipeline (`interval`, default 5 minutes): here after every run. */
const EVERY_RUN = 1

const settings = () => (cds.env.requires as unknown as Record<string, Record<string, unknown>>)['data-pipeline']

async function run(name: string): Promise<RunOutcome> {
  return (await ctx.engine.execute(name)).done
}

async function failingRun(name: string): Promise<string> {
  await ctx.provider.control.faults({ status: 500, count: 1000 })
  try {
    const { runId, done } = await ctx.engine.execute(name)
    await expect(done).rejects.toThrow()
    return runId
  } finally {
    await ctx.provider.control.faults({})
  }
}

async function runIds(name: string): Promise<string[]> {
  return ((await ql.SELECT.from(RUNS).columns('ID').where({ pipeline_name: name }).orderBy('startTime')) as Array<{ ID: string }>).map(r => r.ID)
}

async function eventCount(runIds: string[]): Promise<number> {
  return Number(((await ql.SELECT.one.from(EVENTS).columns('count(1) as n').where({ run_ID: { in: runIds } })) as { n: number }).n)
}

/** Waits until exactly `expected` are the pipeline's runs (pruning runs in the background after a run). */
async function runsBecome(name: string, expected: string[]): Promise<void> {
  const want = [...expected].sort()
  await waitFor(async () => JSON.stringify([...(await runIds(name))].sort()) === JSON.stringify(want), `the runs of '${name}' to be ${want.length}`, 30_000)
}

async function pipeline(name: string, extra: Record<string, unknown> = {}): Promise<void> {
  await ctx.engine.addPipeline({ name, mode: 'delta', retry: { maxRetries: 0 }, source: { service: 'Provider', entity: 'Books' }, target: { entity: 'host.RunEventsBooks' }, ...extra } as never)
}

describe('run retention', () => {
  test('runs beyond maxCount are pruned after a run ends, their events with them; the newest stay', async () => {
    await ctx.provider.control.seed({ from: 1, count: 3, modifiedAt: T0 })
    await pipeline('retention-count')
    settings().retention = { runs: { maxCount: 3, interval: EVERY_RUN } }
    const outcomes: RunOutcome[] = []
    for (let i = 0; i < 6; i++) outcomes.push(await run('retention-count'))
    expect(outcomes.every(o => o.status === 'completed')).toBe(true)
    const ids = outcomes.map(o => o.runId)
    await runsBecome('retention-count', ids.slice(3))
    expect(await eventCount(ids.slice(0, 3))).toBe(0)
    expect(await eventCount(ids.slice(3))).toBeGreaterThanOrEqual(3 * 3) // start, lease, end at least
  })

  test('runs older than maxAge are pruned, except the last successful one', async () => {
    await ctx.provider.control.seed({ from: 1, count: 2, modifiedAt: T0 })
    await pipeline('retention-age')
    settings().retention = { runs: { maxAge: '30d', maxCount: false, interval: EVERY_RUN } }
    const old = [await run('retention-age'), await run('retention-age')].map(o => o.runId)
    // the two runs started 40 and 31 days ago
    for (const [i, ID] of old.entries()) {
      const start = new Date(Date.now() - (40 - i * 9) * DAY)
      await ql.UPDATE(RUNS).set({ startTime: start.toISOString(), endTime: new Date(start.getTime() + 1000).toISOString() }).where({ ID })
    }
    expect(await eventCount(old)).toBeGreaterThan(0)
    const failed = await failingRun('retention-age')
    // the older one goes; the newer stays while it is the last successful run
    await runsBecome('retention-age', [old[1], failed])
    expect(await eventCount(old.slice(0, 1))).toBe(0)
    const latest = (await run('retention-age')).runId
    await runsBecome('retention-age', [failed, latest])
    expect(await eventCount(old)).toBe(0)
  })

  test('never pruned: a running run, the last failed run, a run with open rejects', async () => {
    // books 4 and 5 share a title: the unique target sets one of them aside (onError skip), an open reject
    await ctx.provider.control.seed({ from: 1, count: 6, modifiedAt: T0 })
    await ctx.provider.control.touch({ from: 4, count: 2, modifiedAt: T0, title: 'Same' })
    await pipeline('retention-kept', { onError: 'skip', target: { entity: 'host.RunEventsUnique' } })
    // a run whose row says running (its holder died where no guard closed it), started long ago
    const running = cds.utils.uuid()
    await ql.INSERT.into(RUNS).entries({ ID: running, pipeline_name: 'retention-kept', status: 'running', trigger: 'manual', mode: 'delta', startTime: new Date(Date.now() - 400 * DAY).toISOString() })
    settings().retention = { runs: { maxAge: '90d', maxCount: 1, interval: EVERY_RUN } }

    const withRejects = await run('retention-kept')
    expect(withRejects.statistics.skipped).toBe(1)
    const open = (await ql.SELECT.from(REJECTS).where({ run_ID: withRejects.runId, status: 'open' })) as unknown[]
    expect(open).toHaveLength(1)
    const failed = await failingRun('retention-kept')
    const pruned = [failed, (await run('retention-kept')).runId, (await run('retention-kept')).runId]
    const lastFailed = await failingRun('retention-kept')
    const newest = (await run('retention-kept')).runId

    // maxCount 1 keeps the newest run (the last successful one); the others stay for their own reasons
    await runsBecome('retention-kept', [running, withRejects.runId, lastFailed, newest])
    expect(await ql.SELECT.from(REJECTS).where({ run_ID: withRejects.runId, status: 'open' })).toHaveLength(1)
    expect(await eventCount(pruned)).toBe(0)
    expect(await eventCount([lastFailed])).toBeGreaterThan(0)
  })

  test('a long history goes in bounded chunks: DELETEs by key of at most PRUNE_CHUNK runs each', async () => {
    await ctx.provider.control.seed({ from: 1, count: 2, modifiedAt: T0 })
    await pipeline('retention-chunks')
    // 120 finished runs from 100 days ago on (as before retention was set), each with two events
    const old = Array.from({ length: 120 }, (_, i) => ({
      ID: cds.utils.uuid(), pipeline_name: 'retention-chunks', status: i % 7 ? 'idle' : 'failed', trigger: 'scheduled', mode: 'delta',
      startTime: new Date(Date.now() - 100 * DAY + i * 60_000).toISOString(), endTime: new Date(Date.now() - 100 * DAY + i * 60_000 + 1000).toISOString(),
    }))
    await ql.INSERT.into(RUNS).entries(old)
    await ql.INSERT.into(EVENTS).entries(old.flatMap(r => [{ run_ID: r.ID, seq: 1, kind: 'start' }, { run_ID: r.ID, seq: 2, kind: 'end' }]))
    const synthetic = new Set(old.map(r => r.ID))
    const deletes: number[] = []
    const db = cds.db as unknown as { before(event: string, handler: (req: { target?: { name?: string }; query?: { DELETE?: { where?: unknown[] } } }) => void): void }
    db.before('DELETE', req => {
      if (req.target?.name !== RUNS) return
      const list = (req.query?.DELETE?.where ?? []).find((x): x is { list: Array<{ val: string }> } => Boolean((x as { list?: unknown }).list))?.list ?? []
      if (list.some(v => synthetic.has(v.val))) deletes.push(list.length)
    })
    settings().retention = { runs: { maxAge: '90d', interval: EVERY_RUN } }
    const latest = await failingRun('retention-chunks')
    // the newest successful one stays: the last successful run
    const lastSuccess = old.filter(r => r.status === 'idle').at(-1)!.ID
    await runsBecome('retention-chunks', [lastSuccess, latest])
    expect(deletes).toEqual([PRUNE_CHUNK, PRUNE_CHUNK, 120 - 1 - 2 * PRUNE_CHUNK])
    expect(await eventCount(old.map(r => r.ID).filter(id => id !== lastSuccess))).toBe(0)
  })

  test('retention: false keeps every run; a limit set later prunes them at the next run', async () => {
    await ctx.provider.control.seed({ from: 1, count: 2, modifiedAt: T0 })
    await pipeline('retention-off')
    settings().retention = false
    const ids: string[] = []
    for (let i = 0; i < 4; i++) ids.push((await run('retention-off')).runId)
    // with retention off no pruning starts when a run ends (decided as it ends), so this is final
    expect(await runIds('retention-off')).toEqual(ids)

    settings().retention = { runs: { maxCount: 2, interval: EVERY_RUN } }
    ids.push((await run('retention-off')).runId)
    await runsBecome('retention-off', ids.slice(3))
  })
})

describe('retention settings', () => {
  test('an invalid setting stops the app at startup, naming the field', async () => {
    const cases: Array<[unknown, RegExp]> = [
      [{ runs: { maxAge: 'soon' } }, /retention\.runs\.maxAge 'soon' is not a duration/],
      [{ runs: { maxCount: 0 } }, /retention\.runs\.maxCount must be false or a positive integer/],
    ]
    for (const [retention, message] of cases) {
      const failed = await startApp(path.join(FIXTURES, 'management'), { env: { CDS_CONFIG: JSON.stringify({ requires: { 'data-pipeline': { retention } } }) } })
        .then(async started => { await started.stop(); return undefined }, (error: Error) => error)
      expect(failed?.message).toMatch(/exited with 1/)
      expect(failed?.message).toMatch(message)
      expect(failed?.message).not.toMatch(/server listening/)
    }
  })
})
