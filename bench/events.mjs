#!/usr/bin/env node
/**
 * Event-driven replication benchmark (issue 23; never part of `npm test`): a provider CAP app with
 * `@federation.emit` (test/fixtures/emit-provider) and consumer instances replicating its orders
 * (test/fixtures/emit-consumer, pipeline with `events: 'messaging'` and a delta on modifiedAt), each
 * in its own process, on CAP's redis-messaging and the real Redis (127.0.0.1:6379, a topic prefix
 * of their own).
 *
 * Phases, each with a fresh provider (file SQLite, seeded with BENCH_EVENTS_ROWS orders written
 * straight into its database) and fresh consumers (a full copy first, then the clock starts):
 *   rate <r>   one consumer on a SQLite file; a driver changes r orders per second for
 *              BENCH_EVENTS_SECONDS (one provider request per 50 ms tick: one UPDATE per order, or with
 *              BENCH_EVENTS_WRITE=bulk one UPSERT of the tick's orders, through the service so that
 *              `@federation.emit` announces them — one message per request's transaction; orders
 *              round-robin over the seeded ones). Latency of a change:
 *              from the driver's answer (the change committed) until the consumer's replica holds that
 *              change or a later one (a poller process of its own reads the replica every 20 ms for the orders
 *              it waits for, so figures carry up to ~20 ms of polling and the consumer's CPU is its own);
 *              p50/p95 over all changes. Provider
 *              requests per change: the provider's requests other than the driver's, over the changes.
 *   drop       as `rate`, at BENCH_EVENTS_DROP_RATE, the provider dropping every 20th message (5%):
 *              changes missing once the events settled, then after one safety-net delta run.
 *   pg 1 / 3   one and three consumer instances on one PostgreSQL database at BENCH_EVENTS_PG_RATE:
 *              provider requests per change (three instances each receive every message), and their
 *              ratio (three over one; with BENCH_EVENTS_REPEAT the median requests per change of the runs,
 *              each run with fresh processes and a fresh database).
 *
 * Environment: BENCH_EVENTS_SECONDS=60, BENCH_EVENTS_RATES=10,100,1000, BENCH_EVENTS_ROWS=20000,
 * BENCH_EVENTS_DROP_RATE=100 (0: skip the drop phase), BENCH_EVENTS_PG_RATE=100, BENCH_EVENTS_PG=0 (skip PostgreSQL), BENCH_EVENTS_PG_ONE=0 (skip its one-instance phase),
 * BENCH_EVENTS_WINDOW (the consumer's events.window, default the plugin's), BENCH_VERBOSE=1,
 * BENCH_EVENTS_QUEUE_CHUNK=500 (the provider's cds.requires.queue.chunkSize; CAP's default is 10),
 * BENCH_EVENTS_CONSUMER_QUEUED=1 (the consumers' messaging queued, CAP's default for redis-messaging; without it
 * `outboxed: false`, as the README recommends: messages handled as received),
 * BENCH_EVENTS_SOURCE=emit|direct (who publishes: the provider's `@federation.emit` through CAP's outbox, or the
 * provider by hand after its commit without an outbox, as S/4HANA publishes: the consumer's path alone),
 * BENCH_EVENTS_PROVIDER_SYNC=NORMAL (the provider's SQLite `synchronous`; FULL: an fsync per commit),
 * BENCH_EVENTS_REPEAT=1 (runs per phase; the table shows the median p50/p95 of the runs),
 * BENCH_EVENTS_PROFILE=<dir> (V8 CPU profiles of the provider and the consumers),
 * BENCH_EVENTS_OFF=1 (the control: consumers without `events`, so nothing arrives but by the delta run),
 * BENCH_EVENTS_FLOOR_SECONDS=5 (with BENCH_EVENTS_WRITE=each: first the provider's own rate of single UPDATEs through its
 * service without @federation.emit and without consumers, the floor of the "one UPDATE per change" phases; 0: skip),
 * BENCH_EVENTS_WRITE=each|bulk (see `rate`), BENCH_EVENTS_KEYS_PER_MESSAGE (the provider's `emit.keysPerMessage`;
 * 1: a message per changed row), BENCH_EVENTS_BUSY=n (n CPU-bound processes, `node -e 'for(;;);'`, beside every
 * phase: the figures of a loaded machine).
 * Provider requests, one vs three instances (issue 37): BENCH_EVENTS_RATES= BENCH_EVENTS_DROP_RATE=0
 * BENCH_EVENTS_PG_RATE=300 BENCH_EVENTS_SECONDS=30 BENCH_EVENTS_REPEAT=3 [BENCH_EVENTS_BUSY=2] node bench/events.mjs
 * Output: a table, and bench/results/latest.json (key `events`): per phase also the CPU per change of the
 * provider, the consumers, the driver and the replica poller, and where the first consumer's lag builds up
 * (`consumer`: store, wait, fetch, apply — see instrument()).
 */
import { fork, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { createPgDatabase, deployApp, dropPgDatabase, postgresConfig, processCpuMs, startChild } from './helpers.mjs'

const SELF = fileURLToPath(import.meta.url)
const HERE = path.dirname(SELF)
const ROOT = path.resolve(HERE, '..')
const RESULTS = path.join(HERE, 'results', 'latest.json')
const PROVIDER_DIR = path.join(ROOT, 'test/fixtures/emit-provider')
const CONSUMER_DIR = path.join(ROOT, 'test/fixtures/emit-consumer')
const PIPELINE = 'orders'
const TICK = 50
const POLL = 20
const DROP_EVERY = 20

const env = (name, fallback) => process.env[name] ?? fallback
const SECONDS = Number(env('BENCH_EVENTS_SECONDS', 60))
const RATES = env('BENCH_EVENTS_RATES', '10,100,1000').split(',').map(Number).filter(Boolean)
const ROWS = Number(env('BENCH_EVENTS_ROWS', 20_000))
const DROP_RATE = Number(env('BENCH_EVENTS_DROP_RATE', 100))
const PG_RATE = Number(env('BENCH_EVENTS_PG_RATE', 100))
const WINDOW = process.env.BENCH_EVENTS_WINDOW
/** Whether the consumers' messaging service is queued as CAP's default makes redis-messaging (`outboxed: true`: every received message is first written to CAP's queue table, a connection and a commit each); by default `outboxed: false`, as the README recommends. */
const CONSUMER_QUEUED = env('BENCH_EVENTS_CONSUMER_QUEUED', '0') === '1'
/** CAP's `cds.requires.queue.chunkSize` on the provider: messages its outbox sends per round (CAP's default 10 caps a provider at a few hundred messages per second). */
const QUEUE_CHUNK = Number(env('BENCH_EVENTS_QUEUE_CHUNK', 500))
/** A folder for V8 CPU profiles (`--cpu-prof`) of the provider and the consumers, to see where the time goes. */
const PROFILE = process.env.BENCH_EVENTS_PROFILE ? path.resolve(process.env.BENCH_EVENTS_PROFILE) : undefined
const profileArgs = PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE}`] : []
/** The provider's SQLite `synchronous` (NORMAL: no fsync per commit; FULL: SQLite's default, the provider's disk then limits it). */
const PROVIDER_SYNC = env('BENCH_EVENTS_PROVIDER_SYNC', 'NORMAL')
/** Who publishes the changes: `emit` (the provider's `@federation.emit` through CAP's outbox) or `direct` (the provider publishes after its commit, without an outbox, as S/4HANA does: the consumer's path alone). */
const SOURCE = env('BENCH_EVENTS_SOURCE', 'emit')
const REPEAT = Math.max(1, Number(env('BENCH_EVENTS_REPEAT', 1)))
/** How the provider writes a tick's changes: `each` (one UPDATE per order through the service) or `bulk` (one UPSERT of the tick's orders through the service). */
const WRITE = env('BENCH_EVENTS_WRITE', 'each')
/** The provider's `emit.keysPerMessage` (unset: the plugin's default; 1: one message per changed row, as before coalescing). */
const KEYS_PER_MESSAGE = process.env.BENCH_EVENTS_KEYS_PER_MESSAGE ? Number(process.env.BENCH_EVENTS_KEYS_PER_MESSAGE) : undefined
/** Seconds of the provider-floor measurement (0: skip it; it runs only with BENCH_EVENTS_WRITE=each). */
const FLOOR_SECONDS = Number(env('BENCH_EVENTS_FLOOR_SECONDS', 5))
/** CPU-bound processes beside every phase (a loaded machine). */
const BUSY = Number(env('BENCH_EVENTS_BUSY', 0))
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))
const quantile = (list, q) => { if (!list.length) return NaN; const s = [...list].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor(q * s.length))] }
const round = (x, d = 0) => (Number.isFinite(x) ? Number(x.toFixed(d)) : null)

if (process.argv[2] === '--worker') await worker()
else if (process.argv[2] === '--poller') await poller()
else await main()

// ---------------------------------------------------------------------------------------------
// orchestrator

async function main() {
  console.log(`cap-data-pipeline events bench — node ${process.version}, ${os.cpus().length} CPUs, ${ROWS} orders, ${SECONDS} s per phase, Redis messaging, changes published by ${SOURCE === "direct" ? "the provider after its commit (no outbox)" : "@federation.emit (CAP outbox)"}, written ${WRITE === 'bulk' ? 'as one UPSERT per tick' : 'one UPDATE per change'}${BUSY ? `, ${BUSY} CPU-bound processes beside it` : ''}`)
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'bench-events-'))
  const result = { seconds: SECONDS, rows: ROWS, cores: os.cpus().length, queueChunkSize: QUEUE_CHUNK, busy: BUSY, rates: [] }
  try {
    if (WRITE === 'each' && FLOOR_SECONDS > 0 && RATES.length) result.providerFloor = await providerFloor(tmp)
    for (const rate of RATES) {
      const phase = await repeated({ tmp, label: `rate ${rate}/s`, rate, db: 'sqlite' })
      result.rates.push(phase)
    }
    if (DROP_RATE) result.drop = await repeated({ tmp, label: `5% dropped at ${DROP_RATE}/s`, rate: DROP_RATE, db: 'sqlite', dropEvery: DROP_EVERY })
    if (env('BENCH_EVENTS_PG', '1') !== '0') {
      // one and three instances in turns, so that a machine whose load drifts weighs on both alike
      const withOne = env('BENCH_EVENTS_PG_ONE', '1') !== '0'
      const runs = { one: [], three: [] }
      for (let i = 0; i < REPEAT; i++) {
        if (withOne) runs.one.push(await measure({ tmp, label: `PostgreSQL, 1 instance, ${PG_RATE}/s`, rate: PG_RATE, db: 'postgres', instances: 1 }))
        runs.three.push(await measure({ tmp, label: `PostgreSQL, 3 instances, ${PG_RATE}/s`, rate: PG_RATE, db: 'postgres', instances: 3 }))
      }
      result.postgres = { one: withOne ? summarize(runs.one) : undefined, three: summarize(runs.three) }
      const { one, three } = result.postgres
      if (one) result.postgres.ratio = round(three.requestsPerChange / one.requestsPerChange, 2)
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true })
  }
  report(result)
  await mkdir(path.dirname(RESULTS), { recursive: true })
  const previous = await readFile(RESULTS, 'utf8').then(JSON.parse, () => ({}))
  await writeFile(RESULTS, JSON.stringify({ ...previous, events: { date: new Date().toISOString(), ...result } }, null, 2))
}

function report(result) {
  const check = ok => (ok === true ? '✓' : '✗')
  console.log('\nchange → replica latency (Redis, provider and consumer in separate processes)')
  if (result.providerFloor) console.log(`  one UPDATE per change: the provider's own write path caps at ${result.providerFloor.updatesPerSecond}/s on this machine (single UPDATEs through its service, no @federation.emit, no consumers)`)
  for (const r of result.rates) {
    const target = r.rate >= 1000 ? 2000 : r.rate >= 100 ? 1000 : undefined
    const requestsTarget = r.rate >= 1000 ? ` ${check(r.requestsPerChange <= 0.05)} (≤ 0.05)` : ''
    console.log(`  ${String(r.rate).padStart(5)}/s (achieved ${r.achievedRate}/s): p50 ${r.p50} ms, p95 ${r.p95} ms${target ? ` ${check(r.p95 !== null && r.p95 <= target)} (p95 ≤ ${target})` : ''}; ${r.requestsPerChange} provider requests per change${requestsTarget}; ${r.lost} lost`)
    console.log(`         change → received p50/p95 ${r.receivedP50}/${r.receivedP95} ms, → applied ${r.appliedP50}/${r.appliedP95} ms; CPU per change provider ${r.providerCpuPerChange} ms, consumer ${r.consumerCpuPerChange} ms, driver ${r.driverCpuPerChange} ms, poller ${r.pollerCpuPerChange} ms`)
    if (r.consumer) console.log(`         consumer stages p50/p95 (ms): ${Object.entries(r.consumer).map(([k, v]) => `${k} ${v.p50}/${v.p95}${v.n !== undefined ? ` (n ${v.n})` : ''}`).join(', ')}`)
  }
  if (result.drop) {
    const d = result.drop
    console.log(`  5% dropped (${d.dropped} of ${d.emitted} messages): ${d.missingBeforeDelta} changes missing after the events, ${d.missingAfterDelta} after one delta run ${check(d.missingAfterDelta === 0)}`)
  }
  if (result.postgres) {
    const { one = {}, three, ratio } = result.postgres
    console.log(`  PostgreSQL ${PG_RATE}/s: provider requests per change 1 instance ${one.requestsPerChange}, 3 instances ${three.requestsPerChange} ${check(three.requestsPerChange <= one.requestsPerChange)}; keys applied per change ${one.keysAppliedPerChange} / ${three.keysAppliedPerChange}; p95 ${one.p95} / ${three.p95} ms; ${one.lost} / ${three.lost} lost`)
    if (ratio !== undefined) {
      const runs = phase => (phase.runs ?? [phase]).map(r => `${r.providerRequests} for ${r.changes}`).join(', ')
      console.log(`  provider requests: 1 instance ${runs(one)}; 3 instances ${runs(three)} → 3 over 1 (median requests per change) ${ratio} ${check(ratio <= 1.2)} (≤ 1.2)`)
    }
  }
}

/** A phase REPEAT times (see summarize). */
async function repeated(options) {
  const runs = []
  for (let i = 0; i < REPEAT; i++) runs.push(await measure(options))
  return summarize(runs)
}

/** The runs of a phase: the run with the median p95, with the medians over the runs (each run's under `runs`). */
function summarize(runs) {
  if (runs.length === 1) return runs[0]
  // the median of an odd number of runs (the upper one of an even number)
  const median = key => quantile(runs.map(r => r[key]).filter(Number.isFinite), 0.5)
  const byP95 = [...runs].sort((a, b) => a.p95 - b.p95)
  return {
    ...byP95[Math.floor((runs.length - 1) / 2)], p50: median('p50'), p95: median('p95'), lost: Math.max(...runs.map(r => r.lost)),
    requestsPerChange: median('requestsPerChange'), providerRequests: median('providerRequests'),
    runs: runs.map(({ p50, p95, lost, achievedRate, changes, providerRequests, requestsPerChange }) => ({ p50, p95, lost, achievedRate, changes, providerRequests, requestsPerChange })),
  }
}

/** n CPU-bound processes (ended by the returned function). */
function cpuHogs(n) {
  const hogs = Array.from({ length: n }, () => spawn(process.execPath, ['-e', 'for(;;);'], { stdio: 'ignore' }))
  return () => { for (const hog of hogs) hog.kill('SIGKILL') }
}

/** One phase: fresh provider and consumers, the full copy, then `rate` changes per second for SECONDS. */
async function measure(options) {
  const stopHogs = cpuHogs(BUSY)
  try {
    return await measureOnce(options)
  } finally {
    stopHogs()
  }
}

async function measureOnce({ tmp, label, rate, db, instances = 1, dropEvery = 0 }) {
  console.log(`${label} …`)
  const prefix = `bench-events-${process.pid}-${Math.random().toString(36).slice(2, 8)}/`
  const messaging = { kind: 'redis-messaging', publishPrefix: prefix, subscribePrefix: prefix }
  // no log line per message or request: at a thousand per second the logging would be measured
  const log = { levels: { 'redis-messaging': 'warn', messaging: 'warn', odata: 'warn', remote: 'warn' } }
  const provider = await startEmitProvider(tmp, log, messaging, dropEvery)
  const consumerDb = await consumerDatabase(tmp, db)
  const workers = []
  let watcher
  try {
    await post(provider.url, '/odata/v4/provider/seed', { count: ROWS })
    const config = { log, requires: { db: consumerDb.config, messaging: CONSUMER_QUEUED ? messaging : { ...messaging, outboxed: false }, ProviderService: { credentials: { url: `${provider.url}/odata/v4/provider` } } }, ...(db === 'postgres' ? { sql: { dialect: 'postgres' } } : {}) }
    for (let i = 0; i < instances; i++) workers.push(await startWorker({ config, fullCopy: i === 0, expected: ROWS }))
    await post(provider.url, '/control/reset', {})

    watcher = await startPoller(consumerDb.config)
    const driverCpuMs = () => { const { user, system } = process.cpuUsage(); return (user + system) / 1000 }
    const cpu = () => [processCpuMs(provider.child.pid), workers.reduce((sum, w) => sum + (processCpuMs(w.pid) ?? 0), 0), driverCpuMs(), processCpuMs(watcher.pid) ?? 0]
    const [providerCpu, consumerCpu, driverCpu, pollerCpu] = cpu()
    const { changes, achievedRate, failedChanges } = await drive(provider.url, rate, watcher, provider)
    const settled = await settle(watcher, workers[0], changes, dropEvery ? 5_000 : 30_000)
    const [providerCpuAfter, consumerCpuAfter, driverCpuAfter, pollerCpuAfter] = cpu()
    const lags = await workers[0].ask({ type: 'lags' })
    // keys every instance's micro-batches took: one per change at most (a key changed twice in a window is taken once)
    const keysTaken = (await Promise.all(workers.map(w => w.ask({ type: 'lags' })))).reduce((sum, l) => sum + (l.stages.batch?.total ?? 0), 0)
    const stats = await (await fetch(`${provider.url}/control/stats`)).json()
    const latencies = changes.filter(c => c.arrived).map(c => c.arrived - c.committed)
    const phase = {
      rate, achievedRate, changes: changes.length, failedChanges, instances, db, source: SOURCE, write: WRITE,
      p50: round(quantile(latencies, 0.5)), p95: round(quantile(latencies, 0.95)), max: round(Math.max(...latencies)),
      requestsPerChange: round(stats.requests / changes.length, 4), providerRequests: stats.requests,
      keysAppliedPerChange: round(keysTaken / changes.length, 3),
      emitted: stats.emitted, dropped: stats.dropped, lost: settled.missing,
      // CPU time per change (ms; consumers summed): what a change costs each side, whatever else runs on the machine
      // where the lag goes (first instance): change → message received (the provider's outbox and Redis), and change → key applied (the plugin's own statistics)
      receivedP50: lags.received.p50, receivedP95: lags.received.p95, appliedP50: lags.applied?.p50 ?? null, appliedP95: lags.applied?.p95 ?? null,
      providerCpuPerChange: round((providerCpuAfter - providerCpu) / changes.length, 3),
      consumerCpuPerChange: round((consumerCpuAfter - consumerCpu) / changes.length, 3),
      // the bench's own processes: the driver (this one, with the settle loop) and the replica poller
      driverCpuPerChange: round((driverCpuAfter - driverCpu) / changes.length, 3),
      pollerCpuPerChange: round((pollerCpuAfter - pollerCpu) / changes.length, 3),
      // where the consumer's lag builds up (first instance; ms): the key store's write, the wait of a stored key for its micro-batch, a batch's fetch and apply
      consumer: lags.stages,
    }
    if (dropEvery) {
      phase.missingBeforeDelta = settled.missing
      await workers[0].ask({ type: 'delta' })
      phase.missingAfterDelta = (await missing(workers[0], changes)).length
      phase.lost = phase.missingAfterDelta
    }
    console.log(`  ${JSON.stringify(phase)}`)
    return phase
  } finally {
    await watcher?.stop()
    for (const w of workers) await w.stop()
    await provider.stop()
    await consumerDb.drop()
  }
}

/** The provider (test/fixtures/emit-provider) on a fresh file SQLite, seeded by the caller. */
async function startEmitProvider(tmp, log, messaging, dropEvery = 0) {
  const providerDb = { kind: 'sqlite', credentials: { url: path.join(tmp, `provider-${Date.now()}.sqlite`) } }
  await deployApp(PROVIDER_DIR, { CDS_CONFIG: JSON.stringify({ requires: { db: providerDb } }) })
  return startChild([...profileArgs, createRequire(import.meta.url).resolve('@sap/cds/bin/serve.js'), '--port', '0'], {
    cwd: PROVIDER_DIR,
    env: { ...process.env, NODE_ENV: 'test', CDS_ENV: '', EMIT_DROP_EVERY: String(dropEvery), EMIT_SQLITE_SYNCHRONOUS: PROVIDER_SYNC, CDS_CONFIG: JSON.stringify({ log, requires: { db: providerDb, messaging, queue: { chunkSize: QUEUE_CHUNK }, ...(KEYS_PER_MESSAGE ? { 'data-pipeline': { emit: { keysPerMessage: KEYS_PER_MESSAGE } } } : {}) } }) },
    ready: /server listening on \{ url: '([^']+)'/,
    name: 'emit-provider',
  })
}

/**
 * The floor of the "one UPDATE per change" phases: the provider's own rate of single UPDATEs
 * through its service, on an entity without `@federation.emit` and with no consumer running —
 * requests of a 1,000/s tick's size (50 UPDATEs), as many in flight as the driver allows (8),
 * for FLOOR_SECONDS. No event path can deliver changes faster than the provider writes them.
 */
async function providerFloor(tmp) {
  console.log('provider floor (one UPDATE per change through the service, no @federation.emit, no consumers) …')
  const log = { levels: { 'redis-messaging': 'warn', messaging: 'warn', odata: 'warn', remote: 'warn' } }
  const messaging = { kind: 'redis-messaging', publishPrefix: `bench-events-floor-${process.pid}/`, subscribePrefix: `bench-events-floor-${process.pid}/` }
  const provider = await startEmitProvider(tmp, log, messaging)
  try {
    await post(provider.url, '/odata/v4/provider/seed', { count: ROWS })
    const perRequest = 50
    let next = 0, written = 0
    const started = Date.now()
    const lane = async () => {
      while (Date.now() - started < FLOOR_SECONDS * 1000) {
        const IDs = Array.from({ length: perRequest }, () => (next++ % ROWS) + 1)
        await post(provider.url, '/odata/v4/provider/touchPlain', { IDs, from: next })
        written += perRequest
      }
    }
    await Promise.all(Array.from({ length: 8 }, lane))
    const rate = round(written / ((Date.now() - started) / 1000))
    console.log(`  ${rate} UPDATEs/s`)
    return { updatesPerSecond: rate, seconds: FLOOR_SECONDS, perRequest, inFlight: 8 }
  } finally {
    await provider.stop()
  }
}

async function consumerDatabase(tmp, kind) {
  if (kind === 'sqlite') {
    const config = { kind: 'sqlite', credentials: { url: path.join(tmp, `consumer-${Date.now()}.sqlite`) } }
    await deployApp(CONSUMER_DIR, { CDS_CONFIG: JSON.stringify({ requires: { db: config } }) })
    return { config, drop: async () => {} }
  }
  const name = await createPgDatabase(`bench_events_${process.pid}_${Math.random().toString(36).slice(2, 8)}`)
  const config = postgresConfig(name)
  await deployApp(CONSUMER_DIR, { CDS_CONFIG: JSON.stringify({ requires: { db: config }, sql: { dialect: 'postgres' } }) })
  return { config, drop: () => dropPgDatabase(name) }
}

async function post(base, url, data) {
  const response = await fetch(`${base}${url}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(data) })
  if (!response.ok) throw new Error(`POST ${url}: ${response.status} ${await response.text()}`)
}

/**
 * The driver: every TICK ms one provider request changing rate·TICK/1000 orders (fractions carried
 * over), without waiting for the previous tick (at most 8 in flight); every change remembered with
 * the time its request answered, and handed to the consumers' pollers.
 */
async function drive(base, rate, watcher, provider) {
  const changes = []
  let seq = 1, next = 0, due = 0, inFlight = 0, last = Date.now(), failed = 0
  const started = Date.now()
  const ticks = []
  for (let tick = 0; Date.now() - started < SECONDS * 1000; tick++) {
    const wait = started + tick * TICK - Date.now()
    if (wait > 0) await sleep(wait)
    due += (rate * TICK) / 1000
    const n = Math.floor(due)
    if (!n || inFlight >= 8) continue
    due -= n
    const IDs = Array.from({ length: n }, () => (next++ % ROWS) + 1)
    const from = seq
    seq += n
    inFlight++
    ticks.push(post(base, SOURCE === 'direct' ? '/control/touch' : WRITE === 'bulk' ? '/odata/v4/provider/touchBulk' : '/odata/v4/provider/touch', { IDs, from }).catch(error => {
      failed += IDs.length // not expected: the driver does not know whether they committed
      if (failed === IDs.length) console.error(`  a change request failed: ${error.cause?.message ?? error.message}; the provider's last output:\n${provider?.log().slice(-3000)}`)
      throw Object.assign(error, { counted: true })
    }).then(() => {
      const committed = Date.now()
      last = committed
      const batch = IDs.map((ID, i) => ({ ID, seq: from + i, committed }))
      changes.push(...batch)
      watcher.expect(batch)
    }).finally(() => { inFlight-- }).catch(() => {})) // counted in `failed`; never an unhandled rejection before allSettled
  }
  await Promise.allSettled(ticks)
  const elapsed = (last - started) / 1000
  // a failed request's changes are not expected (a replica at or past a change counts it as present either way)
  return { changes, achievedRate: round(changes.length / elapsed), failedChanges: failed }
}

/** Waits until every change arrived (or nothing arrived for `idle` ms); the changes still missing. */
async function settle(watcher, consumer, changes, idle) {
  const deadline = Date.now() + 120_000
  const bySeq = new Map(changes.map(c => [c.seq, c]))
  let count = -1, since = Date.now()
  for (;;) {
    for (const [seq, at] of watcher.arrivals.splice(0)) { const c = bySeq.get(seq); if (c && !c.arrived) c.arrived = at }
    const arrived = changes.filter(c => c.arrived).length
    if (arrived === changes.length) break
    if (arrived !== count) { count = arrived; since = Date.now() }
    if (Date.now() - since > idle || Date.now() > deadline) break
    await sleep(100)
  }
  return { missing: (await missing(consumer, changes)).length }
}

/** Changes whose order's replica row holds neither them nor a later change. */
async function missing(worker, changes) {
  const rows = new Map((await worker.ask({ type: 'rows' })).map(r => [r.ID, r.seq ?? 0]))
  const last = new Map()
  for (const c of changes) last.set(c.ID, Math.max(last.get(c.ID) ?? 0, c.seq))
  return [...last].filter(([ID, seq]) => (rows.get(ID) ?? 0) < seq)
}

/** A consumer instance in its own process. */
function startWorker(options) {
  const child = fork(SELF, ['--worker'], {
    cwd: CONSUMER_DIR,
    execArgv: ['--disable-warning=ExperimentalWarning', ...profileArgs],
    env: { ...process.env, NODE_ENV: 'test', CDS_ENV: '', CDS_CONFIG: JSON.stringify(options.config), BENCH_OPTIONS: JSON.stringify({ ...options, config: undefined }) },
    stdio: ['ignore', process.env.BENCH_VERBOSE ? 'inherit' : 'ignore', 'inherit', 'ipc'],
  })
  const exited = new Promise(resolve => child.on('exit', resolve))
  const answers = new Map()
  let asked = 0
  return new Promise((resolve, reject) => {
    child.on('message', message => {
      if (message.type === 'answer') { answers.get(message.id)?.(message.value); answers.delete(message.id) }
      if (message.type === 'failed') reject(new Error(`consumer: ${message.message}`))
      if (message.type !== 'ready') return
      resolve({
        pid: child.pid,
        ask: question => new Promise(answer => { const id = ++asked; answers.set(id, answer); child.send({ ...question, id }) }),
        stop: async () => { stopping = true; if (child.connected) child.send({ type: 'stop' }); await exited },
      })
    })
    let stopping = false
    child.on('exit', (code, signal) => {
      if (!stopping) console.error(`  consumer ${child.pid} exited unexpectedly (${signal ?? code})`)
      reject(new Error(`consumer exited with ${signal ?? code}`))
    })
  })
}

// ---------------------------------------------------------------------------------------------
// consumer worker (in test/fixtures/emit-consumer)

async function worker() {
  const { fullCopy, expected } = JSON.parse(process.env.BENCH_OPTIONS)
  const cds = createRequire(path.join(CONSUMER_DIR, 'package.json'))('@sap/cds')
  const { SELECT } = cds.ql
  try {
    const { server } = await cds.exec('--port', '0')
    const engine = await cds.connect.to('data-pipeline')
    const events = WINDOW ? { service: 'messaging', window: WINDOW } : 'messaging'
    await engine.addPipeline({
      name: PIPELINE,
      source: { service: 'ProviderService', entity: 'Orders' },
      target: { entity: 'emitconsumer.Orders' },
      delta: { field: 'modifiedAt' },
      ...(process.env.BENCH_EVENTS_OFF === '1' ? {} : { events }),
    })
    if (fullCopy) {
      const outcome = await (await engine.execute(PIPELINE, { mode: 'full' })).done
      if (outcome.status !== 'completed') throw new Error(`full copy: ${outcome.status}`)
    } else {
      // the first instance copies; the others start once the replica is complete
      const until = Date.now() + 120_000
      while ((await cds.run(SELECT.one.from('emitconsumer.Orders').columns('count(1) as n'))).n < expected) {
        if (Date.now() > until) throw new Error('the full copy did not arrive')
        await sleep(200)
      }
    }
    const stages = instrument(engine, await engine.registry.prepare(PIPELINE))
    // change time (the message's `time` header) → receipt, per inbound message
    const received = []
    const messaging = await cds.connect.to('messaging')
    const handle = messaging.handle
    messaging.handle = function (msg) {
      if (msg.inbound && msg.headers?.time) received.push(Date.now() - Date.parse(msg.headers.time))
      return handle.call(this, msg)
    }
    process.on('message', async message => {
      if (message.type === 'lags') {
        received.sort((a, b) => a - b)
        const at = q => received[Math.min(received.length - 1, Math.floor(q * received.length))] ?? null
        process.send({ type: 'answer', id: message.id, value: { received: { p50: at(0.5), p95: at(0.95) }, applied: engine.eventReplication?.stats.percentiles(PIPELINE), stages: stages() } })
      }
      if (message.type === 'rows') process.send({ type: 'answer', id: message.id, value: await cds.run(SELECT.from('emitconsumer.Orders').columns('ID', 'seq')) })
      if (message.type === 'delta') {
        const outcome = await (await engine.execute(PIPELINE, { mode: 'delta' })).done
        process.send({ type: 'answer', id: message.id, value: outcome.status })
      }
      if (message.type === 'stop') {
        await new Promise(resolve => server.close(resolve))
        process.exit(0)
      }
    })
    process.send({ type: 'ready' })
  } catch (error) {
    process.send({ type: 'failed', message: error.stack ?? String(error) })
    process.exit(1)
  }
}

/**
 * Timings of the consumer's stages, by wrapping the plugin's key store and the pipeline's source
 * (instance methods; nothing of the plugin changes): `store` a message's keys from receipt until
 * stored (gathering + write), `wait` a stored key until its micro-batch takes it (window, a drain
 * under way), `fetch` a batch's key-list reads, `apply` a batch from taking its keys to its commit
 * (guard, fetch, map, write, removal), `batch` keys per micro-batch.
 */
function instrument(engine, prepared) {
  const series = { store: [], wait: [], fetch: [], apply: [], batch: [] }
  const keys = engine.eventReplication.keys
  const storedAt = new Map()
  const put = keys.put.bind(keys)
  keys.put = async (pipeline, list, ...rest) => {
    const start = Date.now()
    await put(pipeline, list, ...rest)
    const now = Date.now()
    series.store.push(now - start)
    for (const { key } of list) storedAt.set(JSON.stringify(key), now)
  }
  const take = keys.take.bind(keys)
  keys.take = async (...args) => {
    const rows = await take(...args)
    const now = Date.now()
    for (const row of rows) { const at = storedAt.get(row.recordKey); if (at !== undefined) { series.wait.push(now - at); storedAt.delete(row.recordKey) } }
    if (rows.length) series.batch.push(rows.length)
    rows.takenAt = now
    return rows
  }
  const remove = keys.remove.bind(keys)
  keys.remove = async (pipeline, rows, tx) => {
    await remove(pipeline, rows, tx)
    if (rows.takenAt) series.apply.push(Date.now() - rows.takenAt)
  }
  const readWhere = prepared.source.readWhere.bind(prepared.source)
  prepared.source.readWhere = async (...args) => {
    const start = Date.now()
    try { return await readWhere(...args) } finally { series.fetch.push(Date.now() - start) }
  }
  return () => Object.fromEntries(Object.entries(series).map(([name, list]) => [name, { p50: round(quantile(list, 0.5)), p95: round(quantile(list, 0.95)), n: list.length, ...(name === 'batch' ? { total: list.reduce((a, b) => a + b, 0) } : {}) }]))
}

// ---------------------------------------------------------------------------------------------
// replica poller: its own process, so its reads (synchronous with SQLite) never take the consumer's time

/** The poller of a phase; `arrivals`: [seq, time] of changes the replica showed. */
function startPoller(db) {
  const child = fork(SELF, ['--poller'], { cwd: CONSUMER_DIR, execArgv: ['--disable-warning=ExperimentalWarning'], env: { ...process.env, BENCH_DB: JSON.stringify(db) }, stdio: ['ignore', 'ignore', 'inherit', 'ipc'] })
  const exited = new Promise(resolve => child.on('exit', resolve))
  const arrivals = []
  child.on('message', message => { if (message.type === 'arrived') arrivals.push(...message.arrivals) })
  return new Promise((resolve, reject) => {
    child.once('message', () => resolve({
      pid: child.pid,
      arrivals,
      expect: batch => { if (child.connected) child.send({ type: 'expect', batch: batch.map(c => [c.ID, c.seq]) }) },
      stop: async () => { if (child.connected) child.send({ type: 'stop' }); await exited },
    }))
    child.once('exit', code => reject(new Error(`the replica poller exited with ${code}`)))
  })
}

async function poller() {
  const waiting = new Map() // ID → the change numbers expected for it
  const read = replicaReader(JSON.parse(process.env.BENCH_DB))
  const poll = setInterval(() => { pollOnce(read, waiting).catch(error => console.error('poll failed', error)) }, POLL)
  process.on('message', message => {
    if (message.type === 'expect') for (const [ID, seq] of message.batch) { const list = waiting.get(ID); if (list) list.push(seq); else waiting.set(ID, [seq]) }
    if (message.type === 'stop') { clearInterval(poll); process.exit(0) }
  })
  process.send({ type: 'ready' })
}

/** Reads replica rows by ID over a connection of its own (not CAP's pool, which the consumer's work needs). */
function replicaReader(db) {
  const require = createRequire(path.join(CONSUMER_DIR, 'package.json'))
  if (db.kind === 'sqlite') {
    const { DatabaseSync } = require('node:sqlite')
    const connection = new DatabaseSync(db.credentials.url, { readOnly: true })
    const statements = new Map()
    return async IDs => {
      if (!statements.has(IDs.length)) statements.set(IDs.length, connection.prepare(`SELECT ID, seq FROM emitconsumer_Orders WHERE ID IN (${IDs.map(() => '?').join(',')})`))
      return statements.get(IDs.length).all(...IDs)
    }
  }
  const { Client } = require('pg')
  const client = new Client(db.credentials)
  const connected = client.connect()
  return async IDs => {
    await connected
    return (await client.query('SELECT id AS "ID", seq FROM emitconsumer_orders WHERE id = ANY($1)', [IDs])).rows
  }
}

let polling = false
/** Reads the replica rows of the orders with expected changes; reports each change that arrived. */
async function pollOnce(read, waiting) {
  if (polling || !waiting.size) return
  polling = true
  try {
    const IDs = [...waiting.keys()]
    const arrivals = []
    for (let i = 0; i < IDs.length; i += 500) {
      const rows = await read(IDs.slice(i, i + 500))
      const at = Date.now()
      for (const { ID, seq } of rows) {
        const pending = waiting.get(ID) ?? []
        const done = pending.filter(s => s <= (seq ?? 0))
        if (!done.length) continue
        for (const s of done) arrivals.push([s, at])
        const rest = pending.filter(s => s > (seq ?? 0))
        if (rest.length) waiting.set(ID, rest)
        else waiting.delete(ID)
      }
    }
    if (arrivals.length) process.send({ type: 'arrived', arrivals })
  } finally {
    polling = false
  }
}
