/**
 * docs/guide/monitoring.md: pipeline runs exported through the REAL @cap-js/telemetry.
 *
 * - test/fixtures/telemetry/app lists @cap-js/telemetry; its `cds.requires.telemetry` keeps the
 *   plugin's kind and only points the trace and metric exporters at `exporter.js`, which appends every
 *   exported span and metric as a JSON line to a file. The app runs as a child process (`cds-serve`,
 *   the plugin only sets up OpenTelemetry when serving) with two CQN pipelines on local tables:
 *   `books` (5 rows, batches of 2) completes, `failing` fails in its first WRITE.
 * - The consumer fixture (no @cap-js/telemetry) runs in-process: a run completes as before and no
 *   span is recorded (the OpenTelemetry API has no provider there).
 */
import cds from '@sap/cds'
import { mkdtempSync, readFileSync, rmSync, existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { FIXTURES, startApp, type RunningApp } from '../helpers/apps'
import { waitFor } from '../helpers/wait'

const require = createRequire(import.meta.url)
const APP = path.join(FIXTURES, 'telemetry/app')

interface ExportedSpan {
  type: 'span'; name: string; traceId: string; spanId: string; parentSpanId?: string; scope: string
  attributes: Record<string, unknown>; status: { code: number; message?: string }; events: { name: string; attributes: Record<string, unknown> }[]
}
interface ExportedMetric { type: 'metric'; scope: string; name: string; unit: string; points: { attributes: Record<string, unknown>; value: unknown }[] }

const STATUS = { UNSET: 0, OK: 1, ERROR: 2 }

describe('with @cap-js/telemetry: spans and metrics of pipeline runs', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'telemetry-'))
  const out = path.join(dir, 'telemetry.jsonl')
  let app: RunningApp
  const outcomes: Record<string, { runId: string; status: string; error: string | null; created: number }> = {}

  const post = async (action: string, body: object) => {
    const response = await fetch(`${app.url}/odata/v4/telemetry/${action}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    if (!response.ok) throw new Error(`${action}: ${response.status} ${await response.text()}`)
    return response.status === 204 ? undefined : (await response.json()) as Record<string, unknown>
  }
  const exported = () => (existsSync(out) ? readFileSync(out, 'utf8').split('\n').filter(Boolean).map(line => JSON.parse(line) as ExportedSpan | ExportedMetric) : [])
  const spans = () => exported().filter((r): r is ExportedSpan => r.type === 'span' && r.scope === 'cap-data-pipeline')
  /** The latest export of a metric of this plugin (cumulative values). */
  const metric = (name: string) => exported().filter((r): r is ExportedMetric => r.type === 'metric' && r.name === name).at(-1)

  beforeAll(async () => {
    app = await startApp(APP, { env: { TELEMETRY_OUT: out } })
    await post('seed', { count: 5 })
    for (const pipeline of ['books', 'failing']) outcomes[pipeline] = (await post('trigger', { pipeline })) as never
  })
  afterAll(async () => {
    await app?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  test('the real plugin is active in the app', () => {
    expect(app.output()).not.toMatch(/Failed to|Error:/)
    // @cap-js/telemetry's own spans (CAP service events) go through the same exporter
    expect(exported().some(r => r.type === 'span' && r.scope === '@cap-js/telemetry')).toBe(true)
    expect(outcomes.books).toMatchObject({ status: 'completed', created: 5 })
    expect(outcomes.failing).toMatchObject({ status: 'failed', error: 'target unavailable' })
  })

  test('a span per run with the run attributes, and child spans per batch', async () => {
    await waitFor(() => spans().some(s => s.name === 'data-pipeline run books'))
    const run = spans().find(s => s.name === 'data-pipeline run books')!
    expect(run.attributes).toMatchObject({
      pipeline: 'books', runId: outcomes.books.runId, mode: 'full', trigger: 'external', status: 'completed',
      created: 5, updated: 0, deleted: 0, skipped: 0,
    })
    expect(run.attributes).not.toHaveProperty('error')
    expect(run.status.code).toBe(STATUS.OK)

    const children = spans().filter(s => s.parentSpanId === run.spanId)
    expect(children.every(s => s.traceId === run.traceId)).toBe(true)
    expect(children.map(s => s.name)).toEqual(expect.arrayContaining(['data-pipeline run books READ', 'data-pipeline run books MAP', 'data-pipeline run books WRITE']))
    const writes = children.filter(s => s.attributes.phase === 'WRITE').sort((a, b) => Number(a.attributes['batch.index']) - Number(b.attributes['batch.index']))
    expect(writes.map(s => [s.attributes['batch.index'], s.attributes['batch.records'], s.attributes['batch.created']])).toEqual([[0, 2, 2], [1, 2, 2], [2, 1, 1]])
    const maps = children.filter(s => s.attributes.phase === 'MAP')
    expect(maps.map(s => s.attributes['batch.records']).sort()).toEqual([1, 2, 2])
    expect(children.every(s => s.attributes.runId === outcomes.books.runId && s.status.code === STATUS.OK)).toBe(true)
  })

  test('a failed run: span status ERROR, the error as attribute and exception event, the failing batch span too', async () => {
    await waitFor(() => spans().some(s => s.name === 'data-pipeline run failing'))
    const run = spans().find(s => s.name === 'data-pipeline run failing')!
    expect(run.attributes).toMatchObject({ pipeline: 'failing', runId: outcomes.failing.runId, status: 'failed', error: 'target unavailable', created: 0 })
    expect(run.status).toEqual({ code: STATUS.ERROR, message: 'target unavailable' })
    expect(run.events).toContainEqual(expect.objectContaining({ name: 'exception', attributes: expect.objectContaining({ 'exception.message': 'target unavailable' }) }))
    const write = spans().find(s => s.parentSpanId === run.spanId && s.attributes.phase === 'WRITE')!
    expect(write.attributes['batch.index']).toBe(0)
    expect(write.status.code).toBe(STATUS.ERROR)
  })

  test('run events (docs/reference/management-api.md "Run events") as span events of the run span: start, guard, page reads, batches, end; a failed run its error with the phase', async () => {
    await waitFor(() => spans().some(s => s.name === 'data-pipeline run books') && spans().some(s => s.name === 'data-pipeline run failing'))
    const books = spans().find(s => s.name === 'data-pipeline run books')!
    const names = books.events.map(e => e.name).filter(name => name.startsWith('data-pipeline.'))
    expect(names[0]).toBe('data-pipeline.start')
    expect(names.at(-1)).toBe('data-pipeline.end')
    expect(names).toContain('data-pipeline.lease')
    const pages = books.events.filter(e => e.name === 'data-pipeline.page')
    expect(pages.reduce((sum, e) => sum + Number(e.attributes.rows), 0)).toBe(5)
    expect(pages.every(e => e.attributes.phase === 'source' && typeof e.attributes.duration_ms === 'number')).toBe(true)
    const batches = books.events.filter(e => e.name === 'data-pipeline.batch')
    expect(batches.map(e => [e.attributes.attempt, e.attributes.rows, JSON.parse(String(e.attributes.details))])).toEqual([[0, 2, { created: 2 }], [1, 2, { created: 2 }], [2, 1, { created: 1 }]])
    expect(books.events.find(e => e.name === 'data-pipeline.end')!.attributes).toMatchObject({ rows: 5, message: 'completed' })

    const failing = spans().find(s => s.name === 'data-pipeline run failing')!
    const error = failing.events.find(e => e.name === 'data-pipeline.error')!
    expect(error.attributes).toMatchObject({ phase: 'target', message: 'target unavailable' })
    expect(failing.events.filter(e => e.name.startsWith('data-pipeline.')).at(-1)!.name).toBe('data-pipeline.end')
  })

  test('events: a span per micro-batch (data-pipeline events <pipeline>) with its keys and counts', async () => {
    await post('changed', { ID: 3 })
    const span = await waitFor(() => spans().find(s => s.name === 'data-pipeline events followed'), 'the micro-batch span')
    expect(span.status.code).toBe(STATUS.OK)
    expect(span.attributes).toMatchObject({ 'pipeline.name': 'followed', 'pipeline.trigger': 'event', 'pipeline.events.keys': 1, 'pipeline.events.applied': 1, 'pipeline.events.created': 1 })
  })

  test('metrics: records by pipeline and kind, runs by pipeline and status, run duration', async () => {
    await waitFor(() => Boolean(metric('data_pipeline.runs')?.points.length === 2 && metric('data_pipeline.run.duration')))
    const records = metric('data_pipeline.records')!
    expect(records.scope).toBe('cap-data-pipeline')
    expect(records.points).toEqual([{ attributes: { pipeline: 'books', kind: 'created' }, value: 5 }])
    const runs = metric('data_pipeline.runs')!
    expect(runs.points).toEqual(expect.arrayContaining([
      { attributes: { pipeline: 'books', status: 'completed', mode: 'full' }, value: 1 },
      { attributes: { pipeline: 'failing', status: 'failed', mode: 'full' }, value: 1 },
    ]))
    const duration = metric('data_pipeline.run.duration')!
    expect(duration.unit).toBe('s')
    expect(duration.points.map(p => [p.attributes.pipeline, (p.value as { count: number }).count]).sort()).toEqual([['books', 1], ['failing', 1]])
  })
})

describe('without @cap-js/telemetry: the plugin works unchanged', () => {
  cds.test(path.join(FIXTURES, 'consumer'))

  test('a run completes and no span is recorded', async () => {
    expect((cds.env.requires as Record<string, unknown>).telemetry).toBeUndefined()
    const engine = (await cds.connect.to('data-pipeline')) as unknown as {
      addPipeline(config: object): Promise<unknown>
      execute(name: string): Promise<{ done: Promise<{ status: string; statistics: { created: number } }> }>
    }
    await cds.ql.INSERT.into('consumer.LocalBooks').entries([{ ID: 1, title: 'A' }, { ID: 2, title: 'B' }])
    await engine.addPipeline({ name: 'telemetry-off', source: { entity: 'consumer.LocalBooks' }, target: { entity: 'consumer.LocalCopies' }, mode: 'full' })
    const { done } = await engine.execute('telemetry-off')
    expect(await done).toMatchObject({ status: 'completed', statistics: { created: 2 } })
    // the OpenTelemetry API (resolvable here) has no provider: its tracers record nothing
    const api = require('@opentelemetry/api') as typeof import('@opentelemetry/api')
    const span = api.trace.getTracer('cap-data-pipeline').startSpan('probe')
    expect(span.isRecording()).toBe(false)
    span.end()
  })
})
