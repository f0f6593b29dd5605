/**
 * docs/reference/management-api.md "Run events" (issue 25, points 1 and 5): the bounded event log of every run — start, guard,
 * page reads, retries, write batches, errors, end — at `PipelineRuns(<ID>)/events` for every role
 * that reads runs; `failedAt` naming where a failed run failed, with its first error event; and
 * `PipelineRuns(<ID>)/retry()` for operators. Real provider over HTTP (faults injected there), the
 * consumer's management API at /pipeline as mocked users.
 */
import cds from '@sap/cds'
import path from 'node:path'
import { FIXTURES, type ProviderControl, type RunningApp } from '../helpers/apps'
import { sharedProvider } from '../helpers/shared-provider'
import { ql } from '../helpers/consumer'
import { BOUND, client, waitFor, type HttpResponse } from '../helpers/management'
import type DataPipelineService from '../../srv/data-pipeline'
import type { RunOutcome } from '../../lib/engine/run/index'

const CANARY = 'CANARY-SECRET'
const ctx = {} as { provider: RunningApp & { control: ProviderControl }; engine: DataPipelineService; run(name: string): Promise<RunOutcome> }
beforeAll(async () => {
  ctx.provider = await sharedProvider()
})
const test$ = cds.test(path.join(FIXTURES, 'management'))
beforeAll(async () => {
  const requires = cds.env.requires as unknown as Record<string, { credentials?: object }>
  // credentials with secrets: none may appear in an event
  requires.Provider.credentials = { url: `${ctx.provider.url}/odata/v4/catalog`, username: 'pipeline', password: CANARY, headers: { 'x-api-key': `${CANARY}-HEADER` } }
  ctx.engine = (await cds.connect.to('data-pipeline')) as unknown as DataPipelineService
  ctx.run = async name => (await ctx.engine.execute(name)).done as Promise<RunOutcome>
})
afterAll(async () => {
  await ctx.provider?.stop()
})
const T0 = '2026-01-01T00:00:00.000Z'
const RUNS = 'plugin.data_pipeline.PipelineRuns'
const EVENTS = 'plugin.data_pipeline.PipelineRunEvents'
const http = (user: string | null) => client(() => (test$ as unknown as { axios: any }).axios, user)
const RETRY = (id: string) => `/pipeline/PipelineRuns(${id})/DataPipelineManagementService.retry`

interface Event { seq: number; kind: string; phase: string | null; httpStatus: number | null; rows: string | number | null; bytes: string | number | null; durationMs: string | number | null; attempt: number | null; waitMs: string | number | null; message: string | null; details: string | null }

/** A run's events through the management API (as a viewer unless told), in order. */
async function eventsOf(runId: string, user = 'viewer'): Promise<Event[]> {
  const res = await http(user).GET(`/pipeline/PipelineRuns(${runId})/events?$orderby=seq`)
  expect(res.status, JSON.stringify(res.data)).toBe(200)
  return res.data.value
}

async function failedRun(name: string): Promise<Record<string, any>> {
  const { done } = await ctx.engine.execute(name)
  await expect(done).rejects.toThrow()
  return ql.SELECT.one.from(RUNS).where({ pipeline_name: name, status: 'failed' }).orderBy('startTime desc')
}

const settings = () => (cds.env.requires as unknown as Record<string, Record<string, unknown>>)['data-pipeline']

beforeEach(async () => {
  await ctx.provider.control.reset()
})

describe('run events', () => {
  test('a run of three pages with a retry: start, guard, page reads, the retry, write batches and the end, in order', async () => {
    await ctx.provider.control.seed({ from: 1, count: 30, modifiedAt: T0 })
    await ctx.engine.addPipeline({
      name: 'events-pages', mode: 'delta', retry: { maxRetries: 2, baseDelay: 10, maxDelay: 20 },
      source: { service: 'Provider', entity: 'Books', batchSize: 10 }, target: { entity: 'host.RunEventsBooks' },
    })
    // the second request (the second page) fails once with 503, then succeeds
    await ctx.provider.control.faults({ status: 503, count: 1, after: 1 })
    const outcome = await ctx.run('events-pages')
    expect(outcome).toMatchObject({ status: 'completed', statistics: { created: 30 } })

    const events = await eventsOf(outcome.runId)
    expect(events.map(e => e.seq)).toEqual(events.map((_, i) => i + 1))
    expect(events[0]).toMatchObject({ kind: 'start', message: 'delta run, trigger manual' })
    expect(events[1]).toMatchObject({ kind: 'lease', phase: 'guard' })
    expect(events[1].message).toMatch(/^guard taken; lease \d+ ms$/)
    // the delta read's segments: an empty one (rows at the watermark) may come first
    const pages = events.filter(e => e.kind === 'page' && Number(e.rows) > 0)
    expect(pages.map(e => [Number(e.rows), e.httpStatus, e.phase])).toEqual([[10, 200, 'source'], [10, 200, 'source'], [10, 200, 'source']])
    expect(events.filter(e => e.kind === 'page').every(e => e.httpStatus === 200 && e.phase === 'source')).toBe(true)
    expect(pages.every(e => Number(e.durationMs) >= 0)).toBe(true)
    const retries = events.filter(e => e.kind === 'retry')
    expect(retries).toHaveLength(1)
    expect(retries[0]).toMatchObject({ phase: 'source', httpStatus: 503, attempt: 1, message: 'HTTP 503' })
    expect(Number(retries[0].waitMs)).toBeGreaterThanOrEqual(0)
    // the retry comes before the page it repeated was read
    expect(retries[0].seq).toBeLessThan(pages[1].seq)
    const batches = events.filter(e => e.kind === 'batch')
    expect(batches.map(e => [e.attempt, Number(e.rows), JSON.parse(e.details!)])).toEqual([[0, 10, { created: 10 }], [1, 10, { created: 10 }], [2, 10, { created: 10 }]])
    const end = events.at(-1)!
    expect(end).toMatchObject({ kind: 'end', message: 'completed' })
    expect(Number(end.rows)).toBe(30)
    expect(JSON.parse(end.details!)).toMatchObject({ created: 30, updated: 0, deleted: 0 })
    expect(events.some(e => e.kind === 'error' || e.kind === 'rollup')).toBe(false)

    const run = (await http('viewer').GET(`/pipeline/PipelineRuns(${outcome.runId})`)).data
    expect(run).toMatchObject({ status: 'idle', failedAt: null })
  })

  test('at most runEvents.max events per run: the rest is rolled up into one event with its counts', async () => {
    await ctx.provider.control.seed({ from: 1, count: 50, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'events-bound', mode: 'delta', source: { service: 'Provider', entity: 'Books', batchSize: 5 }, target: { entity: 'host.RunEventsBound' } })
    settings().runEvents = { max: 8 }
    let outcome
    try {
      outcome = await ctx.run('events-bound')
    } finally {
      delete settings().runEvents
    }
    expect(outcome).toMatchObject({ status: 'completed', statistics: { created: 50 } })
    const events = await eventsOf(outcome.runId)
    // 10 pages and 10 batches: 5 detail events, the roll-up and the end (the error's place stays free)
    expect(events.length).toBeLessThanOrEqual(8)
    const kinds = events.map(e => e.kind)
    expect(kinds.slice(0, 3)).toEqual(['start', 'lease', 'page'])
    // the next pages are read while a batch is written: pages and batches interleave
    expect(kinds.slice(3, 5).every(kind => kind === 'page' || kind === 'batch')).toBe(true)
    expect(kinds.slice(5)).toEqual(['rollup', 'end'])
    const rollup = events.find(e => e.kind === 'rollup')!
    expect(rollup.message).toMatch(/^\d+ more events: \d+ (page reads|write batches) \(\d+ rows, \d+ ms\); \d+ (page reads|write batches) \(\d+ rows, \d+ ms\)$/)
    const rolled = JSON.parse(rollup.details!)
    expect(rollup.message).toMatch(new RegExp(`^${rolled.page.count + rolled.batch.count} more events`))
    expect(rolled.batch.count).toBe(10 - events.filter(e => e.kind === 'batch').length)
    // nothing lost: the pages shown and rolled up add up to the rows read
    const shown = events.filter(e => e.kind === 'page').reduce((sum, e) => sum + Number(e.rows), 0)
    expect(shown + rolled.page.rows).toBe(50)
    const written = events.filter(e => e.kind === 'batch').reduce((sum, e) => sum + Number(e.rows), 0)
    expect(written + rolled.batch.rows).toBe(50)
  })

  test('a running run writes its new events every runEvents.flushInterval: they can be followed while it goes, each once', async () => {
    await ctx.provider.control.seed({ from: 1, count: 30, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'events-live', mode: 'delta', source: { service: 'Provider', entity: 'Books', batchSize: 5 }, target: { entity: 'host.RunEventsBound' } })
    settings().runEvents = { flushInterval: 100 }
    await ctx.provider.control.faults({ delay: 250 }) // every page takes a while
    try {
      // started over HTTP, asynchronously: the test looks on while it goes
      const started = await http('operator').POST(`${BOUND('events-live')}.start`, { async: true })
      expect(started.status, JSON.stringify(started.data)).toBe(202)
      const { runId } = started.data
      const seen = await waitFor(async () => {
        const run = (await http('viewer').GET(`/pipeline/PipelineRuns(${runId})?$select=status&$expand=events`)).data
        return run.status === 'running' && run.events.some((e: Event) => e.kind === 'batch') ? run.events as Event[] : undefined
      }, 'batch events of the running run', 60_000)
      expect(seen.some(e => e.kind === 'end')).toBe(false)
      await ctx.provider.control.faults({}) // followed while it ran: the rest of the run need not be slow
      await waitFor(async () => (await http('viewer').GET(`/pipeline/PipelineRuns(${runId})?$select=status`)).data.status === 'idle', 'the run to end', 60_000)
    } finally {
      delete settings().runEvents
      await ctx.provider.control.faults({})
    }
    const run = await ql.SELECT.one.from(RUNS).where({ pipeline_name: 'events-live' })
    const events = await eventsOf(run.ID)
    expect(events.map(e => e.seq)).toEqual(events.map((_, i) => i + 1))
    expect(events.filter(e => e.kind === 'batch')).toHaveLength(6)
    expect(events.at(-1)!.kind).toBe('end')
  })

  test('a deletes sweep is an event: keys compared and rows deleted', async () => {
    await ctx.provider.control.seed({ from: 1, count: 6, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'events-sweep', mode: 'delta', deletes: { sweep: 'always', maxShare: 0.5 }, source: { service: 'Provider', entity: 'Books' }, target: { entity: 'host.RunEventsSweep' } })
    await ctx.run('events-sweep')
    // the source loses two rows
    await ctx.provider.control.reset()
    await ctx.provider.control.seed({ from: 1, count: 4, modifiedAt: T0 })
    const outcome = await ctx.run('events-sweep')
    expect(outcome.statistics.deleted).toBe(2)
    const sweep = (await eventsOf(outcome.runId)).filter(e => e.kind === 'sweep')
    expect(sweep).toHaveLength(1)
    expect(sweep[0]).toMatchObject({ phase: 'target', message: 'compared 4 source keys with 6 local keys; deleted 2 rows' })
    expect(Number(sweep[0].rows)).toBe(2)
  })

  test('a partitioned full read is an event: its key ranges; every page read is one', async () => {
    await ctx.provider.control.seed({ from: 1, count: 40, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'events-parallel', mode: 'full', parallel: 2, source: { service: 'Provider', entity: 'Books', batchSize: 10 }, target: { entity: 'host.RunEventsParallel' } })
    const outcome = await ctx.run('events-parallel')
    expect(outcome).toMatchObject({ status: 'completed', statistics: { created: 40 } })
    const events = await eventsOf(outcome.runId)
    const partitions = events.filter(e => e.kind === 'partitions')
    expect(partitions).toHaveLength(1)
    expect(partitions[0]).toMatchObject({ phase: 'source', message: expect.stringMatching(/^read in 2 ranges, up to \d+ requests at once$/) })
    expect(Number(partitions[0].rows)).toBe(40)
    expect(events.filter(e => e.kind === 'page').reduce((sum, e) => sum + Number(e.rows), 0)).toBe(40)
  })

  test('runEvents.max is checked: an invalid value fails the run naming the key', async () => {
    await ctx.provider.control.seed({ from: 1, count: 2, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'events-invalid', mode: 'delta', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'host.RunEventsBound' } })
    settings().runEvents = { max: 2 }
    try {
      await expect(ctx.engine.execute('events-invalid')).rejects.toThrow(/runEvents\.max.*5 to 10000/)
    } finally {
      delete settings().runEvents
    }
  })

  test('events are retained with their run: deleting a run deletes its events', async () => {
    await ctx.provider.control.seed({ from: 1, count: 3, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'events-retained', mode: 'delta', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'host.RunEventsBooks' } })
    const first = await ctx.run('events-retained')
    const second = await ctx.run('events-retained')
    const count = async (runId: string) => ((await ql.SELECT.one.from(EVENTS).columns('count(1) as n').where({ run_ID: runId })) as { n: number }).n
    expect(await count(first.runId)).toBeGreaterThan(2)
    await cds.db.run(ql.DELETE.from(RUNS).where({ ID: first.runId }))
    expect(await count(first.runId)).toBe(0)
    expect(await count(second.runId)).toBeGreaterThan(2)
  })
})

describe('failures: where a run failed, its first error event, retry', () => {
  test('a source failure: failedAt source, the error event names the status; no URL parameters, no credentials', async () => {
    await ctx.provider.control.seed({ from: 1, count: 20, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'fails-source', mode: 'delta', retry: { maxRetries: 0 }, source: { service: 'Provider', entity: 'Books', batchSize: 10 }, target: { entity: 'host.RunEventsSource' } })
    await ctx.provider.control.faults({ status: 500, count: 1000, after: 1 })
    const run = await failedRun('fails-source')
    await ctx.provider.control.faults({})
    expect(run.failedAt).toBe('source')

    const viewer = (await http('viewer').GET(`/pipeline/PipelineRuns(${run.ID})?$select=status,failedAt`)).data
    expect(viewer).toMatchObject({ status: 'failed', failedAt: 'source' })
    const errors = (await http('viewer').GET(`/pipeline/PipelineRuns(${run.ID})/events?$filter=kind eq 'error'`)).data.value as Event[]
    expect(errors).toHaveLength(1)
    expect(errors[0]).toMatchObject({ phase: 'source', httpStatus: 500 })
    expect(errors[0].message).toMatch(/500/)
    const events = await eventsOf(run.ID)
    const kinds = events.map(e => e.kind)
    expect(kinds.slice(0, 2)).toEqual(['start', 'lease'])
    expect(kinds.slice(-2)).toEqual(['error', 'end'])
    expect(kinds).toContain('page')
    expect(events.at(-1)).toMatchObject({ kind: 'end', message: 'failed' })
    const text = JSON.stringify(events)
    expect(text).not.toMatch(/\$filter=|\$orderby=|modifiedAt (gt|ge)/) // the request's query is masked
    expect(text).not.toMatch(new RegExp(`${CANARY}|password|authorization|Basic `, 'i'))
    expect(text).not.toMatch(/\b(SELECT|INSERT|UPDATE|DELETE)\b/)
  })

  test('a target failure: failedAt target, the error event without SQL', async () => {
    await ctx.provider.control.seed({ from: 1, count: 6, modifiedAt: T0 })
    await ctx.provider.control.touch({ from: 4, count: 2, modifiedAt: T0, title: 'Same' })
    await ctx.engine.addPipeline({ name: 'fails-target', mode: 'delta', source: { service: 'Provider', entity: 'Books', batchSize: 3 }, target: { entity: 'host.RunEventsUnique' } })
    const run = await failedRun('fails-target')
    expect(run.failedAt).toBe('target')
    const events = await eventsOf(run.ID)
    const kinds = events.map(e => e.kind)
    expect(kinds.slice(0, 2)).toEqual(['start', 'lease'])
    expect(kinds.slice(-2)).toEqual(['error', 'end'])
    // the first batch committed before the second failed
    expect(events.filter(e => e.kind === 'batch').map(e => JSON.parse(e.details!))).toEqual([{ created: 3 }])
    const error = events.find(e => e.kind === 'error')!
    expect(error.phase).toBe('target')
    // the database's own message stays in the log (under the correlation id), as for PipelineRuns.error
    expect(error.message).toMatch(/^DATABASE_ERROR: The database rejected/)
    expect(error.message).toBe(`DATABASE_ERROR: ${JSON.parse(run.error).message}`)
    expect(JSON.stringify(events)).not.toMatch(/\b(SELECT|INSERT|UPDATE|DELETE)\b|\bVALUES\b|json_each/)
  })

  test('a mapping failure: failedAt mapping', async () => {
    await ctx.provider.control.seed({ from: 1, count: 4, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'fails-mapping', mode: 'delta', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'host.RunEventsMapping' } })
    ctx.engine.before('PIPELINE.MAP', 'fails-mapping', () => { throw new Error('cannot map these books') })
    const run = await failedRun('fails-mapping')
    expect(run.failedAt).toBe('mapping')
    const error = (await eventsOf(run.ID)).find(e => e.kind === 'error')!
    expect(error).toMatchObject({ phase: 'mapping', message: 'cannot map these books' })
  })

  test('a run that lost its lease: failedAt guard, the lease event before the error', async () => {
    await ctx.provider.control.seed({ from: 1, count: 40, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'fails-guard', mode: 'delta', leaseDuration: 600, source: { service: 'Provider', entity: 'Books', batchSize: 5 }, target: { entity: 'host.RunEventsGuard' } })
    settings().runEvents = { flushInterval: 100 }
    await ctx.provider.control.faults({ delay: 250 })
    try {
      const started = await http('operator').POST(`${BOUND('fails-guard')}.start`, { async: true })
      expect(started.status, JSON.stringify(started.data)).toBe(202)
      const { runId } = started.data
      await waitFor(async () => ((await http('viewer').GET(`/pipeline/PipelineRuns(${runId})/events?$filter=kind eq 'batch'`)).data.value as Event[]).length > 0, 'a first batch', 60_000)
      // another holder takes the pipeline over (as after a lease expired elsewhere)
      await cds.db.run(ql.UPDATE('plugin.data_pipeline.Pipelines').set({ currentRun: '00000000-0000-4000-8000-00000000beef', leaseOwner: 'another instance' }).where({ name: 'fails-guard' }))
      const run = await waitFor(async () => {
        const row = (await http('viewer').GET(`/pipeline/PipelineRuns(${runId})`)).data
        return row.status === 'failed' ? row : undefined
      }, 'the run to fail', 60_000)
      expect(run.failedAt).toBe('guard')
      // a run writes its last events before its row says failed
      const events = await eventsOf(runId)
      const lost = events.find(e => e.kind === 'lease' && e.message?.startsWith('lease lost'))!
      const error = events.find(e => e.kind === 'error')!
      expect(lost.phase).toBe('guard')
      expect(error).toMatchObject({ phase: 'guard' })
      expect(error.message).toMatch(/^LEASE_EXPIRED: /)
      expect(lost.seq).toBeLessThan(error.seq)
    } finally {
      delete settings().runEvents
      await ctx.provider.control.faults({})
    }
  })

  test('a run writes its last events before its row says how it ended: a reader of the final status finds them all', async () => {
    await ctx.provider.control.seed({ from: 1, count: 3, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'ends-in-order', mode: 'delta', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'host.RunEventsGuard' } })
    // the run's status as the INSERT of its `end` event sees it (in that statement's own transaction)
    const statusAtEnd = new Map<string, string>()
    let watching = true // the handler stays registered: later tests are not watched
    cds.db.before('INSERT', EVENTS, async function (this: typeof cds.db, req) {
      if (!watching) return
      const rows = (req.query as { INSERT?: { entries?: Array<{ run_ID: string; kind: string }> } }).INSERT?.entries ?? []
      const end = rows.find(row => row.kind === 'end')
      if (end) statusAtEnd.set(end.run_ID, (await this.run(ql.SELECT.one.from(RUNS).columns('status').where({ ID: end.run_ID }))).status)
    })
    const completed = await ctx.run('ends-in-order')
    expect(statusAtEnd.get(completed.runId)).toBe('running')
    ctx.engine.before('PIPELINE.MAP', 'ends-in-order', () => { throw new Error('cannot map these books') })
    await ctx.provider.control.seed({ from: 4, count: 1, modifiedAt: '2026-01-02T00:00:00.000Z' })
    const failed = await failedRun('ends-in-order')
    expect(statusAtEnd.get(failed.ID)).toBe('running')
    const kinds = (await eventsOf(failed.ID)).map(e => e.kind)
    expect(kinds.slice(-2)).toEqual(['error', 'end'])
    watching = false
  })

  test('retry() of a failed run starts the pipeline again in its mode; operators and admins only; failed runs only', async () => {
    await ctx.provider.control.seed({ from: 1, count: 5, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'retried', mode: 'full', parallel: 1, retry: { maxRetries: 0 }, source: { service: 'Provider', entity: 'Books' }, target: { entity: 'host.RunEventsRetried' } })
    await ctx.provider.control.faults({ status: 500, count: 1000 })
    const run = await failedRun('retried')
    await ctx.provider.control.faults({})
    expect(run).toMatchObject({ mode: 'full', failedAt: 'source' })

    for (const user of ['viewer', 'nobody']) expect((await http(user).POST(RETRY(run.ID), {})).status, user).toBe(403)
    expect((await http(null).POST(RETRY(run.ID), {})).status).toBe(401)
    const res = await http('operator').POST(RETRY(run.ID), {})
    expect(res.status, JSON.stringify(res.data)).toBe(200)
    expect(res.data).toMatchObject({ name: 'retried', status: 'completed', statistics: { created: 5 } })
    expect(res.data.runId).not.toBe(run.ID)
    const again = await ql.SELECT.one.from(RUNS).where({ ID: res.data.runId })
    expect(again).toMatchObject({ status: 'idle', mode: 'full', trigger: 'manual', failedAt: null })

    // a run that did not fail is not retried; an unknown run is 404
    const completed = await http('admin').POST(RETRY(res.data.runId), {})
    expect(completed.status).toBe(409)
    expect(completed.data.error.message).toMatch(/only failed runs/)
    expect((await http('admin').POST(RETRY('00000000-0000-4000-8000-000000000000'), {})).status).toBe(404)
    // async: 202 with the new run's id
    const failedAgain = await (async () => {
      await ctx.provider.control.faults({ status: 500, count: 1000 })
      try { return await failedRun('retried') } finally { await ctx.provider.control.faults({}) }
    })()
    const started = await http('admin').POST(RETRY(failedAgain.ID), { async: true })
    expect(started.status).toBe(202)
    expect(started.data).toMatchObject({ name: 'retried', status: 'running' })
  })
})

describe('PipelineRuns(<ID>)/events: the roles that read runs', () => {
  test('viewer, operator and admin read events; a user without a role gets 403, anonymous 401', async () => {
    await ctx.provider.control.seed({ from: 1, count: 2, modifiedAt: T0 })
    await ctx.engine.addPipeline({ name: 'events-roles', mode: 'delta', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'host.RunEventsBooks' } })
    const { runId } = await ctx.run('events-roles')
    for (const user of ['viewer', 'operator', 'admin']) {
      const res: HttpResponse = await http(user).GET(`/pipeline/PipelineRuns(${runId})/events`)
      expect(res.status, user).toBe(200)
      expect(res.data.value.length, user).toBeGreaterThan(2)
      const expanded = await http(user).GET(`/pipeline/PipelineRuns(${runId})?$expand=events`)
      expect(expanded.status, user).toBe(200)
      expect(expanded.data.events.length, user).toBe(res.data.value.length)
    }
    expect((await http('nobody').GET(`/pipeline/PipelineRuns(${runId})/events`)).status).toBe(403)
    expect((await http('nobody').GET('/pipeline/PipelineRunEvents')).status).toBe(403)
    expect((await http(null).GET(`/pipeline/PipelineRuns(${runId})/events`)).status).toBe(401)
  })
})
