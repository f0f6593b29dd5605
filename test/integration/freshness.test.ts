/**
 * Freshness (docs/concepts/counts.md "Progress", "Freshness") through the management API: `Pipelines.lastSuccess`
 * (when the last successful run ended) apart from `lastSync` (the data's watermark), the computed
 * `freshness` and `maxStaleness` of the Pipelines projection and of `status()`, a stale pipeline
 * as Warning in `landscapeMetadata`, `maxStaleness` as an override, and the progress fields of
 * the PipelineRuns projection. The management fixture runs in-process; the provider is a child.
 */
import cds from '@sap/cds'
import path from 'node:path'
import { FIXTURES, type ProviderControl, type RunningApp } from '../helpers/apps'
import { sharedProvider } from '../helpers/shared-provider'
import { BOUND, client, fnArgs, jsonValue } from '../helpers/management'
import { ql } from '../helpers/consumer'

let provider: RunningApp & { control: ProviderControl }
const HOUR_AGO = new Date(Date.now() - 3_600_000).toISOString()

beforeAll(async () => {
  provider = await sharedProvider()
  await provider.control.seed({ count: 12, modifiedAt: HOUR_AGO })
})
const test$ = cds.test(path.join(FIXTURES, 'management'))
const http = client(() => test$.axios as never)
let engine: { addPipeline(config: object): Promise<unknown>; execute(name: string, options?: object): Promise<{ done: Promise<unknown> }> }

beforeAll(async () => {
  const requires = cds.env.requires as unknown as Record<string, { credentials?: object }>
  requires.Provider.credentials = { url: `${provider.url}/odata/v4/catalog` }
  engine = (await cds.connect.to('data-pipeline')) as unknown as typeof engine
  await engine.addPipeline({ name: 'fresh-books', source: { service: 'Provider', entity: 'Books', batchSize: 5 }, target: { entity: 'host.Books' }, maxStaleness: '1s' })
})
afterAll(async () => {
  await provider?.stop()
})

const pipeline = async (name: string) => {
  const res = await http.GET(`/pipeline/Pipelines('${name}')`)
  expect(res.status).toBe(200)
  return res.data as Record<string, any>
}
const landscapeNode = async (name: string) => {
  const res = await http.GET('/pipeline/landscapeMetadata()')
  return (jsonValue(res) as { nodes: Array<{ key: string; status: string; freshness?: string }> }).nodes.find(n => n.key === `pipeline:${name}`)!
}
const run = async (name: string) => (await engine.execute(name)).done

describe('freshness', () => {
  test('maxStaleness 1s: stale before any run, fresh after one, stale again after waiting; lastSuccess is not lastSync', async () => {
    expect(await pipeline('fresh-books')).toMatchObject({ freshness: 'stale', maxStaleness: 1000, lastSuccess: null })
    expect(await landscapeNode('fresh-books')).toMatchObject({ status: 'Warning', freshness: 'stale', description: expect.stringContaining('stale') })

    const before = Date.now()
    await run('fresh-books')
    const row = await pipeline('fresh-books')
    expect(row.freshness).toBe('fresh')
    // lastSync is the data's watermark (an hour old), lastSuccess is when the run ended
    expect(Date.parse(row.lastSync)).toBe(Date.parse(HOUR_AGO))
    expect(Date.parse(row.lastSuccess)).toBeGreaterThanOrEqual(before - 5)
    expect(Date.parse(row.lastSuccess)).toBeLessThanOrEqual(Date.now() + 5)
    // fresh: no freshness warning (the node may still be Warning for hooks or overrides)
    expect(await landscapeNode('fresh-books')).toMatchObject({ freshness: 'fresh', description: expect.not.stringContaining('stale') })
    const status = await http.GET(`/pipeline/status(${fnArgs({ name: 'fresh-books' })})`)
    expect(status.data).toMatchObject({ freshness: 'fresh', maxStaleness: 1000 })

    // 1.1 s later (the clock, Date only, set forward instead of waiting: freshness is computed from it when read)
    vi.useFakeTimers({ toFake: ['Date'], now: Date.now() })
    try {
      vi.setSystemTime(Date.now() + 1_100)
      expect(await pipeline('fresh-books')).toMatchObject({ freshness: 'stale' })
      expect(await landscapeNode('fresh-books')).toMatchObject({ status: 'Warning', freshness: 'stale', description: expect.stringContaining('stale') })
      // $select of freshness alone still computes it
      const selected = await http.GET(`/pipeline/Pipelines?$select=name,freshness&$filter=name eq 'fresh-books'`)
      expect(selected.data.value).toEqual([expect.objectContaining({ name: 'fresh-books', freshness: 'stale' })])
    } finally {
      vi.useRealTimers()
    }

    await run('fresh-books')
    expect(await pipeline('fresh-books')).toMatchObject({ freshness: 'fresh' })
  })

  test('without maxStaleness: unknown (and no Warning for it)', async () => {
    await run('books')
    expect(await pipeline('books')).toMatchObject({ freshness: 'unknown', maxStaleness: null, lastSuccess: expect.any(String) })
    expect(await landscapeNode('books')).toMatchObject({ freshness: 'unknown', description: expect.not.stringContaining('stale') })
  })

  test('maxStaleness as an override; an invalid one is a 400 naming the key', async () => {
    const bad = await http.POST(`${BOUND('author-stats')}.setOverrides`, { overrides: JSON.stringify({ maxStaleness: 'soon' }) })
    expect(bad.status).toBe(400)
    expect(JSON.stringify(bad.data)).toContain('maxStaleness')
    const ok = await http.POST(`${BOUND('author-stats')}.setOverrides`, { overrides: JSON.stringify({ maxStaleness: '2h' }) })
    expect(ok.status).toBe(200)
    expect(await pipeline('author-stats')).toMatchObject({ freshness: 'stale', maxStaleness: 7_200_000 })
    await run('author-stats')
    expect(await pipeline('author-stats')).toMatchObject({ freshness: 'fresh' })
    await http.POST(`${BOUND('author-stats')}.clearOverrides`, { keys: 'maxStaleness' })
    expect(await pipeline('author-stats')).toMatchObject({ freshness: 'unknown', maxStaleness: null })
  })

  test('PipelineRuns projection carries the progress fields', async () => {
    // a full run reads all 12 rows (a no-change delta run would read none)
    await (await engine.execute('fresh-books', { mode: 'full' })).done
    const res = await http.GET(`/pipeline/PipelineRuns?$filter=pipeline_name eq 'fresh-books'&$orderby=startTime desc&$top=1`)
    expect(res.status).toBe(200)
    const [latest] = res.data.value
    // Integer64 and Decimal arrive as JSON strings (OData IEEE754Compatible)
    expect(latest).toMatchObject({ status: 'idle', eta: expect.any(String) })
    expect([latest.processed, latest.expected, latest.percent, latest.remainingMs].map(Number)).toEqual([12, 12, 100, 0])
    expect(Number(latest.rowsPerSecond)).toBeGreaterThan(0)
  })

  test('a CQN (database) source counts with one SELECT count: expected of an in-process source', async () => {
    await ql.INSERT.into('host.People').entries([1, 2, 3, 4, 5, 6, 7].map(ID => ({ ID, name: ID === 7 ? '' : `P${ID}`, email: `p${ID}@example.com` })))
    await run('people')
    const res = await http.GET(`/pipeline/PipelineRuns?$filter=pipeline_name eq 'people'&$orderby=startTime desc&$top=1`)
    const [latest] = res.data.value
    // all 7 rows are read (the hook drops one before writing)
    expect([latest.processed, latest.expected, latest.percent].map(Number)).toEqual([7, 7, 100])
  })
})
