#!/usr/bin/env node
/**
 * Main benchmark (`npm run bench`, never part of `npm test`): what users run. A full copy from the
 * real OData V4 provider (test/fixtures/provider, entity BenchItems: UUID key, 11 columns) into the
 * consumer app's table consumer.BenchItems (test/fixtures/consumer), against its floors — reading all
 * pages alone, writing all rows alone — plus deltas, peak RSS and the ratios of issue 14's targets.
 *
 * Processes and databases:
 * - this orchestrator; per size N one provider process (`cds serve` of test/fixtures/provider) on its own
 *   file-backed SQLite database (deployed with `cds deploy` into a temp folder), seeded with N rows
 *   (deterministic UUIDs; all but the last row share an old modifiedAt, the last one holds the newest);
 * - per step and round a fresh consumer process (this file with `--worker`, which boots the consumer app
 *   in-process with `cds serve`) on a fresh file-backed SQLite database (a copy of a `cds deploy` of the
 *   consumer app), so peak RSS and CPU are that step's alone; PostgreSQL steps get a fresh database
 *   (CREATE DATABASE … TEMPLATE of a `cds deploy`ed one; all are dropped at the end).
 * The rows the copy writes are fetched from the provider once into an NDJSON file in the temp folder;
 * the write-only workers load it before their clock starts.
 *
 * Steps, each measured BENCH_ROUNDS times for each N (rounds interleave the steps):
 *   read        all keyset pages through the plugin's OData source adapter (what a full run reads), then
 *               the same URLs with plain fetch + JSON.parse: the provider's own time to serve all pages
 *   writeCap    DELETE + CAP `UPSERT.into(target).entries(1000 rows)` for all rows, one transaction
 *   writeTarget the plugin's database target adapter: truncate + writeBatch per 1000, one transaction
 *   loop        a hand-written loop: fetch a keyset page, then CAP UPSERT it (no overlap), one transaction
 *   full        the plugin's full copy (`engine.execute(name, { mode: 'full' })`); peak RSS of the process
 *               (VmHWM of /proc/self/status and RSS sampled every 50 ms)
 *   pg.*        writeCap, writeTarget and full with PostgreSQL as the consumer's database (BENCH_PG_SIZES)
 * and once per N in one more fresh process (on the last full copy's database):
 *   delta       no-change delta runs (the first also loads $metadata for the schema-drift check; median of
 *               BENCH_DELTA_RUNS later ones) interleaved with the same request(s) sent directly; a 1%-changed delta (per
 *               round); a bulk update giving 5,000 rows the newest modifiedAt, one delta run taking them,
 *               then BENCH_DELTA_RUNS no-change runs again (requests, rows the provider served, time vs direct);
 *               beside them a floor: one durable CAP transaction updating one row (what a tracked run adds at least).
 *
 * Figures are medians of the rounds. Output: a table with the issue's targets (✓/✗) and
 * bench/results/latest.json.
 *
 * Environment:
 *   BENCH_SIZES=100000,500000   sizes with all steps
 *   BENCH_DELTA_SIZES=10000     sizes with the delta step only
 *   BENCH_ROUNDS=2              rounds of the steps (medians)
 *   BENCH_DELTA_RUNS=15         no-change delta runs per series (median)
 *   BENCH_DB=file|memory        file-backed SQLite on both sides (default) or in-memory (option)
 *   BENCH_PG=0                  skip PostgreSQL; BENCH_PG_SIZES=500000 sizes with PostgreSQL steps
 *                               (127.0.0.1:5432, user postgres, trust; PGHOST/PGPORT/PGUSER/PGPASSWORD)
 *   BENCH_STEPS=read,writeCap,… only these steps (the delta step: `delta`)
 *   BENCH_PROFILE=full,read,readRaw,writeCap,writeTarget,loop,delta,pg.full,…  CPU profile of that step's
 *                               first round → bench/results/<step>-<n>.cpuprofile
 *   BENCH_QUIET_WAIT=10 / BENCH_QUIET_CORES=0.3  wait up to that many seconds before each measured phase
 *                               until other load on the machine is below that many cores (0: no wait)
 *   BENCH_NATIVE_FETCH=0        CAP remote services over the SAP Cloud SDK instead of native fetch
 *   BENCH_NODE_OPTIONS, BENCH_VERBOSE=1  extra node options / CAP's log of the consumer workers
 */
import { createRequire } from 'node:module'
import { createReadStream, readFileSync } from 'node:fs'
import { copyFile, mkdir, mkdtemp, rename, rm, writeFile, open } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import readline from 'node:readline'
import { fileURLToPath } from 'node:url'
import {
  CONSUMER_DIR, PROVIDER_DIR, control, createPgDatabase, deployApp, dropPgDatabase, pgQuery, postgresCpuMs, postgresEnv,
  processCpuMs, runWorker, sqliteEnv, startProvider,
} from './helpers.mjs'

const SELF = fileURLToPath(import.meta.url)
const HERE = path.dirname(SELF)
const ROOT = path.resolve(HERE, '..')
const RESULTS = path.join(HERE, 'results', 'latest.json')

const BATCH = 1000
const SOURCE = 'BenchItems'
const TARGET = 'consumer.BenchItems'
const COLUMNS = ['ID', 'name', 'description', 'category', 'quantity', 'price', 'weight', 'active', 'validFrom', 'createdAt', 'modifiedAt']
const T_OLD = '2026-01-01T00:00:00.000Z'
const T_NEW = '2026-01-02T00:00:00.000Z'
const T_CHANGE = r => new Date(Date.parse('2026-01-03T00:00:00.000Z') + r * 3_600_000).toISOString()
const T_TIES = '2026-01-05T00:00:00.000Z'
const TIE_ROWS = 5000
const DELTA_RUNS = Math.max(3, Number(process.env.BENCH_DELTA_RUNS ?? 15))

const TARGETS = {
  fullVsMax: 1.1, // full ≤ 1.1 × max(read-only, write-only CAP), file SQLite
  capVsTarget: 2, // CAP UPSERT time / plugin target write time ≥ 2
  fullVsServe: 1.25, // full ≤ 1.25 × the provider's own time to serve all pages
  growthPer5x: 5.2, // time(500k) / time(100k) ≤ 5.2
  rssGrowthMB: 20, // peak RSS 500k − 100k ≤ 20 MB
  rssMaxMB: 235, // peak RSS 500k ≤ 235 MB
  deltaRequests: 1,
  deltaVsDirect: 1.2,
  pgFullVsMax: 1.25,
}
const STEPS = ['read', 'writeCap', 'writeTarget', 'loop', 'full']
const PG_STEPS = ['writeCap', 'writeTarget', 'full']

const MB = 1024 * 1024
const now = () => performance.now()
const round = (x, d = 0) => (x === undefined || x === null || Number.isNaN(x) ? null : Number(x.toFixed(d)))
const median = list => {
  const s = list.filter(x => x !== undefined && x !== null && !Number.isNaN(x)).sort((a, b) => a - b)
  if (!s.length) return null
  const m = Math.floor(s.length / 2)
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2
}
const sizesOf = (value, fallback) => (value ?? fallback).split(',').map(Number).filter(n => n > 0)

if (process.argv[2] === '--worker') await worker()
else await main()

// ---------------------------------------------------------------------------------------
// orchestrator
// ---------------------------------------------------------------------------------------

async function main() {
  const sizes = sizesOf(process.env.BENCH_SIZES, '100000,500000')
  const deltaSizes = sizesOf(process.env.BENCH_DELTA_SIZES, '10000').filter(n => !sizes.includes(n))
  const rounds = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 2))
  const memory = process.env.BENCH_DB === 'memory'
  const only = process.env.BENCH_STEPS ? new Set(process.env.BENCH_STEPS.split(',')) : undefined
  const wanted = step => !only || only.has(step)
  let pgSizes = process.env.BENCH_PG === '0' ? [] : sizesOf(process.env.BENCH_PG_SIZES, '500000').filter(n => sizes.includes(n))
  const started = now()

  console.log(`cap-data-pipeline bench — node ${process.version}, ${os.cpus().length} CPUs (${os.cpus()[0]?.model}), ` +
    `sizes ${sizes.join(', ')} (+ delta only: ${deltaSizes.join(', ') || 'none'}), ${rounds} round(s), ${memory ? 'in-memory' : 'file-backed'} SQLite` +
    `${pgSizes.length ? `, PostgreSQL at ${pgSizes.join(', ')}` : ''}`)
  console.log(`provider: test/fixtures/provider (${SOURCE}: UUID key, 11 columns) in its own process; consumer: test/fixtures/consumer in a fresh process per step\n`)

  const tmp = await mkdtemp(path.join(os.tmpdir(), 'cdp-bench-'))
  const label = `cdp_bench_${process.pid}`
  // Ctrl-C: the databases and files of this run go too (workers and the provider get the signal themselves)
  process.once('SIGINT', () => {
    console.log('\ninterrupted: removing the databases of this run')
    const drop = pgSizes.length
      ? pgQuery(`SELECT datname FROM pg_database WHERE datname LIKE '${label}%'`).then(list => Promise.all(list.map(row => dropPgDatabase(row.datname))))
      : Promise.resolve()
    drop.catch(() => {}).then(() => rm(tmp, { recursive: true, force: true })).finally(() => process.exit(130))
  })
  let pgTemplate
  let pgCount = 0
  const results = []
  try {
    let consumerTemplate
    if (!memory) {
      consumerTemplate = path.join(tmp, 'consumer-template.db')
      await deployApp(CONSUMER_DIR, sqliteEnv(consumerTemplate))
    }
    if (pgSizes.length) {
      try {
        pgTemplate = await createPgDatabase(`${label}_template`)
        await deployApp(CONSUMER_DIR, postgresEnv(pgTemplate))
      } catch (error) {
        console.log(`PostgreSQL steps skipped: ${error.message.split('\n')[0]}\n`)
        pgSizes = []
      }
    }

    for (const n of [...new Set([...deltaSizes, ...sizes])].sort((a, b) => a - b)) {
      const all = sizes.includes(n)
      const providerDb = memory ? undefined : path.join(tmp, `provider-${n}.db`)
      if (providerDb) await deployApp(PROVIDER_DIR, sqliteEnv(providerDb))
      const provider = await startProvider({ dbFile: providerDb })
      const result = { n, steps: {}, delta: undefined }
      const rowsFile = path.join(tmp, `rows-${n}.ndjson`)
      try {
        const t0 = now()
        await control(provider.url, 'seedBench', { from: 1, count: n - 1, modifiedAt: T_OLD })
        await control(provider.url, 'seedBench', { from: n, count: 1, modifiedAt: T_NEW })
        console.log(`N=${n}: provider pid ${provider.child.pid} at ${provider.url}, seeded in ${((now() - t0) / 1000).toFixed(1)} s`)

        if (all && (wanted('writeCap') || wanted('writeTarget') || wanted('pg.writeCap') || wanted('pg.writeTarget'))) await dumpRows(provider.url, n, rowsFile)

        let steps = 0
        // a fresh consumer database per step: a copy of the deployed template (SQLite) or a new
        // database from the template (PostgreSQL); in-memory: the worker deploys
        const consumerDb = async pg => {
          if (pg) {
            const name = await createPgDatabase(`${label}_${++pgCount}`, pgTemplate)
            return { env: postgresEnv(name), drop: () => dropPgDatabase(name) }
          }
          if (memory) return { env: {}, drop: async () => {} }
          const file = path.join(tmp, `consumer-${n}-${++steps}.db`)
          await copyFile(consumerTemplate, file)
          return { env: sqliteEnv(file), file, drop: () => removeDb(file) }
        }
        const common = { n, providerUrl: provider.url, providerPid: provider.child.pid, rowsFile, memory }
        let lastFull // the database of the last SQLite full copy: the delta step starts from it
        for (let r = 0; all && r < rounds; r++) {
          for (const [pg, list] of [[false, STEPS], [true, pgSizes.includes(n) ? PG_STEPS : []]]) {
            for (const step of list) {
              const key = pg ? `pg.${step}` : step
              if (!wanted(key) && !(step === 'read' && wanted('readRaw'))) continue
              const database = await consumerDb(pg)
              let keep = false
              try {
                const measured = await runWorker(SELF, { ...common, step, key, round: r }, { env: database.env })
                for (const [name, value] of Object.entries(measured)) (result.steps[name] ??= []).push(value)
                console.log(`  N=${n} round ${r + 1}: ${Object.entries(measured).map(([name, value]) => `${name} ${describe(value)}`).join(' · ')}`)
                if (key === 'full' && database.file) {
                  if (lastFull) await removeDb(lastFull)
                  lastFull = database.file
                  keep = true
                }
              } finally {
                if (!keep) await database.drop()
              }
            }
          }
        }

        if (wanted('delta')) {
          const database = await consumerDb(false)
          if (lastFull && database.file) await moveDb(lastFull, database.file)
          try {
            result.delta = (await runWorker(SELF, { ...common, step: 'delta', key: 'delta', round: 0, copied: Boolean(lastFull && database.file), rounds }, { env: database.env })).delta
            lastFull = undefined
            const d = result.delta
            console.log(`  N=${n} delta: no change ${d.noChange.requests} request(s) ${d.noChange.ms} ms vs direct ${d.noChange.directMs} ms · ` +
              `1% changed ${d.changed.ms} ms (${d.changed.requests} requests, ${d.changed.updated} updated) · ` +
              `ties: take ${d.ties.take.ms} ms (${d.ties.take.rows} rows), then ${d.ties.noChange.requests} request(s) ${d.ties.noChange.rowsPerRun} rows ${d.ties.noChange.ms} ms vs direct ${d.ties.noChange.directMs} ms`)
          } finally {
            await database.drop()
          }
        }
        if (lastFull) await removeDb(lastFull)
      } finally {
        await provider.stop()
        if (providerDb) await removeDb(providerDb)
        await rm(rowsFile, { force: true })
      }
      results.push(summarizeSize(result))
    }
  } finally {
    if (pgTemplate) await dropPgDatabase(pgTemplate).catch(() => {})
    await rm(tmp, { recursive: true, force: true })
  }

  const ratios = ratiosOf(results)
  printTables(results, ratios)
  const report = {
    date: new Date().toISOString(),
    node: process.version,
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    database: memory ? 'SQLite in-memory in both processes' : 'file-backed SQLite in both processes (WAL), PostgreSQL as consumer database for pg.* steps',
    remoteClient: process.env.BENCH_NATIVE_FETCH === '0' ? 'SAP Cloud SDK' : 'native fetch',
    entity: `${SOURCE} → ${TARGET}: UUID key, 11 columns`,
    batchSize: BATCH,
    rounds,
    minutes: round((now() - started) / 60_000, 1),
    targets: TARGETS,
    results,
    ratios,
  }
  await mkdir(path.dirname(RESULTS), { recursive: true })
  await writeFile(RESULTS, JSON.stringify(report, null, 2))
  console.log(`\nwritten ${path.relative(ROOT, RESULTS)} (${report.minutes} min)`)
}

async function removeDb(file) {
  await Promise.all(['', '-wal', '-shm', '-journal'].map(suffix => rm(file + suffix, { force: true })))
}

async function moveDb(from, to) {
  await removeDb(to)
  for (const suffix of ['', '-wal', '-shm']) await rename(from + suffix, to + suffix).catch(error => { if (error.code !== 'ENOENT') throw error })
}

/** All rows of the provider once, in key order, as the OData service serves them: one JSON object a line. */
async function dumpRows(base, n, file) {
  const t0 = now()
  const handle = await open(file, 'w')
  let rows = 0
  let last
  try {
    for (;;) {
      const filter = last === undefined ? '' : `&$filter=${encodeURIComponent(`ID gt ${last}`)}`
      const response = await fetch(`${base}/odata/v4/catalog/${SOURCE}?$select=${COLUMNS.join(',')}&$orderby=ID${filter}&$top=10000`)
      if (!response.ok) throw new Error(`dump: ${response.status} ${await response.text()}`)
      const { value } = await response.json()
      if (!value.length) break
      let text = ''
      for (const row of value) {
        for (const key of Object.keys(row)) if (key.startsWith('@')) delete row[key]
        text += JSON.stringify(row) + '\n'
      }
      await handle.write(text)
      rows += value.length
      last = value.at(-1).ID
    }
  } finally {
    await handle.close()
  }
  if (rows !== n) throw new Error(`dump: ${rows} rows of ${n}`)
  console.log(`  rows fetched once for the write-only steps in ${((now() - t0) / 1000).toFixed(1)} s`)
}

function describe(value) {
  const rss = value.rss ? `, peak RSS ${round(value.rss.vmHwmMB, 1)} MB` : ''
  const other = value.otherCores > 0.25 ? ` [other load ${value.otherCores.toFixed(1)} cores]` : ''
  return `${round(value.ms)} ms${rss}${other}`
}

/** Medians over the rounds, per step. */
function summarizeSize(result) {
  const steps = {}
  for (const [name, list] of Object.entries(result.steps)) {
    const ms = median(list.map(x => x.ms))
    steps[name] = {
      ms: round(ms),
      min: round(Math.min(...list.map(x => x.ms))),
      max: round(Math.max(...list.map(x => x.ms))),
      rowsPerSec: Math.round(result.n / (ms / 1000)),
      consumerCpuMs: round(median(list.map(x => x.consumerCpuMs))),
      providerCpuMs: round(median(list.map(x => x.providerCpuMs))),
      ...(list[0].dbCpuMs !== undefined ? { databaseCpuMs: round(median(list.map(x => x.dbCpuMs))) } : {}),
      otherCores: list.map(x => round(x.otherCores, 2)),
      all: list.map(x => round(x.ms)),
      ...(list[0].rss ? {
        rss: {
          vmHwmMB: round(median(list.map(x => x.rss.vmHwmMB)), 1),
          vmHwmMaxMB: round(Math.max(...list.map(x => x.rss.vmHwmMB)), 1),
          sampledMB: round(median(list.map(x => x.rss.sampledMB)), 1),
          bootMB: round(median(list.map(x => x.rss.bootMB)), 1),
          all: list.map(x => round(x.rss.vmHwmMB, 1)),
          atPeak: list.map(x => x.rss.atPeak),
        },
      } : {}),
      ...(list[0].extra ? { extra: list[0].extra } : {}),
    }
  }
  return { n: result.n, steps, delta: result.delta }
}

function ratiosOf(results) {
  const checks = []
  const add = (name, n, value, target, ok, perRound) =>
    checks.push({ name, n, value: value === null ? null : round(value, 2), target, ok: value === null ? null : ok, ...(perRound ? { perRound: perRound.map(x => round(x, 2)) } : {}) })
  // ratios of the medians; per round as well (a round runs the steps back to back)
  const ratio = (f, ...steps) => [f(...steps.map(x => x.ms)), steps[0].all.map((_, i) => f(...steps.map(x => x.all[i])))]
  const maxOf = (a, b, c) => a / Math.max(b, c)
  const over = (a, b) => a / b
  for (const { n, steps: s, delta } of results) {
    if (s.full && s.read && s.writeCap) {
      const [v, each] = ratio(maxOf, s.full, s.read, s.writeCap)
      add('full / max(read-only, write-only CAP)', n, v, `≤ ${TARGETS.fullVsMax}`, v <= TARGETS.fullVsMax, each)
    }
    if (s.writeCap && s.writeTarget) {
      const [v, each] = ratio(over, s.writeCap, s.writeTarget)
      add('CAP UPSERT time / plugin target write time', n, v, `≥ ${TARGETS.capVsTarget}`, v >= TARGETS.capVsTarget, each)
    }
    if (s.full && s.readRaw) {
      const [v, each] = ratio(over, s.full, s.readRaw)
      add('full / provider serving all pages', n, v, `≤ ${TARGETS.fullVsServe}`, v <= TARGETS.fullVsServe, each)
    }
    if (s['pg.full'] && s.read && s['pg.writeCap']) {
      const [v, each] = ratio(maxOf, s['pg.full'], s.read, s['pg.writeCap'])
      add('PostgreSQL: full / max(read-only, write-only CAP)', n, v, `≤ ${TARGETS.pgFullVsMax}`, v <= TARGETS.pgFullVsMax, each)
    }
    if (s['pg.writeCap'] && s['pg.writeTarget']) {
      const [v, each] = ratio(over, s['pg.writeCap'], s['pg.writeTarget'])
      add('PostgreSQL: CAP UPSERT time / plugin target write time', n, v, `≥ ${TARGETS.capVsTarget}`, v >= TARGETS.capVsTarget, each)
    }
    if (delta) {
      add('no-change delta: requests per run', n, delta.noChange.requests, `= ${TARGETS.deltaRequests}`, delta.noChange.requests === TARGETS.deltaRequests)
      add('no-change delta / same request direct', n, delta.noChange.vsDirect, `≤ ${TARGETS.deltaVsDirect}`, delta.noChange.vsDirect <= TARGETS.deltaVsDirect)
      add('after 5,000 ties: no-change requests per run', n, delta.ties.noChange.requests, `= ${TARGETS.deltaRequests}`, delta.ties.noChange.requests === TARGETS.deltaRequests)
      add('after 5,000 ties: no-change delta / direct', n, delta.ties.noChange.vsDirect, `≤ ${TARGETS.deltaVsDirect}`, delta.ties.noChange.vsDirect <= TARGETS.deltaVsDirect)
    }
  }
  const full = results.filter(r => r.steps.full)
  const pairs = full.flatMap((a, i) => full.slice(i + 1).map(b => [a, b])).filter(([a, b]) => b.n === 5 * a.n)
  for (const [a, b] of pairs) {
    const v = b.steps.full.ms / a.steps.full.ms
    add(`time(${b.n / 1000}k) / time(${a.n / 1000}k), full copy`, b.n, v, `≤ ${TARGETS.growthPer5x}`, v <= TARGETS.growthPer5x)
    const growth = b.steps.full.rss.vmHwmMB - a.steps.full.rss.vmHwmMB
    add(`peak RSS ${b.n / 1000}k − ${a.n / 1000}k (MB)`, b.n, growth, `≤ ${TARGETS.rssGrowthMB}`, growth <= TARGETS.rssGrowthMB)
  }
  const largest = full.at(-1)
  if (largest?.n >= 500000) add(`peak RSS at ${largest.n / 1000}k (MB)`, largest.n, largest.steps.full.rss.vmHwmMB, `≤ ${TARGETS.rssMaxMB}`, largest.steps.full.rss.vmHwmMB <= TARGETS.rssMaxMB)
  return checks
}

function printTables(results, ratios) {
  const table = (head, rows) => {
    const widths = head.map((_, i) => Math.max(...[head, ...rows].map(row => String(row[i] ?? '').length)))
    const line = row => row.map((cell, i) => (i === 0 ? String(cell ?? '').padEnd(widths[i]) : String(cell ?? '').padStart(widths[i]))).join('  ')
    console.log(line(head))
    console.log(widths.map(w => '─'.repeat(w)).join('  '))
    for (const row of rows) console.log(line(row))
  }
  const labels = {
    read: 'read-only: plugin source adapter, keyset',
    readRaw: 'read-only: same URLs, fetch + JSON.parse',
    writeCap: 'write-only: CAP DELETE + UPSERT ×1000, 1 tx',
    writeTarget: 'write-only: plugin db target, 1 tx',
    loop: 'hand-written loop: fetch page, then UPSERT',
    full: 'plugin full copy',
    'pg.writeCap': 'PostgreSQL write-only: CAP UPSERT',
    'pg.writeTarget': 'PostgreSQL write-only: plugin db target',
    'pg.full': 'PostgreSQL: plugin full copy',
  }
  const rows = []
  for (const { n, steps } of results) {
    for (const [name, label] of Object.entries(labels)) {
      const s = steps[name]
      if (!s) continue
      rows.push([label, n.toLocaleString('en'), s.ms, `${s.min}–${s.max}`, s.rowsPerSec.toLocaleString('en'),
        `${s.consumerCpuMs}${s.databaseCpuMs !== undefined ? ` + ${s.databaseCpuMs} PostgreSQL` : ''}`, s.providerCpuMs, s.rss ? `${s.rss.vmHwmMB} (boot ${s.rss.bootMB})` : ''])
    }
  }
  console.log()
  if (rows.length) table(['step (median of rounds)', 'rows', 'ms', 'min–max', 'rows/s', 'consumer CPU ms', 'provider CPU ms', 'peak RSS MB'], rows)

  const deltaRows = []
  for (const { n, delta: d } of results) {
    if (!d) continue
    const nc = d.noChange
    const t = d.ties
    deltaRows.push(['no change (steady state)', n.toLocaleString('en'), nc.requests, nc.rowsPerRun, nc.ms, nc.directMs, nc.vsDirect, `first run ${d.first.ms} ms, ${d.first.requests} req`])
    deltaRows.push(['  floor: one durable CAP transaction (1 row)', n.toLocaleString('en'), '', '', nc.durableTxMs, '', '', `run − direct: ${round(nc.ms - nc.directMs, 1)} ms`])
    deltaRows.push(['1% changed', n.toLocaleString('en'), d.changed.requests, d.changed.rows, d.changed.ms, '', '', `${d.changed.created} created, ${d.changed.updated} updated, ${d.changed.consumerCpuMs} ms consumer CPU`])
    deltaRows.push([`bulk update: ${t.take.touched} rows get the newest value`, n.toLocaleString('en'), t.take.requests, t.take.rows, t.take.ms, '', '', `${t.take.updated} updated`])
    deltaRows.push(['no change after it', n.toLocaleString('en'), t.noChange.requests, t.noChange.rowsPerRun, t.noChange.ms, t.noChange.directMs, t.noChange.vsDirect, `${t.noChange.bytesPerRun} bytes/run`])
  }
  if (deltaRows.length) {
    console.log()
    table(['delta run (median)', 'rows', 'requests', 'rows served', 'ms', 'direct ms', 'ratio', ''], deltaRows)
  }
  if (ratios.length) {
    console.log()
    table(['target (issue 14)', 'rows', 'value', 'target', '', 'per round'],
      ratios.map(c => [c.name, c.n.toLocaleString('en'), c.value, c.target, c.ok === null ? '' : c.ok ? '✓' : '✗', c.perRound?.join(' ') ?? '']))
  }
}

// ---------------------------------------------------------------------------------------
// worker: the consumer app in this process, one step
// ---------------------------------------------------------------------------------------

async function worker() {
  const o = JSON.parse(process.env.BENCH_OPTIONS)
  const { n, providerUrl, providerPid } = o
  const cdsRequire = createRequire(path.join(CONSUMER_DIR, 'package.json'))
  const cds = cdsRequire('@sap/cds')
  cds.root = CONSUMER_DIR
  cds.env.requires.Provider.credentials = { url: `${providerUrl}/odata/v4/catalog` }
  cds.env.remote = { ...cds.env.remote, native_fetch: process.env.BENCH_NATIVE_FETCH !== '0' }
  const { server } = await cds.exec('--in-memory?', '--port', '0')
  const { UPSERT, DELETE } = cds.ql
  const engine = await cds.connect.to('data-pipeline')
  const db = await cds.connect.to('db')
  await engine.addPipeline({ name: 'bench', source: { service: 'Provider', entity: SOURCE, batchSize: BATCH }, target: { entity: TARGET } })
  const prepared = await engine.registry.prepare('bench')
  const bootMB = process.memoryUsage().rss / MB

  const stats = async () => (await fetch(`${providerUrl}/odata/v4/control/stats()`)).json()
  const providerCpu = () => processCpuMs(providerPid)
  // PostgreSQL steps: the server's backends do the target's work outside this process
  const dbCpu = o.key.startsWith('pg.') ? postgresCpuMs : () => 0
  const cpuMs = since => { const cpu = process.cpuUsage(since); return (cpu.user + cpu.system) / 1000 }
  const systemBusyMs = () => {
    const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/)
    const t = ticks.map(Number)
    return ((t.reduce((a, b) => a + b, 0) - t[3] - t[4]) * 1000) / 100
  }
  // other work on the machine skews timings: wait (bounded) for quiet, and record what there was
  const quietCores = Number(process.env.BENCH_QUIET_CORES ?? 0.3)
  const quietWait = Number(process.env.BENCH_QUIET_WAIT ?? 10) * 1000
  const waitForQuiet = async () => {
    const until = now() + quietWait
    for (;;) {
      const c0 = process.cpuUsage()
      const p0 = providerCpu() ?? 0
      const d0 = dbCpu()
      const s0 = systemBusyMs()
      const t0 = now()
      await new Promise(resolve => setTimeout(resolve, 300))
      const other = (systemBusyMs() - s0 - cpuMs(c0) - ((providerCpu() ?? 0) - p0) - (dbCpu() - d0)) / (now() - t0)
      if (other < quietCores || now() > until) return
    }
  }

  // BENCH_PROFILE: a CPU profile of the named phases in the first round
  const profiles = new Set((process.env.BENCH_PROFILE ?? '').split(',').filter(Boolean))
  const { Session } = await import('node:inspector/promises')
  const phase = async (name, fn) => {
    if (quietWait > 0) await waitForQuiet()
    const profiling = o.round === 0 && profiles.has(name)
    let session
    if (profiling) {
      session = new Session()
      session.connect()
      await session.post('Profiler.enable')
      await session.post('Profiler.setSamplingInterval', { interval: 200 })
      await session.post('Profiler.start')
    }
    const cpu0 = process.cpuUsage()
    const p0 = providerCpu()
    const d0 = dbCpu()
    const s0 = systemBusyMs()
    const t0 = now()
    const extra = await fn()
    const ms = now() - t0
    const consumerCpuMs = cpuMs(cpu0)
    const providerCpuMs = p0 === undefined ? undefined : providerCpu() - p0
    const dbCpuMs = dbCpu() - d0
    const otherCores = Math.max(0, (systemBusyMs() - s0 - consumerCpuMs - (providerCpuMs ?? 0) - dbCpuMs) / ms)
    if (session) {
      const { profile } = await session.post('Profiler.stop')
      session.disconnect()
      await mkdir(path.dirname(RESULTS), { recursive: true })
      await writeFile(path.join(path.dirname(RESULTS), `${name}-${n}.cpuprofile`), JSON.stringify(profile))
    }
    return { ms, consumerCpuMs, providerCpuMs, ...(o.key.startsWith('pg.') ? { dbCpuMs } : {}), otherCores, ...(extra ? { extra } : {}) }
  }

  const loadRows = async () => {
    const rows = []
    for await (const line of readline.createInterface({ input: createReadStream(o.rowsFile), crlfDelay: Infinity })) if (line) rows.push(JSON.parse(line))
    if (rows.length !== n) throw new Error(`${o.rowsFile}: ${rows.length} rows of ${n}`)
    return rows
  }
  const fullRun = async () => {
    const { done } = await engine.execute('bench', { mode: 'full' })
    const outcome = await done
    if (outcome.status !== 'completed' || outcome.statistics.created !== n) throw new Error(`full run: ${outcome.status}, ${JSON.stringify(outcome.statistics)} ${outcome.error ?? ''}`)
  }
  const pgKey = name => (o.key.startsWith('pg.') ? `pg.${name}` : name)

  const measured = {}
  switch (o.step) {
    case 'read': {
      // the stream a full run reads ($select, $orderby, $top, keyset $filter, $count as the source
      // sends them); the URLs of its first two pages give the template for the plain-fetch pass
      let firstUrls
      let lastOfFirst
      measured.read = await phase('read', async () => {
        let rows = 0
        let pages = 0
        for await (const page of prepared.source.readStream({ name: 'bench', mode: 'full', lastSync: null, lastKey: null })) {
          rows += page.length
          if (++pages === 1) lastOfFirst = page.at(-1).ID
          if (pages === 2) firstUrls = (await stats()).urls.slice(-2)
        }
        if (rows !== n) throw new Error(`read-only: ${rows} rows of ${n}`)
        return { pages }
      })
      const [first, second] = firstUrls
      if (second.split(lastOfFirst).length !== 2) throw new Error(`read-only: no keyset filter on ${lastOfFirst} in ${second}`)
      const [before, after] = second.split(lastOfFirst)
      measured.readRaw = await phase('readRaw', async () => {
        let rows = 0
        let pages = 0
        let url = first
        let count
        for (;;) {
          const response = await fetch(`${providerUrl}${url}`)
          if (!response.ok) throw new Error(`raw read ${url}: ${response.status}`)
          const body = await response.json()
          count ??= body['@odata.count']
          const { value } = body
          pages++
          rows += value.length
          if (!value.length || value.length < BATCH || (count !== undefined && rows >= count)) break
          url = before + value.at(-1).ID + after
        }
        if (rows !== n) throw new Error(`raw read: ${rows} rows of ${n}`)
        return { pages, urls: [first, second] }
      })
      break
    }
    case 'writeCap': {
      const rows = await loadRows()
      measured[pgKey('writeCap')] = await phase(pgKey('writeCap'), () => db.tx(async tx => {
        await tx.run(DELETE.from(TARGET))
        for (let i = 0; i < rows.length; i += BATCH) await tx.run(UPSERT.into(TARGET).entries(rows.slice(i, i + BATCH)))
      }))
      break
    }
    case 'writeTarget': {
      const rows = await loadRows()
      const target = prepared.target
      measured[pgKey('writeTarget')] = await phase(pgKey('writeTarget'), () => db.tx(async () => {
        const context = { runId: `bench-${process.pid}`, mode: 'full', batchIndex: 0 }
        await target.truncate(context)
        let created = 0
        for (let i = 0; i < rows.length; i += BATCH) created += (await target.writeBatch(rows.slice(i, i + BATCH), { ...context, batchIndex: i / BATCH })).created
        if (created !== n) throw new Error(`db target: ${created} created of ${n}`)
      }))
      break
    }
    case 'loop': {
      // what one would write by hand: a keyset page, then its UPSERT, one after the other
      measured.loop = await phase('loop', () => db.tx(async tx => {
        await tx.run(DELETE.from(TARGET))
        let rows = 0
        let last
        for (;;) {
          const filter = last === undefined ? '' : `&$filter=${encodeURIComponent(`ID gt ${last}`)}`
          const response = await fetch(`${providerUrl}/odata/v4/catalog/${SOURCE}?$select=${COLUMNS.join(',')}&$orderby=ID${filter}&$top=${BATCH}`)
          const { value } = await response.json()
          if (!value.length) break
          await tx.run(UPSERT.into(TARGET).entries(value))
          rows += value.length
          last = value.at(-1).ID
          if (value.length < BATCH) break
        }
        if (rows !== n) throw new Error(`loop: ${rows} rows of ${n}`)
      }))
      break
    }
    case 'full': {
      // a fresh process: its high-water mark is the full copy's peak (boot included, as users see it)
      // what the memory was made of at the sampled peak (V8 heap, buffers) shows where growth comes from
      const mb = m => Object.fromEntries(Object.entries(m).map(([k, v]) => [k, round(v / MB, 1)]))
      let atPeak = process.memoryUsage()
      const sample = () => { const m = process.memoryUsage(); if (m.rss > atPeak.rss) atPeak = m }
      const sampler = setInterval(sample, 50)
      const result = await phase(pgKey('full'), fullRun)
      clearInterval(sampler)
      sample()
      const sampled = atPeak.rss / MB
      const match = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'))
      measured[pgKey('full')] = { ...result, rss: { vmHwmMB: match ? Number(match[1]) / 1024 : sampled, sampledMB: sampled, bootMB, atPeak: mb(atPeak) } }
      break
    }
    case 'delta':
      Object.assign(measured, await deltaStep())
      break
    default:
      throw new Error(`unknown step ${o.step}`)
  }

  async function deltaStep() {
    if (!o.copied) await fullRun() // delta-only sizes and in-memory: the copy the deltas start from
    const deltaRun = async () => {
      const before = await stats()
      const cpu0 = process.cpuUsage()
      const t0 = now()
      const { done } = await engine.execute('bench', { mode: 'delta' })
      const outcome = await done
      const ms = now() - t0
      const consumerCpuMs = cpuMs(cpu0)
      const after = await stats()
      if (outcome.status !== 'completed') throw new Error(`delta run ${outcome.status}: ${outcome.error ?? ''}`)
      const requests = after.requests - before.requests
      return {
        ms, consumerCpuMs, requests, rows: after.rows - before.rows, bytes: after.bytes - before.bytes,
        urls: requests > 0 ? after.urls.slice(-requests) : [], created: outcome.statistics.created, updated: outcome.statistics.updated,
      }
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
    // steady state: each run followed by the same request(s) sent directly (interleaved pairs)
    const noChange = async name => {
      const runs = []
      await phase(name, async () => {
        for (let i = 0; i < DELTA_RUNS; i++) {
          const run = await deltaRun()
          runs.push({ ...run, directMs: await direct(run.urls) })
        }
      })
      const ms = median(runs.map(r => r.ms))
      const directMs = median(runs.map(r => r.directMs))
      return {
        requests: Math.max(...runs.map(r => r.requests)), requestsPerRun: runs.map(r => r.requests), rowsPerRun: Math.max(...runs.map(r => r.rows)),
        bytesPerRun: Math.round(median(runs.map(r => r.bytes))), ms: round(ms, 1), directMs: round(directMs, 1), vsDirect: round(ms / directMs, 2),
        all: runs.map(r => round(r.ms, 1)), directAll: runs.map(r => round(r.directMs, 1)), urls: runs[0].urls,
      }
    }
    // the least a tracked run adds to its read: recording its end durably, here one CAP
    // transaction updating one row (its COMMIT waits for the disk) — the floor beside the ratio
    const durableTransaction = async () => {
      const { ID, quantity } = await SELECT.one.from(TARGET).columns('ID', 'quantity')
      const times = []
      for (let i = 0; i < DELTA_RUNS; i++) {
        const t0 = now()
        await db.tx(tx => tx.run(UPDATE(TARGET).set({ quantity }).where({ ID })))
        times.push(now() - t0)
      }
      return round(median(times), 2)
    }
    const brief = run => ({ ms: round(run.ms, 1), consumerCpuMs: round(run.consumerCpuMs), requests: run.requests, rows: run.rows, bytes: run.bytes, created: run.created, updated: run.updated })

    const first = await deltaRun() // loads $metadata (schema-drift check) in this fresh process
    const steady = await noChange('delta')
    steady.durableTxMs = await durableTransaction()
    const changes = []
    for (let r = 0; r < o.rounds; r++) {
      await control(providerUrl, 'touchBench', { share: 0.01, modifiedAt: T_CHANGE(r) })
      changes.push(await deltaRun())
    }
    const pick = key => median(changes.map(c => c[key]))
    const pickInt = key => Math.round(pick(key))
    const changed = { ...brief({ ms: pick('ms'), consumerCpuMs: pick('consumerCpuMs'), requests: pickInt('requests'), rows: pickInt('rows'), bytes: pickInt('bytes'), created: pickInt('created'), updated: pickInt('updated') }), all: changes.map(c => round(c.ms, 1)), requestsPerRun: changes.map(c => c.requests) }
    const touched = await (await fetch(`${providerUrl}/odata/v4/control/touchBench`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ count: Math.min(TIE_ROWS, n), modifiedAt: T_TIES }),
    })).json()
    const take = { ...brief(await deltaRun()), touched: touched.value }
    const ties = { take, noChange: await noChange('delta.ties') }
    return { delta: { first: brief(first), noChange: steady, changed, ties } }
  }

  process.send?.({ type: 'result', result: measured })
  await new Promise(resolve => server.close(resolve))
  await cds.disconnect?.()
  process.exit(0)
}
