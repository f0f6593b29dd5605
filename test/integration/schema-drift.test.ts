/**
 * Schema drift (docs/concepts/drift.md, DESIGN "Semantics that must hold"): a source whose shape
 * changed is detected at run start and reported (warn) or stops the run before it writes (fail).
 *
 * The consumer (test/fixtures/consumer) keeps the API it imported with `cds import` from the
 * original provider (test/fixtures/provider). The live provider behind the consumer's binding is
 * switched by a real HTTP proxy on loopback: first the original provider, then
 * test/fixtures/drift/provider-b — the same CatalogService redeployed with a changed Books
 * (title String(200) → String(400), author removed, stock Integer → String(10), price
 * Decimal(9,2) → Decimal(12,4), new isbn), both real CAP apps serving OData V4 and V2. The proxy
 * logs every request, `$metadata` included. The REST source is the plain HTTP provider of the
 * REST tests, whose fields are renamed between runs.
 */
import cds from '@sap/cds'
import path from 'node:path'
import { createRequire } from 'node:module'
import { FIXTURES, ROOT, startApp, startProvider, type ProviderControl, type RunningApp } from '../helpers/apps'
import { ql } from '../helpers/consumer'
import { startSwitchProxy, type SwitchProxy } from '../helpers/switch-proxy'
import { startRestProvider, type RestProvider } from '../fixtures/rest-provider/server.mjs'
import type DataPipelineService from '../../srv/data-pipeline'

// the plugin runs from dist/: its per-process state (the latest drift, the $metadata cache) lives there.
// Loaded lazily: loading the plugin's modules before cds.test would read cds.env from the wrong folder.
const require = createRequire(import.meta.url)
const dist = {
  get metadata() { return require(path.join(ROOT, 'dist/lib/management/metadata.js')) as typeof import('../../lib/management/metadata') },
  get liveShape() { return require(path.join(ROOT, 'dist/lib/adapters/source/live-shape.js')) as typeof import('../../lib/adapters/source/live-shape') },
  get replay() { return require(path.join(ROOT, 'dist/lib/engine/records/replay.js')) as typeof import('../../lib/engine/records/replay') },
}
const forgetLiveDocument = (prefix: string) => dist.liveShape.forgetLiveDocument(prefix)

const RUNS = 'plugin.data_pipeline.PipelineRuns'
const T0 = '2026-01-01T00:00:00.000Z'
const T1 = '2026-02-01T00:00:00.000Z'

let original: RunningApp & { control: ProviderControl }
let changed: RunningApp
let proxy: SwitchProxy
let rest: RestProvider
let engine: DataPipelineService

beforeAll(async () => {
  ;[original, changed, proxy, rest] = await Promise.all([
    startProvider(), startApp(path.join(FIXTURES, 'drift/provider-b')), startSwitchProxy(), startRestProvider({ apiKey: 'drift-key' }),
  ])
})
cds.test(path.join(FIXTURES, 'consumer'))
beforeAll(async () => {
  const requires = cds.env.requires as unknown as Record<string, { credentials?: object }>
  requires.Provider.credentials = { url: `${proxy.url}/odata/v4/catalog` }
  requires.ProviderV2.credentials = { url: `${proxy.url}/odata/v2/catalog` }
  requires.Rest.credentials = { url: rest.url, headers: { 'x-api-key': 'drift-key' } }
  engine = (await cds.connect.to('data-pipeline')) as unknown as DataPipelineService
})
afterAll(async () => {
  await Promise.all([original?.stop(), changed?.stop(), proxy?.close(), rest?.close()])
})

const post = async (base: string, action: string, data: object) => {
  const response = await fetch(`${base}/odata/v4/control/${action}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(data) })
  if (!response.ok) throw new Error(`${action}: ${response.status} ${await response.text()}`)
}

/** "Deploys" a provider behind the consumer's URL, with `count` books changed at `modifiedAt`. */
async function deploy(which: 'original' | 'changed', count: number, modifiedAt: string): Promise<void> {
  if (which === 'original') {
    await original.control.reset()
    await original.control.seed({ from: 1, count, modifiedAt })
  } else {
    await post(changed.url, 'reset', {})
    await post(changed.url, 'seed', { from: 1, count, modifiedAt })
  }
  proxy.target = which === 'original' ? original.url : changed.url
}

/** Requests the proxy forwarded since `mark` (see `mark()`). */
const mark = () => proxy.log.length
const since = (at: number) => proxy.log.slice(at)
const metadataRequests = (urls: string[]) => urls.filter(u => u.endsWith('/$metadata'))

async function runRow(runId: string) {
  const row = await ql.SELECT.one.from(RUNS).where({ ID: runId })
  return { ...row, drift: row.drift ? JSON.parse(row.drift) : row.drift, error: row.error ? JSON.parse(row.error) : row.error }
}

async function execute(name: string) {
  const { runId, done } = await engine.execute(name)
  const outcome = await done.then(value => ({ value, error: undefined }), (error: Error & { code?: string }) => ({ value: undefined, error }))
  return { runId, ...outcome, row: await runRow(runId) }
}

const changesOf = (drift: { changes: Array<{ change: string; column: string; breaking: boolean }> }) =>
  Object.fromEntries(drift.changes.map(c => [c.column, `${c.change}${c.breaking ? '!' : ''}`]))

/** What provider-b changed, as seen through the consumption views (title → name, author, stock, price). */
const PROVIDER_B = { isbn: 'added', author: 'removed!', stock: 'type!', title: 'length!', price: 'precision!' }

const flow = (name: string) => dist.metadata.flowMetadata({ pipeline: engine.registry.get(name), hooks: [], overrides: {} })

describe('schema drift: OData V4', () => {
  test('warn (default): a provider redeployed with a changed model is detected at run start; the run proceeds and the drift is on the run row and in flowMetadata', async () => {
    await deploy('original', 5, T0)
    await engine.addPipeline({ name: 'drift-warn', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.DriftWarn' }, schemaDrift: { maxAge: 0 } })
    const first = await execute('drift-warn')
    expect(first.value).toMatchObject({ status: 'completed', statistics: { created: 5 } })
    expect(first.row.drift).toBeNull()
    expect(flow('drift-warn')).toMatchObject({ drift: null, status: 'None' })

    await deploy('changed', 5, T1)
    const at = mark()
    const second = await execute('drift-warn')
    expect(second.error).toBeUndefined()
    expect(second.value).toMatchObject({ status: 'completed', statistics: { updated: 5 } })
    expect(second.row.status).toBe('idle')
    const drift = second.row.drift
    expect(drift).toMatchObject({ runId: second.runId, source: 'Provider/Books', basis: '$metadata', policy: 'warn', breaking: true })
    expect(changesOf(drift)).toEqual(PROVIDER_B)
    expect(drift.changes).toEqual(expect.arrayContaining([
      expect.objectContaining({ change: 'length', column: 'title', target: 'name', was: 'String(200)', now: 'String(400)', targetType: 'String(200)' }),
      expect.objectContaining({ change: 'type', column: 'stock', was: 'Integer', now: 'String(10)', targetType: 'Integer' }),
      expect.objectContaining({ change: 'precision', column: 'price', was: 'Decimal(9,2)', now: 'Decimal(12,4)' }),
      expect.objectContaining({ change: 'removed', column: 'author', was: 'String(100)' }),
      expect.objectContaining({ change: 'added', column: 'isbn', now: 'String(13)', breaking: false }),
    ]))
    // the run proceeded without the removed column: it was not asked for, and the replica keeps its last value
    const reads = since(at).filter(u => u.includes('/Books?'))
    expect(reads.length).toBeGreaterThan(0)
    for (const url of reads) expect(url).not.toMatch(/\$select=[^&]*author/)
    expect(await ql.SELECT.one.from('consumer.DriftWarn').where({ ID: 1 })).toMatchObject({ name: 'Book 1', author: 'Author 1', stock: 1, modifiedAt: T1 })

    const graph = flow('drift-warn')
    expect(graph.status).toBe('Warning')
    expect(graph.drift).toMatchObject({ runId: second.runId, breaking: true })
    const sourceNode = graph.nodes.find(n => n.key === 'source')!
    expect(sourceNode.status).toBe('Warning')
    expect(sourceNode.description).toContain("column 'author' removed")
    expect(graph.lines.find(l => l.from === 'source')?.status).toBe('Warning')
  })

  test('fail: the run fails before writing anything; the target is unchanged and the message lists the differences', async () => {
    await deploy('original', 5, T0)
    await engine.addPipeline({ name: 'drift-fail', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.DriftFail' }, schemaDrift: 'fail' })
    expect((await execute('drift-fail')).value).toMatchObject({ status: 'completed', statistics: { created: 5 } })
    const before = await ql.SELECT.from('consumer.DriftFail').orderBy('ID')
    const tracker = await engine.status('drift-fail')

    await deploy('changed', 8, T1) // 3 new rows and 5 changed ones: none may arrive
    const at = mark()
    const run = await execute('drift-fail')
    expect(run.error?.code).toBe('SCHEMA_DRIFT')
    for (const text of ["'author'", "'stock'", 'Integer → String(10)', "'title' (→ 'name')", 'String(200) → String(400)', 'Decimal(9,2) → Decimal(12,4)', "new column 'isbn'", 'before writing anything'])
      expect(run.error?.message).toContain(text)
    expect(run.row).toMatchObject({ status: 'failed', error: { code: 'SCHEMA_DRIFT', status: 502 } })
    expect(run.row.error.message).toBe(run.error?.message)
    expect(changesOf(run.row.drift)).toEqual(PROVIDER_B)
    expect(run.row.drift.policy).toBe('fail')
    // one $metadata request, no data request; nothing written, the watermark kept
    expect(since(at)).toEqual(['/odata/v4/catalog/$metadata'])
    expect(await ql.SELECT.from('consumer.DriftFail').orderBy('ID')).toEqual(before)
    expect(await engine.status('drift-fail')).toMatchObject({ status: 'failed', lastSync: tracker.lastSync, errorCount: 1 })
    expect(flow('drift-fail').drift).toMatchObject({ runId: run.runId, policy: 'fail' })
  })

  test('fail with nothing breaking: a new source column alone is recorded, and the run proceeds', async () => {
    await deploy('changed', 3, T1)
    await engine.addPipeline({ name: 'drift-added', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.DriftAdded' }, schemaDrift: 'fail' })
    const run = await execute('drift-added')
    expect(run.value).toMatchObject({ status: 'completed', statistics: { created: 3 } })
    expect(run.row.drift).toMatchObject({ breaking: false, changes: [{ change: 'added', column: 'isbn', now: 'String(13)', breaking: false }] })
  })

  test('a replay of rejects reads no source, so it carries no drift: its run row has none; flowMetadata keeps the latest real drift', async () => {
    await deploy('original', 5, T0)
    await engine.addPipeline({ name: 'drift-replay', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.DriftReplay' }, onError: 'skip', schemaDrift: { maxAge: 0 } })
    let broken = true
    engine.before('PIPELINE.MAP', 'drift-replay', function failOnBook2(req: { data: { sourceRecords: Array<{ ID: number }> } }) {
      if (broken && req.data.sourceRecords.some(r => r.ID === 2)) throw new Error('cannot map book 2')
    })
    expect((await execute('drift-replay')).value).toMatchObject({ status: 'completed', statistics: { skipped: 1 } })
    await deploy('changed', 5, T1)
    const drifted = await execute('drift-replay')
    expect(drifted.value).toMatchObject({ status: 'completed', statistics: { skipped: 1 } })
    expect(drifted.row.drift).toMatchObject({ runId: drifted.runId, breaking: true })

    broken = false
    const replay = await dist.replay.replayRejects(engine as never, 'drift-replay')
    expect(replay).toMatchObject({ status: 'completed', statistics: { skipped: 0 } })
    expect((await runRow(replay.runId)).drift).toBeNull()
    expect(flow('drift-replay').drift).toMatchObject({ runId: drifted.runId, breaking: true })
  })

  test('ignore: nothing is checked or recorded — the changed provider is then only discovered by the failing read', async () => {
    await deploy('changed', 3, T1)
    await engine.addPipeline({ name: 'drift-ignore', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.DriftIgnore' }, schemaDrift: 'ignore' })
    const at = mark()
    const run = await execute('drift-ignore')
    expect(run.error).toBeDefined()
    expect(run.error?.code).not.toBe('SCHEMA_DRIFT')
    expect(run.row).toMatchObject({ status: 'failed', drift: null })
    expect(metadataRequests(since(at))).toHaveLength(0)
    expect(since(at)[0]).toContain('author') // the $select the provider no longer knows
    expect(flow('drift-ignore').drift).toBeNull()
  })

  test('cost: with the default cache a no-change delta run stays at one request; $metadata is fetched once per maxAge (maxAge 0: every run)', async () => {
    await deploy('original', 10, T0)
    forgetLiveDocument('odata-v4|Provider|') // a cold cache, whatever ran before
    await engine.addPipeline({ name: 'drift-count', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.DriftCount' } })
    await engine.addPipeline({ name: 'drift-fresh', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.DriftFresh' }, schemaDrift: { policy: 'warn', maxAge: 0 } })

    let at = mark()
    expect((await execute('drift-count')).value).toMatchObject({ status: 'completed', statistics: { created: 10 } })
    expect(metadataRequests(since(at))).toHaveLength(1) // the first run of the process fetches it
    for (let i = 0; i < 3; i++) {
      at = mark()
      const run = await execute('drift-count')
      expect(run.value?.statistics).toEqual({ created: 0, updated: 0, deleted: 0 })
      expect(run.row.drift).toBeNull()
      const urls = since(at)
      expect(urls).toHaveLength(1) // steady state: the one data request, no $metadata
      expect(urls[0]).toContain('$count=true')
    }
    // another pipeline on the same service shares the cached document unless it asks for a fresh one
    expect((await execute('drift-fresh')).value?.status).toBe('completed')
    at = mark()
    await execute('drift-fresh')
    expect(since(at).map(u => u.replace(/\?.*/, ''))).toEqual(['/odata/v4/catalog/$metadata', '/odata/v4/catalog/Books'])
  })

  test('a provider that changes within maxAge: the read that fails makes the run look again — the drift explains the failure, and the next run proceeds', async () => {
    await deploy('original', 4, T0)
    forgetLiveDocument('odata-v4|Provider|') // as after a restart: the first run reads the original's $metadata
    await engine.addPipeline({ name: 'drift-cached', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.DriftCached' } })
    expect((await execute('drift-cached')).value).toMatchObject({ status: 'completed', statistics: { created: 4 } })

    await deploy('changed', 4, T1) // the cached $metadata (1 h) still describes the original
    let at = mark()
    const failed = await execute('drift-cached')
    expect(failed.error?.code).toBe('SCHEMA_DRIFT')
    expect(failed.error?.message).toMatch(/column 'author' removed.*; the read failed: /)
    expect(failed.row.drift).toMatchObject({ runId: failed.runId, basis: '$metadata', breaking: true })
    expect(since(at).map(u => u.replace(/\?.*/, ''))).toEqual(['/odata/v4/catalog/Books', '/odata/v4/catalog/$metadata'])

    at = mark()
    const next = await execute('drift-cached')
    expect(next.value).toMatchObject({ status: 'completed', statistics: { updated: 4 } })
    expect(changesOf(next.row.drift)).toEqual({ isbn: 'added', author: 'removed!', title: 'length!' })
    expect(metadataRequests(since(at))).toHaveLength(0) // the document fetched by the failed run is fresh
  })

  test('the setting is validated at registration, naming the key', async () => {
    await expect(engine.addPipeline({ name: 'drift-bad', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.DriftCount' }, schemaDrift: 'loud' as never }))
      .rejects.toMatchObject({ code: 'INVALID_CONFIG', target: 'schemaDrift' })
    await expect(engine.addPipeline({ name: 'drift-bad', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.DriftCount' }, schemaDrift: { policy: 'fail', maxAge: 'soon' } }))
      .rejects.toMatchObject({ code: 'INVALID_CONFIG', target: 'schemaDrift.maxAge' })
    await expect(engine.addPipeline({ name: 'drift-bad', source: { service: 'Provider', entity: 'Books' }, target: { entity: 'consumer.DriftCount' }, schemaDrift: { mode: 'fail' } as never }))
      .rejects.toMatchObject({ code: 'INVALID_CONFIG', target: 'schemaDrift.mode' })
  })
})

describe('schema drift: OData V2 (through @cap-js-community/odata-v2-adapter)', () => {
  test('warn records the drift read from the V2 $metadata and proceeds; fail stops before writing', async () => {
    await deploy('original', 5, T0)
    await engine.addPipeline({ name: 'drift-v2', source: { service: 'ProviderV2', entity: 'Books' }, target: { entity: 'consumer.DriftV2' }, schemaDrift: { maxAge: 0 } })
    await engine.addPipeline({ name: 'drift-v2-fail', source: { service: 'ProviderV2', entity: 'Books' }, target: { entity: 'consumer.DriftV2Fail' }, schemaDrift: 'fail' })
    for (const name of ['drift-v2', 'drift-v2-fail']) {
      const run = await execute(name)
      expect(run.value).toMatchObject({ status: 'completed', statistics: { created: 5 } })
      expect(run.row.drift).toBeNull() // V2 types (Edm.DateTime with display-format Date, Edm.Time) read like the import
    }
    const before = await ql.SELECT.from('consumer.DriftV2Fail').orderBy('ID')

    await deploy('changed', 8, T1)
    const warned = await execute('drift-v2')
    expect(warned.value).toMatchObject({ status: 'completed', statistics: { created: 3, updated: 5 } })
    expect(warned.row.drift).toMatchObject({ source: 'ProviderV2/Books', basis: '$metadata', policy: 'warn' })
    expect(changesOf(warned.row.drift)).toEqual(PROVIDER_B)

    const at = mark()
    const failed = await execute('drift-v2-fail')
    expect(failed.error?.code).toBe('SCHEMA_DRIFT')
    expect(failed.error?.message).toContain("column 'stock' changed type Integer → String(10)")
    expect(since(at)).toEqual(['/odata/v2/catalog/$metadata'])
    expect(await ql.SELECT.from('consumer.DriftV2Fail').orderBy('ID')).toEqual(before)
  })
})

describe('schema drift: REST (the record keys of the first page)', () => {
  test('renamed fields: warn records removed and new fields and proceeds; fail stops before writing; no extra request', async () => {
    rest.reset()
    rest.state.items = Array.from({ length: 6 }, (_, i) => ({ id: i + 1, name: `Item ${i + 1}`, price: i + 0.5, updatedAt: T0 }))
    const config = (name: string, entity: string, schemaDrift: 'warn' | 'fail') => ({
      name, source: { service: 'Rest' }, target: { entity }, delta: { field: 'updatedAt' }, schemaDrift,
      rest: { path: '/items', dataPath: 'data.items', pagination: { type: 'cursor' as const, pageSize: 4, cursorParam: 'cursor', cursorPath: 'paging.next' } },
    })
    await engine.addPipeline(config('drift-rest', 'consumer.DriftRest', 'warn'))
    await engine.addPipeline(config('drift-rest-fail', 'consumer.DriftRestFail', 'fail'))
    for (const name of ['drift-rest', 'drift-rest-fail']) {
      const requests = rest.state.requests.length
      const run = await execute(name)
      expect(run.value).toMatchObject({ status: 'completed', statistics: { created: 6 } })
      expect(run.row.drift).toBeNull()
      expect(rest.state.requests.length - requests).toBe(2) // two pages of 4: the first one read once
    }
    const before = await ql.SELECT.from('consumer.DriftRestFail').orderBy('id')

    // the API renames name → item_name, price → item_price
    rest.state.fields = 'renamed'
    rest.state.items = rest.state.items.map(item => ({ ...item, updatedAt: T1 }))
    const warned = await execute('drift-rest')
    expect(warned.value).toMatchObject({ status: 'completed' })
    expect(warned.row.drift).toMatchObject({ source: 'Rest/items', basis: 'records', policy: 'warn', breaking: true })
    expect(changesOf(warned.row.drift)).toEqual({ name: 'removed!', price: 'removed!', item_name: 'added', item_price: 'added' })

    const requests = rest.state.requests.length
    const failed = await execute('drift-rest-fail')
    expect(failed.error?.code).toBe('SCHEMA_DRIFT')
    expect(failed.error?.message).toContain("column 'name' removed")
    expect(failed.error?.message).toContain("new column 'item_price'")
    expect(rest.state.requests.length - requests).toBe(1) // the first page only
    expect(await ql.SELECT.from('consumer.DriftRestFail').orderBy('id')).toEqual(before)
  })
})
