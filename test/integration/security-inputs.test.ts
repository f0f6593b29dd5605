/**
 * Issue 20, findings 6 and 8: every management input is validated in one place and answered
 * 400 naming the field, on every entry (annotation, addPipeline, setOverrides, setSchedule):
 *
 * - schedules between `schedules.minInterval` (default 1 s) and 2^31-1 ms — Node fires a longer
 *   timer after 1 ms (`every: 99999999999` ran about 40 times a second);
 * - a field an override or a config names is an element of the source (an override
 *   `delta.field: "modifiedAt&$skiptoken=zz&x"` landed in the provider's URL);
 * - a remote source without a service definition is refused at registration, not at run time;
 * - strings the tracker stores fit their columns; the overrides are bounded as a whole;
 *
 * and a bounded, seeded fuzz of every parameter of every operation of /pipeline/: never a 5xx,
 * never SQL text, nothing changed by the invalid requests, a valid run still works afterwards.
 * The calls are made as a mocked user holding PipelineAdmin.
 */
import cds from '@sap/cds'
import path from 'node:path'
import { FIXTURES } from '../helpers/apps'
import { BOUND as B, client, errorOf, jsonValue, type HttpResponse } from '../helpers/management'
import { basicAuth } from '../helpers/auth'

const test$ = cds.test(path.join(FIXTURES, 'inputs'))
const http = client(() => (test$ as unknown as { axios: any }).axios)
const admin = basicAuth('admin')
const GET = (url: string) => http.GET(url, admin)
const POST = (url: string, body: unknown = {}) => http.POST(url, body, admin)

interface Engine {
  addPipeline(config: object): Promise<unknown>
  getPipelineNames(): string[]
  registry: { overrides(name: string): Record<string, unknown> }
}
const engine = async () => (await cds.connect.to('data-pipeline')) as unknown as Engine

/** A 400 naming the field in its target and message. */
function expect400(res: HttpResponse, field: string, message?: RegExp) {
  expect(res.status, JSON.stringify(res.data)).toBe(400)
  const error = errorOf(res)
  expect(error).toMatchObject({ code: 'INVALID_PARAMETER', target: field })
  expect(error.message).toContain(field)
  if (message) expect(error.message).toMatch(message)
}

const rejected = (promise: Promise<unknown>) => promise.then(() => undefined, (error: unknown) => error as { code?: string; target?: string; status?: number; message: string })

const runs = async (name: string) => (await cds.ql.SELECT.from('plugin.data_pipeline.PipelineRuns').where({ pipeline_name: name })).length

describe('schedules have bounds (finding 6)', () => {
  test('setSchedule: every below 1 s or above 2^31-1 ms → 400 naming every; nothing is saved and nothing runs', async () => {
    const before = await runs('notes')
    for (const every of [1, 999, 99_999_999_999, 2 ** 31]) {
      expect400(await POST(`${B('notes')}.setSchedule`, { every }), 'every', every < 1000 ? /below the minimum schedule interval of 1000 ms/ : /exceeds the longest schedule interval, 2147483647 ms/)
      expect400(await POST(`${B('notes')}.setSchedule`, { every, engine: 'queued' }), 'every')
    }
    expect((await GET(`/pipeline/Pipelines('notes')`)).data.schedule).toBe('every 1 h (spawn)')
    expect((await engine()).registry.overrides('notes')).toEqual({})
    expect(await runs('notes')).toBe(before)
    // the bounds themselves are fine
    expect((await POST(`${B('notes')}.setSchedule`, { every: 2 ** 31 - 1 })).status).toBe(200)
    expect((await POST(`${B('notes')}.setSchedule`, { every: 1000 })).status).toBe(200)
    expect((await POST(`${B('notes')}.clearOverrides`, { keys: 'schedule' })).status).toBe(200)
    expect((await GET(`/pipeline/Pipelines('notes')`)).data.schedule).toBe('every 1 h (spawn)')
  })

  test('setOverrides { schedule }: numbers, duration strings and objects out of bounds → 400 naming the override key', async () => {
    for (const schedule of [1, '500ms', '0.5s', 99_999_999_999, '30d'])
      expect400(await POST(`${B('notes')}.setOverrides`, { overrides: JSON.stringify({ schedule }) }), 'schedule')
    expect400(await POST(`${B('notes')}.setOverrides`, { overrides: JSON.stringify({ schedule: { every: 1 } }) }), 'schedule.every')
    expect400(await POST(`${B('notes')}.setOverrides`, { overrides: JSON.stringify({ schedule: { every: '99999999999', engine: 'queued' } }) }), 'schedule.every')
    expect((await engine()).registry.overrides('notes')).toEqual({})
    const ok = await POST(`${B('notes')}.setOverrides`, { overrides: JSON.stringify({ schedule: '30s' }) })
    expect(ok.status, JSON.stringify(ok.data)).toBe(200)
    expect(ok.data.schedule).toBe('every 30 s (spawn)')
    expect((await POST(`${B('notes')}.clearOverrides`, { keys: 'schedule' })).status).toBe(200)
  })

  test('addPipeline and @federation.replicate: a schedule out of bounds fails the registration naming schedule', async () => {
    const pipelines = await engine()
    for (const schedule of [1, 999, '100ms', 99_999_999_999, { every: 5, engine: 'queued' }]) {
      const error = await rejected(pipelines.addPipeline({ name: `fast-${JSON.stringify(schedule)}`, source: { entity: 'inputs.Notes' }, target: { entity: 'inputs.NotesCopy' }, schedule }))
      expect(error, JSON.stringify(schedule)).toMatchObject({ code: 'INVALID_CONFIG', status: 400, target: typeof schedule === 'object' ? 'schedule.every' : 'schedule' })
    }
    const { registerReplicas } = await import('../../lib/federation/replicate')
    const remote = '@cds.external service Provider { entity Books { key ID : Integer; title : String; modifiedAt : Timestamp; } }'
    const csn = cds.compile(`${remote} @federation.replicate: { schedule: 1 } entity Fast as projection on Provider.Books;`)
    const error = await rejected(registerReplicas(pipelines as never, csn as never))
    expect(error).toMatchObject({ code: 'INVALID_CONFIG', target: 'schedule' })
    expect(error?.message).toMatch(/below the minimum schedule interval/)
    expect(pipelines.getPipelineNames().filter(name => name.startsWith('fast') || name === 'Fast')).toEqual([])
  })
})

describe('inputs are validated (finding 8)', () => {
  test("an override naming a field must name an element of the source: 'modifiedAt&$skiptoken=zz&x' → 400 INVALID_PARAMETER naming delta.field", async () => {
    expect400(await POST(`${B('books')}.setOverrides`, { overrides: JSON.stringify({ 'delta.field': 'modifiedAt&$skiptoken=zz&x' }) }), 'delta.field')
    expect400(await POST(`${B('books')}.setOverrides`, { overrides: JSON.stringify({ delta: { field: 'modifiedAt desc' } }) }), 'delta.field')
    expect400(await POST(`${B('books')}.setOverrides`, { overrides: JSON.stringify({ 'delta.field': 'changedAt' }) }), 'delta.field', /'changedAt' is not an element of the source entity 'Provider.Books'/)
    expect400(await POST(`${B('books')}.setOverrides`, { overrides: JSON.stringify({ 'delta.mode': 'datetime-fields', 'delta.dateField': 'changedDate', 'delta.timeField': 'nope' }) }), 'delta.timeField')
    expect400(await POST(`${B('notes')}.setOverrides`, { overrides: JSON.stringify({ 'delta.field': "at' or 1=1 --" }) }), 'delta.field')
    expect((await engine()).registry.overrides('books')).toEqual({})
    // an element of the source is fine
    const ok = await POST(`${B('books')}.setOverrides`, { overrides: JSON.stringify({ 'delta.field': 'modifiedAt' }) })
    expect(ok.status, JSON.stringify(ok.data)).toBe(200)
    expect((await POST(`${B('books')}.clearOverrides`, { keys: 'delta.field' })).status).toBe(200)
  })

  test('addPipeline: fields named in the config must be elements of the source', async () => {
    const pipelines = await engine()
    const base = { source: { service: 'Provider', entity: 'Books' }, target: { entity: 'inputs.Books' } }
    for (const [key, delta] of [
      ['delta.field', { field: 'modifiedAt&$top=1' }],
      ['delta.field', { field: 'updatedAt' }],
      ['delta.deletedField', { field: 'modifiedAt', deletedField: 'isDeleted' }],
      ['delta.dateField', { mode: 'datetime-fields', dateField: 'day', timeField: 'changedTime' }],
    ] as const) {
      const error = await rejected(pipelines.addPipeline({ name: `fields-${key}`, ...base, delta }))
      expect(error, JSON.stringify(delta)).toMatchObject({ code: 'INVALID_CONFIG', status: 400, target: key })
    }
  })

  test('a remote source whose binding has no service definition is refused at registration, saying what to do', async () => {
    const pipelines = await engine()
    const error = await rejected(pipelines.addPipeline({ name: 'nowhere', source: { service: 'Nowhere', entity: 'Books' }, target: { entity: 'inputs.Books' } }))
    expect(error).toMatchObject({ code: 'INVALID_CONFIG', status: 400, target: 'source.service' })
    expect(error?.message).toMatch(/'Nowhere' has no service definition in the model: import its API \(cds import/)
    const missing = await rejected(pipelines.addPipeline({ name: 'nobooks', source: { service: 'Provider', entity: 'Nope' }, target: { entity: 'inputs.Books' } }))
    expect(missing).toMatchObject({ code: 'INVALID_CONFIG', target: 'source.entity' })
    expect(pipelines.getPipelineNames()).not.toContain('nowhere')
    expect(pipelines.getPipelineNames()).not.toContain('nobooks')
  })

  test('lengths: a 90 kB description (String(1000)) → 400 naming description; the overrides are bounded; addPipeline checks name, description and origin', async () => {
    expect400(await POST(`${B('notes')}.setOverrides`, { overrides: JSON.stringify({ description: 'x'.repeat(1001) }) }), 'description', /1001 characters long; at most 1000/)
    expect400(await POST(`${B('notes')}.setOverrides`, { overrides: JSON.stringify({ description: 'd'.repeat(90_000) }) }), 'overrides')
    expect((await GET(`/pipeline/Pipelines('notes')`)).data.description).toBe('Local notes')
    const fits = await POST(`${B('notes')}.setOverrides`, { overrides: JSON.stringify({ description: '🙂'.repeat(1000) }) })
    expect(fits.status, JSON.stringify(fits.data)).toBe(200)
    expect((await POST(`${B('notes')}.clearOverrides`, { keys: 'description' })).status).toBe(200)

    const pipelines = await engine()
    const base = { source: { entity: 'inputs.Notes' }, target: { entity: 'inputs.NotesCopy' } }
    expect(await rejected(pipelines.addPipeline({ name: 'n'.repeat(256), ...base }))).toMatchObject({ code: 'INVALID_CONFIG', target: 'name' })
    expect(await rejected(pipelines.addPipeline({ name: 'long-description', description: 'd'.repeat(90_000), ...base }))).toMatchObject({ code: 'INVALID_CONFIG', target: 'description' })
    expect(await rejected(pipelines.addPipeline({ name: 'long-origin', ...base, source: { ...base.source, origin: 'o'.repeat(101) } }))).toMatchObject({ code: 'INVALID_CONFIG', target: 'source.origin' })
  })
})

// ---------------------------------------------------------------------------------------------
// bounded fuzz of every management input

/** mulberry32: a small seeded PRNG, so every run sends the same requests. */
function random(seed: number): () => number {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

const INJECTIONS = [
  "'; DROP TABLE Pipelines; --", "' or 1=1 --", "x' or name ne '", "modifiedAt&$skiptoken=zz&x", "$filter=1 eq 1", ') or (1 eq 1',
  '../x', '..%2F..%2Fetc', '%00', '\u0000', '\ud800', '${jndi:x}', '<script>alert(1)</script>', '{"mode":', '[1,2]', '{"$ne":1}',
]
/** Values of every type a JSON body or a URL can carry; none is a valid pipeline name, none a valid override. */
const POOL: unknown[] = [
  null, true, false, 0, -1, 1, 1.5, -(2 ** 31), 2 ** 31, 2 ** 53, 99_999_999_999, 1e308, -1e308,
  '', ' ', 'NaN', 'null', 'true', '-1', 'x'.repeat(20_000), '🙂'.repeat(3000), 'Ωμέγα ✓ 中文 \u202e', ...INJECTIONS,
  [], [1, 'a'], {}, { a: { b: 1 } }, { $ne: 1 },
]

type Param = { name: string; valid: (value: unknown) => boolean }
const anyValid = () => true
const optionalOf = (...values: unknown[]) => (value: unknown) => value === undefined || value === null || value === '' || values.includes(value)
/** A Boolean parameter: what CAP may coerce to a boolean counts as valid (never sent as the invalid value). */
const booleanLike = (value: unknown) => typeof value === 'boolean' || value === 'true' || value === 'false' || value === 0 || value === 1
const optionalBoolean = (value: unknown) => value === undefined || value === null || booleanLike(value)
const isJsonObjectText = (value: unknown) => {
  if (typeof value !== 'string') return false
  try { const parsed = JSON.parse(value); return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) } catch { return false }
}

interface Operation {
  name: string
  method: 'GET' | 'POST'
  /** Bound to a pipeline (its key is fuzzed too). */
  bound: boolean
  params: Param[]
  /** Changes state when all its parameters are valid: every case then gets one invalid value. */
  mutates: boolean
}

const OPERATIONS: Operation[] = [
  { name: 'start', method: 'POST', bound: true, mutates: true, params: [{ name: 'mode', valid: optionalOf('delta', 'full') }, { name: 'trigger', valid: optionalOf('manual', 'scheduled', 'external', 'event') }, { name: 'async', valid: optionalBoolean }] },
  { name: 'execute', method: 'POST', bound: false, mutates: true, params: [{ name: 'name', valid: anyValid }, { name: 'mode', valid: anyValid }, { name: 'trigger', valid: anyValid }, { name: 'async', valid: anyValid }, { name: 'tenant', valid: anyValid }] },
  { name: 'flush', method: 'POST', bound: false, mutates: true, params: [{ name: 'name', valid: anyValid }] },
  { name: 'status', method: 'GET', bound: false, mutates: false, params: [{ name: 'name', valid: anyValid }] },
  { name: 'setEnabled', method: 'POST', bound: true, mutates: true, params: [{ name: 'enabled', valid: booleanLike }] },
  { name: 'setSchedule', method: 'POST', bound: true, mutates: true, params: [{ name: 'every', valid: value => value === undefined || value === null || (Number.isInteger(value) && (value as number) >= 1000 && (value as number) < 2 ** 31) }, { name: 'cron', valid: optionalOf() }, { name: 'engine', valid: optionalOf('spawn', 'queued') }] },
  { name: 'clearSchedule', method: 'POST', bound: true, mutates: true, params: [] },
  { name: 'setOverrides', method: 'POST', bound: true, mutates: true, params: [{ name: 'overrides', valid: isJsonObjectText }] },
  { name: 'clearOverrides', method: 'POST', bound: true, mutates: true, params: [{ name: 'keys', valid: value => typeof value === 'string' && value.trim() !== '' }] },
  { name: 'configView', method: 'GET', bound: true, mutates: false, params: [] },
  { name: 'validateOverrides', method: 'POST', bound: true, mutates: false, params: [{ name: 'overrides', valid: anyValid }] },
  { name: 'previewSchedule', method: 'GET', bound: false, mutates: false, params: [{ name: 'schedule', valid: anyValid }, { name: 'count', valid: anyValid }] },
  { name: 'inspectData', method: 'GET', bound: true, mutates: false, params: [{ name: 'side', valid: anyValid }, { name: 'columnsJson', valid: anyValid }, { name: 'filters', valid: anyValid }, { name: 'top', valid: anyValid }, { name: 'skip', valid: anyValid }] },
  { name: 'inspectCapabilities', method: 'GET', bound: true, mutates: false, params: [] },
  { name: 'flowMetadata', method: 'GET', bound: true, mutates: false, params: [] },
  { name: 'landscapeMetadata', method: 'GET', bound: false, mutates: false, params: [] },
  { name: 'replayRejects', method: 'POST', bound: true, mutates: true, params: [] },
]

/** URL-encoded text; a lone surrogate (no UTF-8 exists for it) goes as the invalid bytes a client might send. */
function encode(text: string): string {
  return text.split(/([\ud800-\udfff])/).map(part => /^[\ud800-\udfff]$/.test(part) ? '%ED%A0%80' : encodeURIComponent(part)).join('')
}

/** An OData literal of a value in a function URL (`'text'`, numbers, `null`, JSON for the rest). */
function literal(value: unknown): string {
  if (typeof value === 'string') return `'${encode(value.replace(/'/g, "''"))}'`
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) return String(value)
  return encode(JSON.stringify(value))
}

/** A bound operation of a pipeline key (any text). */
const bound = (key: string, operation: string) => `/pipeline/Pipelines(${literal(key)})/DataPipelineManagementService.${operation}`

const CASES_PER_OPERATION = 12

interface Case { operation: string; method: 'GET' | 'POST'; url: string; body?: unknown }

function cases(seed: number): Case[] {
  const next = random(seed)
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)]
  const out: Case[] = []
  for (const op of OPERATIONS) {
    for (let i = 0; i < CASES_PER_OPERATION; i++) {
      // a case that could change something targets an unknown pipeline, or carries one invalid value
      const parameters = op.params
      const poisonKey = op.bound && (!op.mutates || !parameters.length || next() < 0.3)
      // the local pipeline: a source that cannot be reached (books) would answer 502 for valid input
      const key = poisonKey ? pick(POOL) : 'notes'
      const poisoned = !poisonKey && op.mutates ? pick(parameters) : undefined
      const values: Record<string, unknown> = {}
      for (const param of parameters) {
        if (param === poisoned) values[param.name] = pick(POOL.filter(value => !param.valid(value)))
        else if (next() < 0.6) values[param.name] = pick(POOL)
      }
      if (!op.bound && op.params.some(p => p.name === 'name') && op.mutates) values.name = pick(POOL) // never a registered name
      const target = op.bound ? bound(typeof key === 'string' ? key : JSON.stringify(key), op.name) : `/pipeline/${op.name}`
      if (op.method === 'GET') {
        const args = Object.entries(values).map(([name, value]) => `${name}=${literal(value)}`).join(',')
        out.push({ operation: op.name, method: 'GET', url: `${target}(${args})` })
      } else {
        out.push({ operation: op.name, method: 'POST', url: target, body: next() < 0.1 && poisoned ? { ...values, [`${poisoned.name}$extra`]: pick(POOL) } : values })
      }
    }
  }
  // bodies that are no JSON object at all, and a malformed key
  for (const body of ['not json', '[1,2]', '{"every":', '"every"']) out.push({ operation: 'setSchedule', method: 'POST', url: `${B('notes')}.setSchedule`, body })
  out.push({ operation: 'configView', method: 'GET', url: "/pipeline/Pipelines('notes)/DataPipelineManagementService.configView()" })
  out.push({ operation: 'status', method: 'GET', url: '/pipeline/status(name=1 eq 1)' })
  return out
}

/** SQL the database would have produced (what the request sent is taken out first: an echo of it is no leak). */
const SQL = /no such (table|column)|SQLITE_|syntax error|\b(SELECT|INSERT INTO|UPDATE|DELETE FROM)\b[\s\S]{0,200}\b(FROM|VALUES|SET|WHERE)\b|plugin_data_pipeline_/i

async function snapshot() {
  const pipelines = await engine()
  const rows = await cds.ql.SELECT.from('plugin.data_pipeline.Pipelines').orderBy('name')
  const runRows = await cds.ql.SELECT.from('plugin.data_pipeline.PipelineRuns').columns('ID', 'status')
  const overrides = Object.fromEntries(pipelines.getPipelineNames().map(name => [name, pipelines.registry.overrides(name)]))
  return { rows, runs: runRows, overrides, names: pipelines.getPipelineNames() }
}

describe('bounded fuzz of every management input', () => {
  test(`${OPERATIONS.length} operations × ${CASES_PER_OPERATION} seeded cases: 2xx or 4xx, never SQL, nothing changed; a valid run works afterwards`, async () => {
    await cds.ql.INSERT.into('inputs.Notes').entries([{ ID: 1, text: 'one', at: '2026-01-01T00:00:00.000Z' }, { ID: 2, text: 'two', at: '2026-01-02T00:00:00.000Z' }])
    const before = await snapshot()
    const all = cases(20)
    expect(all.length).toBe(OPERATIONS.length * CASES_PER_OPERATION + 6)
    const failures: string[] = []
    for (const each of all) {
      const res = each.method === 'GET' ? await GET(each.url) : await http.POST(each.url, each.body, admin)
      let text = typeof res.data === 'string' ? res.data : JSON.stringify(res.data ?? null)
      for (const sent of [...INJECTIONS, ...INJECTIONS.map(s => JSON.stringify(s).slice(1, -1))]) text = text.split(sent).join('')
      const line = `${each.method} ${each.url.slice(0, 200)} ${JSON.stringify(each.body ?? null).slice(0, 200)} → ${res.status} ${text.slice(0, 300)}`
      if (res.status >= 500 || res.status < 200) failures.push(`status: ${line}`)
      else if (SQL.test(text)) failures.push(`SQL: ${line}`)
    }
    expect(failures).toEqual([])
    expect(await snapshot()).toEqual(before)

    const run = await POST(`${B('notes')}.start`, {})
    expect(run.status, JSON.stringify(run.data)).toBe(200)
    expect(run.data).toMatchObject({ status: 'completed', statistics: { created: 2 } })
    expect(jsonValue(await GET(`${B('notes')}.configView()`)).base.name).toBe('notes')
  })
})
