#!/usr/bin/env node
/**
 * Adapter benchmark (part of `npm run bench`, never of `npm test`): full replication rows/s
 * through the plugin for the REST source (offset and cursor pagination, pageSize 1000), the
 * OData V2 source (batchSize 1000) and the OData target (local rows → the provider's Books).
 *
 * Processes: this orchestrator; the source side in its own child (the plain REST provider
 * test/fixtures/rest-provider/server.mjs, or the CAP provider test/fixtures/provider, whose V2
 * API is @cap-js-community/odata-v2-adapter forwarding each request to its V4 service); per
 * scenario a fresh consumer worker (this file with `--worker`) booting test/fixtures/consumer
 * with in-memory SQLite.
 *
 * Sources: one cold full run, then BENCH_ROUNDS rounds of read-only (the source adapter's
 * stream, nothing written), raw read (the same requests over plain fetch + JSON.parse, no
 * plugin) and full run; rows/s is from the best warm full run.
 * OData target: a fresh, empty provider per run; one full run of BENCH_TARGET_ROWS local rows
 * (time split into existence lookups and $batch change sets), then the same two request kinds
 * sent directly over fetch for comparison.
 *
 * Environment: BENCH_ADAPTER_ROWS=100000 (source rows), BENCH_TARGET_ROWS (OData target rows;
 * default: BENCH_ADAPTER_ROWS), BENCH_ROUNDS=3, BENCH_ADAPTERS=rest-offset,rest-cursor,odata-v2,odata-target
 * (a subset), BENCH_NATIVE_FETCH=1 (CAP remote services over native fetch), BENCH_PROFILE=1 or a list of
 * scenarios (consumer CPU profile of the first warm full run → bench/results/adapters-<scenario>.cpuprofile),
 * BENCH_VERBOSE=1.
 */
import { createRequire } from 'node:module'
import { mkdir, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { CONSUMER_DIR, control, processCpuMs, runWorker, startProvider, startRestProvider } from './helpers.mjs'

const HERE = path.dirname(fileURLToPath(import.meta.url))
const ROOT = path.resolve(HERE, '..')
const RESULTS = path.join(HERE, 'results', 'adapters.json')
const PAGE = 1000
const API_KEY = 'bench-key'
const T_OLD = '2026-01-01T00:00:00.000Z'
const SCENARIOS = ['rest-offset', 'rest-cursor', 'odata-v2', 'odata-target']

const now = () => performance.now()
const round = (x, d = 0) => (x === undefined || x === null || Number.isNaN(x) ? null : Number(x.toFixed(d)))
const median = list => { const s = [...list].sort((a, b) => a - b); return s[Math.floor(s.length / 2)] }

if (process.argv[2] === '--worker') await worker()
else await main()

// ---------------------------------------------------------------------------------------
// orchestrator
// ---------------------------------------------------------------------------------------

async function main() {
  const n = Number(process.env.BENCH_ADAPTER_ROWS ?? 100000)
  const targetRows = Number(process.env.BENCH_TARGET_ROWS ?? n)
  const rounds = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3))
  const selected = (process.env.BENCH_ADAPTERS ?? SCENARIOS.join(',')).split(',').filter(s => SCENARIOS.includes(s))
  const self = fileURLToPath(import.meta.url)
  console.log(`\ncap-data-pipeline adapter bench — node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model}), ${n.toLocaleString('en')} source rows, ${targetRows.toLocaleString('en')} OData target rows, ${rounds} round(s)`)

  const results = []
  const rest = selected.filter(s => s.startsWith('rest-'))
  if (rest.length) {
    const provider = await startRestProvider({ items: n, apiKey: API_KEY })
    try {
      for (const scenario of rest) {
        console.log(`${scenario}: REST provider pid ${provider.child.pid} at ${provider.url}, ${n} items`)
        results.push(await runWorker(self, { scenario, n, rounds, url: provider.url, providerPid: provider.child.pid }))
      }
    } finally {
      await provider.stop()
    }
  }
  if (selected.includes('odata-v2')) {
    const provider = await startProvider()
    try {
      const t0 = now()
      await control(provider.url, 'seed', { from: 1, count: n, modifiedAt: T_OLD })
      console.log(`odata-v2: provider pid ${provider.child.pid} at ${provider.url}, seeded ${n} in ${((now() - t0) / 1000).toFixed(1)} s`)
      results.push(await runWorker(self, { scenario: 'odata-v2', n, rounds, url: provider.url, providerPid: provider.child.pid }))
    } finally {
      await provider.stop()
    }
  }
  if (selected.includes('odata-target')) {
    const provider = await startProvider() // fresh and empty: every row is a create
    try {
      console.log(`odata-target: provider pid ${provider.child.pid} at ${provider.url}, empty`)
      results.push(await runWorker(self, { scenario: 'odata-target', n: targetRows, rounds: 1, url: provider.url, providerPid: provider.child.pid }))
    } finally {
      await provider.stop()
    }
  }

  printTable(results)
  const report = {
    date: new Date().toISOString(),
    node: process.version,
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    database: 'SQLite in-memory (@cap-js/sqlite) in the consumer process',
    pageSize: PAGE,
    rounds,
    nativeFetch: process.env.BENCH_NATIVE_FETCH === '1',
    results,
  }
  await mkdir(path.dirname(RESULTS), { recursive: true })
  await writeFile(RESULTS, JSON.stringify(report, null, 2) + '\n')
  console.log(`\nwritten ${path.relative(ROOT, RESULTS)}`)
}

function printTable(results) {
  const fmt = x => (x === null || x === undefined ? '–' : typeof x === 'number' ? x.toLocaleString('en') : String(x))
  const rows = [
    ['adapter', 'rows', 'rows/s', 'full ms (best)', 'median', 'cold', 'read-only ms', 'raw fetch ms', 'consumer CPU ms', 'provider CPU ms', 'requests'],
    ...results.map(r => [r.scenario, r.n, r.full.rowsPerSec, r.full.ms, r.full.median, r.cold?.ms, r.read?.ms, r.readRaw?.ms, r.full.consumerCpuMs, r.full.providerCpuMs, r.requests]),
  ].map(row => row.map(fmt))
  const widths = rows[0].map((_, i) => Math.max(...rows.map(row => row[i].length)))
  const line = row => row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  ')
  console.log(`\n${line(rows[0])}\n${widths.map(w => '─'.repeat(w)).join('  ')}`)
  for (const row of rows.slice(1)) console.log(line(row))
  const target = results.find(r => r.scenario === 'odata-target')
  if (target) {
    const t = target.breakdown
    console.log(`\nOData target, ${target.n.toLocaleString('en')} rows in ${target.full.ms} ms: ${t.lookups.calls} existence lookups ${t.lookups.ms} ms (${t.lookups.avgMs} ms each; same GET over fetch ${t.direct.lookupMs} ms), ` +
      `${t.batches.calls} $batch change sets of ≤ ${t.changeSetSize} ${t.batches.ms} ms (${t.batches.avgMs} ms each; same $batch over fetch ${t.direct.batchMs} ms), rest ${t.otherMs} ms`)
  }
}

// ---------------------------------------------------------------------------------------
// worker: the consumer app in this process
// ---------------------------------------------------------------------------------------

async function worker() {
  const { scenario, n, rounds, url, providerPid } = JSON.parse(process.env.BENCH_OPTIONS)
  const progress = text => process.send?.({ type: 'progress', text })
  const cdsRequire = createRequire(path.join(CONSUMER_DIR, 'package.json'))
  const cds = cdsRequire('@sap/cds')
  cds.root = CONSUMER_DIR
  const requires = cds.env.requires
  requires.Rest.credentials = { url, headers: { 'x-api-key': API_KEY } }
  requires.ProviderV2.credentials = { url: `${url}/odata/v2/catalog` }
  requires.Provider.credentials = { url: `${url}/odata/v4/catalog` }
  if (process.env.BENCH_NATIVE_FETCH === '1') cds.env.remote = { ...cds.env.remote, native_fetch: true }
  const { server } = await cds.exec('--in-memory?', '--port', '0')
  const engine = await cds.connect.to('data-pipeline')
  const db = await cds.connect.to('db')
  const { INSERT, SELECT } = cds.ql

  const configs = {
    'rest-offset': { target: { entity: 'consumer.RestOffset' }, rest: { path: '/items', dataPath: 'data.items', pagination: { type: 'offset', pageSize: PAGE } } },
    'rest-cursor': { target: { entity: 'consumer.RestCursor' }, rest: { path: '/items', dataPath: 'data.items', pagination: { type: 'cursor', pageSize: PAGE, cursorParam: 'cursor', cursorPath: 'paging.next' } } },
  }
  const name = `bench-${scenario}`
  const target = {
    'rest-offset': 'consumer.RestOffset',
    'rest-cursor': 'consumer.RestCursor',
    'odata-v2': 'consumer.BooksV2',
  }[scenario]
  if (scenario.startsWith('rest-')) await engine.addPipeline({ name, mode: 'full', source: { service: 'Rest' }, ...configs[scenario] })
  else if (scenario === 'odata-v2') await engine.addPipeline({ name, mode: 'full', source: { service: 'ProviderV2', entity: 'Books', batchSize: PAGE }, target: { entity: target } })
  else await engine.addPipeline({ name, mode: 'full', source: { entity: 'consumer.LocalBooks', batchSize: PAGE }, target: { service: 'Provider', entity: 'Books' } })
  const prepared = await engine.registry.prepare(name)

  const cpuMs = since => { const cpu = process.cpuUsage(since); return (cpu.user + cpu.system) / 1000 }
  const measure = async fn => {
    const cpu0 = process.cpuUsage()
    const p0 = processCpuMs(providerPid)
    const t0 = now()
    const extra = await fn()
    const ms = now() - t0
    return { ms, consumerCpuMs: cpuMs(cpu0), providerCpuMs: p0 === undefined ? undefined : processCpuMs(providerPid) - p0, ...extra }
  }
  // BENCH_PROFILE=1 (or a list of scenarios): CPU profile of the consumer during its first warm
  // full run (the OData target: its one run) → bench/results/adapters-<scenario>.cpuprofile
  const profiles = process.env.BENCH_PROFILE ?? ''
  let profiler = profiles === '1' || profiles.split(',').includes(scenario) ? undefined : null
  const profiled = async fn => {
    if (profiler === null) return fn()
    const { Session } = await import('node:inspector/promises')
    profiler = new Session()
    profiler.connect()
    await profiler.post('Profiler.enable')
    await profiler.post('Profiler.setSamplingInterval', { interval: 200 })
    await profiler.post('Profiler.start')
    try { return await fn() } finally {
      const { profile } = await profiler.post('Profiler.stop')
      profiler.disconnect()
      profiler = null
      await mkdir(path.dirname(RESULTS), { recursive: true })
      await writeFile(path.join(path.dirname(RESULTS), `adapters-${scenario}.cpuprofile`), JSON.stringify(profile))
    }
  }
  const fullRun = () => measure(async () => {
    const { done } = await engine.execute(name, { mode: 'full' })
    const outcome = await done
    if (outcome.status !== 'completed' || outcome.statistics.created !== n) throw new Error(`${scenario} full run: ${outcome.status}, ${JSON.stringify(outcome.statistics)}`)
  })
  const summaryOf = list => ({
    ms: round(Math.min(...list.map(x => x.ms))), median: round(median(list.map(x => x.ms))), all: list.map(x => round(x.ms)),
    consumerCpuMs: round(median(list.map(x => x.consumerCpuMs))), providerCpuMs: round(median(list.map(x => x.providerCpuMs ?? NaN))),
  })

  let result
  if (scenario === 'odata-target') result = await targetBench()
  else result = await sourceBench()
  process.send?.({ type: 'result', result })
  await new Promise(resolve => server.close(resolve))
  await cds.disconnect?.()
  process.exit(0)

  // sources: cold full run, then rounds of read-only / raw read / full
  async function sourceBench() {
    const fetchPage = prepared.source.fetchPage
    const counted = function (...args) { counted.pages++; return fetchPage.apply(this, args) }
    counted.pages = 0
    prepared.source.fetchPage = counted
    const requestsBefore = await sourceRequests()
    const cold = await fullRun()
    const requests = (await sourceRequests()) - requestsBefore
    if ((await SELECT.one.from(target).columns('count(1) as count')).count !== n) throw new Error(`${scenario}: target does not hold ${n} rows`)
    progress(`${scenario}: cold full run ${cold.ms.toFixed(0)} ms, ${requests} requests`)
    const readOnly = () => measure(async () => {
      let rows = 0
      for await (const page of prepared.source.readStream({ name, mode: 'full', lastSync: null, lastKey: null })) rows += page.length
      if (rows !== n) throw new Error(`${scenario} read-only: ${rows} rows of ${n}`)
    })
    // the V2 source's requests as the provider logged them (last 200), replayed over plain fetch
    let v2Urls
    if (scenario === 'odata-v2') {
      const before = await v2Stats()
      await readOnly()
      const after = await v2Stats()
      const sent = after.requests - before.requests
      if (sent > 200) throw new Error(`odata-v2: ${sent} requests, more than the provider's log keeps`)
      v2Urls = after.urls.slice(-sent)
    }
    const measured = { full: [], read: [], readRaw: [] }
    for (let r = 0; r < rounds; r++) {
      measured.read.push(await readOnly())
      measured.readRaw.push(await measure(() => rawRead(v2Urls)))
      measured.full.push(await profiled(fullRun))
      progress(`${scenario}: round ${r + 1}: read-only ${measured.read.at(-1).ms.toFixed(0)} ms, raw fetch ${measured.readRaw.at(-1).ms.toFixed(0)} ms, full ${measured.full.at(-1).ms.toFixed(0)} ms`)
    }
    const full = summaryOf(measured.full)
    return {
      scenario, n, requests,
      config: prepared.pipeline.config.rest ?? { batchSize: PAGE },
      full: { ...full, rowsPerSec: Math.round(n / (full.ms / 1000)), medianRowsPerSec: Math.round(n / (full.median / 1000)) },
      cold: { ms: round(cold.ms), consumerCpuMs: round(cold.consumerCpuMs), providerCpuMs: round(cold.providerCpuMs) },
      read: summaryOf(measured.read),
      readRaw: summaryOf(measured.readRaw),
    }
  }

  // pages requested by the source adapter (its fetchPage, on the instance the engine runs)
  async function sourceRequests() {
    return prepared.source.fetchPage.pages ?? 0
  }
  async function v2Stats() {
    return (await fetch(`${url}/odata/v4/control/stats()`)).json()
  }

  // the same reads without the plugin: fetch + JSON.parse, rows counted
  async function rawRead(v2Urls) {
    let rows = 0
    if (scenario === 'odata-v2') {
      for (const u of v2Urls) {
        const response = await fetch(`${url}${u}`, { headers: { accept: 'application/json' } })
        const body = await response.json()
        if (!response.ok) throw new Error(`raw ${u}: ${response.status}`)
        rows += (body.d.results ?? body.d).length
      }
    } else if (scenario === 'rest-offset') {
      for (let offset = 0; ; ) {
        const response = await fetch(`${url}/items?offset=${offset}&limit=${PAGE}`, { headers: { 'x-api-key': API_KEY, accept: 'application/json' } })
        const items = (await response.json()).data.items
        if (!items.length) break
        rows += items.length
        offset += items.length
      }
    } else {
      for (let cursor; ; ) {
        const response = await fetch(`${url}/items?limit=${PAGE}${cursor ? `&cursor=${cursor}` : ''}`, { headers: { 'x-api-key': API_KEY, accept: 'application/json' } })
        const body = await response.json()
        rows += body.data.items.length
        cursor = body.paging.next
        if (!cursor) break
      }
    }
    if (rows !== n) throw new Error(`${scenario} raw read: ${rows} rows of ${n}`)
  }

  // OData target: n local rows → the (empty) provider's Books, lookups and change sets timed apart
  async function targetBench() {
    for (let from = 1; from <= n; from += 5000) {
      const rows = []
      for (let ID = from; ID < Math.min(n + 1, from + 5000); ID++) rows.push({ ID, title: `Local ${ID}`, author: `Author ${ID % 50}`, stock: ID % 100, modifiedAt: T_OLD })
      await INSERT.into('consumer.LocalBooks').entries(rows)
    }
    const { ODataClient } = cdsRequire('cap-data-pipeline/dist/lib/adapters/odata-client.js')
    const timing = { get: { calls: 0, ms: 0 }, change: { calls: 0, ms: 0, requests: 0 } }
    for (const method of ['get', 'change']) {
      const original = ODataClient.prototype[method]
      ODataClient.prototype[method] = async function (...args) {
        const t0 = now()
        try { return await original.apply(this, args) } finally {
          timing[method].calls++
          timing[method].ms += now() - t0
          if (method === 'change') timing.change.requests += args[0].length
        }
      }
    }
    const run = await profiled(fullRun)
    const count = Number(await (await fetch(`${url}/odata/v4/catalog/Books/$count`)).text())
    if (count !== n) throw new Error(`odata-target: the provider holds ${count} books, not ${n}`)
    progress(`odata-target: ${n} rows in ${run.ms.toFixed(0)} ms; ${timing.get.calls} GETs ${timing.get.ms.toFixed(0)} ms, ${timing.change.calls} $batch ${timing.change.ms.toFixed(0)} ms`)

    // the same request kinds over plain fetch (new IDs beyond n): one lookup of 100 keys, one change set of 100 POSTs
    const chunk = timing.change.requests / timing.change.calls
    const ids = from => Array.from({ length: chunk }, (_, i) => from + i)
    const lookupMs = [], batchMs = []
    for (let k = 0; k < 20; k++) {
      const keys = ids(n + 1 + k * chunk)
      let t0 = now()
      const filter = encodeURIComponent(keys.map(ID => `(ID eq ${ID})`).join(' or '))
      const found = await fetch(`${url}/odata/v4/catalog/Books?$select=ID&$filter=${filter}&$top=${chunk}`)
      if (!found.ok) throw new Error(`direct lookup: ${found.status}`)
      await found.json()
      lookupMs.push(now() - t0)
      t0 = now()
      const body = { requests: keys.map((ID, i) => ({ id: String(i + 1), atomicityGroup: 'changes', method: 'POST', url: 'Books', headers: { 'content-type': 'application/json', prefer: 'return=minimal' }, body: { ID, title: `Local ${ID}`, author: 'x', stock: 1, modifiedAt: T_OLD } })) }
      const response = await fetch(`${url}/odata/v4/catalog/$batch`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify(body) })
      const answer = await response.json()
      if (!response.ok || answer.responses.some(r => r.status >= 400)) throw new Error(`direct $batch: ${response.status}`)
      batchMs.push(now() - t0)
    }
    const full = summaryOf([run])
    return {
      scenario, n, requests: timing.get.calls + timing.change.calls,
      config: { source: 'consumer.LocalBooks (local SQLite)', batchSize: PAGE, target: 'Provider.Books (OData V4, JSON $batch)', mode: 'full' },
      full: { ...full, rowsPerSec: Math.round(n / (full.ms / 1000)), medianRowsPerSec: Math.round(n / (full.median / 1000)) },
      breakdown: {
        changeSetSize: chunk,
        lookups: { calls: timing.get.calls, ms: round(timing.get.ms), avgMs: round(timing.get.ms / timing.get.calls, 1) },
        batches: { calls: timing.change.calls, requests: timing.change.requests, ms: round(timing.change.ms), avgMs: round(timing.change.ms / timing.change.calls, 1) },
        otherMs: round(run.ms - timing.get.ms - timing.change.ms),
        direct: { lookupMs: round(median(lookupMs), 1), batchMs: round(median(batchMs), 1), note: 'median of 20, plain fetch from the consumer process, same shapes' },
      },
    }
  }
}
