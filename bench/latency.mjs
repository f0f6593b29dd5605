#!/usr/bin/env node
/**
 * Latency benchmark (issue 24, never part of `npm test`): a full copy from the real OData V4 provider
 * (test/fixtures/provider, BenchItems: UUID key, 11 columns, file SQLite) through a latency-injecting
 * HTTP proxy (this process: every request waits a fixed delay before it is forwarded), into the
 * consumer app (test/fixtures/consumer) in a fresh process on a fresh file SQLite database per
 * measurement, with `parallel` 1 (sequential pages, as before) and the partitioned settings.
 *
 * Beside each figure the floor it is compared with, measured in the same run through the same proxy:
 *   floor = pages × latency + the provider's own time to serve all pages (a plain sequential keyset
 *           read with fetch through the proxy at 0 ms), i.e. what a sequential read costs at least;
 *   raw   = that plain sequential read at the latency itself (the floor as measured);
 * and the ratio product / floor. Targets: at 50 ms the partitioned copy ≤ 0.25 × floor; at 0 ms no
 * slower than parallel 1 (± 5 %); peak RSS (VmHWM) growth over parallel 1 ≤ parallel × one page.
 * Figures: medians of the rounds, and the best round against the floor measured in that same round
 * (best-of-N: on a shared machine other load only ever adds time). Beside them the CPU time the
 * provider, the consumer and the proxy spent on the copy: with all of them on one machine, a copy
 * takes at least max(provider CPU, consumer CPU, all CPU / cores) — printed as the lowest ratio
 * this machine allows. Output: a table and bench/results/latency.json.
 *
 * After each copy the same consumer process (pipeline in delta mode, timestamp watermark on the
 * provider's modifiedAt, the copy's `parallel`) runs three more cells through the same proxy
 * (bench/latency-delta.mjs): a delta after 5 % of the rows changed, a deletes key sweep
 * (`deletes: { sweep: 'always' }`) after 1 % were deleted at the provider, and a no-change delta
 * (checked to be exactly one request) — each beside its own floor, measured in the same round
 * (the plain sequential read of the changed rows, of the key-only pages, of the one request), the
 * ratio and ✓/✗ against issue 24's targets at 50 ms (delta ≤ 0.3, sweep ≤ 0.25 × floor).
 *
 * Environment:
 *   BENCH_LATENCY_SIZES=100000   rows (quick run: 20000)
 *   BENCH_LATENCIES=0,20,50,100  ms added per request
 *   BENCH_PARALLEL=1,4,8         settings of `parallel` measured (1 = sequential)
 *   BENCH_ROUNDS=2               rounds (medians)
 *   BENCH_LIVE_HEAP=1            heap peak of live data (a forced GC every 250 ms) instead of the sampled heap
 *   BENCH_QUIET_WAIT=20 / BENCH_QUIET_CORES=0.5  before each copy and timed cell, wait up to that many
 *                                seconds until the machine's other load is below that many cores
 *   BENCH_LATENCY_CELLS=0        the copies only (no delta, sweep and no-change cells)
 *   BENCH_TIMELINE=1             each cell's requests as the proxy saw them (kind, arrival → forwarded → answered)
 *   BENCH_WATERMARK_INDEX=1      an index on the provider's (modifiedAt, ID) (by default the fixture has none)
 */
import { createRequire } from 'node:module'
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { readFileSync } from 'node:fs'
import http from 'node:http'
import v8 from 'node:v8'
import vm from 'node:vm'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { CONSUMER_DIR, PROVIDER_DIR, control, deployApp, processCpuMs, sequentialRead, serveRequests, sqliteEnv, startProvider, startWorker } from './helpers.mjs'
import { cellLine, cellReport, cellRunner, measureCells, summarize } from './latency-delta.mjs'

const SELF = fileURLToPath(import.meta.url)
const ROOT = path.resolve(path.dirname(SELF), '..')
const RESULTS = path.join(ROOT, 'bench/results/latency.json')
const BATCH = 1000
const SOURCE = 'BenchItems'
const TARGET = 'consumer.BenchItems'
const COLUMNS = ['ID', 'name', 'description', 'category', 'quantity', 'price', 'weight', 'active', 'validFrom', 'createdAt', 'modifiedAt']
const MB = 1024 * 1024
const TARGETS = { at50: 0.25, at0: 1.05 }
const CELLS = process.env.BENCH_LATENCY_CELLS !== '0'

const now = () => performance.now()
const list = (value, fallback) => (value ?? fallback).split(',').map(Number).filter(x => Number.isFinite(x) && x >= 0)
const median = values => {
  const s = values.filter(x => typeof x === 'number').sort((a, b) => a - b)
  if (!s.length) return null
  const m = Math.floor(s.length / 2)
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}
const fixed = (x, d = 0) => (x === null || x === undefined ? '—' : x.toFixed(d))

if (process.argv[2] === '--worker') await worker()
else await main()

/** The proxy: each request waits `delay.ms`, then goes to the provider over kept-alive connections. */
function latencyProxy(target) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 })
  const upstream = new URL(target)
  // timeline: each request's kind, arrival, forwarding and end (ms since the reset), answer bytes
  const fresh = () => ({ requests: 0, bytes: 0, maxInFlight: 0, sampleMs: 0, kinds: { count: 0, sample: 0, page: 0, empty: 0, metadata: 0 }, urls: [], t0: now(), timeline: [] })
  const state = { ms: 0, inFlight: 0, ...fresh() }
  const server = http.createServer((req, res) => {
    state.requests++
    // what each request is: the first page asking for the count, a one-row boundary sample, a page
    // (an answer without rows — a range's end — counted as `empty` once it arrived)
    const url = decodeURIComponent(req.url)
    const kind = url.includes('/$metadata') ? 'metadata' : /\$count=true|\$inlinecount/.test(url) ? 'count' : /\$top=1&|\$top=1$/.test(url) && url.includes('$skip=') ? 'sample' : 'page'
    state.kinds[kind]++
    if (state.urls.length < 8) state.urls.push(req.url) // the first requests (a no-change delta's one)
    let answered = 0
    const entry = { kind, at: now() - state.t0 }
    state.timeline.push(entry)
    state.inFlight++
    state.maxInFlight = Math.max(state.maxInFlight, state.inFlight)
    res.once('close', () => { state.inFlight-- })
    const chunks = []
    req.on('data', chunk => chunks.push(chunk))
    let forwarded = 0
    req.on('end', () => setTimeout(() => {
      forwarded = now()
      entry.forwarded = forwarded - state.t0
      const forward = http.request({ host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: { ...req.headers, host: upstream.host }, agent }, answer => {
        res.writeHead(answer.statusCode, answer.headers)
        answer.on('data', chunk => { state.bytes += chunk.length; answered += chunk.length })
        answer.on('end', () => {
          if ((kind === 'page' || kind === 'count') && answered < 400) state.kinds.empty++
          Object.assign(entry, { ended: now() - state.t0, bytes: answered })
          // the provider's time for a boundary sample (it skips up to n rows)
          if (kind === 'sample') state.sampleMs = Math.max(state.sampleMs, now() - forwarded)
        })
        answer.pipe(res)
      })
      forward.on('error', error => { res.writeHead(502); res.end(String(error.message)) })
      forward.end(Buffer.concat(chunks))
    }, state.ms))
  })
  return new Promise(resolve => server.listen(0, '127.0.0.1', () => resolve({
    url: `http://127.0.0.1:${server.address().port}`, state,
    reset() { Object.assign(state, fresh()) },
    close: () => { agent.destroy(); server.closeAllConnections(); return new Promise(done => server.close(done)) },
  })))
}

/**
 * What one page of rows occupies on the heap once parsed (MB): the unit of the memory target
 * (peak RSS grows by at most `parallel` × one page). Measured here with a forced GC around a parse.
 */
async function pageHeapMB(base) {
  v8.setFlagsFromString('--expose-gc')
  const gc = vm.runInNewContext('gc')
  const text = await (await fetch(`${base}/odata/v4/catalog/${SOURCE}?$select=${COLUMNS.join(',')}&$orderby=ID&$top=${BATCH}`)).text()
  gc()
  const before = process.memoryUsage().heapUsed
  const page = JSON.parse(text)
  gc()
  const after = process.memoryUsage().heapUsed
  return page.value.length ? (after - before) / MB : 0
}

/** CPU time (ms) the whole machine has been busy so far (/proc/stat). */
function busyMs() {
  const ticks = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number)
  return ((ticks.reduce((a, b) => a + b, 0) - ticks[3] - ticks[4]) * 1000) / 100
}

/** Waits (at most BENCH_QUIET_WAIT s, default 20) until other work on the machine uses less than BENCH_QUIET_CORES (0.5) cores. */
async function quiet() {
  const until = now() + Number(process.env.BENCH_QUIET_WAIT ?? 20) * 1000
  const cores = Number(process.env.BENCH_QUIET_CORES ?? 0.5)
  for (;;) {
    const b0 = busyMs()
    const t0 = now()
    await new Promise(resolve => setTimeout(resolve, 500))
    const load = (busyMs() - b0) / (now() - t0)
    if (load < cores || now() > until) return load
  }
}

/** A plain sequential keyset read of all `n` rows through `base` (the floor's own read, latency-delta.mjs). */
async function rawRead(base, n) {
  const read = await sequentialRead(`${base}/odata/v4/catalog/${SOURCE}`, { select: COLUMNS, order: ['ID'] })
  if (read.rows !== n) throw new Error(`raw read: ${read.rows} rows of ${n}`)
  return read
}

async function main() {
  const sizes = list(process.env.BENCH_LATENCY_SIZES, '100000')
  const latencies = list(process.env.BENCH_LATENCIES, '0,20,50,100')
  const parallels = list(process.env.BENCH_PARALLEL, '1,4,8').filter(p => p >= 1)
  const rounds = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 2))
  console.log(`cap-data-pipeline latency bench — node ${process.version}, ${os.cpus().length} CPUs, sizes ${sizes.join(', ')}, latencies ${latencies.join(', ')} ms, parallel ${parallels.join(', ')}, ${rounds} round(s), file SQLite\n`)
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'cdp-latency-'))
  const results = []
  try {
    const template = path.join(tmp, 'consumer-template.db')
    await deployApp(CONSUMER_DIR, sqliteEnv(template))
    for (const n of sizes) {
      const providerDb = path.join(tmp, `provider-${n}.db`)
      await deployApp(PROVIDER_DIR, sqliteEnv(providerDb))
      if (process.env.BENCH_WATERMARK_INDEX === '1') await watermarkIndex(providerDb)
      const provider = await startProvider({ dbFile: providerDb })
      const proxy = await latencyProxy(provider.url)
      try {
        await control(provider.url, 'seedBench', { from: 1, count: n, modifiedAt: '2026-01-01T00:00:00.000Z' })
        await rawRead(proxy.url, n) // warm-up: the provider's first read compiles and caches what later reads reuse
        const pageMB = await pageHeapMB(proxy.url)
        for (const latency of latencies) {
          proxy.state.ms = latency
          const cells = { raw: [], serve: [] }
          for (let r = 0; r < rounds; r++) {
            // the provider's own serving time through the same proxy, then the raw read at this latency
            proxy.state.ms = 0
            const serve = await rawRead(proxy.url, n)
            proxy.state.ms = latency
            const raw = await rawRead(proxy.url, n)
            cells.serve.push(serve.ms)
            cells.raw.push(raw.ms)
            cells.pages = raw.pages
            for (const parallel of parallels) {
              const file = path.join(tmp, `consumer-${n}-${latency}-${parallel}-${r}.db`)
              await copyFile(template, file)
              await quiet()
              proxy.reset()
              const cpu0 = { provider: processCpuMs(provider.child.pid), proxy: process.cpuUsage() }
              const session = await startWorker(SELF, { n, parallel, providerUrl: proxy.url, cells: CELLS }, { env: sqliteEnv(file) })
              const measured = session.result
              // CPU of the copy: provider (its serving), proxy (this process) and consumer (the worker, measured there)
              const proxyCpu = process.cpuUsage(cpu0.proxy)
              const cpu = { provider: processCpuMs(provider.child.pid) - cpu0.provider, proxy: (proxyCpu.user + proxyCpu.system) / 1000, consumer: measured.cpuMs }
              const floorNow = raw.pages * latency + serve.ms
              const cpuFloor = cpuFloorOf(cpu)
              const kinds = { ...proxy.state.kinds }
              if (process.env.BENCH_TIMELINE === '1') console.log(`    copy, first requests: ${proxy.state.timeline.slice(0, 16).map(e => `${e.kind} ${fixed(e.at)}→${fixed(e.forwarded)}→${fixed(e.ended)}`).join(', ')}`)
              ;(cells[parallel] ??= []).push({ ...measured, cpu, cpuFloor, kinds, floor: floorNow, requests: proxy.state.requests, maxInFlight: proxy.state.maxInFlight })
              console.log(`  N=${n} ${latency} ms round ${r + 1}: parallel ${parallel} ${fixed(measured.ms)} ms (floor this round ${fixed(floorNow)} ms: ×${fixed(measured.ms / floorNow, 2)}; CPU floor ${fixed(cpuFloor)} ms: copy ×${fixed(measured.ms / cpuFloor, 2)} of it), CPU provider ${fixed(cpu.provider)} / consumer ${fixed(cpu.consumer)} / proxy ${fixed(cpu.proxy)} ms (per page ${fixed(cpu.provider / raw.pages, 2)} / ${fixed(cpu.consumer / raw.pages, 2)}), peak RSS ${fixed(measured.rssMB, 1)} MB (heap peak +${fixed(measured.heapMB, 1)} MB, retained after GC ${fixed(measured.retainedMB, 1)} MB), ${proxy.state.requests} requests (${kinds.count} count + ${kinds.sample} samples + ${kinds.page} pages, ${kinds.empty} of them empty${kinds.sample ? `; slowest sample ${fixed(proxy.state.sampleMs)} ms at the provider` : ''}), ≤ ${proxy.state.maxInFlight} in flight${measured.reduced ? `, ${measured.reduced}` : ''}${measured.levels ? `, ${measured.levels}` : ''}`)
              try {
                // the delta cells in the same consumer, after its copy (latency-delta.mjs)
                if (CELLS) {
                  const measuredCells = await measureCells({ session, proxy, provider, n, latency, parallel, columns: COLUMNS, quiet })
                  ;(cells[`cells${parallel}`] ??= []).push(measuredCells)
                  for (const [key, c] of Object.entries(measuredCells)) console.log(cellLine(n, latency, parallel, r + 1, key, c))
                }
              } finally {
                await session.close()
              }
              await rm(file, { force: true })
            }
          }
          const serve = median(cells.serve)
          const floor = cells.pages * latency + serve
          const row = { n, latency, pages: cells.pages, pageMB, serveMs: serve, floorMs: floor, rawMs: median(cells.raw), runs: {} }
          for (const parallel of parallels) {
            const runs = cells[parallel]
            // best of the rounds: the product's and the floor's time of the same round
            const best = runs.reduce((a, b) => (b.ms / b.floor < a.ms / a.floor ? b : a))
            row.runs[parallel] = {
              ms: median(runs.map(x => x.ms)), rssMB: median(runs.map(x => x.rssMB)), heapMB: median(runs.map(x => x.heapMB)), requests: median(runs.map(x => x.requests)),
              best: { ms: best.ms, floorMs: best.floor, ratio: best.ms / best.floor },
              cpu: { provider: median(runs.map(x => x.cpu.provider)), consumer: median(runs.map(x => x.cpu.consumer)), proxy: median(runs.map(x => x.cpu.proxy)) },
              cpuFloorMs: median(runs.map(x => x.cpuFloor)),
              kinds: runs.at(-1).kinds,
              maxInFlight: Math.max(...runs.map(x => x.maxInFlight)),
              cells: CELLS ? summarize(cells[`cells${parallel}`]) : undefined,
            }
          }
          results.push(row)
        }
      } finally {
        await proxy.close()
        await provider.stop()
      }
    }
  } finally {
    await rm(tmp, { recursive: true, force: true })
  }
  report(results, parallels)
}

/**
 * BENCH_WATERMARK_INDEX=1: an index on the provider's (modifiedAt, ID), as a provider serving
 * deltas may have; without it every delta page, boundary sample and range scans and sorts the table.
 */
async function watermarkIndex(file) {
  const { DatabaseSync } = await import('node:sqlite')
  const db = new DatabaseSync(file)
  try { db.exec('CREATE INDEX bench_watermark ON provider_BenchItems (modifiedAt, ID)') } finally { db.close() }
}

/**
 * The CPU floor of one copy: with provider, consumer and proxy on this machine, a copy takes at
 * least the provider's CPU time (one Node process, one core), the consumer's, and all of it spread
 * over the cores — whatever the latency.
 */
function cpuFloorOf(cpu) {
  return Math.max(cpu.provider, cpu.consumer, (cpu.provider + cpu.consumer + cpu.proxy) / os.cpus().length)
}

/** One line per size, latency and `parallel`: the copy, its floors and the ratios, CPU, requests, memory. */
function table(results, parallels) {
  const header = ['N', 'latency', 'parallel', 'copy ms (median)', 'floor ms', 'copy ÷ floor', 'best round ÷ its floor', 'CPU floor ms', 'CPU floor ÷ floor', 'copy ÷ CPU floor', 'CPU/page ms provider / consumer', 'requests: count + samples + pages (empty)', 'in flight ≤', 'peak RSS MB (Δ p1)', 'heap peak MB (Δ p1)']
  const lines = [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`]
  for (const row of results) {
    for (const p of parallels) {
      const run = row.runs[p]
      const k = run.kinds
      const delta = p > 1 && row.runs[1] ? ` (${run.rssMB - row.runs[1].rssMB >= 0 ? '+' : ''}${fixed(run.rssMB - row.runs[1].rssMB, 1)})` : ''
      const heapDelta = p > 1 && row.runs[1] ? ` (${run.heapMB - row.runs[1].heapMB >= 0 ? '+' : ''}${fixed(run.heapMB - row.runs[1].heapMB, 1)})` : ''
      lines.push(`| ${[row.n, row.latency, p, fixed(run.ms), fixed(row.floorMs), fixed(run.ms / row.floorMs, 2), fixed(run.best.ratio, 2), fixed(run.cpuFloorMs), fixed(run.cpuFloorMs / row.floorMs, 2), fixed(run.ms / run.cpuFloorMs, 2), `${fixed(run.cpu.provider / row.pages, 2)} / ${fixed(run.cpu.consumer / row.pages, 2)}`, `${k.count} + ${k.sample} + ${k.page} (${k.empty})`, run.maxInFlight, `${fixed(run.rssMB, 1)}${delta}`, `${fixed(run.heapMB, 1)}${heapDelta}`].join(' | ')} |`)
    }
  }
  return lines.join('\n')
}

function report(results, parallels) {
  const checks = []
  for (const row of results) {
    const one = row.runs[1]
    for (const p of parallels.filter(x => x > 1)) {
      const run = row.runs[p]
      if (row.latency === 50) {
        checks.push([`N=${row.n} 50 ms parallel ${p}: copy / floor (best of the rounds, each against its own round's floor)`, run.best.ratio, `≤ ${TARGETS.at50}`, run.best.ratio <= TARGETS.at50])
        // what CPU alone allows: the provider's serving and the consumer's work, each at most one core, together at most all cores
        const cpuBound = Math.max(run.cpu.provider, run.cpu.consumer, (run.cpu.provider + run.cpu.consumer + run.cpu.proxy) / os.cpus().length)
        // against the floor an idle machine would measure: pages × latency + the provider's CPU for a sequential read
        // (other load inflates the measured serving time, not the CPU time)
        const idleFloor = one ? row.pages * row.latency + one.cpu.provider : row.floorMs
        checks.push([`N=${row.n} 50 ms parallel ${p}: CPU bound of this copy (max(provider CPU, consumer CPU, all CPU / ${os.cpus().length} cores) = ${fixed(cpuBound)} ms) / idle floor (pages × latency + provider CPU at parallel 1 = ${fixed(idleFloor)} ms)`, cpuBound / idleFloor, 'the lowest ratio this machine allows', true])
      }
      if (row.latency === 0 && one) checks.push([`N=${row.n} 0 ms parallel ${p}: copy / parallel 1`, run.ms / one.ms, `≤ ${TARGETS.at0}`, run.ms / one.ms <= TARGETS.at0])
      if (one) {
        const growth = run.rssMB - one.rssMB
        const allowed = p * row.pageMB
        checks.push([`N=${row.n} ${row.latency} ms parallel ${p}: peak RSS growth over parallel 1, MB (one page parsed: ${fixed(row.pageMB, 2)} MB)`, growth, `≤ ${fixed(allowed, 1)}`, growth <= allowed])
      }
      checks.push([`N=${row.n} ${row.latency} ms parallel ${p}: most requests in flight`, run.maxInFlight, `≤ ${p}`, run.maxInFlight <= p])
    }
  }
  console.log(`\n${table(results, parallels)}\n`)
  if (CELLS) {
    const cells = cellReport(results, parallels)
    console.log(`${cells.table}\n`)
    checks.push(...cells.checks)
  }
  for (const [what, value, target, ok] of checks) console.log(`${ok ? '✓' : '✗'} ${what}: ${fixed(value, 2)} (${target})`)
  return mkdir(path.dirname(RESULTS), { recursive: true }).then(() => writeFile(RESULTS, JSON.stringify({ date: new Date().toISOString(), results, checks }, null, 2)))
}

async function worker() {
  const o = JSON.parse(process.env.BENCH_OPTIONS)
  const cdsRequire = createRequire(path.join(CONSUMER_DIR, 'package.json'))
  const cds = cdsRequire('@sap/cds')
  cds.root = CONSUMER_DIR
  cds.env.requires.Provider.credentials = { url: `${o.providerUrl}/odata/v4/catalog` }
  cds.env.remote = { ...cds.env.remote, native_fetch: process.env.BENCH_NATIVE_FETCH !== '0' }
  await cds.exec('--port', '0')
  const engine = await cds.connect.to('data-pipeline')
  // delta mode by default (timestamp on the provider's modifiedAt): the copy is a full run, the cells delta runs
  await engine.addPipeline({ name: 'latency', parallel: o.parallel, source: { service: 'Provider', entity: SOURCE, batchSize: BATCH }, target: { entity: TARGET } })
  await engine.registry.prepare('latency')
  // the engine's log line of an automatic reduction (governor.ts), reported beside the figure
  let reduced
  const info = console.info
  console.info = (...args) => { const text = args.map(String).join(' '); if (text.includes('parallel reduced')) reduced = text.replace(/^.*parallel reduced/, 'reduced'); info(...args) }
  // the heap's peak during the copy (sampled): what the read holds, apart from V8's slack in RSS
  const heap0 = process.memoryUsage()
  const peak = { heap: 0 }
  // BENCH_LIVE_HEAP=1: the heap after a forced GC every 250 ms instead (what is live, not V8's slack; slows the copy)
  const live = process.env.BENCH_LIVE_HEAP === '1'
  const sampler = setInterval(() => {
    if (live) globalThis.gc?.()
    // v8's heap statistics only (process.memoryUsage() reads /proc: a cost the copy would pay)
    peak.heap = Math.max(peak.heap, v8.getHeapStatistics().used_heap_size - heap0.heapUsed)
  }, live ? 250 : 10)
  const t0 = now()
  const cpu0 = process.cpuUsage()
  const { done } = await engine.execute('latency', { mode: 'full' })
  const outcome = await done
  const ms = now() - t0
  const cpu = process.cpuUsage(cpu0)
  clearInterval(sampler)
  // what the copy left behind once collected (retained, not slack): should be ≈ 0 whatever `parallel`
  globalThis.gc?.()
  const retainedMB = (process.memoryUsage().heapUsed - heap0.heapUsed) / MB
  if (outcome.status !== 'completed' || outcome.statistics.created !== o.n) throw new Error(`full run: ${outcome.status} ${JSON.stringify(outcome.statistics)}`)
  const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))
  process.send({ type: 'result', result: { ms, cpuMs: (cpu.user + cpu.system) / 1000, reduced, heapMB: peak.heap / MB, retainedMB, rssMB: match ? Number(match[1]) / 1024 : process.memoryUsage().rss / MB } })
  // the delta cells' runs, one per request of the main process, until it closes this worker
  serveRequests(cellRunner(cds, engine, 'latency'))
}
