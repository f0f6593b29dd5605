#!/usr/bin/env node
/**
 * Remote CAP targets (part of `npm run bench`, never of `npm test`): a full copy of local rows
 * (consumer.LocalBooks, Integer key, file SQLite) into the provider's Books (test/fixtures/provider,
 * file SQLite) through the HCQL target and through the OData V4 target, on loopback.
 *
 * Processes: this orchestrator; per step a fresh provider (its own process and database file,
 * bench/remote-provider.cjs preloaded: it counts the requests and statements it receives) and a
 * fresh consumer worker (this file with `--worker`, test/fixtures/consumer on a copy of a file
 * database seeded once).
 *
 * HCQL, per round: the same INSERTs sent over plain fetch (the provider's floor: what a batch
 * costs with no plugin and no source read), then a full run into the emptied target, then a
 * second full run (truncate of all rows, refill). OData: one full run into an empty target.
 * Reported: rows/s, requests per batch (counted at the provider), consumer and provider CPU.
 *
 * Environment: BENCH_REMOTE_ROWS=100000, BENCH_BODY_LIMITS=default,1mb (HCQL: the provider at CAP's default
 * body limit, then with `cds.server.body_parser.limit` raised and the binding's `bodyLimit` set to match), BENCH_ODATA_ROWS (default: min(rows, 20000); the
 * OData target is ~15× slower, its rows/s does not depend on the count), BENCH_ROUNDS=3,
 * BENCH_REMOTE_TARGETS=hcql,odata, BENCH_NATIVE_FETCH=1 (CAP's native-fetch remote client),
 * BENCH_PROFILE=1 (consumer CPU profile of the first HCQL full run and the provider's of that
 * step → bench/results/remote-*.cpuprofile).
 */
import { createRequire } from 'node:module'
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { CONSUMER_DIR, PROVIDER_DIR, processCpuMs, runWorker, startChild } from './helpers.mjs'

const HERE = path.dirname(fileURLToPath(import.meta.url))
const ROOT = path.resolve(HERE, '..')
const RESULTS = path.join(HERE, 'results', 'remote-targets.json')
const PRELOAD = path.join(HERE, 'remote-provider.cjs')
const BATCH = 1000
const T_OLD = '2026-01-01T00:00:00.000Z'
const TARGETS = ['hcql', 'odata']

const require = createRequire(import.meta.url)
const now = () => performance.now()
const round = (x, d = 0) => (x === undefined || x === null || Number.isNaN(x) ? null : Number(x.toFixed(d)))
const median = list => { const s = list.filter(x => typeof x === 'number').sort((a, b) => a - b); return s.length ? s[Math.floor(s.length / 2)] : undefined }

if (process.argv[2] === '--worker') await worker()
else await main()

// ---------------------------------------------------------------------------------------
// orchestrator
// ---------------------------------------------------------------------------------------

async function main() {
  const n = Number(process.env.BENCH_REMOTE_ROWS ?? 100000)
  const odataRows = Number(process.env.BENCH_ODATA_ROWS ?? Math.min(n, 20000))
  const rounds = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3))
  // CAP's default body limit (100 KB: a 1,000-row batch of these rows is two requests), then one raised on both sides
  const limits = (process.env.BENCH_BODY_LIMITS ?? 'default,1mb').split(',').map(l => (l === 'default' ? undefined : l))
  const selected = (process.env.BENCH_REMOTE_TARGETS ?? TARGETS.join(',')).split(',').filter(t => TARGETS.includes(t))
  const self = fileURLToPath(import.meta.url)
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-remote-'))
  console.log(`\ncap-data-pipeline remote targets bench — node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model}), file SQLite on both sides, ` +
    `HCQL ${n.toLocaleString('en')} rows × ${rounds} round(s), OData ${odataRows.toLocaleString('en')} rows, batchSize ${BATCH}${process.env.BENCH_NATIVE_FETCH === '1' ? ', native fetch' : ''}`)
  const results = {}
  try {
    if (selected.includes('hcql')) {
      const template = await seededConsumer(self, dir, n)
      for (const limit of limits) {
        const label = limit ? `hcql, body limit ${limit}` : 'hcql'
        const runs = []
        for (let r = 0; r < rounds; r++) {
          const step = `hcql-${limit ?? 'default'}-${r}`
          const provider = await startBenchProvider(dir, step, { profile: r === 0 && !limit && process.env.BENCH_PROFILE === '1', bodyLimit: limit })
          try {
            runs.push(await runWorker(self, { scenario: 'hcql', n, url: provider.url, providerPid: provider.child.pid, db: copyOf(template, dir, step), profile: r === 0 && !limit, bodyLimit: limit }))
          } finally { await provider.stop() }
          const last = runs.at(-1)
          console.log(`  ${label}, round ${r + 1}: direct INSERTs ${round(last.direct.ms)} ms, full ${round(last.full.ms)} ms (${last.full.requestsPerBatch} requests/batch), refill ${round(last.refill.ms)} ms (${last.refill.requestsPerBatch} requests/batch)`)
        }
        results[label] = summarize(n, runs, ['direct', 'full', 'refill'])
      }
    }
    if (selected.includes('odata')) {
      const template = await seededConsumer(self, dir, odataRows)
      const provider = await startBenchProvider(dir, 'odata')
      try {
        const run = await runWorker(self, { scenario: 'odata', n: odataRows, url: provider.url, providerPid: provider.child.pid, db: copyOf(template, dir, 'odata') })
        results.odata = summarize(odataRows, [run], ['full'])
      } finally { await provider.stop() }
    }
  } finally { rmSync(dir, { recursive: true, force: true }) }

  printTable(results)
  const report = {
    date: new Date().toISOString(), node: process.version, cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model,
    database: 'file SQLite (@cap-js/sqlite) in consumer and provider', batchSize: BATCH, rounds,
    nativeFetch: process.env.BENCH_NATIVE_FETCH === '1', results,
  }
  await mkdir(path.dirname(RESULTS), { recursive: true })
  await writeFile(RESULTS, JSON.stringify(report, null, 2) + '\n')
  console.log(`\nwritten ${path.relative(ROOT, RESULTS)}`)
}

/** A consumer database file with the model deployed and `n` LocalBooks; copied per step. */
async function seededConsumer(self, dir, n) {
  const file = path.join(dir, `consumer-${n}.sqlite`)
  await runWorker(self, { scenario: 'seed', n, db: file })
  return file
}

function copyOf(template, dir, name) {
  const file = path.join(dir, `consumer-${name}.sqlite`)
  copyFileSync(template, file)
  return file
}

/** The provider fixture on a fresh database file, bench/remote-provider.cjs preloaded. */
function startBenchProvider(dir, name, { profile = false, bodyLimit } = {}) {
  const serve = require.resolve('@sap/cds/bin/serve.js')
  const db = { kind: 'sqlite', credentials: { url: path.join(dir, `provider-${name}.sqlite`) } }
  const server = bodyLimit ? { server: { body_parser: { limit: bodyLimit } } } : {}
  const flags = profile ? ['--cpu-prof', '--cpu-prof-dir', path.join(HERE, 'results'), '--cpu-prof-name', 'remote-provider.cpuprofile'] : []
  return startChild([...flags, '--require', PRELOAD, serve, '--port', '0'], {
    cwd: PROVIDER_DIR,
    env: { ...process.env, NODE_ENV: 'test', CDS_ENV: '', BENCH_DEPLOY: '1', CDS_CONFIG: JSON.stringify({ requires: { db }, ...server }) },
    ready: /server listening on \{ url: '([^']+)'/,
    name: 'provider',
  })
}

function summarize(n, runs, phases) {
  const out = { n, rounds: runs.length }
  for (const phase of phases) {
    const list = runs.map(r => r[phase])
    const ms = median(list.map(x => x.ms))
    out[phase] = {
      ms: round(ms), all: list.map(x => round(x.ms)), rowsPerSec: Math.round(n / (ms / 1000)),
      consumerCpuMs: round(median(list.map(x => x.consumerCpuMs))), providerCpuMs: round(median(list.map(x => x.providerCpuMs))),
      requests: list[0].requests, requestsPerBatch: list[0].requestsPerBatch, statements: list[0].statements,
      created: list[0].created, deleted: list[0].deleted,
    }
  }
  if (out.direct && out.full) out.fullVsDirect = round(median(runs.map(r => r.full.ms / r.direct.ms)), 2)
  return out
}

function printTable(results) {
  const fmt = x => (x === null || x === undefined ? '–' : typeof x === 'number' ? x.toLocaleString('en') : String(x))
  const rows = [['target', 'step', 'rows', 'median ms', 'rows/s', 'requests/batch', 'consumer CPU ms', 'provider CPU ms']]
  const labels = { direct: 'INSERTs over fetch (floor)', full: 'full run, empty target', refill: 'full run, truncate + refill' }
  for (const [target, result] of Object.entries(results))
    for (const phase of ['direct', 'full', 'refill']) {
      const p = result[phase]
      if (p) rows.push([target, labels[phase], result.n, p.ms, p.rowsPerSec, p.requestsPerBatch, p.consumerCpuMs, p.providerCpuMs])
    }
  const cells = rows.map(row => row.map(fmt))
  const widths = cells[0].map((_, i) => Math.max(...cells.map(row => row[i].length)))
  const line = row => row.map((cell, i) => (i < 2 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('  ')
  console.log(`\n${line(cells[0])}\n${widths.map(w => '─'.repeat(w)).join('  ')}`)
  for (const row of cells.slice(1)) console.log(line(row))
  console.log('')
  for (const [label, result] of Object.entries(results).filter(([label]) => label.startsWith('hcql')))
    console.log(`HCQL target (${label}): ${result.full.rowsPerSec.toLocaleString('en')} rows/s (full copy of ${result.n.toLocaleString('en')} rows, ${result.full.requestsPerBatch} requests per batch of ${BATCH}), ${result.fullVsDirect} × the same INSERTs sent directly`)
  const { hcql, odata } = results
  if (odata) console.log(`OData target: ${odata.full.rowsPerSec.toLocaleString('en')} rows/s (${odata.n.toLocaleString('en')} rows, ${odata.full.requestsPerBatch} requests per batch of ${BATCH}; the provider handles each $batch row as a request)`)
  if (hcql && odata) console.log(`HCQL / OData: ${round(hcql.full.rowsPerSec / odata.full.rowsPerSec, 1)} ×`)
}

// ---------------------------------------------------------------------------------------
// worker: the consumer app in this process
// ---------------------------------------------------------------------------------------

async function worker() {
  const { scenario, n, url, providerPid, db: file, profile, bodyLimit } = JSON.parse(process.env.BENCH_OPTIONS)
  const progress = text => process.send?.({ type: 'progress', text })
  const cdsRequire = createRequire(path.join(CONSUMER_DIR, 'package.json'))
  const cds = cdsRequire('@sap/cds')
  cds.root = CONSUMER_DIR
  cds.env.requires.db = { kind: 'sqlite', credentials: { url: file } }
  if (scenario === 'seed') {
    await cds.plugins
    const db = await cds.connect.to('db')
    await cds.deploy('*').to(db)
    for (let from = 1; from <= n; from += 5000) {
      const rows = []
      for (let ID = from; ID < Math.min(n + 1, from + 5000); ID++) rows.push({ ID, title: `Local ${ID}`, author: `Author ${ID % 50}`, stock: ID % 100, modifiedAt: T_OLD })
      await db.run(cds.ql.INSERT.into('consumer.LocalBooks').entries(rows))
    }
    process.send?.({ type: 'result', result: { seeded: n } })
    await cds.disconnect?.()
    process.exit(0)
  }
  const requires = cds.env.requires
  requires.Provider.credentials = { url: scenario === 'hcql' ? `${url}/hcql/catalog` : `${url}/odata/v4/catalog` }
  if (scenario === 'hcql') requires.Provider.kind = 'hcql'
  if (bodyLimit) requires.Provider.bodyLimit = bodyLimit
  if (process.env.BENCH_NATIVE_FETCH === '1') cds.env.remote = { ...cds.env.remote, native_fetch: true }
  const { server } = await cds.exec('--port', '0')
  const engine = await cds.connect.to('data-pipeline')
  const name = `bench-${scenario}-target`
  await engine.addPipeline({ name, mode: 'full', source: { entity: 'consumer.LocalBooks', batchSize: BATCH }, target: { service: 'Provider', entity: 'Books' } })

  const stats = async () => (await fetch(`${url}/bench/stats`)).json()
  const cpuMs = since => { const cpu = process.cpuUsage(since); return (cpu.user + cpu.system) / 1000 }
  const measure = async fn => {
    const before = await stats()
    const cpu0 = process.cpuUsage()
    const p0 = processCpuMs(providerPid)
    const t0 = now()
    const extra = await fn()
    const ms = now() - t0
    const consumerCpuMs = cpuMs(cpu0)
    const providerCpuMs = processCpuMs(providerPid) - p0
    const after = await stats()
    const requests = after.hcql + after.batch + after.get - (before.hcql + before.batch + before.get)
    const statements = Object.fromEntries(Object.entries(after.statements).map(([k, v]) => [k, v - (before.statements[k] ?? 0)]).filter(([, v]) => v))
    return { ms, consumerCpuMs, providerCpuMs, requests, requestsPerBatch: round(requests / Math.ceil(n / BATCH), 2), statements, ...extra }
  }
  const profiled = async fn => {
    if (!profile || process.env.BENCH_PROFILE !== '1') return fn()
    const { Session } = await import('node:inspector/promises')
    const session = new Session()
    session.connect()
    await session.post('Profiler.enable')
    await session.post('Profiler.setSamplingInterval', { interval: 200 })
    await session.post('Profiler.start')
    try { return await fn() } finally {
      const { profile: data } = await session.post('Profiler.stop')
      session.disconnect()
      await mkdir(path.dirname(RESULTS), { recursive: true })
      await writeFile(path.join(path.dirname(RESULTS), `remote-${scenario}-consumer.cpuprofile`), JSON.stringify(data))
    }
  }
  const fullRun = () => measure(async () => {
    const { done } = await engine.execute(name, { mode: 'full' })
    const outcome = await done
    if (outcome.status !== 'completed' || outcome.statistics.created !== n) throw new Error(`${scenario} full run: ${outcome.status}, ${JSON.stringify(outcome.statistics)}`)
    return { created: outcome.statistics.created, deleted: outcome.statistics.deleted }
  })
  const providerCount = async () => {
    if (scenario === 'hcql') return (await hcql({ SELECT: { from: { ref: ['Books'] }, columns: [{ func: 'count', args: ['*'], as: 'n' }] } })).data[0].n
    return Number(await (await fetch(`${url}/odata/v4/catalog/Books/$count`)).text())
  }
  async function hcql(query) {
    const response = await fetch(`${url}/hcql/catalog`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(query) })
    if (!response.ok) throw new Error(`HCQL ${response.status}: ${await response.text()}`)
    return response.status === 204 ? {} : response.json()
  }

  // requests within the provider's body limit (CAP's default 100 KB), as the target splits them
  function bodies(rows) {
    const size = JSON.stringify(rows).length
    const limit = bodyLimit ? Number.parseFloat(bodyLimit) * 1024 ** (/mb$/i.test(bodyLimit) ? 2 : 1) : 100 * 1024
    const parts = Math.ceil(size / (limit - 1024))
    const per = Math.ceil(rows.length / parts)
    return Array.from({ length: parts }, (_, i) => rows.slice(i * per, (i + 1) * per))
  }

  const result = { scenario, n }
  if (scenario === 'hcql') {
    // the floor: the rows as the run writes them, one INSERT per batch over plain fetch
    const local = await cds.ql.SELECT.from('consumer.LocalBooks').orderBy('ID')
    result.direct = await measure(async () => {
      for (let i = 0; i < local.length; i += BATCH)
        for (const entries of bodies(local.slice(i, i + BATCH))) await hcql({ INSERT: { into: { ref: ['Books'] }, entries } })
    })
    if ((await providerCount()) !== n) throw new Error('direct INSERTs: wrong count')
    await hcql({ DELETE: { from: { ref: ['Books'] } } })
    progress(`hcql: direct INSERTs ${round(result.direct.ms)} ms`)
  }
  result.full = await profiled(fullRun)
  if ((await providerCount()) !== n) throw new Error(`${scenario}: the provider does not hold ${n} rows`)
  progress(`${scenario}: full run ${round(result.full.ms)} ms, ${result.full.requests} requests ${JSON.stringify(result.full.statements)}`)
  if (scenario === 'hcql') {
    result.refill = await fullRun()
    if ((await providerCount()) !== n || result.refill.deleted !== n) throw new Error(`${scenario} refill: ${JSON.stringify(result.refill)}`)
  }
  process.send?.({ type: 'result', result })
  await new Promise(resolve => server.close(resolve))
  await cds.disconnect?.()
  process.exit(0)
}
