#!/usr/bin/env node
/**
 * Delta-token benchmark (issue 38 point 4, `npm run bench:delta-token`, part of `npm run bench`;
 * never part of `npm test`): after 1 % of a 1M-row source changed and 0.1 % was deleted, what
 * each way of catching up costs and what it leaves wrong —
 *
 *   token   `delta: { mode: 'odata-delta' }`: one GET of the stored delta link (+ its next links)
 *   stamp   `delta: { mode: 'timestamp', field: 'modifiedAt' }`: the rows with a newer modifiedAt
 *   sweep   the same timestamp delta with `deletes: { sweep: 'always' }`: + all source keys listed
 *   full    the timestamp pipeline run with `mode: 'full'`: a full copy
 *
 * per cell: provider requests (by kind, $metadata apart), rows the provider served (entity rows,
 * key-only rows of the sweep, @removed entries), bytes on the wire, wall time of the run, and the
 * replica against the source afterwards, row by row: rows missing, stale (any column differs) and
 * extra (in the replica, gone at the source — what a timestamp delta leaves of deletes).
 *
 * Processes and databases:
 * - the provider (bench/delta-token/provider: CAP, `cds serve`) in its own process on a file SQLite
 *   database: Orders (integer key, 9 columns) seeded with N rows by one bulk INSERT … SELECT, an
 *   index on (modifiedAt, ID), and a change log filled by triggers on insert/update/delete; CAP
 *   serves its OData V4 reads, server.js the tracked reads and delta links (Prefer:
 *   odata.track-changes, $deltatoken, @removed, odata.maxpagesize paging with next links);
 * - between consumer and provider a proxy in this process that adds BENCH_DELTA_LATENCY ms per
 *   request in the latency cells (0 ms otherwise) and counts bytes;
 * - the consumer (bench/delta-token/consumer, this file with `--worker`) in a fresh process per cell,
 *   on a fresh copy of its database: a file SQLite copy, or a PostgreSQL database created from a
 *   template (vacuumed and analyzed, as autovacuum leaves a replica in use). The templates hold the initial loads (once per database kind, timed apart): the token
 *   pipeline's tracked initial read and the timestamp pipeline's full copy of the seeded source.
 * Per round the provider starts again from its seeded file, then the same kind of change is made
 * directly in its database (N/100 rows get a newer modifiedAt, status and amount; N/1000 other rows
 * are deleted; random rows, a seed per round), then every cell runs against that state.
 *
 * Floors, measured in the same round through the same proxy at 0 ms (the provider's own time to
 * serve what the cell must read, plain fetch + JSON.parse, sequential pages of 1,000): the delta link's
 * pages (token), the changed rows in (modifiedAt, ID) keyset order (stamp), + the key-only pages
 * (sweep), all rows in key keyset order (full); at a latency L the floor adds pages × L.
 *
 * Figures: medians of BENCH_DELTA_ROUNDS rounds (wall time; min–max beside it); requests and rows
 * are the same each round. Results: a markdown table and bench/results/delta-token.json.
 *
 * Environment:
 *   BENCH_DELTA_ROWS=1000000     source rows (quick run: 50000)
 *   BENCH_DELTA_ROUNDS=3         rounds (medians)
 *   BENCH_DELTA_LATENCY=20       ms per request of the latency cells (file SQLite consumer, first
 *                                BENCH_DELTA_LATENCY_ROUNDS=1 round(s)); 0: none
 *   BENCH_DELTA_PG=1             0: file SQLite consumer only (PostgreSQL: 127.0.0.1:5432, user
 *                                postgres, trust; PGHOST/PGPORT/PGUSER/PGPASSWORD)
 *   BENCH_DELTA_PG_COPY_ROUNDS=1 rounds of the PostgreSQL sweep and full-copy cells (at 1M rows each
 *                                takes minutes: see docs/benchmarks.md); its token and timestamp cells
 *                                run every round
 *   BENCH_DELTA_VERIFY=all       `first`: compare replica and source in the first round only
 *   BENCH_DELTA_CELLS=token,stamp,sweep,full / BENCH_DELTA_CONSUMERS=sqlite,pg  only these
 *   BENCH_QUIET_WAIT=2 / BENCH_QUIET_CORES=0.5  before each timed run wait up to that many seconds
 *                                until the machine's load is below that many cores
 *   BENCH_VERBOSE=1              the consumers' CAP log
 */
import { createRequire } from 'node:module'
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { readFileSync } from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { PG, deployApp, pgQuery, postgresEnv, processCpuMs, sequentialRead, serveRequests, sqliteEnv, startChild, startWorker } from './helpers.mjs'

const require = createRequire(import.meta.url)
const SELF = fileURLToPath(import.meta.url)
const HERE = path.dirname(SELF)
const PROVIDER_APP = path.join(HERE, 'delta-token/provider')
const CONSUMER_APP = path.join(HERE, 'delta-token/consumer')
const RESULTS = path.join(HERE, 'results', 'delta-token.json')
const SERVICE_PATH = '/odata/v4/delta'
/** The provider's Orders entity set through `proxy` (what the floors read). */
const ordersAt = proxy => `${proxy.url}${SERVICE_PATH}/Orders`
const BATCH = 1000
const COLUMNS = ['ID', 'customer', 'product', 'status', 'quantity', 'amount', 'note', 'createdAt', 'modifiedAt']
// the seeded rows' timestamps: from 2025-01-01, 20 s apart (+ up to 10 days); changes are stamped later
const SEED_EPOCH = 1735689600
const CELLS = [
  ['token', "token: delta link (odata-delta)"],
  ['stamp', 'timestamp delta'],
  ['sweep', 'timestamp delta + key sweep'],
  ['full', 'full copy'],
]

const env = process.env
const N = Number(env.BENCH_DELTA_ROWS ?? 1_000_000)
const ROUNDS = Math.max(1, Number(env.BENCH_DELTA_ROUNDS ?? 3))
const LATENCY = Number(env.BENCH_DELTA_LATENCY ?? 20)
const LATENCY_ROUNDS = Math.min(ROUNDS, Math.max(1, Number(env.BENCH_DELTA_LATENCY_ROUNDS ?? 1)))
const WITH_PG = env.BENCH_DELTA_PG !== '0'
// only these cells (token,stamp,sweep,full) and consumers (sqlite,pg): for a closer look at one
const ONLY_CELLS = env.BENCH_DELTA_CELLS ? env.BENCH_DELTA_CELLS.split(',') : undefined
const ONLY_KINDS = env.BENCH_DELTA_CONSUMERS ? env.BENCH_DELTA_CONSUMERS.split(',') : undefined
const VERIFY_ALL = env.BENCH_DELTA_VERIFY !== 'first'
// the PostgreSQL sweep and full-copy cells take minutes at 1M rows (docs/benchmarks.md): this many rounds
const PG_COPY_ROUNDS = Math.max(1, Number(env.BENCH_DELTA_PG_COPY_ROUNDS ?? 1))
const CHANGED = Math.round(N / 100)
const DELETED = Math.round(N / 1000)

const now = () => performance.now()
const fixed = (x, d = 0) => (x === null || x === undefined || Number.isNaN(x) ? '—' : x.toFixed(d))
const int = x => (x === null || x === undefined ? '—' : Math.round(x).toLocaleString('en'))
const median = values => {
  const s = values.filter(x => typeof x === 'number').sort((a, b) => a - b)
  if (!s.length) return null
  const m = Math.floor(s.length / 2)
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}
const sqlite = () => require('node:sqlite')

// ---------------------------------------------------------------------------------------------
// The orchestrator

async function main() {
  console.log(`cap-data-pipeline delta-token bench — node ${process.version}, ${os.cpus().length} CPUs, ${int(N)} rows, ${int(CHANGED)} changed + ${int(DELETED)} deleted per round, ${ROUNDS} round(s) (medians), consumers: file SQLite${WITH_PG ? ' + PostgreSQL' : ''}${LATENCY ? `, latency cells at ${LATENCY} ms (file SQLite, ${LATENCY_ROUNDS} round(s))` : ''}; load average ${loadAverage()}`)
  const started = now()
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'cdp-delta-token-'))
  const label = `bench_delta_${process.pid}`
  const databases = []
  const loads = [] // the load average, sampled every 10 s
  const sampler = setInterval(() => loads.push(os.loadavg()[0]), 10_000)
  let provider
  let proxy
  const result = { date: new Date().toISOString(), node: process.version, cpus: os.cpus().length, rows: N, changed: CHANGED, deleted: DELETED, rounds: ROUNDS, latency: LATENCY, initial: {}, floors: [], cells: [] }
  try {
    // the provider's seeded database, copied for each round
    const seeded = path.join(tmp, 'provider-seeded.db')
    let t0 = now()
    await deployApp(PROVIDER_APP, sqliteEnv(seeded))
    seedProvider(seeded, N)
    console.log(`provider: ${int(N)} rows seeded, index and change log in ${fixed((now() - t0) / 1000, 1)} s`)

    // the consumers' templates: deployed, then the initial loads (timed apart) against the seeded provider
    const kinds = (WITH_PG ? ['sqlite', 'pg'] : ['sqlite']).filter(kind => !ONLY_KINDS || ONLY_KINDS.includes(kind))
    const templates = {}
    ;({ provider, proxy } = await startRound(tmp, seeded, 0))
    for (const kind of kinds) {
      t0 = now()
      if (kind === 'sqlite') {
        templates.sqlite = path.join(tmp, 'consumer-template.db')
        await deployApp(CONSUMER_APP, sqliteEnv(templates.sqlite))
      } else {
        templates.pg = `${label}_template`
        await pgQuery(`CREATE DATABASE ${templates.pg}`)
        databases.push(templates.pg)
        await deployApp(CONSUMER_APP, postgresEnv(templates.pg))
      }
      const database = kind === 'sqlite' ? { env: sqliteEnv(templates.sqlite) } : { env: postgresEnv(templates.pg) }
      const session = await startWorker(SELF, { url: proxy.url, pipelines: ['token', 'stamp'] }, { cwd: CONSUMER_APP, env: database.env })
      try {
        const token = await measure({ session, proxy, provider, request: { pipeline: 'token', mode: 'full' } })
        const stamp = await measure({ session, proxy, provider, request: { pipeline: 'stamp', mode: 'full' } })
        for (const run of [token, stamp]) if (run.statistics.created !== N) throw new Error(`initial load: ${JSON.stringify(run.statistics)}`)
        result.initial[kind] = { token, stamp }
        console.log(`${kind}: initial loads (deploy + both ${fixed((now() - t0) / 1000, 1)} s): token (tracked read) ${fixed(token.ms)} ms, ${token.requests.data} requests; timestamp pipeline full copy ${fixed(stamp.ms)} ms, ${stamp.requests.data} requests`)
      } finally {
        await session.close()
      }
      // the worker exits without closing its database: its last commits may still be in the WAL file
      if (kind === 'sqlite') checkpoint(templates.sqlite)
      // a replica in use for a while has been vacuumed and analyzed (autovacuum): hint bits, visibility map, statistics
      else await pgQuery('VACUUM (ANALYZE)', templates.pg)
    }
    await stopRound(provider, proxy)
    provider = undefined

    for (let round = 1; round <= ROUNDS; round++) {
      ;({ provider, proxy } = await startRound(tmp, seeded, round))
      const change = changeSource(provider.dbFile, round)
      const floors = await measureFloors(proxy, change)
      result.floors.push({ round, ...floors })
      console.log(`round ${round}: ${int(change.changed)} changed, ${int(change.deleted)} deleted; floors (serving at 0 ms): ${Object.entries(floors).map(([k, f]) => `${k} ${fixed(f.ms)} ms / ${f.pages} pages`).join(', ')}`)
      const verify = VERIFY_ALL || round === 1
      const plan = kinds.map(kind => ({ kind, latency: 0, cells: kind === 'pg' && round > PG_COPY_ROUNDS ? ['token', 'stamp'] : undefined }))
      if (LATENCY > 0 && round <= LATENCY_ROUNDS && kinds.includes('sqlite')) plan.push({ kind: 'sqlite', latency: LATENCY })
      for (const { kind, latency, cells } of plan) {
        // a different order of the cells each round: none always runs first after the change
        const order = CELLS.map((_, i) => CELLS[(i + round - 1) % CELLS.length][0]).filter(cell => (!ONLY_CELLS || ONLY_CELLS.includes(cell)) && (!cells || cells.includes(cell)))
        for (const cell of order) {
          const t0 = now()
          const database = await consumerDatabase(kind, templates, tmp, label, databases)
          let run
          let compareMs
          const prepareMs = now() - t0
          try {
            const pipeline = cell === 'token' ? 'token' : 'stamp'
            const session = await startWorker(SELF, { url: proxy.url, pipelines: [pipeline], sweep: cell === 'sweep' }, { cwd: CONSUMER_APP, env: database.env })
            try {
              proxy.state.ms = latency
              run = await measure({ session, proxy, provider, request: { pipeline, mode: cell === 'full' ? 'full' : 'delta' } })
            } finally {
              proxy.state.ms = 0
              await session.close()
            }
            if (run.status !== 'completed') throw new Error(`${kind} ${cell}: run ${run.status}: ${run.error}`)
            const c0 = now()
            run.replica = verify ? await compareReplica(provider.dbFile, kind, database, pipeline === 'token' ? 'bench.OrdersToken' : 'bench.OrdersStamp') : undefined
            compareMs = now() - c0
          } finally {
            await database.drop()
          }
          const floor = floorOf(cell, floors, latency)
          result.cells.push({ round, kind, latency, cell, ...run, floor })
          const r = run.replica
          console.log(`  ${kind}${latency ? ` ${latency} ms` : ''} ${cell}: ${fixed(run.ms)} ms (floor ${fixed(floor.ms)} ms: ×${fixed(run.ms / floor.ms, 2)}), ${run.requests.data} requests${run.requests.metadata ? ` + ${run.requests.metadata} $metadata` : ''}, rows ${int(run.rows.rows)} + ${int(run.rows.keys)} keys + ${int(run.rows.removed)} removed, ${fixed(run.bytes / 1e6, 1)} MB, ${JSON.stringify(run.statistics)}${run.sweep ? `, sweep ${run.sweep.durationMs} ms deleted ${run.sweep.deleted}` : ''}; replica ${r ? `missing ${r.missing} stale ${r.stale} extra ${r.extra} (${int(r.replicaRows)} rows)` : 'not compared'}; machine busy ${fixed(run.busyCores, 2)} cores, load ${fixed(run.load, 2)}; cell ${fixed((now() - t0) / 1000, 1)} s (database ${fixed(prepareMs / 1000, 1)} s, compare ${fixed(compareMs / 1000, 1)} s)`)
        }
      }
      await stopRound(provider, proxy)
      provider = undefined
    }
  } finally {
    clearInterval(sampler)
    if (provider) await stopRound(provider, proxy)
    for (const name of databases) await pgQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`).catch(() => {})
    await rm(tmp, { recursive: true, force: true })
  }
  result.totalSeconds = (now() - started) / 1000
  result.loadAverage = { samples: loads.length, median: median(loads), max: loads.length ? Math.max(...loads) : null, end: os.loadavg() }
  const table = report(result)
  await mkdir(path.dirname(RESULTS), { recursive: true })
  await writeFile(RESULTS, JSON.stringify(result, null, 2))
  console.log(`\n${table}\n\ntotal ${fixed(result.totalSeconds)} s; load average during the run (1-min, every 10 s): median ${fixed(result.loadAverage.median, 2)}, max ${fixed(result.loadAverage.max, 2)}; now ${loadAverage()}\nresults: ${path.relative(process.cwd(), RESULTS)}`)
}

const loadAverage = () => os.loadavg().map(x => x.toFixed(2)).join(' ')

/** CPU time (ms) the whole machine has been busy so far (/proc/stat). */
function busyMs() {
  const ticks = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number)
  return ((ticks.reduce((a, b) => a + b, 0) - ticks[3] - ticks[4]) * 1000) / 100
}

/** Waits (at most BENCH_QUIET_WAIT s) until the machine's load is below BENCH_QUIET_CORES cores. */
async function quiet() {
  const until = now() + Number(env.BENCH_QUIET_WAIT ?? 2) * 1000
  const cores = Number(env.BENCH_QUIET_CORES ?? 0.5)
  for (;;) {
    const b0 = busyMs()
    const t0 = now()
    await new Promise(resolve => setTimeout(resolve, 250))
    if ((busyMs() - b0) / (now() - t0) < cores || now() > until) return
  }
}

/**
 * The seeded source: N orders by one INSERT … SELECT of a recursive sequence (values derived from
 * the key), then the index for timestamp deltas, the change log and its triggers (created after
 * the seed: the seed is the initial state, not a change).
 */
function seedProvider(file, n) {
  const { DatabaseSync } = sqlite()
  const db = new DatabaseSync(file)
  try {
    db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = OFF')
    db.exec('BEGIN')
    db.prepare(`WITH RECURSIVE seq(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM seq WHERE i < ?)
      INSERT INTO deltabench_Orders (ID, customer, product, status, quantity, amount, note, createdAt, modifiedAt)
      SELECT i, 'customer ' || (i * 7919 % 50000), 'product ' || (i * 104729 % 2000),
        CASE i % 5 WHEN 0 THEN 'open' WHEN 1 THEN 'confirmed' WHEN 2 THEN 'shipped' WHEN 3 THEN 'invoiced' ELSE 'closed' END,
        1 + i % 40, round((i * 7 % 100000) / 100.0 + 1, 2), 'order ' || i || ' of the benchmark',
        strftime('%Y-%m-%dT%H:%M:%fZ', ${SEED_EPOCH} + i * 20, 'unixepoch'),
        strftime('%Y-%m-%dT%H:%M:%fZ', ${SEED_EPOCH} + i * 20 + (i * 7919 % 864000), 'unixepoch')
      FROM seq`).run(n)
    db.exec('COMMIT')
    db.exec(`CREATE INDEX deltabench_Orders_modifiedAt ON deltabench_Orders (modifiedAt, ID);
      CREATE TABLE deltabench_ChangeLog (seq INTEGER PRIMARY KEY, order_id INTEGER NOT NULL);
      CREATE TRIGGER deltabench_Orders_inserted AFTER INSERT ON deltabench_Orders BEGIN INSERT INTO deltabench_ChangeLog (order_id) VALUES (NEW.ID); END;
      CREATE TRIGGER deltabench_Orders_updated AFTER UPDATE ON deltabench_Orders BEGIN INSERT INTO deltabench_ChangeLog (order_id) VALUES (NEW.ID); END;
      CREATE TRIGGER deltabench_Orders_deleted AFTER DELETE ON deltabench_Orders BEGIN INSERT INTO deltabench_ChangeLog (order_id) VALUES (OLD.ID); END;
      ANALYZE;
      PRAGMA wal_checkpoint(TRUNCATE);`)
  } finally {
    db.close()
  }
}

/** Moves a SQLite database's WAL into its file (a copy of the file alone is then complete). */
function checkpoint(file) {
  const { DatabaseSync } = sqlite()
  const db = new DatabaseSync(file)
  try { db.exec('PRAGMA wal_checkpoint(TRUNCATE)') } finally { db.close() }
}

/** A small seeded PRNG (mulberry32): the same rows change in the same round of every run. */
function random(seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/**
 * The round's change, made in the provider's database (its triggers log it): N/100 random rows get
 * a newer modifiedAt (distinct, 100 ms apart, ending 10 min ago: older than `delta.settle`), status
 * and amount; N/1000 other random rows are deleted.
 */
function changeSource(file, round) {
  const next = random(round * 7919)
  const picked = new Set()
  const pick = count => {
    const ids = []
    while (ids.length < count) {
      const id = 1 + Math.floor(next() * N)
      if (!picked.has(id)) { picked.add(id); ids.push(id) }
    }
    return ids
  }
  const changed = pick(CHANGED)
  const deleted = pick(DELETED)
  const first = Date.now() - 600_000 - CHANGED * 100
  const { DatabaseSync } = sqlite()
  const db = new DatabaseSync(file)
  try {
    db.exec('PRAGMA busy_timeout = 10000')
    db.exec('BEGIN IMMEDIATE')
    const update = db.prepare("UPDATE deltabench_Orders SET modifiedAt = ?, status = 'changed', amount = amount + 1 WHERE ID = ?")
    changed.forEach((id, i) => update.run(new Date(first + i * 100).toISOString(), id))
    const remove = db.prepare('DELETE FROM deltabench_Orders WHERE ID = ?')
    for (const id of deleted) remove.run(id)
    db.exec('COMMIT')
  } finally {
    db.close()
  }
  return { changed: changed.length, deleted: deleted.length, seedMax: seedMaxStamp() }
}

/** The newest modifiedAt of the seed: changed rows are after it. */
function seedMaxStamp() {
  return new Date((SEED_EPOCH + N * 20 + 864000) * 1000).toISOString()
}

/** The provider of a round on its own copy of the seeded database, behind the latency proxy; warmed up. */
async function startRound(tmp, seeded, round) {
  const dbFile = path.join(tmp, `provider-${round}.db`)
  await copyFile(seeded, dbFile)
  const serve = require.resolve('@sap/cds/bin/serve.js')
  const child = await startChild([serve, '--port', '0'], {
    cwd: PROVIDER_APP,
    env: { ...process.env, NODE_ENV: 'test', CDS_ENV: '', ...sqliteEnv(dbFile) },
    ready: /server listening on \{ url: '([^']+)'/,
    name: 'provider',
  })
  const provider = { ...child, dbFile }
  const proxy = await latencyProxy(child.url)
  // warm-up: each kind of read once (CAP compiles and caches queries on first use)
  await fetch(`${proxy.url}${SERVICE_PATH}/$metadata`).then(r => r.text())
  await sequentialRead(ordersAt(proxy), { select: COLUMNS, order: ['ID'], limit: 2 })
  await sequentialRead(ordersAt(proxy), { select: COLUMNS, order: ['modifiedAt', 'ID'], filter: `modifiedAt gt ${seedMaxStamp()}`, limit: 1 })
  await trackedRead(proxy.url, `${SERVICE_PATH}/Orders?$select=${COLUMNS.join(',')}&$orderby=ID`, 2)
  return { provider, proxy }
}

async function stopRound(provider, proxy) {
  await proxy?.close()
  await provider.stop()
  await rm(provider.dbFile, { force: true })
  await rm(`${provider.dbFile}-wal`, { force: true })
  await rm(`${provider.dbFile}-shm`, { force: true })
}

/** A fresh consumer database: a copy of the SQLite template, or a PostgreSQL database created from the template. */
async function consumerDatabase(kind, templates, tmp, label, databases) {
  if (kind === 'sqlite') {
    const file = path.join(tmp, `consumer-${process.hrtime.bigint()}.db`)
    await copyFile(templates.sqlite, file)
    return { kind, file, env: sqliteEnv(file), drop: () => Promise.all(['', '-wal', '-shm'].map(s => rm(`${file}${s}`, { force: true }))) }
  }
  const name = `${label}_${databases.length}`
  await pgQuery(`CREATE DATABASE ${name} TEMPLATE ${templates.pg} STRATEGY FILE_COPY`)
  databases.push(name)
  return { kind, name, env: postgresEnv(name), drop: () => pgQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`) }
}

/** The proxy: each request waits `state.ms`, then goes to the provider over kept-alive connections; counts bytes. */
function latencyProxy(target) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 64 })
  const upstream = new URL(target)
  const state = { ms: 0, requests: 0, bytes: 0 }
  const server = http.createServer((req, res) => {
    state.requests++
    const chunks = []
    req.on('data', chunk => chunks.push(chunk))
    req.on('end', () => setTimeout(() => {
      const forward = http.request({ host: upstream.hostname, port: upstream.port, path: req.url, method: req.method, headers: { ...req.headers, host: upstream.host }, agent }, answer => {
        res.writeHead(answer.statusCode, answer.headers)
        answer.on('data', chunk => { state.bytes += chunk.length })
        answer.pipe(res)
      })
      forward.on('error', error => { res.writeHead(502); res.end(String(error.message)) })
      forward.end(Buffer.concat(chunks))
    }, state.ms))
  })
  return new Promise(resolve => server.listen(0, '127.0.0.1', () => resolve({
    url: `http://127.0.0.1:${server.address().port}`,
    state,
    reset() { Object.assign(state, { requests: 0, bytes: 0 }) },
    close: () => { agent.destroy(); server.closeAllConnections(); return new Promise(done => server.close(done)) },
  })))
}

const providerStats = async (url, reset) => (await fetch(`${url}/bench/stats${reset ? '/reset' : ''}`, reset ? { method: 'POST' } : {})).json()

/**
 * One run in a consumer `session` (startWorker): the machine quiet first, the proxy's and the
 * provider's counters reset; the run's time and statistics from the worker, requests and rows from
 * the provider, bytes from the proxy, CPU of provider and consumer, and how busy the machine was.
 */
async function measure({ session, proxy, provider, request }) {
  await quiet()
  await providerStats(provider.url, true)
  proxy.reset()
  const cpu0 = processCpuMs(provider.child.pid)
  const busy0 = busyMs()
  const t0 = now()
  const run = await session.request(request)
  const wall = now() - t0
  const busyCores = (busyMs() - busy0) / wall
  const stats = await providerStats(provider.url)
  const { metadata, ...data } = stats.requests
  return {
    ...run,
    requests: { data: Object.values(data).reduce((a, b) => a + b, 0), metadata, ...data },
    rows: { rows: stats.rows, keys: stats.keys, removed: stats.removed },
    bytes: proxy.state.bytes,
    cpu: { provider: processCpuMs(provider.child.pid) - cpu0, consumer: run.cpuMs },
    busyCores,
    load: os.loadavg()[0],
  }
}

/** A plain tracked read (or a delta link's read) through `base`: the pages its next links lead to. */
async function trackedRead(base, path0, limit = Infinity) {
  const t0 = now()
  let next = path0
  let pages = 0
  let rows = 0
  let deltaLink
  while (next && pages < limit) {
    const response = await fetch(`${base}${next}`, { headers: { prefer: `odata.track-changes, odata.maxpagesize=${BATCH}` } })
    const body = await response.json()
    if (!Array.isArray(body.value)) throw new Error(`${next}: ${JSON.stringify(body).slice(0, 300)}`)
    pages++
    rows += body.value.length
    next = body['@odata.nextLink'] ? `${SERVICE_PATH}/${body['@odata.nextLink']}` : undefined
    deltaLink = body['@odata.deltaLink']
  }
  return { ms: now() - t0, pages, rows, deltaLink }
}

/** The provider's own serving time for what each cell must read, at 0 ms, in this round. */
async function measureFloors(proxy, change) {
  await quiet()
  // the delta link of the initial loads: the change log was empty then (token 0)
  const token = await trackedRead(proxy.url, `${SERVICE_PATH}/Orders?$select=${COLUMNS.join(',')}&$deltatoken=0`)
  if (token.rows !== change.changed + change.deleted) throw new Error(`token floor: ${token.rows} entries, expected ${change.changed + change.deleted}`)
  await quiet()
  const stamp = await sequentialRead(ordersAt(proxy), { select: COLUMNS, order: ['modifiedAt', 'ID'], filter: `modifiedAt gt ${change.seedMax}` })
  if (stamp.rows !== change.changed) throw new Error(`timestamp floor: ${stamp.rows} rows, expected ${change.changed}`)
  await quiet()
  const keys = await sequentialRead(ordersAt(proxy), { select: ['ID'], order: ['ID'] })
  await quiet()
  const full = await sequentialRead(ordersAt(proxy), { select: COLUMNS, order: ['ID'] })
  if (full.rows !== N - change.deleted || keys.rows !== full.rows) throw new Error(`full floor: ${full.rows} rows, keys ${keys.rows}, expected ${N - change.deleted}`)
  return { token, stamp, keys, full }
}

/** A cell's floor at `latency`: the serving time of what it must read + pages × latency. */
function floorOf(cell, floors, latency) {
  const parts = cell === 'token' ? [floors.token] : cell === 'stamp' ? [floors.stamp] : cell === 'sweep' ? [floors.stamp, floors.keys] : [floors.full]
  const serve = parts.reduce((a, f) => a + f.ms, 0)
  const pages = parts.reduce((a, f) => a + f.pages, 0)
  return { ms: serve + pages * latency, serveMs: serve, pages }
}

// ---------------------------------------------------------------------------------------------
// Replica against source, row by row (merge of both in key order, pages of 50,000 rows)

const CHUNK = 50_000

/** A row's values as one comparable text: decimals to 2 places, timestamps as epoch ms. */
function fingerprint(row, stamp) {
  return [row.customer, row.product, row.status, row.quantity, Number(row.amount).toFixed(2), row.note, stamp(row.createdAt), stamp(row.modifiedAt)].join('|')
}

function sqliteChunks(file, table) {
  const { DatabaseSync } = sqlite()
  const db = new DatabaseSync(file, { readOnly: true })
  const statement = db.prepare(`SELECT ${COLUMNS.join(', ')} FROM ${table} WHERE ID > ? ORDER BY ID LIMIT ${CHUNK}`)
  return {
    async next(after) { return statement.all(after).map(row => ({ ID: Number(row.ID), text: fingerprint(row, Date.parse) })) },
    close() { db.close() },
  }
}

async function pgChunks(database, table) {
  const { Client } = require('pg')
  const client = new Client({ ...PG, database })
  await client.connect()
  const stamp = column => `(extract(epoch from ${column}) * 1000)::bigint::text AS "${column}"`
  const sql = `SELECT id AS "ID", customer, product, status, quantity, amount::text AS amount, note, ${stamp('createdat')}, ${stamp('modifiedat')} FROM ${table.replace('.', '_').toLowerCase()} WHERE id > $1 ORDER BY id LIMIT ${CHUNK}`
  return {
    async next(after) {
      const { rows } = await client.query(sql, [after])
      return rows.map(row => ({ ID: Number(row.ID), text: fingerprint({ ...row, createdAt: row.createdat, modifiedAt: row.modifiedat }, Number) }))
    },
    close() { return client.end() },
  }
}

/**
 * Rows missing in the replica, stale (a value differs) and extra (gone at the source), after a run:
 * a file SQLite replica by SQL with the source's database attached; a PostgreSQL one by a merge of
 * both in key order.
 */
async function compareReplica(sourceFile, kind, database, entity) {
  if (kind === 'sqlite') return compareSqlite(sourceFile, database.file, entity.replace('.', '_'))
  const source = sqliteChunks(sourceFile, 'deltabench_Orders')
  const replica = kind === 'sqlite' ? sqliteChunks(database.file, entity.replace('.', '_')) : await pgChunks(database.name, entity)
  const counts = { missing: 0, stale: 0, extra: 0, sourceRows: 0, replicaRows: 0 }
  try {
    // each side's next chunk is read while the current one is compared
    const reader = side => {
      let rows = []
      let i = 0
      let pending = side.next(-1)
      return async () => {
        if (i >= rows.length && pending) {
          rows = await pending
          i = 0
          pending = rows.length < CHUNK ? undefined : side.next(rows.at(-1).ID)
        }
        return i < rows.length ? rows[i++] : undefined
      }
    }
    const nextSource = reader(source)
    const nextReplica = reader(replica)
    let s = await nextSource()
    let r = await nextReplica()
    while (s || r) {
      if (s && (!r || s.ID < r.ID)) { counts.missing++; counts.sourceRows++; s = await nextSource() }
      else if (r && (!s || r.ID < s.ID)) { counts.extra++; counts.replicaRows++; r = await nextReplica() }
      else {
        if (s.text !== r.text) counts.stale++
        counts.sourceRows++
        counts.replicaRows++
        s = await nextSource()
        r = await nextReplica()
      }
    }
  } finally {
    source.close()
    await replica.close()
  }
  return counts
}

function compareSqlite(sourceFile, replicaFile, table) {
  const { DatabaseSync } = sqlite()
  const db = new DatabaseSync(replicaFile)
  try {
    db.prepare('ATTACH DATABASE ? AS src').run(sourceFile)
    const count = sql => Number(Object.values(db.prepare(sql).get())[0])
    const same = COLUMNS.filter(c => c !== 'ID').map(c =>
      c === 'amount' ? 'round(r.amount, 2) IS round(s.amount, 2)' : c.endsWith('At') ? `julianday(r.${c}) IS julianday(s.${c})` : `r.${c} IS s.${c}`).join(' AND ')
    return {
      missing: count('SELECT count(*) FROM src.deltabench_Orders s WHERE NOT EXISTS (SELECT 1 FROM main.' + table + ' r WHERE r.ID = s.ID)'),
      stale: count(`SELECT count(*) FROM main.${table} r JOIN src.deltabench_Orders s ON s.ID = r.ID WHERE NOT (${same})`),
      extra: count(`SELECT count(*) FROM main.${table} r WHERE NOT EXISTS (SELECT 1 FROM src.deltabench_Orders s WHERE s.ID = r.ID)`),
      sourceRows: count('SELECT count(*) FROM src.deltabench_Orders'),
      replicaRows: count(`SELECT count(*) FROM main.${table}`),
    }
  } finally {
    db.close()
  }
}

// ---------------------------------------------------------------------------------------------
// The report

function report(result) {
  const lines = []
  const of = (kind, latency, cell) => result.cells.filter(c => c.kind === kind && c.latency === latency && c.cell === cell)
  const groups = [...new Set(result.cells.map(c => `${c.kind}|${c.latency}`))].map(g => g.split('|')).map(([kind, latency]) => ({ kind, latency: Number(latency) }))
  const summary = {}
  for (const { kind, latency } of groups) {
    const runs = CELLS.filter(([cell]) => of(kind, latency, cell).length).map(([cell, label]) => {
      const all = of(kind, latency, cell)
      const ms = all.map(c => c.ms)
      const last = all.at(-1)
      const replicas = all.map(c => c.replica).filter(Boolean)
      const worst = key => (replicas.length ? Math.max(...replicas.map(r => r[key])) : null)
      return {
        cell, label, n: all.length, ms: median(ms), min: Math.min(...ms), max: Math.max(...ms), floorMs: median(all.map(c => c.floor.ms)),
        requests: last.requests, rows: last.rows, bytes: median(all.map(c => c.bytes)), statistics: last.statistics,
        replica: replicas.length ? { missing: worst('missing'), stale: worst('stale'), extra: worst('extra'), compared: replicas.length } : null,
        cpu: { provider: median(all.map(c => c.cpu.provider)), consumer: median(all.map(c => c.cpu.consumer)) },
      }
    })
    summary[`${kind}|${latency}`] = runs
    const db = kind === 'sqlite' ? 'file SQLite' : 'PostgreSQL'
    lines.push(`### ${db} consumer, ${latency} ms per request`, '')
    lines.push('| cell | requests (+ $metadata) | rows read: rows + keys + removed | MB | wall ms: median (rounds: min–max) | floor ms (pages) | ÷ floor | run: created / updated / deleted | replica: missing / stale / extra | CPU ms provider / consumer |')
    lines.push('|---|---|---|---|---|---|---|---|---|---|')
    for (const c of runs) {
      const f = of(kind, latency, c.cell)[0].floor
      const range = c.n > 1 ? ` (${c.n}: ${fixed(c.min)}–${fixed(c.max)})` : ' (1 round)'
      const s = c.statistics
      lines.push(`| ${c.label} | ${int(c.requests.data)}${c.requests.metadata ? ` (+${c.requests.metadata})` : ''} | ${int(c.rows.rows)} + ${int(c.rows.keys)} + ${int(c.rows.removed)} | ${fixed(c.bytes / 1e6, 1)} | ${fixed(c.ms)}${range} | ${fixed(c.floorMs)} (${f.pages}) | ${fixed(c.ms / c.floorMs, 2)} | ${int(s.created)} / ${int(s.updated)} / ${int(s.deleted)} | ${c.replica ? `${int(c.replica.missing)} / ${int(c.replica.stale)} / ${int(c.replica.extra)}` : 'not compared'} | ${fixed(c.cpu.provider)} / ${fixed(c.cpu.consumer)} |`)
    }
    const cell = name => runs.find(c => c.cell === name)
    const rowsOf = c => c.rows.rows + c.rows.keys + c.rows.removed
    const ratio = (a, b) => `${fixed(a.ms / b.ms, 3)} × time, ${fixed(a.requests.data / b.requests.data, 3)} × requests, ${fixed(rowsOf(a) / rowsOf(b), 3)} × rows`
    const ratios = [['timestamp delta', 'stamp'], ['timestamp + sweep', 'sweep'], ['full copy', 'full']].filter(([, name]) => cell('token') && cell(name))
    lines.push('', ratios.map(([label, name]) => `token ÷ ${label}: ${ratio(cell('token'), cell(name))}`).join('; '), '')
  }
  lines.push('### Initial loads (once per consumer database, 0 ms)', '', '| consumer | token pipeline: tracked initial read | timestamp pipeline: full copy |', '|---|---|---|')
  for (const [kind, { token, stamp }] of Object.entries(result.initial))
    lines.push(`| ${kind === 'sqlite' ? 'file SQLite' : 'PostgreSQL'} | ${fixed(token.ms)} ms, ${int(token.requests.data)} requests | ${fixed(stamp.ms)} ms, ${int(stamp.requests.data)} requests |`)
  result.summary = summary
  return lines.join('\n')
}

// ---------------------------------------------------------------------------------------------
// The consumer worker: boots the consumer app, registers the pipelines, runs what it is asked

async function worker() {
  const o = JSON.parse(process.env.BENCH_OPTIONS)
  const cds = createRequire(path.join(CONSUMER_APP, 'package.json'))('@sap/cds')
  cds.root = CONSUMER_APP
  cds.env.requires.DeltaProvider.credentials = { url: `${o.url}${SERVICE_PATH}` }
  cds.env.remote = { ...cds.env.remote, native_fetch: process.env.BENCH_NATIVE_FETCH !== '0' }
  await cds.exec('--port', '0')
  const engine = await cds.connect.to('data-pipeline')
  const source = { service: 'DeltaProvider', entity: 'Orders', batchSize: BATCH }
  const configs = {
    token: { name: 'orders-token', source, target: { entity: 'bench.OrdersToken' }, delta: { mode: 'odata-delta' } },
    stamp: { name: 'orders-stamp', source, target: { entity: 'bench.OrdersStamp' }, delta: { mode: 'timestamp', field: 'modifiedAt' }, ...(o.sweep ? { deletes: { sweep: 'always' } } : {}) },
  }
  for (const name of o.pipelines) await engine.addPipeline(configs[name])
  process.send({ type: 'result', result: { pid: process.pid } })
  serveRequests(async ({ pipeline, mode }) => {
    const name = configs[pipeline].name
    const cpu0 = process.cpuUsage()
    const t0 = now()
    const { done } = await engine.execute(name, { mode })
    const outcome = await done.catch(error => ({ status: 'failed', error }))
    const ms = now() - t0
    const cpu = process.cpuUsage(cpu0)
    const row = await cds.ql.SELECT.one.from('plugin.data_pipeline.Pipelines').columns('lastSweep').where({ name })
    return {
      ms, cpuMs: (cpu.user + cpu.system) / 1000, status: outcome.status, error: outcome.error && String(outcome.error?.message ?? outcome.error),
      statistics: outcome.statistics, sweep: o.sweep && row?.lastSweep ? JSON.parse(row.lastSweep) : undefined,
    }
  })
}

if (process.argv[2] === '--worker') await worker()
else await main()
