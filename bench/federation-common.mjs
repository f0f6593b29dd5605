/**
 * Helpers of the federation benches (bench/federation-delegate.mjs, bench/federation-latency.mjs):
 * app processes, the provider's control API, timed GETs, alternating series and their quantiles.
 */
import { spawn } from 'node:child_process'
import { createRequire } from 'node:module'

const require = createRequire(import.meta.url)

// request logs off: they would be measured too
export const QUIET = { log: { levels: { odata: 'warn', remote: 'error', cds: 'warn', federation: 'warn' } } }
export const now = () => performance.now()
export const round = (x, d = 2) => Number(x.toFixed(d))
export const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))]
}
export const stat = times => ({ p50: round(quantile(times, 0.5)), p95: round(quantile(times, 0.95)) })
export const mark = met => (met ? '✓' : '✗')

/** A CAP app of `dir` in a child process on a free port. */
export async function start(dir, env = {}, nodeArgs = []) {
  const serve = require.resolve('@sap/cds/bin/serve.js')
  const child = spawn(process.execPath, [...nodeArgs, serve, '--port', '0'], { cwd: dir, env: { ...process.env, NODE_ENV: 'test', CDS_ENV: '', CDS_CONFIG: JSON.stringify(QUIET), ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
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

export async function control(base, action, data) {
  const response = await fetch(`${base}/odata/v4/control/${action}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(data) })
  if (!response.ok) throw new Error(`${action}: ${response.status} ${await response.text()}`)
}
/** The provider's counters (test/fixtures/provider/srv/faults.js). */
export const stats = async base => await (await fetch(`${base}/odata/v4/control/stats()`)).json()
/** The provider's fault settings: `delay` ms per request (0 = none), other faults off. */
export const faults = (base, settings = {}) => control(base, 'faults', { status: 0, count: 0, after: 0, retryAfter: 0, delay: 0, ...settings })

export async function get(url) {
  const t0 = now()
  const response = await fetch(url)
  const body = await response.json()
  if (!response.ok) throw new Error(`${url}: ${response.status} ${JSON.stringify(body)}`)
  return { ms: now() - t0, body }
}
export const timed = url => async () => (await get(url)).ms

/** The provider URL(s) one consumer request caused, in order. */
export async function providerUrls(provider, consumerUrl) {
  const before = (await stats(provider.url)).requests
  await get(consumerUrl)
  const after = await stats(provider.url)
  return after.urls.slice(after.urls.length - (after.requests - before))
}

/**
 * Alternating series of `variants` (functions i → Promise<ms>), after a warm-up; returns the
 * times per variant.
 */
export async function alternate(variants, n, warmup = 20) {
  for (let i = 0; i < warmup; i++) for (const run of variants) await run(i)
  const times = variants.map(() => [])
  for (let i = 0; i < n; i++) for (const [v, run] of variants.entries()) times[v].push(await run(i))
  return times
}
