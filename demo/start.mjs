#!/usr/bin/env node
// `npm start`: the provider (OData V4 source system) and the consumer (replicating into SQLite
// with cap-data-pipeline) as two CAP servers. Ctrl-C stops both.
//
//   DEMO_PROVIDER_PORT (default 4005), DEMO_CONSUMER_PORT (default 4004): a busy port is
//   replaced by a free one. DEMO_CHANGE_EVERY: ms between provider changes (default 20000).
//   DEMO_RATES_OUTAGE: ms the provider's exchange rates answer 503 after their first request
//   (default 10000): the consumer's first `exchange-rates` run fails, a scheduled one recovers.
//
// `npm run start:mtx` (`--mtx`, or DEMO_MTX=1): the consumer is multitenant — profile
// `multitenancy` of demo/consumer/package.json, @sap/cds-mtxs in the same process, one SQLite file
// per tenant in a temporary folder (removed on exit), mocked users alice (tenant acme), bob
// (tenant globex) and ops (the provider, cds.Subscriber). Both tenants are subscribed through
// CAP's DeploymentService (POST /-/cds/deployment/subscribe), then `products` and `orders` run
// once for each of them (a fan-out: `execute` without tenant by the provider).
//
// /pipeline and the console need one of the plugin's roles: the consumer's mocked users (no
// password) alice (PipelineAdmin), olivia (PipelineOperator), victor (PipelineViewer), nora (none).
// The demo's own /odata/v4/demo needs a signed-in user, its runPipeline an operator or admin.
// Both servers listen on 127.0.0.1 only (demo/localhost.js; DEMO_HOST overrides).
//
// Event-driven replication without a broker: both apps use CAP's file-based-messaging on one
// message box in a temporary folder (removed on exit). The provider's Customers announce every
// change (`@federation.emit`); the consumer's `@federated` replica demo.Customers follows them
// (`federation.federated.events: 'messaging'` in demo/consumer/package.json) within a second.
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import { createRequire } from 'node:module'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const here = path.dirname(fileURLToPath(import.meta.url))
const require = createRequire(path.join(here, '..', 'package.json'))
const serve = require.resolve('@sap/cds/bin/serve.js')

const MTX = process.argv.includes('--mtx') || /^(1|true|yes)$/i.test(process.env.DEMO_MTX ?? '')
/** Tenants of the multitenant variant and the mocked user bound to each (demo/consumer/package.json). */
const TENANTS = { acme: 'alice', globex: 'bob' }
const PROVIDER_USER = 'ops'
/** The consumer's mocked users (demo/consumer/package.json) and what the plugin lets each do. */
const USERS = [
  ['alice', 'PipelineAdmin', 'everything: + overrides, schedules, data inspector, reject records'],
  ['olivia', 'PipelineOperator', 'run, flush, enable/disable, replay rejects (+ what victor may)'],
  ['victor', 'PipelineViewer', 'read pipelines, runs, status, flow and landscape'],
  ['nora', 'no role', 'nothing (403); permissions() says so'],
]
const ADMIN = 'alice'

function usersText(tenantOf = {}) {
  const width = Math.max(...USERS.map(([user, role]) => `${user} ${role}`.length))
  return USERS.map(([user, role, may]) => `   ${`${user} ${role}`.padEnd(width)}  ${may}${tenantOf[user] ? ` (tenant ${tenantOf[user]})` : ''}`).join('\n')
}

const major = Number(process.versions.node.split('.')[0])
if (major < 22) {
  console.error(`The demo needs Node 22 (@sap/cds 10); this is Node ${process.versions.node}. Run it with \`npm start\`.`)
  process.exit(1)
}

/** The wanted port if it is free on localhost, otherwise any free port. */
function freePort(wanted) {
  const tryPort = port => new Promise((resolve, reject) => {
    const server = net.createServer()
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => {
      const { port: got } = server.address()
      server.close(() => resolve(got))
    })
  })
  return tryPort(wanted).catch(() => tryPort(0))
}

const children = []
let stopping = false

/**
 * A preload (`--import`) that holds the app's `served` phase (CAP runs the `served` handlers one after
 * another, this one first) until `file` exists: the consumer loads its model, deploys its in-memory
 * database and serves its services while the provider starts, but registers and first runs its
 * pipelines only once the provider listens (start.mjs writes the file then), as when they started
 * one after the other.
 */
function servedAfter(file) {
  const code = `import { createRequire } from 'node:module'
import { existsSync } from 'node:fs'
const cds = createRequire(${JSON.stringify(serve)})('../lib')
cds.on('served', () => new Promise(resolve => {
  const wait = () => existsSync(${JSON.stringify(file)}) ? resolve() : setTimeout(wait, 25)
  wait()
}))
`
  return `--import=data:text/javascript,${encodeURIComponent(code)}`
}

/** Starts `cds-serve` in an app folder; resolves with its URL once it listens. */
function startApp(name, dir, port, env = {}, nodeOptions = []) {
  const child = spawn(process.execPath, ['--disable-warning=ExperimentalWarning', ...nodeOptions, serve, '--port', String(port)], {
    cwd: path.join(here, dir),
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.push(child)
  const prefix = `[${name}] `
  let log = ''
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${name} did not start within 60 s:\n${log}`)), 60_000)
    const forward = stream => chunk => {
      const text = chunk.toString()
      if (!resolved) log += text
      for (const line of text.split('\n')) if (line.trim()) stream.write(prefix + line + '\n')
      const match = !resolved && /server listening on \{ url: '([^']+)'/.exec(log)
      if (match) {
        resolved = true
        clearTimeout(timer)
        resolve(match[1])
      }
    }
    let resolved = false
    child.stdout.on('data', forward(process.stdout))
    child.stderr.on('data', forward(process.stderr))
    child.on('exit', (code, signal) => {
      clearTimeout(timer)
      if (!resolved) reject(new Error(`${name} exited (${signal ?? code}) before listening:\n${log}`))
      else if (!stopping) {
        // Ctrl-C in a terminal reaches the children too; anything else is an unexpected end
        const expected = code === 0 || signal === 'SIGINT' || signal === 'SIGTERM'
        if (!expected) console.error(`${prefix}exited (${signal ?? code}); stopping the demo`)
        shutdown(expected ? 0 : 1)
      }
    })
  })
}

function shutdown(code = 0) {
  if (stopping) return
  stopping = true
  const alive = children.filter(child => child.exitCode === null && child.signalCode === null)
  if (!alive.length) process.exit(code)
  let left = alive.length
  for (const child of alive) {
    child.once('exit', () => { if (--left === 0) process.exit(code) })
    child.kill('SIGTERM')
  }
  setTimeout(() => { for (const child of alive) child.kill('SIGKILL'); process.exit(code) }, 5000).unref()
}

/** A request to the consumer as a mocked user (Basic auth, no password). */
async function as(user, method, url, body) {
  const response = await fetch(url, {
    method,
    headers: { authorization: `Basic ${Buffer.from(`${user}:`).toString('base64')}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    ...(body ? { body: JSON.stringify(body) } : {}),
  })
  const text = await response.text()
  if (!response.ok) throw new Error(`${method} ${url} as ${user}: ${response.status} ${text}`)
  return text ? JSON.parse(text) : undefined
}

/** Multitenant variant: the consumer's per-tenant SQLite files live here while the demo runs. */
let mtxDir
if (MTX) {
  mtxDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pipeline-demo-mtx-'))
  process.on('exit', () => fs.rmSync(mtxDir, { recursive: true, force: true }))
}
/** The message box both apps' file-based-messaging share (CAP's default, ~/.cds-msg-box, would be shared with every other app). */
const messagesDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pipeline-demo-messages-'))
process.on('exit', () => fs.rmSync(messagesDir, { recursive: true, force: true }))
const messaging = { file: path.join(messagesDir, 'messages') }

process.on('SIGINT', () => shutdown(0))
process.on('SIGTERM', () => shutdown(0))

try {
  const providerPort = await freePort(Number(process.env.DEMO_PROVIDER_PORT ?? 4005))
  const consumerPort = await freePort(Number(process.env.DEMO_CONSUMER_PORT ?? 4004))
  // both apps start side by side; the consumer's pipelines wait for the provider (servedAfter)
  const providerListens = path.join(messagesDir, 'provider-listens')
  // the URL cds-serve reports for the provider (http://localhost:<port>)
  const salesUrl = `http://localhost:${providerPort}/odata/v4/sales`
  // profile api-v2: the provider serves a newer API than the consumer imported (schema drift)
  const providerStarted = startApp('provider', 'provider', providerPort, { CDS_ENV: process.env.CDS_ENV ?? 'api-v2', CDS_CONFIG: JSON.stringify({ requires: { messaging } }) })
    .then(url => { fs.writeFileSync(providerListens, url); return url })
  const consumerStarted = startApp('consumer', 'consumer', consumerPort, MTX ? {
    CDS_ENV: [process.env.CDS_ENV, 'multitenancy'].filter(Boolean).join(','),
    // the consumer's package.json does not list @sap/cds-mtxs (the repository's devDependency): load it as a plugin
    CDS_PLUGINS: JSON.stringify({ '@sap/cds-mtxs': { impl: require.resolve('@sap/cds-mtxs/cds-plugin', { paths: [path.join(here, 'consumer')] }) } }),
    CDS_CONFIG: JSON.stringify({ requires: {
      SalesService: { credentials: { url: salesUrl } },
      db: { credentials: { url: path.join(mtxDir, 'db.sqlite') } },
      messaging,
    } }),
  } : {
    // points the consumer's remote service at the provider, and its messaging at the shared box
    CDS_CONFIG: JSON.stringify({ requires: { SalesService: { credentials: { url: salesUrl } }, messaging } }),
  }, [servedAfter(providerListens)])
  const [provider, consumer] = await Promise.all([providerStarted, consumerStarted])
  if (MTX) await startTenants(consumer, salesUrl, provider)
  else await printSingleTenant(consumer, salesUrl, provider)
} catch (error) {
  console.error(error.message)
  shutdown(1)
}

async function printSingleTenant(consumer, salesUrl, provider) {
  const demo = `${consumer}/odata/v4/demo`
  const changeEvery = Number(process.env.DEMO_CHANGE_EVERY ?? 20000)
  // the plugin's console, once the consumer serves it (it is left out when dist/console is missing)
  // (asked again for a few seconds: on a busy machine the first connection can fail)
  const served = async url => {
    const until = Date.now() + 10_000
    for (;;) {
      const status = await fetch(url, { headers: { authorization: `Basic ${Buffer.from(`${ADMIN}:`).toString('base64')}` } }).then(r => r.status, () => 0)
      if (status === 200) return true
      if (status === 404 || Date.now() > until) return false
      await new Promise(resolve => setTimeout(resolve, 250))
    }
  }
  const consoleLine = await served(`${consumer}/pipeline-console/`)
    ? `${consumer}/pipeline-console/   (sign in as ${ADMIN}, no password)`
    : 'not built (dist/console is missing: npm run build)'
  const json = "-H 'content-type: application/json'"
  console.log(`
────────────────────────────────────────────────────────────────────────────
 cap-data-pipeline demo is running

 Open the console  ${consoleLine}

 Things to try
  1. exchange-rates failed on its first run: the provider's rate desk was in maintenance (HTTP 503).
     Select it in the console and watch its next scheduled run (every 15 s) recover by itself.
  2. Live vs replicated: OpenOrders is a delegate (read from the provider on every request), Orders
     a replica (delta every 30 s), Customers a @federated replica (every minute):
       curl -u victor: '${demo}/OpenOrders?$orderby=ID%20desc&$top=3'
       curl -u victor: '${demo}/Orders?$filter=status%20eq%20%27open%27&$orderby=ID%20desc&$top=3'
  3. Run a pipeline now as an operator (victor may only look: 403; without a user: 401):
       curl -u olivia: -X POST ${demo}/runPipeline ${json} -d '{"pipeline":"orders"}'
  4. Sign in to the console as victor, olivia or nora: what each may do follows the role. As ${ADMIN},
     products shows a rejected record (currency 'EURO') and schema drift (a new column 'ean').
  5. Change a customer at the provider → it's in the replica within a second (the provider emits
     SalesService.Customers.Updated, the replica follows the event; no run, no waiting for the minute):
       curl -X PATCH '${salesUrl}/Customers(7)' ${json} -d '{"creditLimit":123000}'
       curl -u victor: '${demo}/Customers(7)'

 Users (mocked, no password; the browser asks for one, curl -u <user>:)
${usersText()}

 Pipelines  orders (delta, 30 s) · products (full, 5 min) · revenue-by-country (after orders changed rows)
            exchange-rates (full, 15 s) · demo.Customers (@federated, no code: delta, 1 min + change events)
 Data       ${demo}/ Orders · Products · RevenueByCountry · Customers · OpenOrders ·
            ExchangeRates · Pipelines · PipelineRuns (any signed-in user)
 API        curl -u ${ADMIN}: ${consumer}/pipeline/Pipelines   (the plugin's management API)
 Provider   ${salesUrl} (${changeEvery > 0 ? `orders, customers and rates change every ${Math.round(changeEvery / 1000)} s` : 'no changes: DEMO_CHANGE_EVERY=0'})
 Press Ctrl-C to stop.
────────────────────────────────────────────────────────────────────────────
`)
}

/**
 * Multitenant variant: subscribes the tenants through CAP's DeploymentService as the provider
 * user, runs `products` and `orders` once for all of them (fan-out), prints how to look at each.
 */
async function startTenants(consumer, salesUrl, provider) {
  for (const tenant of Object.keys(TENANTS)) {
    const started = Date.now()
    await as(PROVIDER_USER, 'POST', `${consumer}/-/cds/deployment/subscribe`, { tenant })
    console.log(`[demo] tenant '${tenant}' subscribed in ${Date.now() - started} ms`)
  }
  // `execute` without tenant by the provider: one run per subscribed tenant (revenue-by-country follows each orders run)
  await Promise.all(['products', 'orders'].map(async name => {
    const result = await as(PROVIDER_USER, 'POST', `${consumer}/pipeline/execute`, { name, trigger: 'manual' })
      .catch(error => ({ status: `failed: ${error.message}` }))
    console.log(`[demo] ${name}: initial run for all tenants ${result?.status ?? 'done'}`)
  }))
  const demo = `${consumer}/odata/v4/demo`
  const width = Math.max(...Object.keys(TENANTS).map(t => t.length))
  const perTenant = Object.entries(TENANTS).map(([tenant, user]) => `
   ${tenant.padEnd(width)}  user ${user}
     pipelines (tracker)     curl -u ${user}: ${consumer}/pipeline/Pipelines
     runs                    curl -u ${user}: '${consumer}/pipeline/PipelineRuns?$orderby=startTime%20desc&$top=5'
     replicated orders       curl -u ${user}: '${demo}/Orders?$top=3&$count=true'
     run a pipeline now      curl -u ${user}: -X POST ${consumer}/pipeline/execute -H 'content-type: application/json' -d '{"name":"orders"}'`).join('\n')
  // demo/consumer/package.json, profile multitenancy: alice and bob are their tenant's PipelineAdmin
  console.log(`
────────────────────────────────────────────────────────────────────────────
 cap-data-pipeline demo is running — multitenant (profile 'multitenancy', @sap/cds-mtxs)

 Provider (source system, OData V4)   ${provider}
 Consumer (one SQLite file per tenant) ${consumer}
   files                              ${mtxDir} (removed on exit)

 Subscribed tenants — each sees only its own data; log in as its user
 (the console ${consumer}/pipeline-console/ asks for a user too):
${perTenant}

 Users and roles (mocked, no password): alice and bob PipelineAdmin of their tenant, and
${usersText({ olivia: 'acme', victor: 'globex', nora: 'acme' }).split('\n').slice(1).join('\n')}

 The provider (user ${PROVIDER_USER}, roles PipelineAdmin and cds.Subscriber)
   run for every tenant (fan-out)     curl -u ${PROVIDER_USER}: -X POST ${consumer}/pipeline/execute -H 'content-type: application/json' -d '{"name":"orders"}'
   subscribe one more tenant          curl -u ${PROVIDER_USER}: -X POST ${consumer}/-/cds/deployment/subscribe -H 'content-type: application/json' -d '{"tenant":"initech"}'

 Scheduled runs (orders every 30 s, products every 5 min) fan out to all subscribed tenants.
 Press Ctrl-C to stop.
────────────────────────────────────────────────────────────────────────────
`)
}
