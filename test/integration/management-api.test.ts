/**
 * The management service at /pipeline over HTTP (issue 4): the read-only projections with
 * OData query options, value helps, every bound and unbound operation with its payload and
 * its honest status code (200/202/400/404/409, never a 500 for bad input), overrides and
 * configView, the data inspector, graph metadata, and that no response carries credentials.
 *
 * The management fixture runs in-process (cds.test); the OData provider is a child process.
 */
import cds from '@sap/cds'
import { formatWithOptions } from 'node:util'
import path from 'node:path'
import { FIXTURES, type ProviderControl, type RunningApp } from '../helpers/apps'
import { sharedProvider } from '../helpers/shared-provider'
import { ql } from '../helpers/consumer'
import { BOUND, client, errorOf, fnArgs, jsonValue, waitFor, type HttpResponse } from '../helpers/management'

const CANARY = 'CANARY-SECRET'
let provider: RunningApp & { control: ProviderControl }

beforeAll(async () => {
  provider = await sharedProvider()
  await provider.control.seed({ count: 30, modifiedAt: '2026-01-01T00:00:00.000Z' })
  await provider.control.seed({ from: 31, count: 5, author: 'Author 1', modifiedAt: '2026-01-02T00:00:00.000Z' })
})
const test$ = cds.test(path.join(FIXTURES, 'management'))
beforeAll(async () => {
  const requires = cds.env.requires as unknown as Record<string, { credentials?: object }>
  // credentials with secrets in every form a binding may carry them: none may ever leave the service
  requires.Provider.credentials = { url: `${provider.url}/odata/v4/catalog`, username: 'pipeline', password: CANARY, headers: { 'x-api-key': `${CANARY}-HEADER` } }
  await ql.INSERT.into('host.People').entries([
    { ID: 1, name: 'Ann 100%', email: 'ann@example.com', secret: 'S1' },
    { ID: 2, name: 'Bob_Smith', email: 'bob@example.com', secret: 'S2' },
    { ID: 3, name: 'Bobby', email: 'bobby@example.com', secret: 'S3' },
    { ID: 4, name: 'Carl', email: 'carl@example.com', secret: 'S4' },
    { ID: 5, name: 'Dora', email: 'dora@example.com', secret: 'S5' },
    { ID: 6, name: '', email: 'nobody@example.com', secret: 'S6' },
  ])
})
afterAll(async () => {
  await provider?.stop()
})

const http = client(() => (test$ as unknown as { axios: any }).axios)
const { GET, POST } = http
const B = BOUND

/** Asserts an error status and that the parameter is named in target or message. */
function expectError(res: HttpResponse, status: number, parameter?: string) {
  expect(res.status, JSON.stringify(res.data)).toBe(status)
  const error = errorOf(res)
  expect(error.message).toBeTruthy()
  if (parameter) expect(`${error.target ?? ''} ${error.message}`).toContain(parameter)
  return error
}

const pipelineRow = async (name: string) => (await GET(`/pipeline/Pipelines('${name}')`)).data
const runOf = async (ID: string) => (await GET(`/pipeline/PipelineRuns(${ID})`)).data
const waitIdle = (name: string) => waitFor(async () => (await pipelineRow(name)).status !== 'running', `${name} to finish`, 60_000)
const inspect = async (name: string, params: Record<string, string | number | undefined>) => GET(`${B(name)}.inspectData(${fnArgs(params)})`)
const filters = (...list: Array<{ field: string; op: string; value: unknown }>) => JSON.stringify(list)

describe('read-only projections and value helps', () => {
  test('value helps PipelineRunModes and PipelineRunTriggers list code and a readable name', async () => {
    const modes = await GET('/pipeline/PipelineRunModes')
    expect(modes.status).toBe(200)
    expect(modes.data.value.map((m: any) => m.code).sort()).toEqual(['delta', 'full'])
    for (const m of modes.data.value) expect(m.name).toEqual(expect.any(String))
    const triggers = await GET('/pipeline/PipelineRunTriggers')
    expect(triggers.status).toBe(200)
    expect(triggers.data.value.map((t: any) => t.code).sort()).toEqual(['event', 'external', 'manual', 'scheduled'])
    for (const t of triggers.data.value) expect(t.name).toEqual(expect.any(String))
    // counted as the lists are long (both answered 0 before)
    expect((await GET('/pipeline/PipelineRunModes/$count')).data).toBe(2)
    expect((await GET('/pipeline/PipelineRunTriggers?$count=true')).data['@odata.count']).toBe(4)
  })

  test('Pipelines: $count, effective fields, no internal lease/checkpoint columns; the projections are read-only', async () => {
    const res = await GET('/pipeline/Pipelines?$count=true&$orderby=name')
    expect(res.status).toBe(200)
    expect(res.data['@odata.count']).toBe(3)
    const rows = res.data.value as Array<Record<string, any>>
    expect(rows.map(r => r.name)).toEqual(['author-stats', 'books', 'people'])
    const byName = Object.fromEntries(rows.map(r => [r.name, r]))
    expect(byName.books).toMatchObject({ mode: 'delta', description: 'Books from the provider', enabled: true, status: 'idle' })
    expect(byName['author-stats'].mode).toBe('full')
    expect(byName['author-stats'].source).toContain('[Function]')
    expect(byName.people.schedule).toBe('every 1 h (spawn)')
    for (const row of rows) {
      expect(row).not.toHaveProperty('leaseOwner')
      expect(row).not.toHaveProperty('checkpoint')
    }
    expect((await POST('/pipeline/Pipelines', { name: 'x' })).status).toBeGreaterThanOrEqual(400)
    expect((await POST('/pipeline/PipelineRuns', { pipeline_name: 'books' })).status).toBeGreaterThanOrEqual(400)
  })

  test("status(name='…') returns one tracker record; unknown → 404; missing name → 400", async () => {
    const res = await GET(`/pipeline/status(name='books')`)
    expect(res.status).toBe(200)
    expect(res.data).toMatchObject({ name: 'books', status: 'idle', mode: 'delta' })
    expect(res.data).not.toHaveProperty('leaseOwner')
    expectError(await GET(`/pipeline/status(name='nope')`), 404, 'nope')
    expectError(await GET(`/pipeline/status()`), 400, 'name')
  })
})

describe('runs: start, execute, PipelineRuns', () => {
  test('start (sync) → 200 { runId, status, statistics } and the target is filled', async () => {
    const res = await POST(`${B('books')}.start`, { trigger: 'manual' })
    expect(res.status, JSON.stringify(res.data)).toBe(200)
    expect(res.data).toMatchObject({ name: 'books', status: 'completed', statistics: { created: 35, updated: 0, deleted: 0 } })
    expect(res.data.runId).toMatch(/^[0-9a-f-]{36}$/)
    expect(await ql.SELECT.from('host.Books')).toHaveLength(35)
    const run = await runOf(res.data.runId)
    expect(run).toMatchObject({ pipeline_name: 'books', status: 'idle', trigger: 'manual', mode: 'delta' })
  })

  test('start (async) → 202 immediately with the runId; the run lands in PipelineRuns', async () => {
    const res = await POST(`${B('people')}.start`, { async: true, mode: 'full', trigger: 'external' })
    expect(res.status, JSON.stringify(res.data)).toBe(202)
    expect(res.data).toMatchObject({ name: 'people', status: 'running' })
    const run = await waitFor(async () => { const r = await runOf(res.data.runId); return r?.status === 'idle' && r }, 'async run to finish')
    expect(run).toMatchObject({ pipeline_name: 'people', trigger: 'external', mode: 'full' })
    // the before MAP hook dropped the person without a name
    expect((await ql.SELECT.from('host.PeopleCopy')).map((p: any) => p.ID).sort()).toEqual([1, 2, 3, 4, 5])
  })

  test('start (sync, delta) of a database-source pipeline: the run does not join the request transaction', async () => {
    // the run must not join the HTTP request's open transaction (a source read inside it could
    // hold the only in-memory SQLite connection the batch transactions wait for; the
    // management-security test reproduced that hang reliably before the engine detached runs)
    await ql.UPDATE('host.People').set({ email: 'carl@example.org' }).where({ ID: 4 })
    const res = await POST(`${B('people')}.start`, {})
    expect(res.status, JSON.stringify(res.data)).toBe(200)
    expect(res.data).toMatchObject({ status: 'completed' })
    expect(await runOf(res.data.runId)).toMatchObject({ mode: 'delta', status: 'idle' })
    expect((await ql.SELECT.one.from('host.PeopleCopy').where({ ID: 4 })).email).toBe('carl@example.org')
  }, 15_000)

  test('PipelineRuns: $filter on pipeline_name, $orderby startTime, $count; Pipelines $expand=runs', async () => {
    await POST(`${B('books')}.start`, {})
    const res = await GET(`/pipeline/PipelineRuns?$filter=${encodeURIComponent("pipeline_name eq 'books'")}&$orderby=startTime desc&$count=true`)
    expect(res.status).toBe(200)
    expect(res.data['@odata.count']).toBe(2)
    const runs = res.data.value as Array<Record<string, any>>
    expect(runs.every(r => r.pipeline_name === 'books')).toBe(true)
    expect(Date.parse(runs[0].startTime)).toBeGreaterThanOrEqual(Date.parse(runs[1].startTime))
    expect(runs[0].statistics_created ?? runs[0].statistics?.created).toBe(0) // delta: nothing changed
    const expanded = await GET(`/pipeline/Pipelines('books')?$expand=runs($orderby=startTime)`)
    expect(expanded.status).toBe(200)
    expect(expanded.data.runs.map((r: any) => r.ID)).toEqual(runs.map(r => r.ID).reverse())
  })

  test('execute partial-refresh on a query-shape pipeline refreshes only the coded slice; start rejects partial-refresh', async () => {
    const full = await POST('/pipeline/execute', { name: 'author-stats' })
    expect(full.status, JSON.stringify(full.data)).toBe(200)
    expect(full.data.status).toBe('completed')
    const stat = async (author: string) => (await ql.SELECT.one.from('host.AuthorStats').where({ author }))?.books
    expect(await stat('Author 1')).toBe(6)
    await ql.UPDATE('host.AuthorStats').set({ books: 99 })
    const partial = await POST('/pipeline/execute', { name: 'author-stats', mode: 'partial-refresh', trigger: 'external' })
    expect(partial.status, JSON.stringify(partial.data)).toBe(200)
    expect(await stat('Author 1')).toBe(6)
    expect(await stat('Author 2')).toBe(99)
    // PipelineRuns.mode is a ReplicationMode: a partial refresh is recorded as 'full'
    expect(await runOf(partial.data.runId)).toMatchObject({ mode: 'full', trigger: 'external', statistics_deleted: 1, statistics_created: 1 })

    expectError(await POST(`${B('author-stats')}.start`, { mode: 'partial-refresh' }), 400, 'mode')
    expectError(await POST('/pipeline/execute', { name: 'author-stats', mode: 'delta' }), 400, 'mode')
    expectError(await POST('/pipeline/execute', { name: 'books', mode: 'partial-refresh' }), 400, 'mode')
  })

  test('unknown pipeline → 404 on every bound and unbound operation', async () => {
    const nope = B('nope')
    const responses = [
      await POST(`${nope}.start`, {}),
      await POST(`${nope}.setSchedule`, { every: 60000 }),
      await POST(`${nope}.clearSchedule`, {}),
      await POST(`${nope}.setOverrides`, { overrides: '{"mode":"full"}' }),
      await POST(`${nope}.clearOverrides`, { keys: 'mode' }),
      await POST(`${nope}.setEnabled`, { enabled: false }),
      await GET(`${nope}.configView()`),
      await GET(`${nope}.inspectData(side='source')`),
      await GET(`${nope}.inspectCapabilities()`),
      await GET(`${nope}.flowMetadata()`),
      await POST('/pipeline/execute', { name: 'nope' }),
      await POST('/pipeline/flush', { name: 'nope' }),
      await GET(`/pipeline/status(name='nope')`),
      await GET(`/pipeline/Pipelines('nope')`),
    ]
    for (const res of responses) expectError(res, 404)
    expect(errorOf(responses[0]).code).toBe('UNKNOWN_PIPELINE')
  })

  test('invalid run parameters → 400 naming the parameter (never a 500, never a run)', async () => {
    const before = (await GET('/pipeline/PipelineRuns?$count=true&$top=0')).data['@odata.count']
    expectError(await POST(`${B('books')}.start`, { mode: 'sideways' }), 400, 'mode')
    expectError(await POST(`${B('books')}.start`, { trigger: 'cron' }), 400, 'trigger')
    expectError(await POST(`${B('books')}.start`, { async: 'yes' }), 400, 'async')
    expectError(await POST('/pipeline/execute', { name: 'books', mode: 'sideways' }), 400, 'mode')
    expectError(await POST('/pipeline/execute', { name: 'books', trigger: 'cron' }), 400, 'trigger')
    expectError(await POST('/pipeline/execute', {}), 400, 'name')
    // a tenant is honoured only with multitenancy; here it is not active, so it is refused, not ignored
    expectError(await POST('/pipeline/execute', { name: 'books', tenant: 't1' }), 400, 'tenant')
    expectError(await POST('/pipeline/flush', {}), 400, 'name')
    expect(errorOf(await POST(`${B('books')}.start`, { mode: 'sideways' })).code).toBe('INVALID_PARAMETER')
    expect((await GET('/pipeline/PipelineRuns?$count=true&$top=0')).data['@odata.count']).toBe(before)
  })

  test('trigger while running → 409 (start, execute, flush); async answers before the slow run ends', async () => {
    // a delta run: it reads outside any transaction (a full run holds one db transaction, which
    // on in-memory SQLite serializes every other request until it ends)
    // every provider request takes 3 s: the run is still underway while this test checks, also on a loaded machine
    await provider.control.faults({ delay: 3000 })
    try {
      const first = await POST('/pipeline/execute', { name: 'books', async: true })
      expect(first.status, JSON.stringify(first.data)).toBe(202)
      // the answer came before the run ended: its run is underway
      expect(await runOf(first.data.runId)).toMatchObject({ status: 'running', endTime: null })
      expect((await pipelineRow('books')).status).toBe('running')
      const runs = (await GET(`/pipeline/PipelineRuns?$filter=${encodeURIComponent("pipeline_name eq 'books'")}&$count=true&$top=0`)).data['@odata.count']
      const second = expectError(await POST(`${B('books')}.start`, {}), 409)
      expect(second.code).toBe('PIPELINE_RUNNING')
      expectError(await POST('/pipeline/execute', { name: 'books' }), 409)
      expectError(await POST('/pipeline/flush', { name: 'books' }), 409)
      // no run row for the rejected triggers
      expect((await GET(`/pipeline/PipelineRuns?$filter=${encodeURIComponent("pipeline_name eq 'books'")}&$count=true&$top=0`)).data['@odata.count']).toBe(runs)
      await waitIdle('books')
      expect((await runOf(first.data.runId)).status).toBe('idle')
    } finally {
      await provider.control.faults({})
    }
  })

  test('failures: async → 202 and the failure lands in PipelineRuns and the tracker; sync → 502, not success', async () => {
    await provider.control.faults({ status: 404, count: 10 })
    try {
      const res = await POST('/pipeline/execute', { name: 'books', async: true })
      expect(res.status).toBe(202)
      const run = await waitFor(async () => { const r = await runOf(res.data.runId); return r?.status === 'failed' && r }, 'failed run')
      expect(JSON.parse(run.error).message).toEqual(expect.any(String))
      const tracker = await pipelineRow('books')
      expect(tracker).toMatchObject({ status: 'failed', errorCount: 1 })
      expect(tracker.lastError).toEqual(expect.any(String))

      const sync = await POST(`${B('books')}.start`, {})
      expect(sync.status).toBe(502)
      expect(errorOf(sync).message).toContain('failed')
    } finally {
      await provider.control.faults({})
    }
    const ok = await POST(`${B('books')}.start`, {})
    expect(ok.status).toBe(200)
    expect(await pipelineRow('books')).toMatchObject({ status: 'idle', errorCount: 0, lastError: null })
  })

  test('flush clears the target and resets the tracker; the next run is a full sync', async () => {
    expect((await ql.SELECT.from('host.Books')).length).toBe(35)
    const res = await POST('/pipeline/flush', { name: 'books' })
    expect(res.status, JSON.stringify(res.data)).toBe(200)
    expect(res.data).toMatchObject({ name: 'books', status: 'idle', lastSync: null, lastKey: null, errorCount: 0 })
    expect(res.data).not.toHaveProperty('checkpoint')
    expect(await ql.SELECT.from('host.Books')).toHaveLength(0)
    const next = await POST(`${B('books')}.start`, {})
    expect(next.data.statistics.created).toBe(35)
  })
})

describe('metadata for the console', () => {
  test('flowMetadata: lifecycle events, the before MAP hook as Warning, nodes and lines', async () => {
    const flow = jsonValue(await GET(`${B('people')}.flowMetadata()`))
    expect(flow.events.map((e: any) => e.event)).toEqual(['PIPELINE.START', 'PIPELINE.READ', 'PIPELINE.MAP', 'PIPELINE.WRITE', 'PIPELINE.DONE'])
    const map = flow.events.find((e: any) => e.event === 'PIPELINE.MAP')
    expect(map.status).toBe('Warning')
    expect(map.hooks).toEqual([expect.objectContaining({ phase: 'before', event: 'PIPELINE.MAP', handler: 'dropEmptyNames' })])
    expect(flow.status).toBe('Warning')
    expect(flow.nodes.find((n: any) => n.key === 'PIPELINE.MAP')).toMatchObject({ status: 'Warning' })
    expect(flow.nodes.find((n: any) => n.key === 'PIPELINE.READ')).toMatchObject({ status: 'None' })
    expect(flow.lines).toContainEqual(expect.objectContaining({ from: 'PIPELINE.READ', to: 'PIPELINE.MAP', status: 'Warning' }))
    const keys = new Set(flow.nodes.map((n: any) => n.key))
    for (const line of flow.lines) expect(keys.has(line.from) && keys.has(line.to)).toBe(true)

    const plain = jsonValue(await GET(`${B('books')}.flowMetadata()`))
    expect(plain.status).toBe('None')
    expect(plain.hooks).toEqual([])
    expect(plain.events.every((e: any) => e.status === 'None')).toBe(true)
    expect(plain.nodes.find((n: any) => n.kind === 'source')).toMatchObject({ title: 'Books', group: 'Provider' })
    expect(Array.isArray(plain.deviations)).toBe(true)
  })

  test('landscapeMetadata: source → pipeline → target, grouped by service, deduplicated, Warning for hooks', async () => {
    const engine = await cds.connect.to('data-pipeline') as unknown as { addPipeline(config: object): Promise<unknown> }
    // a second pipeline over the same source and target: the nodes must not double
    await engine.addPipeline({ name: 'people-mirror', source: { entity: 'host.People' }, target: { entity: 'host.PeopleCopy' }, mode: 'full' })
    const land = jsonValue(await GET('/pipeline/landscapeMetadata()'))
    const keys = land.nodes.map((n: any) => n.key)
    expect(new Set(keys).size).toBe(keys.length)
    const lineKeys = land.lines.map((l: any) => `${l.from}→${l.to}`)
    expect(new Set(lineKeys).size).toBe(lineKeys.length)
    expect(keys.filter((k: string) => k.includes('host.People') && k.startsWith('source:'))).toHaveLength(1)
    expect(keys.filter((k: string) => k.includes('host.PeopleCopy') && k.startsWith('target:'))).toHaveLength(1)
    for (const name of ['books', 'author-stats', 'people', 'people-mirror']) expect(keys).toContain(`pipeline:${name}`)
    for (const line of land.lines) expect(keys.includes(line.from) && keys.includes(line.to)).toBe(true)
    expect(land.groups.map((g: any) => g.key)).toEqual(expect.arrayContaining(['Provider', 'db', 'pipelines']))
    expect(land.nodes.find((n: any) => n.key === 'source:Provider/Books')).toMatchObject({ group: 'Provider' })
    expect(land.lines.find((l: any) => l.to === 'pipeline:people').status).toBe('Warning')
    expect(land.lines.find((l: any) => l.to === 'pipeline:people-mirror').status).toBe('None')
    expect(land.lines.find((l: any) => l.to === 'pipeline:books').status).toBe('None')
  })
})

describe('schedules and enabled flag over HTTP', () => {
  test('setEnabled flips the flag; a non-boolean → 400', async () => {
    const off = await POST(`${B('books')}.setEnabled`, { enabled: false })
    expect(off.status).toBe(200)
    expect(off.data.enabled).toBe(false)
    expect((await pipelineRow('books')).enabled).toBe(false)
    // manual start still works while disabled
    expect((await POST(`${B('books')}.start`, {})).status).toBe(200)
    expect((await POST(`${B('books')}.setEnabled`, { enabled: true })).data.enabled).toBe(true)
    expectError(await POST(`${B('books')}.setEnabled`, {}), 400, 'enabled')
  })

  test('setSchedule { every } changes the label and persists as override; invalid input → 400', async () => {
    const res = await POST(`${B('books')}.setSchedule`, { every: 120000 })
    expect(res.status, JSON.stringify(res.data)).toBe(200)
    expect(res.data.schedule).toBe('every 2 min (spawn)')
    expect((await pipelineRow('books')).schedule).toBe('every 2 min (spawn)')
    const view = jsonValue(await GET(`${B('books')}.configView()`))
    expect(view.overrides.schedule).toEqual({ every: 120000, engine: 'spawn' })
    expect(view.fields.find((f: any) => f.path === 'schedule')).toMatchObject({ source: 'override', overridable: true })

    expectError(await POST(`${B('books')}.setSchedule`, { every: 0 }), 400, 'every')
    expectError(await POST(`${B('books')}.setSchedule`, { engine: 'cronjob' }), 400, 'engine')
    expectError(await POST(`${B('books')}.setSchedule`, { cron: '*/5 * * *' }), 400, 'cron')
    expectError(await POST(`${B('books')}.setSchedule`, { cron: '*/5 * * * *', engine: 'spawn' }), 400, 'engine')
    expect((await pipelineRow('books')).schedule).toBe('every 2 min (spawn)')
  })

  test('clearSchedule records schedule: null over a coded schedule; clearing that override brings the coded one back', async () => {
    const res = await POST(`${B('people')}.clearSchedule`, {})
    expect(res.status).toBe(200)
    expect(res.data.schedule).toBeNull()
    const view = jsonValue(await GET(`${B('people')}.configView()`))
    expect(view.overrides).toHaveProperty('schedule', null)
    expect(view.fields.find((f: any) => f.path === 'schedule')).toMatchObject({ coded: '1h', override: null, source: 'override', effective: null })
    const restored = await POST(`${B('people')}.clearOverrides`, { keys: 'schedule' })
    expect(restored.data.schedule).toBe('every 1 h (spawn)')
    const books = await POST(`${B('books')}.clearSchedule`, {})
    expect(books.data.schedule).toBeNull()
  })
})

describe('overrides and configView', () => {
  test('configView shape: base, overrides, effective, fields[], meta', async () => {
    const view = jsonValue(await GET(`${B('author-stats')}.configView()`))
    expect(Object.keys(view).sort()).toEqual(['base', 'effective', 'fields', 'meta', 'overrides'])
    expect(view.base).toMatchObject({ name: 'author-stats', target: { entity: 'host.AuthorStats' }, refresh: { slice: { author: 'Author 1' } } })
    expect(view.base.source.query).toBe('[Function]')
    expect(view.overrides).toEqual({})
    expect(view.meta.scheduleLiveChangeSupported).toEqual(expect.any(Boolean))
    expect(view.meta.overridablePaths).toEqual(expect.arrayContaining(['mode', 'description', 'source.batchSize', 'delta.field', 'schedule', 'enabled', 'parallel']))
    for (const field of view.fields) {
      // an overridable field also carries its rule (test/integration/settings-rules.test.ts)
      expect(Object.keys(field).sort()).toEqual(['coded', 'effective', 'overridable', 'override', 'path', ...(field.overridable ? ['rule'] : []), 'source'])
      expect(['override', 'coded', 'default']).toContain(field.source)
    }
    expect(view.fields.find((f: any) => f.path === 'mode')).toMatchObject({ coded: null, effective: 'full', source: 'default', overridable: true })
    expect(view.fields.find((f: any) => f.path === 'target.entity')).toMatchObject({ coded: 'host.AuthorStats', overridable: false })
  })

  test('setOverrides with dotted and nested keys; Pipelines.mode/description show effective values', async () => {
    const overrides = { 'source.batchSize': 10, delta: { field: 'modifiedAt' }, mode: 'full', description: 'x' }
    const res = await POST(`${B('books')}.setOverrides`, { overrides: JSON.stringify(overrides) })
    expect(res.status, JSON.stringify(res.data)).toBe(200)
    expect(res.data).toMatchObject({ name: 'books', mode: 'full', description: 'x' })
    expect(await pipelineRow('books')).toMatchObject({ mode: 'full', description: 'x' })
    const view = jsonValue(await GET(`${B('books')}.configView()`))
    expect(view.overrides).toMatchObject({ 'source.batchSize': 10, 'delta.field': 'modifiedAt', mode: 'full', description: 'x' })
    const field = (p: string) => view.fields.find((f: any) => f.path === p)
    expect(field('source.batchSize')).toMatchObject({ override: 10, effective: 10, source: 'override', overridable: true })
    expect(field('mode')).toMatchObject({ override: 'full', effective: 'full', source: 'override' })
    expect(field('description')).toMatchObject({ coded: 'Books from the provider', override: 'x', effective: 'x' })
    expect(view.effective).toMatchObject({ mode: 'full', description: 'x' })
    expect(view.base).toMatchObject({ description: 'Books from the provider' })
    // the effective config is what runs: batches of 10 in full mode
    const run = await POST(`${B('books')}.start`, {})
    expect(run.status).toBe(200)
    expect((await runOf(run.data.runId)).mode).toBe('full')
    // the console sees customised configuration
    expect(jsonValue(await GET(`${B('books')}.flowMetadata()`)).status).toBe('Warning')
  })

  test('non-overridable path, incoherent override, bad JSON, non-object → 400; nothing changes', async () => {
    const before = jsonValue(await GET(`${B('books')}.configView()`)).overrides
    expectError(await POST(`${B('books')}.setOverrides`, { overrides: '{"target.entity":"host.Other"}' }), 400, 'target.entity')
    expectError(await POST(`${B('books')}.setOverrides`, { overrides: '{"source":{"service":"Other"}}' }), 400, 'source.service')
    expectError(await POST(`${B('books')}.setOverrides`, { overrides: '{"delta":{"mode":"bogus"}}' }), 400, 'delta.mode')
    expectError(await POST(`${B('books')}.setOverrides`, { overrides: '{"source.batchSize":-1}' }), 400, 'batchSize')
    expectError(await POST(`${B('books')}.setOverrides`, { overrides: '{"parallel":0}' }), 400, 'parallel')
    expectError(await POST(`${B('books')}.setOverrides`, { overrides: '{"parallel":33}' }), 400, 'parallel')
    expectError(await POST(`${B('books')}.setOverrides`, { overrides: '{"parallel":2.5}' }), 400, 'parallel')
    expectError(await POST(`${B('author-stats')}.setOverrides`, { overrides: '{"mode":"delta"}' }), 400, 'mode')
    expectError(await POST(`${B('books')}.setOverrides`, { overrides: '{"mode":' }), 400, 'overrides')
    expectError(await POST(`${B('books')}.setOverrides`, { overrides: '[1,2]' }), 400, 'overrides')
    expectError(await POST(`${B('books')}.setOverrides`, {}), 400, 'overrides')
    expect(jsonValue(await GET(`${B('books')}.configView()`)).overrides).toEqual(before)
    expect((await pipelineRow('books')).mode).toBe('full')
  })

  test('parallel is overridable (key ranges a full copy reads at once): set, shown as effective, cleared back to the default', async () => {
    const res = await POST(`${B('people')}.setOverrides`, { overrides: JSON.stringify({ parallel: 4 }) })
    expect(res.status, JSON.stringify(res.data)).toBe(200)
    const field = (view: any) => view.fields.find((f: any) => f.path === 'parallel')
    expect(field(jsonValue(await GET(`${B('people')}.configView()`)))).toMatchObject({ override: 4, effective: 4, source: 'override', overridable: true })
    expect((await POST(`${B('people')}.clearOverrides`, { keys: 'parallel' })).status).toBe(200)
    expect(field(jsonValue(await GET(`${B('people')}.configView()`)))).toMatchObject({ override: null, effective: 1, source: 'default', overridable: true })
  })

  test("clearOverrides { keys: 'mode,description' } removes just those paths", async () => {
    const res = await POST(`${B('books')}.clearOverrides`, { keys: 'mode, description' })
    expect(res.status).toBe(200)
    expect(res.data).toMatchObject({ mode: 'delta', description: 'Books from the provider' })
    const view = jsonValue(await GET(`${B('books')}.configView()`))
    expect(view.overrides).not.toHaveProperty('mode')
    expect(view.overrides).not.toHaveProperty('description')
    expect(view.overrides).toMatchObject({ 'source.batchSize': 10, 'delta.field': 'modifiedAt' })
    expectError(await POST(`${B('books')}.clearOverrides`, {}), 400, 'keys')
    await POST(`${B('books')}.clearOverrides`, { keys: 'source.batchSize,delta.field,schedule' })
    expect(jsonValue(await GET(`${B('books')}.configView()`)).overrides).toEqual({})
    expect((await pipelineRow('books')).overrides).toBeNull()
  })
})

describe('data inspector', () => {
  test('inspectCapabilities: full for entity sources and db targets, limited for query-shape', async () => {
    expect(jsonValue(await GET(`${B('books')}.inspectCapabilities()`))).toEqual({ source: 'full', target: 'full' })
    expect(jsonValue(await GET(`${B('people')}.inspectCapabilities()`))).toEqual({ source: 'full', target: 'full' })
    expect(jsonValue(await GET(`${B('author-stats')}.inspectCapabilities()`))).toEqual({ source: 'limited', target: 'full' })
  })

  test('source of an entity-shape CQN pipeline: columns, filters eq/contains/gt, top/skip/hasMore', async () => {
    const all = jsonValue(await inspect('people', { side: 'source' }))
    expect(all.limitedSupport).toBe(false)
    expect(all.hasMore).toBe(false)
    expect(all.columns).toEqual([{ name: 'ID', type: 'cds.Integer' }, { name: 'name', type: 'cds.String' }, { name: 'email', type: 'cds.String' }])
    expect(all.rows).toHaveLength(6)

    const page = jsonValue(await inspect('people', { side: 'source', columnsJson: '["ID","name"]', top: 2, skip: 1 }))
    expect(page.columns.map((c: any) => c.name)).toEqual(['ID', 'name'])
    expect(page.rows).toEqual([{ ID: 2, name: 'Bob_Smith' }, { ID: 3, name: 'Bobby' }])
    expect(page.hasMore).toBe(true)
    const last = jsonValue(await inspect('people', { side: 'source', columnsJson: '["ID"]', top: 2, skip: 4 }))
    expect(last.rows).toEqual([{ ID: 5 }, { ID: 6 }])
    expect(last.hasMore).toBe(false)

    const eq = jsonValue(await inspect('people', { side: 'source', filters: filters({ field: 'name', op: 'eq', value: 'Carl' }) }))
    expect(eq.rows.map((r: any) => r.ID)).toEqual([4])
    const gt = jsonValue(await inspect('people', { side: 'source', filters: filters({ field: 'ID', op: 'gt', value: 3 }, { field: 'ID', op: 'le', value: 5 }) }))
    expect(gt.rows.map((r: any) => r.ID)).toEqual([4, 5])
    const contains = jsonValue(await inspect('people', { side: 'source', filters: filters({ field: 'name', op: 'contains', value: 'Bob' }) }))
    expect(contains.rows.map((r: any) => r.ID)).toEqual([2, 3])
    const ne = jsonValue(await inspect('people', { side: 'source', filters: filters({ field: 'email', op: 'ne', value: 'ann@example.com' }) }))
    expect(ne.rows).toHaveLength(5)
  })

  test("contains treats % and _ literally; values are bound, never spliced (quotes are just data)", async () => {
    const ids = async (side: string, value: string) => jsonValue(await inspect('people', { side, filters: filters({ field: 'name', op: 'contains', value }) })).rows.map((r: any) => r.ID)
    for (const side of ['source', 'target']) {
      expect(await ids(side, '%')).toEqual([1])
      expect(await ids(side, '_')).toEqual([2])
      expect(await ids(side, 'B_b')).toEqual([])
      expect(await ids(side, 'A%0')).toEqual([])
    }
    const injection = jsonValue(await inspect('people', { side: 'source', filters: filters({ field: 'name', op: 'eq', value: "x' or '1'='1" }) }))
    expect(injection.rows).toEqual([])
  })

  test('@HideFromDataInspector: secret is never returned; asking for it by name → 400 naming it', async () => {
    for (const side of ['source', 'target']) {
      const res = jsonValue(await inspect('people', { side }))
      expect(res.columns.map((c: any) => c.name)).not.toContain('secret')
      for (const row of res.rows) expect(row).not.toHaveProperty('secret')
      expectError(await inspect('people', { side, columnsJson: '["ID","secret"]' }), 400, 'secret')
      expectError(await inspect('people', { side, filters: filters({ field: 'secret', op: 'eq', value: 'S1' }) }), 400, 'secret')
    }
    for (const body of http.bodies) expect(body).not.toMatch(/"S[1-6]"/)
  })

  test('db target and OData source: filters are pushed down to the provider as $filter', async () => {
    const target = jsonValue(await inspect('books', { side: 'target', columnsJson: '["ID","name","author"]', filters: filters({ field: 'author', op: 'eq', value: 'Author 1' }), top: 3 }))
    expect(target.limitedSupport).toBe(false)
    expect(target.rows).toHaveLength(3)
    expect(target.hasMore).toBe(true)
    expect(target.rows.every((r: any) => r.author === 'Author 1')).toBe(true)

    await provider.control.reset().then(() => provider.control.seed({ count: 30, modifiedAt: '2026-01-01T00:00:00.000Z' }))
    const source = jsonValue(await inspect('books', { side: 'source', columnsJson: '["ID","title"]', filters: filters({ field: 'stock', op: 'ge', value: 25 }, { field: 'title', op: 'contains', value: "Book 2" }), top: 200 }))
    expect(source.limitedSupport).toBe(false)
    expect(source.rows.map((r: any) => r.ID)).toEqual([25, 26, 27, 28, 29])
    expect(Object.keys(source.rows[0]).sort()).toEqual(['ID', 'title'])
    const urls = (await provider.control.stats()).urls
    expect(urls.some(u => u.includes('$filter=') && u.includes('stock ge 25') && u.includes("contains(title,'Book 2')"))).toBe(true)
  })

  test('query-shape source is previewed in memory with limitedSupport: true', async () => {
    const res = jsonValue(await inspect('author-stats', { side: 'source', filters: filters({ field: 'author', op: 'eq', value: 'Author 1' }) }))
    expect(res.limitedSupport).toBe(true)
    expect(res.rows).toEqual([expect.objectContaining({ author: 'Author 1', books: 6 })])
  })

  test('invalid inspector parameters → 400 naming the parameter', async () => {
    expectError(await inspect('people', { side: 'middle' }), 400, 'side')
    expectError(await inspect('people', {}), 400, 'side')
    expectError(await inspect('people', { side: 'source', top: 0 }), 400, 'top')
    expectError(await inspect('people', { side: 'source', top: 201 }), 400, 'top')
    expect(jsonValue(await inspect('people', { side: 'source', top: 200 })).rows).toHaveLength(6)
    expectError(await inspect('people', { side: 'source', skip: -1 }), 400, 'skip')
    expectError(await inspect('people', { side: 'source', filters: filters({ field: 'name', op: 'like', value: 'A%' }) }), 400, 'filters')
    expectError(await inspect('people', { side: 'source', filters: '[{"field":' }), 400, 'filters')
    expectError(await inspect('people', { side: 'source', filters: '{"field":"name"}' }), 400, 'filters')
    expectError(await inspect('people', { side: 'source', filters: filters({ field: 'nope', op: 'eq', value: 1 }) }), 400, 'nope')
    expectError(await inspect('people', { side: 'source', filters: filters({ field: 'name', op: 'eq', value: { $ne: 1 } }) }), 400, 'filters')
    expectError(await inspect('people', { side: 'source', columnsJson: '["ID",' }), 400, 'columnsJson')
    expectError(await inspect('people', { side: 'source', columnsJson: '{"a":1}' }), 400, 'columnsJson')
    expectError(await inspect('people', { side: 'source', columnsJson: '["nope"]' }), 400, 'nope')
    expectError(await inspect('books', { side: 'source', columnsJson: '["ID;drop"]' }), 400, 'columnsJson')
  })
})

describe('security', () => {
  test('no response of this suite carries credentials', async () => {
    // a few more responses that touch the remote binding
    jsonValue(await GET(`${B('books')}.configView()`))
    await GET('/pipeline/Pipelines')
    await provider.control.faults({ status: 404, count: 10 }) // a remote error carries the request with its headers
    // everything logged meanwhile, as the console would print it (CAP's remote logger included)
    const logged: string[] = []
    const spies = (['log', 'info', 'warn', 'error', 'debug'] as const).map(method =>
      vi.spyOn(console, method).mockImplementation((...args: unknown[]) => { logged.push(formatWithOptions({ depth: 10 }, ...args)) }))
    try {
      await POST(`${B('books')}.start`, { mode: 'full' })
      await inspect('books', { side: 'source' })
    } finally {
      spies.forEach(spy => spy.mockRestore())
      await provider.control.faults({})
    }
    expect(logged.join('\n')).toMatch(/404|injected failure/) // the failure was logged…
    expect(logged.join('\n')).not.toContain('CANARY') // …without the credentials
    await GET('/pipeline/PipelineRuns')
    expect(http.bodies.length).toBeGreaterThan(100)
    for (const body of http.bodies) {
      expect(body).not.toContain('CANARY')
      expect(body).not.toMatch(/authorization|x-api-key/i)
      expect(body).not.toMatch(/\/\/[^/\s"]*:[^/\s"]*@/) // URLs with user info
    }
  })
})
