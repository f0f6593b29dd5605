/**
 * Typed configuration, server side (issue 25, point 3): configView() serves the rule of every
 * overridable setting (type, values, bounds) from the table the validator checks with; the
 * boundaries of each served rule are exactly what validateOverrides and setOverrides accept.
 * validateOverrides names every bad setting and changes nothing; setOverrides with a bad value
 * answers 400 naming the field and keeps the stored overrides; previewSchedule answers the next
 * fire times of `every` and cron schedules with the validator's parser.
 *
 * The management fixture runs in-process (cds.test); the OData provider is a child process.
 */
import cds from '@sap/cds'
import path from 'node:path'
import { FIXTURES, type ProviderControl, type RunningApp } from '../helpers/apps'
import { sharedProvider } from '../helpers/shared-provider'
import { BOUND as B, client, errorOf, fnArgs, jsonValue } from '../helpers/management'

let provider: RunningApp & { control: ProviderControl }

beforeAll(async () => {
  provider = await sharedProvider()
})
const test$ = cds.test(path.join(FIXTURES, 'management'))
beforeAll(() => {
  const requires = cds.env.requires as unknown as Record<string, { credentials?: object }>
  requires.Provider.credentials = { url: `${provider.url}/odata/v4/catalog` }
})
afterAll(async () => {
  await provider?.stop()
})

const { GET, POST } = client(() => (test$ as unknown as { axios: any }).axios)

interface Rule { type: string; values?: string[]; min?: number; max?: number; maxLength?: number; pattern?: string }
interface Field { path: string; overridable: boolean; source: string; override: unknown; coded: unknown; effective: unknown; rule?: Rule }

const configView = async (name: string) => jsonValue(await GET(`${B(name)}.configView()`)) as { overrides: Record<string, unknown>; fields: Field[]; meta: { overridablePaths: string[] } }
const validate = async (name: string, overrides: object) => jsonValue(await POST(`${B(name)}.validateOverrides`, { overrides: JSON.stringify(overrides) })) as { valid: boolean; problems: Array<{ target: string; message: string }> }

describe('configView() serves each overridable setting with its rule', () => {
  test('types, values and bounds; every overridable path has a rule, others none', async () => {
    const view = await configView('books')
    const rules = Object.fromEntries(view.fields.filter(f => f.rule).map(f => [f.path, f.rule]))
    expect(Object.keys(rules).sort()).toEqual([...view.meta.overridablePaths].sort())
    for (const field of view.fields) if (!field.overridable) expect(field.rule).toBeUndefined()
    expect(rules.mode).toEqual({ type: 'enum', values: ['delta', 'full'] })
    expect(rules.transaction).toEqual({ type: 'enum', values: ['batch', 'run'] })
    expect(rules['delta.mode']).toEqual({ type: 'enum', values: ['timestamp', 'key', 'datetime-fields', 'odata-delta'] })
    expect(rules['source.batchSize']).toEqual({ type: 'integer', min: 1, max: 100000 })
    expect(rules.enabled).toEqual({ type: 'boolean' })
    expect(rules['deletes.force']).toEqual({ type: 'boolean' })
    expect(rules.description).toEqual({ type: 'text', maxLength: 1000 })
    expect(rules['deletes.maxShare']).toMatchObject({ type: 'number', min: 0, minExclusive: true, max: 1 })
    // the schedule's bounds: the app's minimum interval (default 1 s) and the longest timer
    expect(rules.schedule).toMatchObject({ type: 'schedule', min: 1000, max: 2 ** 31 - 1, unit: 'ms' })
    expect(new RegExp(rules.maxStaleness.pattern!).test('2h')).toBe(true)
    expect(new RegExp(rules['delta.field'].pattern!).test('modifiedAt')).toBe(true)
    expect(new RegExp(rules['delta.field'].pattern!).test('a&b')).toBe(false)
    // coded, overridden and effective values beside the rule
    expect(view.fields.find(f => f.path === 'source.batchSize')).toMatchObject({ coded: null, override: null, effective: 1000, source: 'default' })
  })

  test('the served bounds and values are exactly what the server accepts (one source of truth)', async () => {
    const view = await configView('books')
    const checked: string[] = []
    for (const { path: key, rule } of view.fields.filter(f => f.rule)) {
      if (['integer', 'enum'].includes(rule!.type) || (rule!.type === 'text' && rule!.maxLength)) checked.push(key)
      if (rule!.type === 'integer') {
        expect((await validate('books', { [key]: rule!.min })).valid, `${key} = min`).toBe(true)
        expect((await validate('books', { [key]: rule!.max })).valid, `${key} = max`).toBe(true)
        const below = await validate('books', { [key]: rule!.min! - 1 })
        expect(below.problems.map(p => p.target), `${key} below min`).toEqual([key])
        const above = await validate('books', { [key]: rule!.max! + 1 })
        expect(above.problems.map(p => p.target), `${key} above max`).toEqual([key])
      }
      if (rule!.type === 'enum') {
        // (datetime-fields needs its two fields)
        const needs = (value: string) => value === 'datetime-fields' ? { 'delta.dateField': 'changedDate', 'delta.timeField': 'changedTime' } : {}
        for (const value of rule!.values!) expect(await validate('books', { [key]: value, ...needs(value) }), `${key} = ${value}`).toEqual({ valid: true, problems: [] })
        expect((await validate('books', { [key]: 'bogus' })).problems.map(p => p.target)).toEqual([key])
      }
      if (rule!.type === 'text' && rule!.maxLength) {
        expect((await validate('books', { [key]: 'x'.repeat(rule!.maxLength) })).valid).toBe(true)
        expect((await validate('books', { [key]: 'x'.repeat(rule!.maxLength + 1) })).problems.map(p => p.target)).toEqual([key])
      }
    }
    // mode, transaction, delta.mode, source.batchSize, retry.maxRetries/baseDelay/maxDelay, description
    expect(checked.sort()).toEqual(['delta.mode', 'description', 'mode', 'parallel', 'retry.baseDelay', 'retry.maxDelay', 'retry.maxRetries', 'source.batchSize', 'transaction'])
  })
})

describe('validate-only and a failed save change nothing', () => {
  test('validateOverrides names every bad setting, and rules between settings', async () => {
    const before = (await configView('books')).overrides
    const result = await validate('books', { mode: 'full', 'source.batchSize': -5, transaction: 'sometimes' })
    expect(result.valid).toBe(false)
    expect(result.problems.map(p => p.target).sort()).toEqual(['source.batchSize', 'transaction'])
    expect(result.problems.find(p => p.target === 'source.batchSize')!.message).toContain('between 1 and 100000')
    expect((await configView('books')).overrides).toEqual(before)
    // a rule only the whole config knows: delta is impossible for a query-shape pipeline
    const query = await validate('author-stats', { mode: 'delta' })
    expect(query).toMatchObject({ valid: false, problems: [{ target: 'mode' }] })
    expect(await validate('books', { mode: 'full', 'source.batchSize': 250 })).toEqual({ valid: true, problems: [] })
    const bad = await POST(`${B('books')}.validateOverrides`, { overrides: '{not json' })
    expect(jsonValue(bad)).toMatchObject({ valid: false, problems: [{ target: 'overrides' }] })
    const unknown = await validate('books', { 'target.entity': 'x' })
    expect(unknown.problems.map(p => p.target)).toEqual(['target.entity'])
  })

  test('setOverrides with -5 beside a good value answers 400 naming the field and stores nothing', async () => {
    await POST(`${B('books')}.clearOverrides`, { keys: 'mode,source.batchSize' })
    const res = await POST(`${B('books')}.setOverrides`, { overrides: JSON.stringify({ mode: 'full', 'source.batchSize': -5 }) })
    expect(res.status).toBe(400)
    expect(errorOf(res).target).toBe('source.batchSize')
    const view = await configView('books')
    expect(view.overrides).toEqual({})
    expect(view.fields.find(f => f.path === 'mode')).toMatchObject({ source: 'default', effective: 'delta' })
  })
})

describe('previewSchedule()', () => {
  const preview = (params: Record<string, string | number>) => GET(`/pipeline/previewSchedule(${fnArgs(params)})`)

  test('cron: the next fire times, each on a matching minute', async () => {
    const result = jsonValue(await preview({ schedule: '*/15 * * * *', count: 4 }))
    expect(result).toMatchObject({ engine: 'queued', cron: '*/15 * * * *', label: 'cron */15 * * * * (queued)' })
    expect(result.next).toHaveLength(4)
    const times = (result.next as string[]).map(t => new Date(t).getTime())
    for (const [i, t] of times.entries()) {
      expect(new Date(t).getMinutes() % 15).toBe(0)
      if (i) expect(t - times[i - 1]).toBe(15 * 60_000)
    }
    expect(times[0]).toBeGreaterThan(Date.now() - 1000)
  })

  test('every: as duration text, milliseconds and an object; next times one interval apart', async () => {
    for (const schedule of ['10m', '600000', JSON.stringify({ every: '10m', engine: 'spawn' })]) {
      const result = jsonValue(await preview({ schedule, count: 3 }))
      expect(result, schedule).toMatchObject({ every: 600_000, engine: 'spawn', label: 'every 10 min (spawn)' })
      const times = (result.next as string[]).map(t => new Date(t).getTime())
      expect(times[1] - times[0]).toBe(600_000)
      expect(times[2] - times[1]).toBe(600_000)
    }
    expect(jsonValue(await preview({ schedule: JSON.stringify({ cron: '0 2 * * *' }) })).next).toHaveLength(5)
  })

  test('bad schedules answer 400 naming schedule (or count)', async () => {
    for (const schedule of ['61 * * * *', '500', 'soon', '{"cron":"* * *"}']) {
      const res = await preview({ schedule })
      expect(res.status, schedule).toBe(400)
      expect(errorOf(res).target, schedule).toBe('schedule')
    }
    const many = await preview({ schedule: '10m', count: 50 })
    expect(many.status).toBe(400)
    expect(errorOf(many).target).toBe('count')
  })
})
