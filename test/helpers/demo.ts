/**
 * The demo apps for the tests that use them (test/e2e): demo/provider in the profile `api-v2` as
 * `npm start` runs it, without its periodic changes, and demo/consumer pointed at it (or at a proxy in
 * front of it). Resolves once the demo's first runs are over.
 *
 * Shared demos (`sharedDemo`): files that need the same demo in the same state and leave it so
 * (SHARED_DEMOS) get one instance, started by the `e2e` project's global setup
 * (test/helpers/e2e-global-setup.ts) before the first of them runs and stopped at the end of the run.
 * And `npm start` itself (demo/start.mjs, test/e2e/demo.test.ts): the global setup starts it as the run
 * begins (`spawnNpmStart`), so its first scheduled runs are over by the time its file runs.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { appendFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { inject } from 'vitest'
import { startApp, ROOT, type RunningApp } from './apps'
import { waitFor } from './wait'
import { basic } from './auth'

/** The pipelines the demo consumer registers (demo/consumer/server.js, `@federated` demo.Customers). */
export const DEMO_PIPELINES = ['orders', 'products', 'revenue-by-country', 'exchange-rates', 'demo.Customers']

/** api-v2: the provider serves Products.ean, unknown to the consumer's import (schema drift, as in `npm start`). */
export const DEMO_PROVIDER_ENV = { DEMO_CHANGE_EVERY: '0', NODE_ENV: '', CDS_ENV: 'api-v2' }

export { basic }

export interface DemoPipeline { name: string; status: string; lastSync: string | null; statistics_skipped: number }

/** What a test file uses of a demo: the apps' URLs and requests to the consumer. */
export interface DemoApps {
  provider: { url: string }
  consumer: { url: string }
  /** A JSON request to the consumer as a mocked user (default alice, the PipelineAdmin). */
  api(url: string, init?: RequestInit & { user?: string }): Promise<{ status: number; data: any }>
  /** Ends the demo (a shared one: nothing, the global setup ends it after the run). */
  stop(): Promise<void>
}

export interface Demo extends DemoApps {
  provider: RunningApp
  consumer: RunningApp
}

/** A JSON request to the demo consumer at `base` as a mocked user (default alice, the PipelineAdmin). */
async function demoRequest(base: string, url: string, init: RequestInit & { user?: string } = {}): Promise<{ status: number; data: any }> {
  const { user = 'alice', ...rest } = init
  const response = await fetch(`${base}${url}`, { ...rest, headers: { 'content-type': 'application/json', authorization: basic(user), ...rest.headers } })
  const text = await response.text()
  return { status: response.status, data: text ? JSON.parse(text) : null }
}

/** waitFor at a browser test's pace: probes every 200 ms (each probe asks the browser; apps and browser share the machine); fails naming `what`. */
export function waitUntil<T>(probe: () => Promise<T | undefined | false | null> | T | undefined | false | null, what: string, timeout = 30_000): Promise<T> {
  return waitFor(probe, what, timeout, 200)
}

/**
 * Starts both apps. `salesUrl` turns the provider's URL into the one the consumer reads from (a proxy);
 * `ready` adds a condition on the tracker rows to the wait for the first runs: every demo pipeline
 * registered, none running, orders, products and the federated customers synced once.
 */
export async function startDemo(options: {
  providerEnv?: Record<string, string>
  salesUrl?: (provider: string) => string | Promise<string>
  ready?: (pipelines: DemoPipeline[]) => boolean
} = {}): Promise<Demo> {
  // the apps' file-based-messaging share a message box of their own (as in demo/start.mjs), not CAP's default ~/.cds-msg-box
  const box = mkdtempSync(path.join(tmpdir(), 'pipeline-demo-messages-'))
  const messaging = { file: path.join(box, 'messages') }
  const provider = await startApp(path.join(ROOT, 'demo/provider'), { env: { ...DEMO_PROVIDER_ENV, CDS_CONFIG: JSON.stringify({ requires: { messaging } }), ...options.providerEnv }, timeout: 60_000 })
  let consumer: RunningApp | undefined
  const demo: Demo = {
    provider,
    get consumer() { return consumer! },
    api: (url, init) => demoRequest(consumer!.url, url, init),
    async stop() {
      await consumer?.stop()
      await provider.stop()
      rmSync(box, { recursive: true, force: true })
    },
  }
  try {
    const sales = options.salesUrl ? await options.salesUrl(provider.url) : provider.url
    consumer = await startApp(path.join(ROOT, 'demo/consumer'), {
      timeout: 60_000,
      env: { NODE_ENV: '', CDS_CONFIG: JSON.stringify({ requires: { SalesService: { credentials: { url: `${sales}/odata/v4/sales` } }, messaging } }) },
    })
    await waitUntil(async () => {
      const { data } = await demo.api('/pipeline/Pipelines?$select=name,status,lastSync,statistics_skipped')
      const rows: DemoPipeline[] = data?.value ?? []
      const synced = (name: string) => rows.find(p => p.name === name)?.lastSync
      return rows.length === DEMO_PIPELINES.length && rows.every(p => p.status !== 'running')
        && synced('orders') && synced('products') && synced('demo.Customers') && (options.ready?.(rows) ?? true)
    }, 'the initial demo runs', 60_000)
  } catch (error) {
    await demo.stop()
    throw error
  }
  return demo
}

/**
 * Demos that several files use in the same state, each file leaving it as it found it (what it
 * changes, it changes back): one instance for all of them (`sharedDemo`). `files`: the files that use
 * it (the global setup starts it before the run when one of them is to run).
 */
export const SHARED_DEMOS = {
  /** The demo after its first runs, `products` with its rejected record set aside (and its schema drift reported). */
  'products-rejected': {
    files: ['test/e2e/console-a11y.test.ts', 'test/e2e/console-roles.test.ts'],
    ready: (pipelines: DemoPipeline[]) => (pipelines.find(p => p.name === 'products')?.statistics_skipped ?? 0) > 0,
  },
} satisfies Record<string, { files: string[]; ready: (pipelines: DemoPipeline[]) => boolean }>

export type SharedDemoName = keyof typeof SHARED_DEMOS

declare module 'vitest' {
  interface ProvidedContext {
    /** The global setup's registry of shared apps (test/helpers/e2e-global-setup.ts): its URL. */
    sharedApps: string
    /** demo/start.mjs started by the global setup: the file its output goes to. */
    npmStart: { log: string }
  }
}

/** What the global setup provided, if this runs in a vitest worker of a project that has one. */
function provided<K extends 'sharedApps' | 'npmStart'>(key: K) {
  try {
    return inject(key)
  } catch {
    return undefined // not in a vitest worker
  }
}

/**
 * The shared demo `name` (SHARED_DEMOS): the global setup's instance, started once for all files that
 * use it; without a global setup (another config), one of the file's own.
 */
export async function sharedDemo(name: SharedDemoName): Promise<DemoApps> {
  const registry = provided('sharedApps')
  if (!registry) return startDemo({ ready: SHARED_DEMOS[name].ready })
  const response = await fetch(`${registry}/demo/${name}`, { method: 'POST' })
  const body = await response.text()
  if (!response.ok) throw new Error(`the shared demo '${name}' did not start: ${body}`)
  const { provider, consumer } = JSON.parse(body) as { provider: string; consumer: string }
  return { provider: { url: provider }, consumer: { url: consumer }, api: (url, init) => demoRequest(consumer, url, init), stop: async () => undefined }
}

/** demo/start.mjs as `npm start` runs it, on free ports and with its periodic changes; output appended to `log`. */
export function spawnNpmStart(log: string): { child: ChildProcess; stop(): Promise<void> } {
  const child = spawn(process.execPath, [path.join(ROOT, 'demo/start.mjs')], {
    cwd: ROOT,
    // 0: any free port (start.mjs falls back to a free one anyway); changes as in `npm start`
    env: { ...process.env, NODE_ENV: '', CDS_ENV: '', DEMO_PROVIDER_PORT: '0', DEMO_CONSUMER_PORT: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const write = (chunk: Buffer | string) => { try { appendFileSync(log, chunk) } catch { /* the log's folder is gone: the run ended */ } }
  child.stdout!.on('data', write)
  child.stderr!.on('data', write)
  const exited = new Promise<void>(resolve => child.once('exit', (code, signal) => { write(`\n${NPM_START_EXITED} (${signal ?? code})\n`); resolve() }))
  return {
    child,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGINT')
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000)
      await exited
      clearTimeout(timer)
    },
  }
}

/** The line spawnNpmStart writes when demo/start.mjs has ended. */
export const NPM_START_EXITED = '[demo/start.mjs exited]'

/**
 * demo/start.mjs for test/e2e/demo.test.ts: the one the global setup started as the run began, or
 * (without a global setup) one of the file's own. `output()`: what it printed so far.
 */
export function npmStart(): { output(): string; stop(): Promise<void> } {
  const early = provided('npmStart')
  if (early?.log) return { output: () => readFileSync(early.log, 'utf8'), stop: async () => undefined }
  const dir = mkdtempSync(path.join(tmpdir(), 'pipeline-npm-start-'))
  const log = path.join(dir, 'output.log')
  appendFileSync(log, '')
  const own = spawnNpmStart(log)
  return {
    output: () => readFileSync(log, 'utf8'),
    async stop() {
      await own.stop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
