/**
 * Shared by the benchmarks (bench/run.mjs, bench/adapters.mjs, …): child processes for providers
 * and consumer workers, the provider's ControlService, CPU time of another process, and the
 * databases of a run (SQLite files and PostgreSQL databases deployed with CAP's own `cds deploy`).
 */
import { execFile, fork, spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { readFileSync, readdirSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const require = createRequire(import.meta.url)
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
export const PROVIDER_DIR = path.join(ROOT, 'test/fixtures/provider')
export const CONSUMER_DIR = path.join(ROOT, 'test/fixtures/consumer')
export const REST_PROVIDER = path.join(ROOT, 'test/fixtures/rest-provider/server.mjs')

/**
 * Spawns `node <args>` and resolves once its output matches `ready` (group 1: the URL). Output
 * keeps being drained afterwards, so request logs never block the child.
 */
export async function startChild(args, { cwd = ROOT, env = process.env, ready, name = args[0] }) {
  const child = spawn(process.execPath, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] })
  let log = ''
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start:\n${log}`)), 30_000)
    let started = false
    const onData = chunk => {
      // the start-up output, then the newest 20,000 characters (for a report when the child fails)
      log = started ? (log + chunk.toString()).slice(-20_000) : log.length < 20_000 ? log + chunk.toString() : log
      const match = started ? null : ready.exec(log)
      if (match) {
        started = true
        clearTimeout(timer)
        resolve(match[1].replace('localhost', '127.0.0.1'))
      }
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', onData)
    child.on('exit', code => { clearTimeout(timer); reject(new Error(`${name} exited with ${code}:\n${log}`)) })
  })
  const exited = new Promise(resolve => child.on('exit', resolve))
  return { url, child, log: () => log, async stop() { if (child.exitCode === null) child.kill('SIGTERM'); await exited } }
}

/**
 * The OData provider (test/fixtures/provider: V4 at /odata/v4/catalog, V2 at /odata/v2/catalog) in its
 * own process: in-memory SQLite, or the SQLite file `dbFile` (deployed with `deploySqlite` first).
 */
export function startProvider({ env = {}, dbFile } = {}) {
  const serve = require.resolve('@sap/cds/bin/serve.js')
  return startChild([serve, '--port', '0'], {
    cwd: PROVIDER_DIR,
    env: { ...process.env, NODE_ENV: 'test', CDS_ENV: '', ...(dbFile ? sqliteEnv(dbFile) : {}), ...env },
    ready: /server listening on \{ url: '([^']+)'/,
    name: 'provider',
  })
}

/** The plain REST provider (test/fixtures/rest-provider) with `items` items, in its own process. */
export function startRestProvider({ items, apiKey = 'bench-key' }) {
  return startChild([REST_PROVIDER, '--port', '0', '--items', String(items)], {
    env: { ...process.env, REST_API_KEY: apiKey },
    ready: /rest provider listening on (\S+)/,
    name: 'rest provider',
  })
}

/** An action of the provider's ControlService (seed, reset, faults, …). */
export async function control(base, action, data) {
  const response = await fetch(`${base}/odata/v4/control/${action}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(data) })
  if (!response.ok) throw new Error(`${action}: ${response.status} ${await response.text()}`)
}

/** User + system CPU time (ms) another process has used so far; undefined when it is gone. */
export function processCpuMs(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100 // utime + stime, USER_HZ = 100
  } catch { return undefined }
}

/** User + system CPU time (ms) all PostgreSQL server processes of this machine have used so far (its backends do a PostgreSQL target's work). */
export function postgresCpuMs() {
  let total = 0
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      if (!stat.includes(' (postgres) ')) continue
      const fields = stat.split(') ')[1].split(' ')
      total += ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
    } catch { /* gone meanwhile */ }
  }
  return total
}

/** Forks `file --worker` in the consumer fixture's folder (or `cwd`) with `options` in BENCH_OPTIONS. */
function forkWorker(file, options, { cwd = CONSUMER_DIR, env = {} } = {}) {
  const child = fork(file, ['--worker'], {
    cwd,
    execPath: process.execPath,
    execArgv: [...process.execArgv, '--expose-gc', '--disable-warning=ExperimentalWarning', ...(process.env.BENCH_NODE_OPTIONS ? process.env.BENCH_NODE_OPTIONS.split(' ') : [])],
    env: { ...process.env, NODE_ENV: 'test', CDS_ENV: '', ...env, BENCH_OPTIONS: JSON.stringify(options) },
    // the consumer's CAP start-up log only with BENCH_VERBOSE=1; warnings and errors always
    stdio: ['ignore', process.env.BENCH_VERBOSE ? 'inherit' : 'pipe', 'inherit', 'ipc'],
  })
  child.stdout?.resume()
  child.on('message', message => { if (message.type === 'progress') console.log(`  ${message.text}`) })
  return child
}

/**
 * Forks `file --worker` (see forkWorker); prints its `progress` messages and resolves with its
 * `result` message once it exited.
 */
export function runWorker(file, options, where = {}) {
  return new Promise((resolve, reject) => {
    const child = forkWorker(file, options, where)
    let result
    child.on('message', message => { if (message.type === 'result') result = message.result })
    child.on('exit', code => (result ? resolve(result) : reject(new Error(`bench worker exited with ${code} and no result`))))
  })
}

/**
 * A worker that stays after its `result` (see forkWorker): resolves with that result and
 * `request(body)`, which sends `{ type: 'request', id, body }` and resolves with the worker's
 * `{ type: 'reply', id, result }` (rejects on `error`); `close()` sends `{ type: 'close' }` and
 * waits for the exit.
 */
export function startWorker(file, options, where = {}) {
  return new Promise((resolve, reject) => {
    const child = forkWorker(file, options, where)
    const pending = new Map()
    let next = 0
    let started = false
    const exited = new Promise(done => child.on('exit', done))
    child.on('message', message => {
      if (message.type === 'result' && !started) {
        started = true
        resolve({
          result: message.result,
          request: body => new Promise((ok, fail) => { pending.set(++next, { ok, fail }); child.send({ type: 'request', id: next, body }) }),
          close: () => { if (child.exitCode === null) child.send({ type: 'close' }); return exited },
        })
      }
      if (message.type === 'reply') {
        const waiter = pending.get(message.id)
        pending.delete(message.id)
        if (message.error) waiter?.fail(new Error(message.error))
        else waiter?.ok(message.result)
      }
    })
    child.on('exit', code => {
      const error = new Error(`bench worker exited with ${code}`)
      for (const waiter of pending.values()) waiter.fail(error)
      if (!started) reject(new Error(`bench worker exited with ${code} and no result`))
    })
  })
}

/** The worker's side of startWorker: answers each request with `handle(body)` until told to close. */
export function serveRequests(handle) {
  process.on('message', async message => {
    if (message.type === 'close') return setTimeout(() => process.exit(0), 20)
    if (message.type !== 'request') return
    try {
      process.send({ type: 'reply', id: message.id, result: await handle(message.body) })
    } catch (error) {
      process.send({ type: 'reply', id: message.id, error: String(error?.stack ?? error) })
    }
  })
}

// ---------------------------------------------------------------------------------------------
// Databases: SQLite files and PostgreSQL databases (127.0.0.1:5432, trust, user postgres; PGHOST,
// PGPORT, PGUSER, PGPASSWORD override), both deployed with CAP's own `cds deploy` of an app.

/** Environment for a CAP process (server, `cds deploy`) whose `db` is the SQLite file `file`. */
export function sqliteEnv(file) {
  return { CDS_CONFIG: JSON.stringify({ requires: { db: { kind: 'sqlite', credentials: { url: file } } } }) }
}

export const PG = {
  host: process.env.PGHOST ?? '127.0.0.1',
  port: Number(process.env.PGPORT ?? 5432),
  user: process.env.PGUSER ?? 'postgres',
  password: process.env.PGPASSWORD ?? '',
}

/** CAP's `cds.requires.db` for a PostgreSQL database: the `postgres` kind of @cap-js/postgres plus credentials. */
export function postgresConfig(database) {
  const plugin = require('@cap-js/postgres/package.json')
  return { ...plugin.cds.requires.kinds.postgres, credentials: { host: PG.host, port: PG.port, user: PG.user, password: PG.password, database } }
}

/** Environment for a CAP process whose `db` is the PostgreSQL database `database`. */
export function postgresEnv(database) {
  return { CDS_CONFIG: JSON.stringify({ requires: { db: postgresConfig(database) } }) }
}

/** Runs one statement on `database` (default: the maintenance database) with its own connection. */
export async function pgQuery(sql, database = 'postgres') {
  const { Client } = require('pg')
  const client = new Client({ ...PG, database })
  await client.connect()
  try { return (await client.query(sql)).rows } finally { await client.end() }
}

const assertDbName = name => { if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`not a bench database name: '${name}'`) }

/** Creates `database`, as a copy of `template` when given (fast: no deploy per copy). */
export async function createPgDatabase(database, template) {
  assertDbName(database)
  if (template) assertDbName(template)
  await pgQuery(`CREATE DATABASE ${database}${template ? ` TEMPLATE ${template}` : ''}`)
  return database
}

/** Drops `database`, closing connections left by killed processes. */
export async function dropPgDatabase(database) {
  assertDbName(database)
  await pgQuery(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
}

/** CAP's own `cds deploy` of the app in `dir` into the database that `env` (sqliteEnv, postgresEnv) configures. */
export async function deployApp(dir, env) {
  const cds = require.resolve('@sap/cds-dk/bin/cds.js')
  try {
    await promisify(execFile)(process.execPath, [cds, 'deploy'], { cwd: dir, env: { ...process.env, NODE_ENV: 'test', CDS_ENV: '', ...env }, timeout: 120_000 })
  } catch (error) {
    throw new Error(`cds deploy of ${dir} failed: ${error.message}\n${error.stdout ?? ''}\n${error.stderr ?? ''}`)
  }
}

/** `$filter` text of "after `row`" in `order` (a timestamp then the key, or the key alone). */
function keysetAfter(order, row) {
  // UUIDs and timestamps are plain literals in OData V4
  if (order.length === 1) return `${order[0]} gt ${row[order[0]]}`
  const [a, b] = order
  // led by a plain comparison on the first column, as the product sends it (SQLite keeps to index order)
  return `${a} ge ${row[a]} and (${a} gt ${row[a]} or ${b} gt ${row[b]})`
}

/**
 * The floor of a read: a plain sequential keyset read of the entity set at `url` (OData V4, e.g.
 * through a latency proxy), as the product reads — `$count` and `filter` (a lower bound in `order`)
 * on the first page, each later page after the previous one's last row, until all counted rows are
 * read (or `limit` pages, for a warm-up).
 */
export async function sequentialRead(url, { select, order, filter, batch = 1000, limit = Infinity }) {
  const t0 = performance.now()
  let last
  let rows = 0
  let pages = 0
  let count
  for (;;) {
    const where = last === undefined ? filter : keysetAfter(order, last)
    const page = `${url}?$select=${select.join(',')}&$orderby=${order.join(',')}${where ? `&$filter=${encodeURIComponent(where)}` : ''}&$top=${batch}${pages ? '' : '&$count=true'}`
    const body = await (await fetch(page)).json()
    if (!Array.isArray(body.value)) throw new Error(`${page}: ${JSON.stringify(body).slice(0, 300)}`)
    if (!pages) count = body['@odata.count']
    pages++
    rows += body.value.length
    if (!body.value.length || rows >= count || body.value.length < batch || pages >= limit) break
    last = body.value.at(-1)
  }
  return { ms: performance.now() - t0, pages, rows }
}
