/**
 * Read-ahead of delta runs (issue 14, docs/concepts/delta.md "Read-ahead"), against a real provider over HTTP:
 * the first page is requested while the run guard is taken, from where this process's previous
 * run left the pipeline; it is used only when the guard finds that position, and never where an
 * application handler of START or READ may change the read. (The tracker's frequent UPDATEs, run
 * as CAP's SQL rendered once per shape, are checked in guard-and-retry.test.ts, on every database.)
 *
 * Whether a run read ahead is seen from inside the guard: a db handler holds the guard's UPDATE
 * for a moment and asks the provider how many requests it has had by then.
 */
import cds from '@sap/cds'
import { useConsumer, ql, rowCount } from '../helpers/consumer'

const ctx = useConsumer()
const { run } = ctx

const T1 = '2026-02-01T00:00:00.000Z'
const T2 = '2026-02-02T00:00:00.000Z'
const T3 = '2026-02-03T00:00:00.000Z'
const PIPELINES = 'plugin.data_pipeline.Pipelines'

/** Requests the provider had received when the guard of the pipeline's run took its lease (null: no guard seen). */
const atGuard = new Map<string, number | null>()
let probed = new Set<string>()
/** The probed run's requests expected before its guard (its read ahead), and the provider's count before the run. */
let expected = { ahead: 0, from: 0 }

beforeAll(() => {
  const db = cds.db as unknown as { before(event: string, entity: unknown, handler: (req: { data?: { status?: string; currentRun?: string }; query?: { UPDATE?: { where?: unknown } } }) => Promise<void>): void }
  // registered by definition: on cds 9 a string path on the db service never matches
  db.before('UPDATE', cds.model!.definitions[PIPELINES], async req => {
    const name = JSON.stringify(req.query?.UPDATE?.where ?? '').match(/"val":"([^"]+)"/)?.[1]
    if (req.data?.status !== 'running' || !name || !probed.has(name)) return
    // a read ahead sent before the guard may still be on its way (long on a loaded machine): the
    // guard waits for the expected one; where none is expected, a moment for a wrong one to arrive
    const until = Date.now() + (expected.ahead ? 30_000 : 150)
    for (let seen = await ctx.requestCount(); Date.now() < until && (!expected.ahead || seen - expected.from < expected.ahead); seen = await ctx.requestCount())
      await new Promise(resolve => setTimeout(resolve, 25))
    atGuard.set(name, await ctx.requestCount())
  })
})

/** Runs the pipeline and tells how many of its provider requests were sent before its guard held. */
async function probedRun(name: string, ahead: 0 | 1) {
  probed = new Set([name])
  atGuard.set(name, null)
  const before = await ctx.requestCount()
  expected = { ahead, from: before }
  const outcome = await run(name)
  const after = await ctx.requestCount()
  probed = new Set()
  const seen = atGuard.get(name)
  if (seen === null || seen === undefined) throw new Error(`the guard of '${name}' was not seen`)
  return { outcome, requests: after - before, beforeGuard: seen - before }
}

beforeEach(async () => {
  await ctx.provider.control.reset()
  await ctx.provider.control.faults({})
})

test('a delta run sends its first request while the guard is taken, and writes what that request read', async () => {
  await ctx.provider.control.seed({ from: 1, count: 20, modifiedAt: T1 })
  await ctx.engine.addPipeline({ name: 'ahead', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.BooksAhead' }, delta: { settle: 0 } })
  expect((await run('ahead')).statistics.created).toBe(20)

  const none = await probedRun('ahead', 1)
  expect(none.outcome).toMatchObject({ status: 'completed', statistics: { created: 0, updated: 0, deleted: 0 } })
  expect([none.requests, none.beforeGuard]).toEqual([1, 1])

  await ctx.provider.control.touch({ from: 5, count: 3, modifiedAt: T2, title: 'Changed' })
  const changed = await probedRun('ahead', 1)
  expect(changed.outcome.statistics).toEqual({ created: 0, updated: 3, deleted: 0 })
  expect([changed.requests, changed.beforeGuard]).toEqual([1, 1])
  expect(await ql.SELECT.from('consumer.BooksAhead').where({ title: 'Changed' }).columns('ID').orderBy('ID')).toEqual([{ ID: 5 }, { ID: 6 }, { ID: 7 }])
  expect((await ctx.engine.status('ahead')).lastSync).toBe(T2)
})

test('a read started from a position the tracker no longer holds is dropped: the run reads from the stored one; the next runs do not read ahead', async () => {
  await ctx.provider.control.seed({ from: 1, count: 10, modifiedAt: T1 })
  await ctx.engine.addPipeline({ name: 'ahead-stale', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.BooksAheadStale' }, delta: { settle: 0 } })
  expect((await run('ahead-stale')).statistics.created).toBe(10)

  // as if another instance had run meanwhile: it moved the watermark past rows this process never saw
  await ctx.provider.control.seed({ from: 11, count: 5, modifiedAt: T2 })
  await ql.UPDATE.entity(PIPELINES).set({ lastSync: T3, lastKey: null }).where({ name: 'ahead-stale' })
  const stale = await probedRun('ahead-stale', 1)
  expect(stale.beforeGuard).toBe(1) // read ahead from T1 …
  expect(stale.requests).toBe(2) // … dropped, and read again from T3
  expect(stale.outcome.statistics).toEqual({ created: 0, updated: 0, deleted: 0 })
  expect(await rowCount('consumer.BooksAheadStale')).toBe(10)

  const next = await probedRun('ahead-stale', 0)
  expect([next.requests, next.beforeGuard]).toEqual([1, 0])
})

test('an application handler of START or READ keeps the read behind the guard', async () => {
  await ctx.provider.control.seed({ from: 1, count: 5, modifiedAt: T1 })
  await ctx.engine.addPipeline({ name: 'ahead-hook', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.BooksAheadHook' }, delta: { settle: 0 } })
  expect((await run('ahead-hook')).statistics.created).toBe(5)
  const started: string[] = []
  ctx.engine.before('PIPELINE.START', 'ahead-hook', function noteStart(req: { data: { runId: string } }) {
    started.push(req.data.runId)
  })
  const hooked = await probedRun('ahead-hook', 0)
  expect(hooked.outcome.status).toBe('completed')
  expect([hooked.requests, hooked.beforeGuard]).toEqual([1, 0])
  expect(started).toEqual([hooked.outcome.runId])
})

test('a trigger rejected because a run is active drops its read; the active run completes', async () => {
  await ctx.provider.control.seed({ from: 1, count: 5, modifiedAt: T1 })
  await ctx.engine.addPipeline({ name: 'ahead-busy', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.BooksAheadBusy' }, delta: { settle: 0 } })
  expect((await run('ahead-busy')).statistics.created).toBe(5)
  await ctx.provider.control.faults({ delay: 1500 }) // the first run is still reading when the second trigger comes, also on a loaded machine
  const first = await ctx.engine.execute('ahead-busy', { async: true })
  await expect(ctx.engine.execute('ahead-busy')).rejects.toMatchObject({ code: 'PIPELINE_RUNNING' })
  expect(await first.done).toMatchObject({ status: 'completed', statistics: { created: 0, updated: 0, deleted: 0 } })
  await ctx.provider.control.faults({})
  expect((await run('ahead-busy')).status).toBe('completed')
})
