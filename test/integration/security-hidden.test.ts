/**
 * Issue 20, finding 2: `@HideFromDataInspector` fields — here annotated on the replica's projection
 * (`price as salary`), not on the imported entity — are never stored in PipelineRejects, never
 * returned (`$select=record`, `$expand=rejects` of runs and pipelines), never filterable
 * (`contains(record,…)` finds nothing), and their values appear in no run error, DONE event or
 * log line. Replay of a reject stored without its hidden field writes the visible fields only.
 * Real provider over HTTP, the consumer's management API at /pipeline as a mocked PipelineAdmin.
 */
import cds from '@sap/cds'
import path from 'node:path'
import { formatWithOptions } from 'node:util'
import { FIXTURES, type ProviderControl, type RunningApp } from '../helpers/apps'
import { sharedProvider } from '../helpers/shared-provider'
import { ql } from '../helpers/consumer'
import { client } from '../helpers/management'
import { waitFor } from '../helpers/wait'
import { basicAuth } from '../helpers/auth'

let provider: RunningApp & { control: ProviderControl }
beforeAll(async () => {
  provider = await sharedProvider()
})
const test_ = cds.test(path.join(FIXTURES, 'security'))
const ADMIN = basicAuth('admin')
const http = client(() => (test_ as unknown as { axios: any }).axios)
const GET = (url: string) => http.GET(url, ADMIN)
const POST = (url: string, data?: unknown) => http.POST(url, data, ADMIN)

const T0 = '2026-01-01T00:00:00.000Z'
// the hidden prices (price → salary) of books 4321…4324 as the provider seeds them
const PRICE = { 4321: '32.1', 4322: '32.2', 4323: '32.3', 4324: '32.4' }
const HIDDEN = Object.values(PRICE)

const lines: string[] = []
/** The app's log lines, without CAP's request log of this test's own oracle query (which names a value itself). */
const logged = () => lines.filter(line => !line.includes('contains(record,')).join('\n')
const events: string[] = []
beforeAll(async () => {
  const requires = cds.env.requires as unknown as Record<string, { credentials?: object }>
  requires.Provider.credentials = { url: `${provider.url}/odata/v4/catalog` }
  await provider.control.seed({ from: 4321, count: 4, modifiedAt: T0 })
  // every log line of the app (cds.log writes through console) and every DONE/START payload
  for (const method of ['log', 'info', 'warn', 'error', 'debug'] as const) {
    const original = console[method].bind(console)
    vi.spyOn(console, method).mockImplementation((...args: unknown[]) => { lines.push(formatWithOptions({ depth: 8 }, ...args)); original(...args) })
  }
  const engine = (await cds.connect.to('data-pipeline')) as unknown as { after(event: string, handler: (result: unknown, req: { data: unknown }) => void): void }
  for (const event of ['PIPELINE.START', 'PIPELINE.DONE']) engine.after(event, (_result, req) => { events.push(JSON.stringify(req.data)) })
})
afterAll(async () => {
  vi.restoreAllMocks()
  await provider?.stop()
})

/** Hidden values as numbers in a text (not as a part of a longer number such as a timestamp's milliseconds). */
const leaked = (text: string): string[] => HIDDEN.filter(value => new RegExp(`(?<![\\d.])${value.replace('.', '\\.')}(?!\\d)`).test(text))

describe('hidden fields never leave the target', () => {
  test('rejects store no hidden field; $filter oracle, $select=record and both $expand=rejects show none; errors, logs and events quote no hidden value', async () => {
    const res = await POST('/pipeline/execute', { name: 'books' })
    expect(res.status, JSON.stringify(res.data)).toBe(200)
    expect(res.data.statistics.skipped).toBe(2)

    // stored: neither the source name (price) nor the target name (salary), nor a value in the error
    const stored = (await ql.SELECT.from('plugin.data_pipeline.PipelineRejects').where({ pipeline_name: 'books' }).orderBy('recordKey')) as Array<Record<string, string | null>>
    expect(stored.map(r => [r.recordKey, r.phase])).toEqual([['{"ID":4322}', 'map'], ['{"ID":4323}', 'validate']])
    for (const row of stored) {
      for (const json of [row.record, row.mapped]) if (json) expect(Object.keys(JSON.parse(json))).not.toEqual(expect.arrayContaining(['price']))
      expect(JSON.stringify(row), 'stored reject').not.toMatch(/"(price|salary)\\?"/)
      expect(leaked(JSON.stringify(row)), 'stored reject').toEqual([])
    }
    expect(stored[0].error).toContain('cannot map book 4322 priced ***')
    expect(stored[1].error).toMatch(/'salary': .* is not a decimal number/)
    expect(JSON.parse(stored[0].record!)).toMatchObject({ ID: 4322, title: 'Book 4322' })

    // the oracle finds nothing; no read path shows a hidden value
    const oracle = await GET(`/pipeline/PipelineRejects?$filter=${encodeURIComponent("contains(record,'32.2') or contains(record,'\"price\"') or contains(mapped,'salary')")}`)
    expect(oracle.status).toBe(200)
    expect(oracle.data.value).toEqual([])
    for (const url of ['/pipeline/PipelineRejects', '/pipeline/PipelineRejects?$select=record', '/pipeline/PipelineRejects?$select=mapped,error',
      '/pipeline/PipelineRuns?$expand=rejects', "/pipeline/Pipelines('books')?$expand=rejects"]) {
      const read = await GET(url)
      expect(read.status, url).toBe(200)
      expect(leaked(JSON.stringify(read.data)), url).toEqual([])
      expect(JSON.stringify(read.data), url).not.toMatch(/\\"(price|salary)\\"/)
    }
    const selected = await GET('/pipeline/PipelineRejects?$select=record')
    expect(selected.data.value.filter((r: { record: string | null }) => r.record).length).toBeGreaterThan(0)

    expect(leaked(logged()), 'log lines').toEqual([])
    expect(lines.join('\n')).toContain("pipeline 'books': 2 record(s) skipped")
  })

  test('a run error quoting a hidden value: not in the 502, PipelineRuns.error, Pipelines.lastError, the DONE event or the log', async () => {
    const res = await POST('/pipeline/execute', { name: 'books-fail' })
    expect(res.status).toBe(502)
    expect(JSON.stringify(res.data)).toContain('salary *** of book 4324 is outside the approved band')
    const run = await waitFor(async () => (await GET("/pipeline/PipelineRuns?$filter=pipeline_name eq 'books-fail' and status eq 'failed'")).data.value[0], 'the failed run')
    expect(run.error).toContain('outside the approved band')
    const pipeline = (await GET("/pipeline/Pipelines('books-fail')")).data
    expect(pipeline.lastError).toContain('outside the approved band')
    expect(leaked(JSON.stringify(run)), 'PipelineRuns.error').toEqual([])
    expect(leaked(JSON.stringify(pipeline)), 'Pipelines.lastError').toEqual([])
    const done = events.filter(e => e.includes('outside the approved band'))
    expect(done.length).toBe(1)
    expect(leaked(done.join('\n')), 'DONE event').toEqual([])
    expect(lines.join('\n')).toContain('outside the approved band')
    expect(leaked(logged()), 'log lines').toEqual([])
    // run events (docs/reference/management-api.md "Run events"): the error event quotes the redacted error, nothing else a record held
    const runEvents = await GET(`/pipeline/PipelineRuns(${run.ID})/events?$orderby=seq`)
    expect(runEvents.status).toBe(200)
    const error = runEvents.data.value.find((e: { kind: string }) => e.kind === 'error')
    expect(error.message).toContain('salary *** of book 4324 is outside the approved band')
    expect(leaked(JSON.stringify(runEvents.data)), 'run events').toEqual([])
    expect(JSON.stringify(runEvents.data)).not.toMatch(/\\"(price|salary)\\"/)
    for (const url of ['/pipeline/PipelineRuns?$expand=events', '/pipeline/PipelineRunEvents']) {
      const read = await GET(url)
      expect(read.status, url).toBe(200)
      expect(leaked(JSON.stringify(read.data)), url).toEqual([])
    }
  })

  test('replay of a reject stored without its hidden field writes the visible fields; the hidden column stays as it was (null for a new row)', async () => {
    ;(globalThis as { secFaults?: boolean }).secFaults = false
    try {
      const res = await POST("/pipeline/Pipelines('books')/DataPipelineManagementService.replayRejects", {})
      expect(res.status, JSON.stringify(res.data)).toBe(200)
      expect(res.data.statistics.skipped).toBe(0)
      const rows = (await ql.SELECT.from('sec.Books').where({ ID: { in: [4321, 4322, 4323] } }).orderBy('ID')) as Array<{ ID: number; title: string; salary: unknown }>
      expect(rows.map(r => [r.ID, r.title, r.salary === null ? null : Number(r.salary)])).toEqual([[4321, 'Book 4321', 32.1], [4322, 'Book 4322', null], [4323, 'Book 4323', null]])
      const statuses = (await ql.SELECT.from('plugin.data_pipeline.PipelineRejects').columns('status').where({ pipeline_name: 'books' })) as Array<{ status: string }>
      expect(statuses.map(s => s.status)).toEqual(['replayed', 'replayed'])
    } finally {
      ;(globalThis as { secFaults?: boolean }).secFaults = true
    }
  })
})
