/**
 * The provider fixture's benchmark entity (bench/run.mjs): BenchItems with deterministic UUID keys,
 * seeded and changed through ControlService, and the rows/bytes counters of stats().
 */
import { type RunningApp } from '../helpers/apps'
import { sharedProvider } from '../helpers/shared-provider'

let provider: RunningApp
const T_OLD = '2026-01-01T00:00:00.000Z'
const T_NEW = '2026-02-01T00:00:00.000Z'

async function post(action: string, data: object): Promise<unknown> {
  const response = await fetch(`${provider.url}/odata/v4/control/${action}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(data) })
  const text = await response.text()
  if (!response.ok) throw new Error(`${action}: ${response.status} ${text}`)
  return text ? (JSON.parse(text) as { value: unknown }).value : undefined
}
async function get<T>(url: string): Promise<T> {
  const response = await fetch(`${provider.url}${url}`)
  if (!response.ok) throw new Error(`${url}: ${response.status} ${await response.text()}`)
  return (await response.json()) as T
}
type Stats = { requests: number; rows: number; bytes: number }
type Item = { ID: string; name: string; description: string; modifiedAt: string }
const items = async (query = '') => (await get<{ value: Item[] }>(`/odata/v4/catalog/BenchItems${query}`)).value

beforeAll(async () => { provider = await sharedProvider() }, 60_000)
afterAll(async () => { await provider?.stop() })
beforeEach(async () => { await post('reset', {}) })

describe('provider fixture: BenchItems and stats()', () => {
  test('seedBench writes deterministic UUID rows spread over the key range; seeding again upserts', async () => {
    expect(await post('seedBench', { from: 1, count: 299, modifiedAt: T_OLD })).toBe(299)
    await post('seedBench', { from: 300, count: 1, modifiedAt: T_NEW })
    const rows = await items('?$orderby=ID&$top=1000')
    expect(rows).toHaveLength(300)
    for (const row of rows) expect(row.ID).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-8[0-9a-f]{3}-[0-9a-f]{12}$/)
    // key order is not seeding order, as with random UUIDs
    expect(rows.slice(0, 5).map(r => r.name)).not.toEqual(['Item 1', 'Item 2', 'Item 3', 'Item 4', 'Item 5'])
    expect(rows.filter(r => r.modifiedAt.startsWith('2026-02-01')).map(r => r.name)).toEqual(['Item 300'])
    const first = rows.find(r => r.name === 'Item 1')!
    await post('reset', {})
    await post('seedBench', { from: 1, count: 300, modifiedAt: T_OLD })
    await post('seedBench', { from: 1, count: 10, modifiedAt: T_NEW }) // upsert, not a duplicate key
    const again = await items('?$orderby=ID&$top=1000')
    expect(again).toHaveLength(300)
    expect(again.find(r => r.name === 'Item 1')?.ID).toBe(first.ID)
    expect(again.filter(r => r.modifiedAt.startsWith('2026-02-01'))).toHaveLength(10)
  })

  test('touchBench changes a count or a share of the rows, spread over them, with the chosen modifiedAt', async () => {
    await post('seedBench', { from: 1, count: 1000, modifiedAt: T_OLD })
    expect(await post('touchBench', { share: 0.01, modifiedAt: T_NEW })).toBe(10)
    const touched = await items(`?$filter=modifiedAt ge ${T_NEW}&$orderby=ID`)
    expect(touched).toHaveLength(10)
    expect(touched.map(r => Number(r.name.slice(5))).sort((a, b) => a - b)).toEqual([1, 101, 201, 301, 401, 501, 601, 701, 801, 901])
    for (const row of touched) expect(row.description).toBe(`changed at ${T_NEW}`)
    expect(await post('touchBench', { count: 600, modifiedAt: '2026-03-01T00:00:00.000Z' })).toBe(600)
    expect(await items('?$filter=modifiedAt ge 2026-03-01T00:00:00Z&$top=1000')).toHaveLength(600)
  })

  test('removeBench deletes the rows of the given numbers; seedBench brings them back unchanged', async () => {
    await post('seedBench', { from: 1, count: 200, modifiedAt: T_OLD })
    const before = await items('?$orderby=ID&$top=1000')
    expect(await post('removeBench', { from: 11, count: 20 })).toBe(20)
    const left = await items('?$orderby=ID&$top=1000')
    expect(left).toHaveLength(180)
    const names = new Set(left.map(r => r.name))
    for (let i = 11; i <= 30; i++) expect(names.has(`Item ${i}`)).toBe(false)
    expect(names.has('Item 10') && names.has('Item 31')).toBe(true)
    expect(await post('seedBench', { from: 11, count: 20, modifiedAt: T_OLD })).toBe(20)
    expect(await items('?$orderby=ID&$top=1000')).toEqual(before)
  })

  test('stats() counts the rows CatalogService served and the response bytes; reset zeroes them', async () => {
    await post('seedBench', { from: 1, count: 50, modifiedAt: T_OLD })
    const before = await get<Stats>('/odata/v4/control/stats()')
    const page = await fetch(`${provider.url}/odata/v4/catalog/BenchItems?$top=20`)
    const body = await page.text()
    await items('?$top=5&$skip=45')
    const after = await get<Stats>('/odata/v4/control/stats()')
    expect(after.requests - before.requests).toBe(2)
    expect(after.rows - before.rows).toBe(25)
    expect(after.bytes - before.bytes).toBeGreaterThan(Buffer.byteLength(body) - 1)
    await post('reset', {})
    expect(await get<Stats>('/odata/v4/control/stats()')).toMatchObject({ requests: 0, rows: 0, bytes: 0 })
  })
})
