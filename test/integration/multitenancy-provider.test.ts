/**
 * The provider's operator (a user without tenant) against every part of `/pipeline/` in a
 * multitenant app (issue 37, point 2; docs/guide/multitenancy.md, "The operator's view across
 * tenants"): test/fixtures/mtx/app with `@sap/cds-mtxs` in the same process, tenant t1 subscribed
 * and synced, once with `fanOutScheduledRuns` and once without. Pipelines and runs live in each
 * tenant's database, the provider has none of its own: no request of the provider answers 5xx.
 * Reads of the tracker entities answer an empty list with the hint to tenantsOverview()
 * (`sap-messages`), one row 404 with it; whatever needs a tenant's pipeline answers 404
 * (`TENANT_REQUIRED`; an execute without fan-out: 400 naming `tenant`) whose message carries the
 * hint; what the provider has an answer of its own for (its permissions, tenantsOverview, a schedule
 * preview, a fan-out execute or start, the shared configuration) answers 2xx.
 *
 * The requests are enumerated from the served model (`/pipeline/$metadata`): every entity set
 * (list, `$count`, one row, each navigation), every bound and unbound function and action. One
 * added later is covered without touching this file: it answers the provider 404 with the hint
 * unless it joins PROVIDER_OPERATIONS (lib/management/tenants-overview.ts) — and PROVIDER_ANSWERS here.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { type ProviderControl, type RunningApp } from '../helpers/apps'
import { sharedProvider } from '../helpers/shared-provider'
import { waitFor } from '../helpers/wait'
import { userClient } from '../helpers/users'
import { startMtxApp, tenantLifecycle } from '../helpers/mtx'

let provider: RunningApp & { control: ProviderControl }
const HINT = 'tenantsOverview()'
const NAMESPACE = 'DataPipelineManagementService'
const PIPELINE = 'mtx.Books'

/** What the provider answers 2xx (an answer of its own), by operation or entity set; everything else carries the hint. */
const PROVIDER_ANSWERS = new Set([
  'permissions', 'tenantsOverview', 'previewSchedule', 'execute', 'start',
  'configView', 'inspectCapabilities', 'flowMetadata', 'landscapeMetadata',
  'PipelineRunModes', 'PipelineRunTriggers',
])

/** Parameter values the requests send (by name; else by type); `undefined` leaves a parameter out. */
const SAMPLES: Record<string, unknown> = {
  name: PIPELINE, mode: 'full', trigger: 'manual', async: true, tenant: undefined,
  every: 60_000, cron: undefined, engine: 'spawn', overrides: '{"mode":"full"}', keys: 'mode', enabled: true,
  side: 'target', columnsJson: undefined, filters: undefined, top: 5, skip: 0, schedule: '60000', count: 2,
}
const BY_TYPE: Record<string, unknown> = { 'Edm.String': 'x', 'Edm.Boolean': true, 'Edm.Int32': 1, 'Edm.Int64': 1, 'Edm.Decimal': 1 }

interface Parameter { name: string; type: string }
interface Operation { kind: 'Action' | 'Function'; name: string; bound?: string; parameters: Parameter[] }
interface Served { sets: Map<string, { type: string; navigations: string[] }>; keys: Map<string, Parameter[]>; operations: Operation[] }

const attribute = (tag: string, name: string) => new RegExp(`\\b${name}="([^"]*)"`).exec(tag)?.[1]

/** The entity sets, key properties and operations of the served service, read from its EDMX. */
function served(edmx: string): Served {
  const sets = new Map<string, { type: string; navigations: string[] }>()
  for (const [, open, body = ''] of edmx.matchAll(/(<EntitySet\b[^>]*?)(?:\/>|>([\s\S]*?)<\/EntitySet>)/g))
    sets.set(attribute(open, 'Name')!, { type: attribute(open, 'EntityType')!.split('.').pop()!, navigations: [...body.matchAll(/<NavigationPropertyBinding\b[^>]*Path="([^"]+)"/g)].map(m => m[1]) })
  const keys = new Map<string, Parameter[]>()
  for (const [, open, body] of edmx.matchAll(/(<EntityType\b[^>]*>)([\s\S]*?)<\/EntityType>/g)) {
    const names = [...(/<Key>([\s\S]*?)<\/Key>/.exec(body)?.[1] ?? '').matchAll(/Name="([^"]+)"/g)].map(m => m[1])
    keys.set(attribute(open, 'Name')!, names.map(name => ({ name, type: attribute(new RegExp(`<Property Name="${name}"[^>]*>`).exec(body)![0], 'Type')! })))
  }
  const operations: Operation[] = []
  for (const [, kind, open, body] of edmx.matchAll(/<(Action|Function)\b([^>]*)>([\s\S]*?)<\/\1>/g)) {
    const parameters = [...body.matchAll(/<Parameter\b[^>]*>/g)].map(([tag]) => ({ name: attribute(tag, 'Name')!, type: attribute(tag, 'Type')! }))
    const bound = attribute(open, 'IsBound') === 'true' ? parameters.shift()!.type.split('.').pop() : undefined
    operations.push({ kind: kind as Operation['kind'], name: attribute(open, 'Name')!, bound, parameters })
  }
  return { sets, keys, operations }
}

const sample = (p: Parameter) => (p.name in SAMPLES ? SAMPLES[p.name] : BY_TYPE[p.type])
const literal = (type: string, value: unknown) => (type === 'Edm.String' ? `'${encodeURIComponent(String(value).replace(/'/g, "''"))}'` : String(value))

beforeAll(async () => {
  provider = await sharedProvider()
  await provider.control.seed({ count: 3 })
})
afterAll(() => provider?.stop())

const OPS = { authorization: `Basic ${Buffer.from('ops:').toString('base64')}` }

describe.each([
  { label: 'fan-out on', fanOutScheduledRuns: true },
  // without fan-out the provider's execute and start have no tenant to run for: refused with the hint
  { label: 'fan-out off', fanOutScheduledRuns: false },
])("the provider's operator in a multitenant app ($label): no 5xx anywhere on /pipeline/, the hint wherever it has no answer of its own", ({ fanOutScheduledRuns }) => {
  let app: RunningApp
  let runId: string
  let model: Served
  const dir = mkdtempSync(path.join(tmpdir(), 'mtx-provider-'))
  const { call, get } = userClient(() => app.url)
  const answers = new Set([...PROVIDER_ANSWERS].filter(name => fanOutScheduledRuns || !['execute', 'start'].includes(name)))

  /** A key of one row of the entity type: the pipeline, t1's run, else a value of the key's type. */
  const keyOf = (type: string) => {
    const key = model.keys.get(type)!
    const value = (p: Parameter) => (p.type === 'Edm.Guid' ? runId : p.type === 'Edm.String' ? literal(p.type, PIPELINE) : p.type === 'Edm.DateTimeOffset' ? new Date().toISOString() : '1')
    return key.length === 1 ? `(${value(key[0])})` : `(${key.map(p => `${p.name}=${value(p)}`).join(',')})`
  }
  /** Every request the served model offers: each entity set (list, $count, one row, navigations) and each operation. */
  const requests = () => {
    const out: Array<{ label: string; subject: string; method: string; url: string; body?: object }> = []
    for (const [set, { type, navigations }] of model.sets) {
      out.push({ label: `GET ${set}`, subject: set, method: 'GET', url: `/pipeline/${set}` })
      out.push({ label: `GET ${set}/$count`, subject: set, method: 'GET', url: `/pipeline/${set}/$count` })
      out.push({ label: `GET ${set}(<key>)`, subject: set, method: 'GET', url: `/pipeline/${set}${keyOf(type)}` })
      for (const navigation of navigations) out.push({ label: `GET ${set}(<key>)/${navigation}`, subject: set, method: 'GET', url: `/pipeline/${set}${keyOf(type)}/${navigation}` })
    }
    for (const op of model.operations) {
      const set = op.bound && [...model.sets].find(([, s]) => s.type === op.bound)?.[0]
      if (op.bound && !set) throw new Error(`${op.name}: bound to ${op.bound}, which no entity set serves`)
      const base = set ? `/pipeline/${set}${keyOf(op.bound!)}/${NAMESPACE}.${op.name}` : `/pipeline/${op.name}`
      const given = op.parameters.filter(p => sample(p) !== undefined)
      const label = `${op.kind} ${set ? `${set}(<key>)/` : ''}${op.name}`
      if (op.kind === 'Function') out.push({ label, subject: op.name, method: 'GET', url: `${base}(${given.map(p => `${p.name}=${literal(p.type, sample(p))}`).join(',')})` })
      else out.push({ label, subject: op.name, method: 'POST', url: base, body: Object.fromEntries(given.map(p => [p.name, sample(p)])) })
    }
    return out
  }

  beforeAll(async () => {
    app = await startMtxApp(dir, provider.url, { requires: { 'data-pipeline': { multitenancy: { fanOutScheduledRuns } } } })
    await tenantLifecycle(call)('subscribe', 't1')
    runId = (await waitFor(async () => (await get<Array<{ ID: string; status: string }>>('u1', `/pipeline/PipelineRuns?$filter=pipeline_name eq '${PIPELINE}'`)).find(r => r.status === 'idle'), 'the initial sync of t1', 60_000)).ID
    const response = await fetch(`${app.url}/pipeline/$metadata`, { headers: OPS })
    expect(response.status).toBe(200)
    model = served(await response.text())
  })

  afterAll(async () => {
    await app?.stop()
    rmSync(dir, { recursive: true, force: true })
  })

  it('the served model lists what the test goes through (the parser reads it)', () => {
    expect([...model.sets.keys()]).toEqual(expect.arrayContaining(['Pipelines', 'PipelineRuns', 'PipelineRunEvents', 'PipelineRejects', 'PipelineRunModes']))
    expect(model.operations.map(o => o.name)).toEqual(expect.arrayContaining(['status', 'flush', 'execute', 'tenantsOverview', 'start', 'inspectData', 'retry']))
    expect(model.operations.find(o => o.name === 'retry')?.bound).toBe('PipelineRuns')
    expect(model.keys.get('Pipelines')).toEqual([{ name: 'name', type: 'Edm.String' }])
  })

  it('every entity, function and action: below 500; 2xx where the provider has an answer of its own, else the hint', async () => {
    const seen: string[] = []
    for (const request of requests()) {
      const response = await fetch(`${app.url}${request.url}`, {
        method: request.method,
        headers: { ...OPS, ...(request.body ? { 'content-type': 'application/json' } : {}) },
        ...(request.body ? { body: JSON.stringify(request.body) } : {}),
      })
      const text = await response.text()
      const messages = decodeURIComponent(response.headers.get('sap-messages') ?? '')
      seen.push(`${request.label}: ${response.status}`)
      expect.soft(response.status, `${request.label}: ${text}`).toBeLessThan(500)
      expect.soft(text, request.label).not.toMatch(/SQLITE|no such table|plugin_data_pipeline_/i)
      if (answers.has(request.subject)) {
        expect.soft(response.status, `${request.label}: the provider's own answer: ${text}`).toBeLessThan(300)
        continue
      }
      if (response.status < 300) expect.soft(messages, `${request.label}: 2xx with the hint in sap-messages: ${text}`).toContain(HINT)
      else {
        expect.soft(response.status, `${request.label}: 404 or, naming a parameter, 400: ${text}`).toBeOneOf([400, 404])
        expect.soft(JSON.parse(text).error?.message, `${request.label}: the error names the hint`).toContain(HINT)
      }
    }
    expect(seen.length).toBeGreaterThan(40)
  })

  it("status(name) answers 404 TENANT_REQUIRED with the hint; a refused setting changes nothing; the tenant's user is answered as before", async () => {
    const status = await call('ops', 'GET', `/pipeline/status(name='${PIPELINE}')`)
    expect(status.status, JSON.stringify(status.body)).toBe(404)
    expect(status.body.error).toMatchObject({ code: 'TENANT_REQUIRED', message: expect.stringContaining(HINT) })
    // the table above sent setOverrides {"mode":"full"}, clearSchedule, setEnabled …: refused before anything changed
    const view = JSON.parse(await get<string>('ops', `/pipeline/Pipelines('${PIPELINE}')/${NAMESPACE}.configView()`))
    expect(view.overrides).toEqual({})
    const own = await call('u1', 'GET', `/pipeline/status(name='${PIPELINE}')`)
    expect(own.status, JSON.stringify(own.body)).toBe(200)
    expect(own.body).toMatchObject({ name: PIPELINE, enabled: true })
    expect((await call('u1', 'GET', `/pipeline/Pipelines('${PIPELINE}')`)).status).toBe(200)
  })
})
