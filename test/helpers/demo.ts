/**
 * The demo apps for the tests that use them (test/e2e): demo/provider in the profile `api-v2` as
 * `npm start` runs it, without its periodic changes, and demo/consumer pointed at it (or at a proxy in
 * front of it). Resolves once the demo's first runs are over.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { startApp, ROOT, type RunningApp } from './apps'
import { waitFor } from './wait'

/** The pipelines the demo consumer registers (demo/consumer/server.js, `@federated` demo.Customers). */
export const DEMO_PIPELINES = ['orders', 'products', 'revenue-by-country', 'exchange-rates', 'demo.Customers']

/** api-v2: the provider serves Products.ean, unknown to the consumer's import (schema drift, as in `npm start`). */
export const DEMO_PROVIDER_ENV = { DEMO_CHANGE_EVERY: '0', NODE_ENV: '', CDS_ENV: 'api-v2' }

export const basic = (user: string, password = '') => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`

export interface DemoPipeline { name: string; status: string; lastSync: string | null; statistics_skipped: number }

export interface Demo {
  provider: RunningApp
  consumer: RunningApp
  /** A JSON request to the consumer as a mocked user (default alice, the PipelineAdmin). */
  api(url: string, init?: RequestInit & { user?: string }): Promise<{ status: number; data: any }>
  stop(): Promise<void>
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
    async api(url, init = {}) {
      const { user = 'alice', ...rest } = init
      const response = await fetch(`${consumer!.url}${url}`, { ...rest, headers: { 'content-type': 'application/json', authorization: basic(user), ...rest.headers } })
      const text = await response.text()
      return { status: response.status, data: text ? JSON.parse(text) : null }
    },
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
