#!/usr/bin/env node
/**
 * Scale-out benchmark (`npm run bench`, never part of `npm test`): the engine on PostgreSQL.
 *
 * 1. Full copy into PostgreSQL beside file-backed SQLite: one pipeline, N rows from the real
 *    OData provider, each database in a fresh consumer process.
 * 2. Three pipelines on one PostgreSQL database: one instance running all three at once vs three
 *    instances (processes) each running one, started together. The throughput ratio is
 *    rows/s (three instances) ÷ rows/s (one instance); on a machine with few cores the provider,
 *    PostgreSQL and the instances share the same CPUs, so read the ratio with `cores` beside it.
 *
 * Processes: this orchestrator; the provider (test/fixtures/provider) in its own process; each
 * instance is a worker (this file with `--worker`) booting the consumer app (test/fixtures/consumer)
 * with `cds serve` on the chosen database. A fresh PostgreSQL database is created per measurement
 * (127.0.0.1:5432, user postgres, or PGHOST/PGPORT/PGUSER/PGPASSWORD) and dropped afterwards.
 *
 * Environment: BENCH_SCALE_ROWS=50000 (rows per pipeline), BENCH_ROUNDS=3 (best of; ratios are
 * medians of the rounds).
 */
import { fork } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { CONSUMER_DIR, control, startProvider } from './helpers.mjs'

const HERE = path.dirname(fileURLToPath(import.meta.url))
const RESULTS = path.join(HERE, 'results', 'latest.json')
const require = createRequire(import.meta.url)
const BATCH = 1000
/** Three targets of the same shape (ID, title, modifiedAt) in the consumer fixture. */
const TARGETS = ['consumer.BooksTies', 'consumer.BooksMidRun', 'consumer.BooksNoChange']
const PG = { host: process.env.PGHOST ?? '127.0.0.1', port: Number(process.env.PGPORT ?? 5432), user: process.env.PGUSER ?? 'postgres', password: process.env.PGPASSWORD ?? '' }

const now = () => performance.now()
const median = list => { const s = [...list].sort((a, b) => a - b); return s[Math.floor(s.length / 2)] }
const round = (x, d = 0) => Number(x.toFixed(d))

if (process.argv[2] === '--worker') await worker()
else await main()

async function main() {
  const n = Number(process.env.BENCH_SCALE_ROWS ?? 50_000)
  const rounds = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 3))
  console.log(`cap-data-pipeline scale-out bench — node ${process.version}, ${os.cpus().length} CPUs, ${n} rows per pipeline, ${rounds} round(s)`)
  const provider = await startProvider()
  try {
    await control(provider.url, 'seed', { from: 1, count: n, modifiedAt: '2026-01-01T00:00:00.000Z' })
    provider.rows = n
    const sqlite = [], postgres = [], one = [], three = []
    for (let r = 0; r < rounds; r++) {
      sqlite.push(await withSqliteFile(db => copy({ db, provider, pipelines: [0] }).then(([w]) => w.ms)))
      postgres.push(await withPostgres(db => copy({ db, provider, pipelines: [0] }).then(([w]) => w.ms)))
      // one instance running the three pipelines at once
      one.push(await withPostgres(async db => Math.max(...(await copy({ db, provider, pipelines: [0, 1, 2] })).map(w => w.ms))))
      // three instances, one pipeline each, started together
      three.push(await withPostgres(async db => {
        const ready = await Promise.all([0, 1, 2].map(i => boot({ db, provider, pipelines: [i] })))
        const t0 = now()
        await Promise.all(ready.map(w => w.go()))
        return now() - t0
      }))
      console.log(`  round ${r + 1}: full copy SQLite file ${round(sqlite.at(-1))} ms, PostgreSQL ${round(postgres.at(-1))} ms; 3 pipelines: 1 instance ${round(one.at(-1))} ms, 3 instances ${round(three.at(-1))} ms`)
    }
    const best = list => Math.min(...list)
    const result = {
      rowsPerPipeline: n,
      fullCopy: {
        sqliteFileMs: round(best(sqlite)), postgresMs: round(best(postgres)),
        sqliteRowsPerSec: Math.round(n / (best(sqlite) / 1000)), postgresRowsPerSec: Math.round(n / (best(postgres) / 1000)),
        postgresVsSqlite: round(median(postgres.map((p, i) => p / sqlite[i])), 2),
      },
      threePipelines: {
        oneInstanceMs: round(best(one)), threeInstancesMs: round(best(three)),
        oneInstanceRowsPerSec: Math.round((3 * n) / (best(one) / 1000)), threeInstancesRowsPerSec: Math.round((3 * n) / (best(three) / 1000)),
        throughputRatio: round(median(one.map((o, i) => o / three[i])), 2),
      },
      cores: os.cpus().length,
    }
    console.log(`\nfull copy of ${n} rows: SQLite file ${result.fullCopy.sqliteFileMs} ms (${result.fullCopy.sqliteRowsPerSec} rows/s), PostgreSQL ${result.fullCopy.postgresMs} ms (${result.fullCopy.postgresRowsPerSec} rows/s), PostgreSQL/SQLite ${result.fullCopy.postgresVsSqlite}×`)
    console.log(`three pipelines on one PostgreSQL: 1 instance ${result.threePipelines.oneInstanceMs} ms, 3 instances ${result.threePipelines.threeInstancesMs} ms → throughput ×${result.threePipelines.throughputRatio} (${result.cores} cores shared by provider, database and instances)`)
    await mkdir(path.dirname(RESULTS), { recursive: true })
    const report = await readFile(RESULTS, 'utf8').then(JSON.parse, () => ({}))
    await writeFile(RESULTS, JSON.stringify({ ...report, scaleOut: { date: new Date().toISOString(), ...result } }, null, 2))
  } finally {
    await provider.stop()
  }
}

/** A consumer database for one measurement: env settings for the workers. */
async function withSqliteFile(fn) {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-scale-'))
  const db = { kind: 'sqlite', credentials: { url: path.join(dir, 'consumer.sqlite') } }
  try {
    await deploy(db)
    return await fn(db)
  } finally { rmSync(dir, { recursive: true, force: true }) }
}

async function withPostgres(fn) {
  const { Client } = require('pg')
  const admin = new Client({ ...PG, database: 'postgres' })
  await admin.connect()
  const database = `bench_scale_${process.pid}_${Math.random().toString(36).slice(2, 8)}`
  await admin.query(`CREATE DATABASE ${database}`)
  // the consumer fixture does not depend on @cap-js/postgres, so name its implementation
  const db = { kind: 'postgres', impl: '@cap-js/postgres', credentials: { ...PG, database } }
  try {
    await deploy(db)
    return await fn(db)
  } finally {
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
    await admin.end()
  }
}

/** Runs the pipelines in one instance; resolves with their times. */
async function copy({ db, provider, pipelines }) {
  const w = await boot({ db, provider, pipelines })
  return w.go()
}

/** A worker process of this file in the consumer fixture's folder. */
function spawnWorker(options) {
  return fork(fileURLToPath(import.meta.url), ['--worker'], {
    cwd: CONSUMER_DIR,
    execArgv: ['--disable-warning=ExperimentalWarning'],
    env: { ...process.env, NODE_ENV: 'test', CDS_ENV: '', BENCH_OPTIONS: JSON.stringify(options) },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  })
}

/** Deploys the consumer's model (tracker tables included) to a fresh database, as `cds deploy` would. */
function deploy(db) {
  const child = spawnWorker({ db, deployOnly: true })
  return new Promise((resolve, reject) => child.on('exit', code => (code === 0 ? resolve() : reject(new Error(`deploy exited with ${code}`)))))
}

/** Boots one instance (worker process): pipelines registered, waiting for `go`. */
function boot({ db, provider, pipelines }) {
  const child = spawnWorker({ db, providerUrl: provider.url, pipelines, expected: provider.rows })
  const exited = new Promise(resolve => child.on('exit', resolve))
  return new Promise((resolve, reject) => {
    child.on('message', message => {
      if (message.type !== 'ready') return
      resolve({
        go: () => new Promise((done, failed) => {
          child.on('message', m => { if (m.type === 'result') done(m.result); if (m.type === 'error') failed(new Error(m.message)) })
          child.send({ type: 'go' })
        }).finally(() => exited),
      })
    })
    child.on('exit', code => reject(new Error(`bench instance exited with ${code}`)))
  })
}

async function worker() {
  const { db, providerUrl, pipelines, deployOnly, expected } = JSON.parse(process.env.BENCH_OPTIONS)
  const cdsRequire = createRequire(path.join(CONSUMER_DIR, 'package.json'))
  const cds = cdsRequire('@sap/cds')
  cds.root = CONSUMER_DIR
  cds.env.requires.db = db
  if (db.kind === 'postgres') cds.env.sql.dialect = 'postgres' // what @cap-js/postgres configures when an app depends on it
  if (deployOnly) {
    await cds.plugins
    await cds.deploy('*').to(await cds.connect.to('db'))
    process.exit(0)
  }
  cds.env.requires.Provider.credentials = { url: `${providerUrl}/odata/v4/catalog` }
  const { server } = await cds.exec('--port', '0')
  const engine = await cds.connect.to('data-pipeline')
  for (const i of pipelines)
    await engine.addPipeline({ name: `scale-${i}`, source: { service: 'Provider', entity: 'Books', batchSize: BATCH }, target: { entity: TARGETS[i] } })
  process.send({ type: 'ready' })
  await new Promise(resolve => process.once('message', resolve))
  try {
    const result = await Promise.all(pipelines.map(async i => {
      const t0 = now()
      const { done } = await engine.execute(`scale-${i}`, { mode: 'full' })
      const outcome = await done
      if (outcome.status !== 'completed') throw new Error(`scale-${i}: ${outcome.status}`)
      if (outcome.statistics.created !== expected) throw new Error(`scale-${i}: ${outcome.statistics.created} rows created, expected ${expected}`)
      return { pipeline: i, ms: now() - t0, created: outcome.statistics.created }
    }))
    process.send({ type: 'result', result })
  } catch (error) {
    process.send({ type: 'error', message: error.message })
  }
  await new Promise(resolve => server.close(resolve))
  process.exit(0)
}
