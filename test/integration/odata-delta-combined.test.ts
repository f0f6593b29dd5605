/**
 * `delta.mode: 'odata-delta'` with the rest of the engine (issue 38, point 2), in one consumer:
 * `onError: 'skip'` into a narrower target, a field hidden from the data inspector, the statistics
 * of a delta-link run (run row, run events, DONE), its run events (a page per request, batches with
 * their deletes), and the tracker's link as the management API shows it (`configView`) — never with
 * the provider's host or the binding's credentials.
 *
 * The provider (test/fixtures/changes-provider, a child process over HTTP, reset per test through its
 * /control API) tracks changes of Products; the consumer (test/fixtures/changes-consumer, in-process)
 * reaches it through a binding whose URL carries a user and password.
 */
import cds from '@sap/cds'
import path from 'node:path'
import { formatWithOptions } from 'node:util'
import { FIXTURES, startApp, type RunningApp } from '../helpers/apps'
import { ql } from '../helpers/consumer'
import { BOUND, client } from '../helpers/management'
import type DataPipelineService from '../../srv/data-pipeline'

const CANARY = 'CANARY-SECRET-38'
/** Prices of rejected rows: the price is hidden (`@HideFromDataInspector` on the replica). */
const HIDDEN = ['98765.43', '777.77']
const RUNS = 'plugin.data_pipeline.PipelineRuns'
const EVENTS = 'plugin.data_pipeline.PipelineRunEvents'
const REJECTS = 'plugin.data_pipeline.PipelineRejects'

let provider: RunningApp
let engine: DataPipelineService
/** host:port of the provider: never in anything the consumer stores or shows. */
let host = ''
const lines: string[] = []
const done: string[] = []

beforeAll(async () => {
  provider = await startApp(path.join(FIXTURES, 'changes-provider'))
  host = provider.url.replace(/^https?:\/\//, '')
})
const test$ = cds.test(path.join(FIXTURES, 'changes-consumer'))
const admin = client(() => (test$ as unknown as { axios: never }).axios, 'admin')
beforeAll(async () => {
  const requires = cds.env.requires as unknown as Record<string, { credentials?: object }>
  requires.Changes.credentials = { url: `http://pipeline:${CANARY}@${host}/odata/v4/changes` }
  engine = (await cds.connect.to('data-pipeline')) as unknown as DataPipelineService
  // every log line of the app (cds.log writes through console) and every DONE payload
  for (const method of ['log', 'info', 'warn', 'error', 'debug'] as const) {
    const original = console[method].bind(console)
    vi.spyOn(console, method).mockImplementation((...args: unknown[]) => { lines.push(formatWithOptions({ depth: 8 }, ...args)); original(...args) })
  }
  ;(engine as unknown as { after(event: string, handler: (result: unknown, req: { data: unknown }) => void): void })
    .after('PIPELINE.DONE', (_result, req) => { done.push(JSON.stringify(req.data)) })
})
afterAll(async () => {
  vi.restoreAllMocks()
  await provider?.stop()
})

async function control(action: string, body: object = {}): Promise<unknown> {
  const response = await fetch(`${provider.url}/control/${action}`, action === 'requests' ? {} : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  if (!response.ok) throw new Error(`control ${action}: ${response.status}`)
  return response.json()
}
const requests = async () => (await control('requests')) as Array<{ url: string; prefer: string; user: string | null }>

const pipeline = (name: string, entity: string, more: object = {}) =>
  ({ name, source: { service: 'Changes', entity: 'Products', batchSize: 4 }, target: { entity: `changes.${entity}` }, delta: { mode: 'odata-delta' as const }, ...more })
async function run(name: string, mode?: string) {
  const { runId, done: outcome } = await engine.execute(name, mode ? { mode } : {})
  return { runId, ...(await outcome) }
}

interface RunEvent { seq: number; kind: string; phase: string | null; httpStatus: number | null; rows: number | string | null; message: string | null; details: string | null }
const eventsOf = (runId: string) => ql.SELECT.from(EVENTS).where({ run_ID: runId }).orderBy('seq') as Promise<RunEvent[]>
const COUNTS = ['created', 'updated', 'unchanged', 'deleted', 'skipped'] as const
/** The counts of a run's batch events, added up. */
function batchTotals(events: RunEvent[]): Record<string, number> {
  const totals: Record<string, number> = {}
  for (const event of events.filter(e => e.kind === 'batch'))
    for (const [key, value] of Object.entries(JSON.parse(event.details ?? '{}') as Record<string, number>)) totals[key] = (totals[key] ?? 0) + value
  return totals
}
async function configView(name: string): Promise<Record<string, unknown>> {
  const res = await admin.GET(`${BOUND(name)}.configView()`)
  expect(res.status, JSON.stringify(res.data)).toBe(200)
  return JSON.parse(res.data.value) as Record<string, unknown>
}

/** Hidden values as numbers in a text (not as part of a longer number). */
const leaked = (text: string): string[] => HIDDEN.filter(value => new RegExp(`(?<![\\d.])${value.replace('.', '\\.')}(?!\\d)`).test(text))

describe("delta.mode 'odata-delta' with the rest of the engine", () => {
  test("onError 'skip' into a narrower target: failing changed rows go to PipelineRejects by key, the others apply; the hidden price is shown nowhere; the counts add up", async () => {
    await control('reset', { count: 20 })
    await engine.addPipeline(pipeline('checked', 'ProductsChecked', { onError: 'skip' }))
    expect(await run('checked')).toMatchObject({ status: 'completed', statistics: { created: 20, updated: 0, deleted: 0, skipped: 0 } })

    await control('change', { ids: [1, 2], name: 'Product v2' }) // updated
    await control('change', { ids: [3], name: 'Product 3', price: 3 }) // re-delivered as it is: unchanged
    await control('change', { ids: [21, 22], name: 'New' }) // created
    await control('change', { ids: [5], name: 'A name longer than twelve characters', price: 777.77 }) // rejected: name
    await control('change', { ids: [7], name: 'Product 7', price: 98765.43 }) // rejected: the hidden price
    await control('delete', { ids: [4, 9] }) // deleted (4 by @id, 9 by key field)
    await control('delete', { ids: [99] }) // a key the replica never had: counts nothing
    const before = (await requests()).length
    const second = await run('checked')
    // ten entries in three pages of at most four
    expect((await requests()).slice(before).map(r => r.url.replace(/^.*\?/, ''))).toEqual(['$deltatoken=0', '$deltatoken=0&$upto=7&$skiptoken=4', '$deltatoken=0&$upto=7&$skiptoken=8'])
    const statistics = { created: 2, updated: 2, unchanged: 1, deleted: 2, skipped: 2 }
    expect(second).toMatchObject({ status: 'completed', statistics })

    const rows = (await ql.SELECT.from('changes.ProductsChecked').orderBy('ID')) as Array<{ ID: number; name: string; price: string | number }>
    expect(rows.map(r => r.ID)).toEqual([1, 2, 3, 5, 6, 7, 8, ...Array.from({ length: 11 }, (_, i) => 10 + i), 21, 22])
    expect(rows.find(r => r.ID === 1)).toMatchObject({ name: 'Product v2' })
    // the rejected rows keep what the replica had
    expect(rows.filter(r => r.ID === 5 || r.ID === 7).map(r => [r.ID, r.name, Number(r.price)])).toEqual([[5, 'Product 5', 5], [7, 'Product 7', 7]])

    // set aside with their keys; neither the price nor its value stored
    const rejects = (await ql.SELECT.from(REJECTS).where({ pipeline_name: 'checked' }).orderBy('recordKey')) as Array<Record<string, string | null>>
    expect(rejects.map(r => [r.recordKey, r.run_ID])).toEqual([['{"ID":5}', second.runId], ['{"ID":7}', second.runId]])
    expect(rejects[0].error).toMatch(/'name'/)
    expect(rejects[1].error).toMatch(/'price'/)
    for (const reject of rejects) {
      for (const json of [reject.record, reject.mapped]) if (json) expect(Object.keys(JSON.parse(json))).not.toContain('price')
      expect(leaked(JSON.stringify(reject)), 'stored reject').toEqual([])
    }
    const shown = await admin.GET('/pipeline/PipelineRejects')
    expect(shown.status).toBe(200)
    expect(shown.data.value).toHaveLength(2)
    expect(leaked(JSON.stringify(shown.data)), 'rejects through the API').toEqual([])

    // the run row, its events and DONE tell the same counts
    const row = await ql.SELECT.one.from(RUNS).where({ ID: second.runId }) as Record<string, unknown>
    expect(row).toMatchObject({ status: 'idle', statistics_created: 2, statistics_updated: 2, statistics_unchanged: 1, statistics_deleted: 2, statistics_skipped: 2 })
    const events = await eventsOf(second.runId)
    expect(batchTotals(events)).toEqual(statistics)
    expect(events.filter(e => e.kind === 'batch')).toHaveLength(3)
    expect(Number(events.find(e => e.kind === 'rejects')?.rows)).toBe(2)
    const end = events.at(-1)!
    expect(end.kind).toBe('end')
    expect(JSON.parse(end.details!)).toMatchObject(statistics)
    const ended = done.map(d => JSON.parse(d) as { runId: string; statistics: object }).find(d => d.runId === second.runId)
    expect(ended?.statistics).toEqual(statistics)
    expect(await engine.status('checked')).toMatchObject({ statistics_created: 22, statistics_updated: 2, statistics_unchanged: 1, statistics_deleted: 2, statistics_skipped: 2 })

    for (const [what, text] of [['run row', JSON.stringify(row)], ['run events', JSON.stringify(events)], ['DONE', done.join('\n')], ['log', lines.join('\n')]] as const)
      expect(leaked(text), what).toEqual([])
    expect(JSON.stringify(events)).not.toMatch(/\\"price\\"/)

    // nothing changed since: one request, nothing written, the link unchanged
    const link = (await engine.status('checked')).lastKey
    expect(await run('checked')).toMatchObject({ status: 'completed', statistics: { created: 0, updated: 0, deleted: 0, skipped: 0 } })
    expect((await engine.status('checked')).lastKey).toBe(link)
  })

  test("onError 'fail': a changed row that does not fit stops the run naming its key and keeps the link; once the provider's row fits, the next run applies all", async () => {
    await control('reset', { count: 6 })
    await cds.run(cds.ql.DELETE.from('changes.ProductsChecked'))
    await engine.addPipeline(pipeline('strict', 'ProductsChecked'))
    expect(await run('strict')).toMatchObject({ status: 'completed', statistics: { created: 6 } })
    const link = (await engine.status('strict')).lastKey

    await control('change', { ids: [1, 2], name: 'Fits' })
    await control('change', { ids: [5], name: 'A name longer than twelve characters', price: 777.77 })
    await control('change', { ids: [6], name: 'Fits too' })
    const failed = await run('strict').catch((error: Error & { code?: string }) => error)
    expect(failed).toMatchObject({ code: 'TARGET_FAILED', message: expect.stringContaining('record {"ID":5} does not fit') })
    expect(leaked((failed as Error).message)).toEqual([])
    expect(await engine.status('strict')).toMatchObject({ status: 'failed', lastKey: link })

    await control('change', { ids: [5], name: 'Fits now' })
    expect(await run('strict')).toMatchObject({ status: 'completed' })
    const rows = (await ql.SELECT.from('changes.ProductsChecked').orderBy('ID')) as Array<{ ID: number; name: string }>
    expect(rows.map(r => r.name)).toEqual(['Fits', 'Fits', 'Product 3', 'Product 4', 'Fits now', 'Fits too'])
    expect((await engine.status('strict')).lastKey).toBe('/Products?$deltatoken=4')
  })

  test('run events of a delta-link run: one page event per request (records, HTTP status), batches with their deletes', async () => {
    await control('reset', { count: 9 })
    await engine.addPipeline(pipeline('paged', 'Products'))
    let before = (await requests()).length
    const first = await run('paged')
    expect(first).toMatchObject({ status: 'completed', statistics: { created: 9 } })
    expect((await requests()).length - before).toBe(3)
    let events = await eventsOf(first.runId)
    expect(events.filter(e => e.kind === 'page').map(e => [Number(e.rows), e.httpStatus, e.phase])).toEqual([[4, 200, 'source'], [4, 200, 'source'], [1, 200, 'source']])
    expect(events.filter(e => e.kind === 'batch').map(e => Number(e.rows))).toEqual([4, 4, 1])

    await control('change', { ids: [1] })
    await control('delete', { ids: [2, 3] })
    before = (await requests()).length
    const second = await run('paged')
    expect(second).toMatchObject({ status: 'completed', statistics: { created: 0, updated: 1, deleted: 2 } })
    expect((await requests()).length - before).toBe(1)
    events = await eventsOf(second.runId)
    expect(events.filter(e => e.kind === 'page').map(e => [Number(e.rows), e.httpStatus])).toEqual([[3, 200]])
    // the deleted entries are the batch's deletes
    expect(events.filter(e => e.kind === 'batch').map(e => JSON.parse(e.details!))).toEqual([{ updated: 1, deleted: 2 }])
  })

  test("the tracker's link in configView (deltaLink, changeTracking) and everything else the consumer stores, shows or logs: never the provider's host or the binding's credentials", async () => {
    await control('reset', { count: 3 })
    await engine.addPipeline(pipeline('linked', 'ProductsAgain'))
    await engine.addPipeline({ name: 'plain', mode: 'full', source: { service: 'Changes', entity: 'Products' }, target: { entity: 'changes.ProductsAgain' } })
    expect(await configView('linked')).toMatchObject({ changeTracking: 'not initialised', deltaLink: null })
    const plain = await configView('plain')
    expect(plain).not.toHaveProperty('changeTracking')
    expect(plain).not.toHaveProperty('deltaLink')

    const before = (await requests()).length
    expect(await run('linked')).toMatchObject({ status: 'completed', statistics: { created: 3 } })
    // the binding's user reached the provider: its credentials were in use
    expect((await requests()).slice(before).map(r => r.user)).toEqual(['pipeline'])
    expect(await configView('linked')).toMatchObject({ changeTracking: 'initialised', deltaLink: '/Products?$deltatoken=0' })
    const viewer = await client(() => (test$ as unknown as { axios: never }).axios, 'viewer').GET(`${BOUND('linked')}.configView()`)
    expect(JSON.parse(viewer.data.value)).toMatchObject({ deltaLink: '/Products?$deltatoken=0' })

    // a refused link: the failure names the reason, not where the provider is or who asked
    await control('change', { ids: [4] })
    await control('expire')
    const failed = await run('linked').catch((error: Error) => error)
    expect((failed as Error).message).toMatch(/refused the stored delta link of 'Products' \(410 Gone/)
    expect(await configView('linked')).toMatchObject({ changeTracking: 'initialised', deltaLink: '/Products?$deltatoken=0' })

    const shown = [
      JSON.stringify(await configView('linked')),
      JSON.stringify((await admin.GET("/pipeline/Pipelines('linked')")).data),
      JSON.stringify((await admin.GET('/pipeline/PipelineRuns?$expand=events')).data),
      JSON.stringify(await ql.SELECT.from(RUNS)), JSON.stringify(await ql.SELECT.from(EVENTS)),
      JSON.stringify(await ql.SELECT.from('plugin.data_pipeline.Pipelines')),
      done.join('\n'),
    ].join('\n')
    expect(shown).toContain('refused the stored delta link')
    expect(shown).not.toContain(CANARY)
    expect(shown).not.toContain(host)
    expect(shown).not.toMatch(/pipeline:[^@\s]*@/)
    // the log: no credentials in any line; the plugin's own lines name no host either (CAP's remote service logs its URL, password masked)
    const log = lines.join('\n')
    expect(log).toContain('refused the stored delta link')
    expect(log).not.toContain(CANARY)
    expect(lines.filter(line => line.includes('[data-pipeline')).join('\n')).not.toContain(host)

    // flush: change tracking starts over
    await engine.flush('linked')
    expect(await configView('linked')).toMatchObject({ changeTracking: 'not initialised', deltaLink: null })
  })
})
