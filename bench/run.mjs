#!/usr/bin/env node
/**
 * Benchmark (`npm run bench`, never part of `npm test`): full replication from the real
 * OData V4 provider (test/fixtures/provider) into embedded SQLite (in-memory) through the
 * plugin, against the two halves it overlaps — reading all pages and writing all rows.
 *
 * Processes: this orchestrator; per N a fresh provider child (its own CPU) and a fresh
 * consumer worker child (this file with `--worker`), which boots the consumer app
 * (test/fixtures/consumer) in-process with `cds serve`, so peak RSS is the consumer's alone
 * and 10k/100k/500k are measured from the same starting point.
 *
 * Environment: BENCH_SIZES=10000,100000 (default), BENCH_LARGE=1 adds 500000,
 * BENCH_ROUNDS=3 (rounds of read-only, write-only and full run back to back; times are the best of
 * the rounds, the ratio the median of the rounds' ratios; peak RSS is from the first, cold full run),
 * BENCH_PROFILE=full,read,write,delta (CPU profiles → bench/results/*.cpuprofile),
 * BENCH_QUIET_WAIT=60 / BENCH_QUIET_CORES=0.3 (wait before each phase until other load on the
 * machine is below that many cores; 0 disables), BENCH_NATIVE_FETCH=1 (CAP remote services over
 * native fetch instead of the SAP Cloud SDK).
 */
import { createRequire } from 'node:module'
import { mkdir, writeFile } from 'node:fs/promises'
import { readFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { CONSUMER_DIR, control, processCpuMs, runWorker, startProvider } from './helpers.mjs'

const HERE = path.dirname(fileURLToPath(import.meta.url))
const ROOT = path.resolve(HERE, '..')
const RESULTS = path.join(HERE, 'results', 'latest.json')

const BATCH = 1000
const T_OLD = '2026-01-01T00:00:00.000Z'
const T_NEW = '2026-01-02T00:00:00.000Z'
const TARGETS = { fullVsMaxRatio: 1.25, rssGrowthMB: 50, deltaRequests: 1, deltaVsDirectRatio: 1.2 }

const MB = 1024 * 1024
const now = () => performance.now()
const round = (x, d = 0) => (x === undefined || x === null || Number.isNaN(x) ? null : Number(x.toFixed(d)))

if (process.argv[2] === '--worker') await worker()
else await main()

// ---------------------------------------------------------------------------------------
// orchestrator
// ---------------------------------------------------------------------------------------

async function main() {
  const sizes = (process.env.BENCH_SIZES ?? '10000,100000').split(',').map(Number).filter(n => n > 0)
  if (process.env.BENCH_LARGE === '1' && !sizes.includes(500000)) sizes.push(500000)
  const rounds = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3))
  console.log(`cap-data-pipeline bench — node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model}), sizes ${sizes.join(', ')}, ${rounds} round(s)`)
  console.log('consumer: test/fixtures/consumer booted in a worker process on in-memory SQLite; provider: test/fixtures/provider in its own process (in-memory SQLite)\n')

  const results = []
  for (const n of sizes) {
    const provider = await startProvider()
    try {
      const t0 = now()
      // all rows but the last share an old timestamp; the newest row carries the watermark, so a
      // no-change delta run re-reads exactly that one row (the watermark comparison is inclusive)
      await control(provider.url, 'seed', { from: 1, count: n - 1, modifiedAt: T_OLD })
      await control(provider.url, 'seed', { from: n, count: 1, modifiedAt: T_NEW })
      console.log(`N=${n}: provider pid ${provider.child.pid} at ${provider.url}, seeded in ${((now() - t0) / 1000).toFixed(1)} s`)
      const result = await runWorker(fileURLToPath(import.meta.url), { n, rounds, providerUrl: provider.url, providerPid: provider.child.pid })
      results.push(result)
      printOne(result)
    } finally {
      await provider.stop()
    }
  }

  const summary = summarize(results)
  printTable(results, summary)
  const report = {
    date: new Date().toISOString(),
    node: process.version,
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    database: 'SQLite in-memory (@cap-js/sqlite, node:sqlite) in the consumer process',
    batchSize: BATCH,
    rounds,
    targets: TARGETS,
    results,
    summary,
  }
  await mkdir(path.dirname(RESULTS), { recursive: true })
  await writeFile(RESULTS, JSON.stringify(report, null, 2))
  console.log(`\nwritten ${path.relative(ROOT, RESULTS)}`)
}

function summarize(results) {
  const byN = n => results.find(r => r.n === n)
  const small = byN(10000)
  const large = byN(100000)
  return {
    rssGrowth10kTo100kMB: small && large ? round((large.peakRss.fullRunMB - small.peakRss.fullRunMB), 1) : null,
    rssGrowthOk: small && large ? large.peakRss.fullRunMB - small.peakRss.fullRunMB <= TARGETS.rssGrowthMB : null,
    allRatiosOk: results.every(r => r.ratio.fullVsMax <= TARGETS.fullVsMaxRatio),
    allDeltaOk: results.every(r => r.delta.requests === TARGETS.deltaRequests && r.delta.vsDirect <= TARGETS.deltaVsDirectRatio),
  }
}

function printOne(r) {
  console.log(`  full ${r.full.ms} ms (${r.full.rowsPerSec} rows/s) · read ${r.read.ms} ms · write ${r.write.ms} ms · ratio ${r.ratio.fullVsMax} · peak RSS ${r.peakRss.fullRunMB} MB · delta ${r.delta.requests} req ${r.delta.ms} ms vs direct ${r.delta.directMs} ms (${r.delta.vsDirect}×)\n`)
}

function printTable(results, summary) {
  const ok = (value, good) => (value === null || value === undefined ? '' : good ? ' ✓' : ' ✗')
  const cell = x => `${x.ms}${x.median !== x.ms ? ` (med ${x.median})` : ''}`
  const rows = [
    ['rows', ...results.map(r => r.n.toLocaleString('en'))],
    ['full run, warm (ms)', ...results.map(r => cell(r.full))],
    ['full rows/s', ...results.map(r => r.full.rowsPerSec.toLocaleString('en'))],
    ['full run, cold: first in process (ms)', ...results.map(r => String(r.full.cold.ms))],
    ['read-only, source adapter (ms)', ...results.map(r => cell(r.read))],
    ['read-only, raw fetch same URLs (ms)', ...results.map(r => cell(r.readRaw))],
    ['write-only, CAP UPSERT 1000/batch, 1 tx (ms)', ...results.map(r => cell(r.write))],
    ['write-only, db target adapter (ms)', ...results.map(r => cell(r.writeTarget))],
    [`full / max(read, write) ≤ ${TARGETS.fullVsMaxRatio} (median of rounds)`, ...results.map(r => `${r.ratio.fullVsMax}${ok(r.ratio.fullVsMax, r.ratio.fullVsMax <= TARGETS.fullVsMaxRatio)}`)],
    ['  per round', ...results.map(r => r.ratio.perRound.join(' '))],
    ['  best full / max(best read, best write)', ...results.map(r => String(r.ratio.bestOf))],
    ['consumer CPU: full / read / write (ms)', ...results.map(r => `${r.full.consumerCpuMs} / ${r.read.consumerCpuMs} / ${r.write.consumerCpuMs}`)],
    ['provider CPU: full / read (ms)', ...results.map(r => `${r.full.providerCpuMs} / ${r.read.providerCpuMs}`)],
    ['peak RSS during cold full run (MB)', ...results.map(r => String(r.peakRss.fullRunMB))],
    ['  RSS after boot (MB)', ...results.map(r => String(r.peakRss.bootMB))],
    ['  at peak: V8 heap total (MB)', ...results.map(r => String(r.peakRss.atPeak.heapTotal))],
    ['  SQLite in-memory database (MB)', ...results.map(r => String(r.peakRss.sqliteDatabaseMB))],
    ['  heap used after GC: boot → after run (MB)', ...results.map(r => `${r.peakRss.heapUsedAfterGcMB.boot} → ${r.peakRss.heapUsedAfterGcMB.afterRun}`)],
    [`delta (no change): requests = ${TARGETS.deltaRequests}`, ...results.map(r => `${r.delta.requests}${ok(r.delta.requests, r.delta.requests === TARGETS.deltaRequests)}`)],
    ['delta run (ms, median of 9)', ...results.map(r => String(r.delta.ms))],
    ['same request sent directly (ms, median)', ...results.map(r => String(r.delta.directMs))],
    [`delta / direct ≤ ${TARGETS.deltaVsDirectRatio}`, ...results.map(r => `${r.delta.vsDirect}${ok(r.delta.vsDirect, r.delta.vsDirect <= TARGETS.deltaVsDirectRatio)}`)],
  ]
  const widths = rows[0].map((_, i) => Math.max(...rows.map(row => String(row[i]).length)))
  const line = row => row.map((cell, i) => (i === 0 ? String(cell).padEnd(widths[i]) : String(cell).padStart(widths[i]))).join('  ')
  console.log(line(rows[0]))
  console.log(widths.map(w => '─'.repeat(w)).join('  '))
  for (const row of rows.slice(1)) console.log(line(row))
  if (summary.rssGrowth10kTo100kMB !== null)
    console.log(`\npeak RSS 100k − 10k: ${summary.rssGrowth10kTo100kMB} MB (target ≤ ${TARGETS.rssGrowthMB} MB)${ok(1, summary.rssGrowthOk)}`)
}

// ---------------------------------------------------------------------------------------
// worker: the consumer app in this process
// ---------------------------------------------------------------------------------------

async function worker() {
  const { n, rounds, providerUrl, providerPid } = JSON.parse(process.env.BENCH_OPTIONS)
  const progress = text => process.send?.({ type: 'progress', text })
  const cdsRequire = createRequire(path.join(CONSUMER_DIR, 'package.json'))
  const cds = cdsRequire('@sap/cds')
  cds.root = CONSUMER_DIR
  cds.env.requires.Provider.credentials = { url: `${providerUrl}/odata/v4/catalog` }
  if (process.env.BENCH_NATIVE_FETCH === '1') cds.env.remote = { ...cds.env.remote, native_fetch: true }
  const { server } = await cds.exec('--in-memory?', '--port', '0')
  const { SELECT, UPSERT, DELETE } = cds.ql
  const engine = await cds.connect.to('data-pipeline')
  const db = await cds.connect.to('db')
  const TARGET = 'consumer.Books'
  await engine.addPipeline({ name: 'bench', source: { service: 'Provider', entity: 'Books', batchSize: BATCH }, target: { entity: TARGET } })
  const prepared = await engine.registry.prepare('bench')

  const stats = async () => (await (await fetch(`${providerUrl}/odata/v4/control/stats()`)).json())
  const providerCpu = () => processCpuMs(providerPid)
  const vmHwmMB = () => {
    const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))
    return match ? Number(match[1]) / 1024 : undefined
  }

  const cpuMs = since => { const cpu = process.cpuUsage(since); return (cpu.user + cpu.system) / 1000 }
  // BENCH_PROFILE=full,read,write,delta: CPU profile of the first warm phase of that name → bench/results/<name>-<n>.cpuprofile
  const { Session } = await import('node:inspector/promises')
  const profiler = new Session()
  profiler.connect()
  await profiler.post('Profiler.enable')
  await profiler.post('Profiler.setSamplingInterval', { interval: 200 })

  // every measured phase: wall time, CPU of the consumer (this process) and of the provider, and
  // CPU used by anything else on the machine meanwhile (in cores), since other load skews timings
  const systemBusyMs = () => {
    const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/)
    const t = ticks.map(Number)
    return ((t.reduce((a, b) => a + b, 0) - t[3] - t[4]) * 1000) / 100
  }
  // waits (up to BENCH_QUIET_WAIT seconds, default 60) until the rest of the machine uses less
  // than BENCH_QUIET_CORES (default 0.3) cores over 300 ms, so other work does not skew a phase
  const quietCores = Number(process.env.BENCH_QUIET_CORES ?? 0.3)
  const quietWait = Number(process.env.BENCH_QUIET_WAIT ?? 60) * 1000
  const waitForQuiet = async () => {
    const until = now() + quietWait
    for (;;) {
      const c0 = process.cpuUsage()
      const p0 = providerCpu() ?? 0
      const s0 = systemBusyMs()
      const t0 = now()
      await new Promise(resolve => setTimeout(resolve, 300))
      const other = (systemBusyMs() - s0 - cpuMs(c0) - ((providerCpu() ?? 0) - p0)) / (now() - t0)
      if (other < quietCores || now() > until) return
    }
  }
  const phase = async (name, fn) => {
    if (quietWait > 0) await waitForQuiet()
    const run = async () => {
      const cpu0 = process.cpuUsage()
      const p0 = providerCpu()
      const s0 = systemBusyMs()
      const t0 = now()
      await fn()
      const ms = now() - t0
      const consumerCpuMs = cpuMs(cpu0)
      const providerCpuMs = p0 === undefined ? undefined : providerCpu() - p0
      const otherCores = (systemBusyMs() - s0 - consumerCpuMs - (providerCpuMs ?? 0)) / ms
      return { ms, consumerCpuMs, providerCpuMs, otherCores: Math.max(0, otherCores) }
    }
    return profiles.includes(name) ? profile(name, run) : run()
  }
  const profiles = (process.env.BENCH_PROFILE ?? '').split(',') // e.g. full,read,write,delta
  const profiled = new Set()
  const profile = async (name, fn) => {
    if (profiled.has(name)) return fn()
    profiled.add(name)
    await profiler.post('Profiler.start')
    try { return await fn() } finally {
      const { profile: data } = await profiler.post('Profiler.stop')
      await mkdir(path.dirname(RESULTS), { recursive: true })
      await writeFile(path.join(path.dirname(RESULTS), `${name}-${n}.cpuprofile`), JSON.stringify(data))
    }
  }

  const fullRun = () => phase('full', async () => {
    const { done } = await engine.execute('bench', { mode: 'full' })
    const outcome = await done
    if (outcome.status !== 'completed' || outcome.statistics.created !== n) throw new Error(`full run: ${outcome.status}, ${JSON.stringify(outcome.statistics)}`)
  })

  // same stream the engine's READ hands to the run: $select, $orderby, $top, keyset $filter, $count
  const readOnly = () => phase('read', async () => {
    let rows = 0
    for await (const page of prepared.source.readStream({ name: 'bench', mode: 'full', lastSync: null, lastKey: null })) rows += page.length
    if (rows !== n) throw new Error(`read-only: ${rows} rows of ${n}`)
  })

  // the same URLs over plain fetch + JSON.parse, without CAP's remote service ($select as the run sent it)
  let select
  const readRaw = () => phase('readRaw', async () => {
    let rows = 0
    let last
    for (let first = true; ; first = false) {
      const params = [`$select=${encodeURIComponent(select)}`]
      if (last !== undefined) params.push(`$filter=${encodeURIComponent(`(ID gt ${last})`)}`)
      params.push(`$orderby=${encodeURIComponent('ID asc')}`, `$top=${BATCH}`)
      if (first) params.push('$count=true')
      const response = await fetch(`${providerUrl}/odata/v4/catalog/Books?${params.join('&')}`)
      const { value } = await response.json()
      if (!value.length) break
      rows += value.length
      last = value[value.length - 1].ID
      if (rows >= n) break
    }
    if (rows !== n) throw new Error(`raw read: ${rows} rows of ${n}`)
  })

  // DELETE then UPSERT in batches of 1000, one transaction: what a full run writes, no reading
  let rows = [] // the rows the first full run wrote, in the target's shape
  const writeOnly = () => phase('write', async () => {
    await db.tx(async tx => {
      await tx.run(DELETE.from(TARGET))
      for (let i = 0; i < rows.length; i += BATCH) await tx.run(UPSERT.into(TARGET).entries(rows.slice(i, i + BATCH)))
    })
  })
  // the same through the plugin's database target (its truncate + writeBatch, which counts existing keys)
  const writeTarget = () => phase('writeTarget', async () => {
    const target = prepared.target
    await db.tx(async () => {
      const context = { runId: `bench-${Math.random()}`, mode: 'full', batchIndex: 0 }
      await target.truncate(context)
      for (let i = 0; i < rows.length; i += BATCH) await target.writeBatch(rows.slice(i, i + BATCH), { ...context, batchIndex: i / BATCH })
    })
  })

  // first full run: fresh process, nothing else has allocated yet → its peak RSS is the run's
  await db.run(DELETE.from(TARGET))
  global.gc?.()
  const memory = () => { const m = process.memoryUsage(); return { rss: m.rss / MB, heapTotal: m.heapTotal / MB, heapUsed: m.heapUsed / MB, external: m.external / MB, arrayBuffers: m.arrayBuffers / MB } }
  const boot = memory()
  const bootMB = boot.rss
  let atPeak = boot
  const sample = () => { const m = memory(); if (m.rss > atPeak.rss) atPeak = m }
  const sampler = setInterval(sample, 50)
  const first = await fullRun()
  clearInterval(sampler)
  profiled.clear() // profiles are of warm phases
  sample()
  const peak = atPeak.rss
  // what stays: the copied rows in SQLite (in-memory database) and anything the run retained
  global.gc?.()
  const after = memory()
  const pragma = async name => { const r = await db.run(`SELECT * FROM pragma_${name}()`); return Number(Object.values(Array.isArray(r) ? r[0] : r)[0]) }
  const sqliteMB = ((await pragma('page_count')) * (await pragma('page_size'))) / MB
  const hwm = vmHwmMB()
  progress(`N=${n}: first (cold) full run ${first.ms.toFixed(0)} ms, peak RSS ${peak.toFixed(1)} MB (VmHWM ${hwm?.toFixed(1)} MB, after boot ${bootMB.toFixed(1)} MB)`)

  select = /\$select=([^&]*)/.exec((await stats()).urls.at(-1))?.[1]
  if (!select) throw new Error('the full run sent no $select')

  // rounds of read / write / full back to back, so each round's ratio compares like with like
  rows = (await SELECT.from(TARGET).orderBy('ID')).map(row => ({ ...row }))
  const measured = { full: [], read: [], readRaw: [], write: [], writeTarget: [] }
  const fmt = x => `${x.ms.toFixed(0)} ms${x.otherCores > 0.25 ? ` [other load ${x.otherCores.toFixed(1)} cores]` : ''}`
  for (let r = 0; r < rounds; r++) {
    measured.read.push(await readOnly())
    measured.readRaw.push(await readRaw())
    measured.write.push(await writeOnly())
    measured.writeTarget.push(await writeTarget())
    measured.full.push(await fullRun()) // the last one leaves the state for the delta runs
    progress(`N=${n}: round ${r + 1}: read ${fmt(measured.read.at(-1))} (raw ${fmt(measured.readRaw.at(-1))}), write ${fmt(measured.write.at(-1))} (db target ${fmt(measured.writeTarget.at(-1))}), full ${fmt(measured.full.at(-1))}`)
  }

  // no-change delta: provider requests per run, and its time against the provider answering the same
  // request sent directly (plain fetch + JSON.parse from this process), pairwise interleaved
  const deltaRun = async () => {
    const before = await stats()
    const t0 = now()
    const { done } = await engine.execute('bench', { mode: 'delta' })
    const outcome = await done
    const ms = now() - t0
    const after = await stats()
    if (outcome.status !== 'completed') throw new Error(`delta run ${outcome.status}`)
    const sent = after.requests - before.requests
    return { ms, requests: sent, urls: sent > 0 ? after.urls.slice(-sent) : [], statistics: outcome.statistics }
  }
  const direct = async urls => {
    const t0 = now()
    for (const url of urls) {
      const response = await fetch(`${providerUrl}${url}`)
      const body = await response.json()
      if (!response.ok || !Array.isArray(body.value)) throw new Error(`direct ${url}: ${response.status}`)
    }
    return now() - t0
  }
  const warm = await deltaRun()
  await direct(warm.urls)
  const deltas = []
  await phase('delta', async () => {
    for (let i = 0; i < 9; i++) {
      const run = await deltaRun()
      deltas.push({ ...run, directMs: await direct(run.urls) })
    }
  })

  const median = list => { const s = [...list].sort((a, b) => a - b); return s[Math.floor(s.length / 2)] }
  const best = list => Math.min(...list.map(x => x.ms))
  const summaryOf = list => ({
    ms: round(best(list)), median: round(median(list.map(x => x.ms))), all: list.map(x => round(x.ms)),
    consumerCpuMs: round(median(list.map(x => x.consumerCpuMs))), providerCpuMs: round(median(list.map(x => x.providerCpuMs ?? NaN))),
    otherCores: list.map(x => round(x.otherCores, 2)),
  })
  const full = summaryOf(measured.full)
  const read = summaryOf(measured.read)
  const write = summaryOf(measured.write)
  const perRound = measured.full.map((f, i) => f.ms / Math.max(measured.read[i].ms, measured.write[i].ms))
  const deltaMs = median(deltas.map(d => d.ms))
  const directMs = median(deltas.map(d => d.directMs))
  const result = {
    n,
    full: { ...full, rowsPerSec: Math.round(n / (full.ms / 1000)), cold: { ms: round(first.ms), consumerCpuMs: round(first.consumerCpuMs), providerCpuMs: round(first.providerCpuMs) } },
    read,
    readRaw: summaryOf(measured.readRaw),
    write,
    writeTarget: summaryOf(measured.writeTarget),
    // each round runs read, write and full back to back; the median of the rounds' ratios is the
    // figure least moved by other load (best-of times can come from different, quieter moments)
    ratio: { fullVsMax: round(median(perRound), 2), perRound: perRound.map(x => round(x, 2)), bestOf: round(full.ms / Math.max(read.ms, write.ms), 2) },
    peakRss: {
      fullRunMB: round(peak, 1), vmHwmMB: round(hwm, 1), bootMB: round(bootMB, 1),
      atPeak: Object.fromEntries(Object.entries(atPeak).map(([k, v]) => [k, round(v, 1)])),
      heapUsedAfterGcMB: { boot: round(boot.heapUsed, 1), afterRun: round(after.heapUsed, 1) },
      sqliteDatabaseMB: round(sqliteMB, 1),
    },
    delta: {
      requests: Math.max(warm.requests, ...deltas.map(d => d.requests)),
      requestsPerRun: [warm.requests, ...deltas.map(d => d.requests)],
      urls: warm.urls,
      statistics: warm.statistics,
      ms: round(deltaMs, 1),
      all: deltas.map(d => round(d.ms, 1)),
      directMs: round(directMs, 1),
      directAll: deltas.map(d => round(d.directMs, 1)),
      vsDirect: round(deltaMs / directMs, 2),
    },
  }
  process.send?.({ type: 'result', result })
  await new Promise(resolve => server.close(resolve))
  await cds.disconnect?.()
  process.exit(0)
}
