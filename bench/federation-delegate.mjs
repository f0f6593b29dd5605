#!/usr/bin/env node
/**
 * Benchmark of `@federation.delegate` (part of `npm run bench`, never of `npm test`):
 *
 * 1. delegated read latency vs a direct read of the provider (target ≤ 1.2× at p50) — once with
 *    the provider as fast as loopback allows, once with 20 ms of simulated remote latency;
 * 2. expand local → remote over 1,000 parents: provider requests and time;
 * 3. response cache: hit vs miss latency (p50) and their ratio.
 *
 * Processes: the provider (test/fixtures/provider) and the consumer
 * (test/fixtures/federation-delegate, credentials through CDS_CONFIG) each in its own child.
 * Environment: BENCH_ITERATIONS=200 (per latency series).
 */
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import { mkdir, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const require = createRequire(import.meta.url)
const HERE = path.dirname(fileURLToPath(import.meta.url))
const ROOT = path.resolve(HERE, '..')
const RESULTS = path.join(HERE, 'results', 'federation-delegate.json')
const ITERATIONS = Math.max(20, Number(process.env.BENCH_ITERATIONS ?? 200))
const PARENTS = 1000
const S = '/odata/v4/federation'

// request logs off: they would be measured too
const QUIET = { log: { levels: { odata: 'warn', remote: 'error', cds: 'warn', federation: 'warn' } } }
const now = () => performance.now()
const round = (x, d = 2) => Number(x.toFixed(d))
const p50 = values => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

async function start(dir, env = {}) {
  const serve = require.resolve('@sap/cds/bin/serve.js')
  const child = spawn(process.execPath, [serve, '--port', '0'], { cwd: dir, env: { ...process.env, NODE_ENV: 'test', CDS_ENV: '', CDS_CONFIG: JSON.stringify(QUIET), ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let log = ''
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${dir} did not start:\n${log}`)), 30_000)
    const onData = chunk => {
      if (log.length < 20_000) log += chunk.toString()
      const match = /server listening on \{ url: '([^']+)'/.exec(log)
      if (match) { clearTimeout(timer); resolve(match[1].replace('localhost', '127.0.0.1')) }
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', onData)
    child.on('exit', code => { clearTimeout(timer); reject(new Error(`${dir} exited with ${code}:\n${log}`)) })
  })
  const exited = new Promise(resolve => child.on('exit', resolve))
  return { url, child, async stop() { if (child.exitCode === null) child.kill('SIGTERM'); await exited } }
}

async function control(base, action, data) {
  const response = await fetch(`${base}/odata/v4/control/${action}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(data) })
  if (!response.ok) throw new Error(`${action}: ${response.status} ${await response.text()}`)
}
const stats = async base => (await (await fetch(`${base}/odata/v4/control/stats()`)).json()).requests

async function get(url) {
  const t0 = now()
  const response = await fetch(url)
  const body = await response.json()
  if (!response.ok) throw new Error(`${url}: ${response.status} ${JSON.stringify(body)}`)
  return { ms: now() - t0, body }
}

async function series(urlOf, n = ITERATIONS) {
  for (let i = 0; i < 10; i++) await get(urlOf(i)) // warm-up
  const times = []
  for (let i = 0; i < n; i++) times.push((await get(urlOf(i))).ms)
  return p50(times)
}

async function main() {
  console.log(`\ncap-data-pipeline federation bench — node ${process.version}, ${os.cpus().length} CPUs, ${ITERATIONS} iterations per series`)
  const provider = await start(path.join(ROOT, 'test/fixtures/provider'))
  const providerB = await start(path.join(ROOT, 'test/fixtures/provider'))
  const config = { ...QUIET, ...(process.env.BENCH_NATIVE_FETCH === '1' ? { remote: { native_fetch: true } } : {}), requires: { FedA: { credentials: { url: `${provider.url}/odata/v4/catalog` } }, FedB: { credentials: { url: `${providerB.url}/odata/v2/catalog` } } } }
  const consumer = await start(path.join(ROOT, 'test/fixtures/federation-delegate'), { CDS_CONFIG: JSON.stringify(config) })
  try {
    await control(provider.url, 'seed', { from: 1, count: PARENTS })
    // local parents: one review per remote book
    for (let from = 1; from <= PARENTS; from += 50) {
      await Promise.all(Array.from({ length: 50 }, (_, i) => fetch(`${consumer.url}${S}/Reviews`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ID: from + i, rating: 3, book_ID: from + i }),
      })))
    }

    // 1. delegated vs direct read
    const directUrl = i => `${provider.url}/odata/v4/catalog/Books?$select=ID,title,author,stock,modifiedAt&$filter=ID le ${20 + (i % 5)}`
    const delegatedUrl = i => `${consumer.url}${S}/Books?$filter=ID le ${20 + (i % 5)}`
    const direct = await series(directUrl)
    const delegated = await series(delegatedUrl)
    await control(provider.url, 'faults', { status: 0, count: 0, after: 0, retryAfter: 0, delay: 20 })
    const directSlow = await series(directUrl, Math.min(ITERATIONS, 60))
    const delegatedSlow = await series(delegatedUrl, Math.min(ITERATIONS, 60))
    await control(provider.url, 'faults', { status: 0, count: 0, after: 0, retryAfter: 0, delay: 0 })

    // 2. expand local → remote over 1,000 parents
    const before = await stats(provider.url)
    const expand = await get(`${consumer.url}${S}/Reviews?$top=${PARENTS}&$orderby=ID&$expand=book($select=name)`)
    const expandRequests = (await stats(provider.url)) - before
    if (expand.body.value.length !== PARENTS || expand.body.value.some(r => r.book?.ID !== r.ID)) throw new Error('expand result incomplete')
    const expandTimes = []
    for (let i = 0; i < 5; i++) expandTimes.push((await get(`${consumer.url}${S}/Reviews?$top=${PARENTS}&$orderby=ID&$expand=book($select=name)`)).ms)

    // 3. response cache: misses (a new query shape each time) vs hits (the same one)
    await control(provider.url, 'faults', { status: 0, count: 0, after: 0, retryAfter: 0, delay: 0 })
    let shape = 0
    const miss = await series(() => `${consumer.url}${S}/CachedBooks?$filter=ID le ${100 + shape++}`)
    const hit = await series(() => `${consumer.url}${S}/CachedBooks?$filter=ID le 50`)

    const result = {
      date: new Date().toISOString(),
      node: process.version,
      cpus: os.cpus().length,
      iterations: ITERATIONS,
      read: {
        directP50ms: round(direct), delegatedP50ms: round(delegated), ratio: round(delegated / direct),
        withRemoteLatency20ms: { directP50ms: round(directSlow), delegatedP50ms: round(delegatedSlow), ratio: round(delegatedSlow / directSlow) },
        target: '≤ 1.2× at p50',
      },
      expandLocalToRemote: { parents: PARENTS, providerRequests: expandRequests, firstMs: round(expand.ms, 1), p50Ms: round(p50(expandTimes), 1) },
      responseCache: { missP50ms: round(miss), hitP50ms: round(hit), missOverHit: round(miss / hit) },
    }
    console.log('\nDelegated read (20–24 rows)            p50 direct %s ms, delegated %s ms → %s× (target ≤ 1.2×)', result.read.directP50ms, result.read.delegatedP50ms, result.read.ratio)
    console.log('  … with 20 ms remote latency          p50 direct %s ms, delegated %s ms → %s×', result.read.withRemoteLatency20ms.directP50ms, result.read.withRemoteLatency20ms.delegatedP50ms, result.read.withRemoteLatency20ms.ratio)
    console.log('Expand local → remote, %d parents     %d provider request(s), first %s ms, p50 %s ms', PARENTS, expandRequests, result.expandLocalToRemote.firstMs, result.expandLocalToRemote.p50Ms)
    console.log('Response cache                         p50 miss %s ms, hit %s ms → hits %s× faster', result.responseCache.missP50ms, result.responseCache.hitP50ms, result.responseCache.missOverHit)
    await mkdir(path.dirname(RESULTS), { recursive: true })
    await writeFile(RESULTS, JSON.stringify(result, null, 2) + '\n')
    console.log(`\nresults: ${path.relative(ROOT, RESULTS)}`)
  } finally {
    await Promise.all([consumer.stop(), provider.stop(), providerB.stop()])
  }
}

await main()
