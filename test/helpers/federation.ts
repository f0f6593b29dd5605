/**
 * The federation-delegate consumer in-process (cds.test), wired to two real provider apps over
 * HTTP: provider A through OData V4 (`FedA`), provider B — a second instance of the same app —
 * through OData V2 (`FedB`). Provider requests are counted by each provider's control API.
 */
import cds from '@sap/cds'
import path from 'node:path'
import { FIXTURES, type ProviderControl, type RunningApp } from './apps'
import { sharedProvider } from './shared-provider'
import { client, type Client } from './management'

export type Provider = RunningApp & { control: ProviderControl }

export interface FederationContext {
  a: Provider
  b: Provider
  http: Client & {
    PATCH(url: string, data: unknown, headers?: Record<string, string>): Promise<{ status: number; data: any }>
    DELETE(url: string, headers?: Record<string, string>): Promise<{ status: number; data: any }>
  }
  test: ReturnType<typeof cds.test>
  /** Provider requests since the last call, per provider (and their URLs). */
  requests(): Promise<{ a: string[]; b: string[] }>
}

/** Seeds both providers (same data as every test file expects) and counts from here on. */
export function useFederation(options: { fixture?: string; seed?: (ctx: FederationContext) => Promise<void> } = {}): FederationContext {
  const ctx = {} as FederationContext
  beforeAll(async () => {
    // this worker's two providers, fresh (test/helpers/shared-provider.ts)
    ;[ctx.a, ctx.b] = await Promise.all([sharedProvider(0), sharedProvider(1)])
  })
  ctx.test = cds.test(path.join(FIXTURES, options.fixture ?? 'federation-delegate'))
  beforeAll(async () => {
    const requires = cds.env.requires as unknown as Record<string, { credentials?: { url: string } }>
    requires.FedA.credentials = { url: `${ctx.a.url}/odata/v4/catalog` }
    requires.FedB.credentials = { url: `${ctx.b.url}/odata/v2/catalog` }
    const axios = () => (ctx.test as unknown as { axios: any }).axios
    const base = client(axios)
    const config = (headers?: Record<string, string>) => ({ validateStatus: () => true, headers: { 'content-type': 'application/json', ...headers } })
    ctx.http = Object.assign(base, {
      PATCH: async (url: string, data: unknown, headers?: Record<string, string>) => axios().patch(url, data, config(headers)),
      DELETE: async (url: string, headers?: Record<string, string>) => axios().delete(url, config(headers)),
    })
    await Promise.all([ctx.a.control.seed({ from: 1, count: 300 }), ctx.b.control.seed({ from: 1, count: 40 })])
    await post(ctx.a.url, 'seedAuthors', { count: 30, works: 3 })
    if (options.seed) await options.seed(ctx)
    await ctx.requests()
  })
  let seen = { a: 0, b: 0 }
  ctx.requests = async () => {
    const [sa, sb] = await Promise.all([ctx.a.control.stats(), ctx.b.control.stats()])
    const since = (stats: { requests: number; urls: string[] }, before: number) => stats.urls.slice(Math.max(0, stats.urls.length - (stats.requests - before)))
    const out = { a: since(sa, seen.a), b: since(sb, seen.b) }
    seen = { a: sa.requests, b: sb.requests }
    return out
  }
  afterAll(async () => {
    await Promise.all([ctx.a?.stop(), ctx.b?.stop()])
  })
  return ctx
}

export async function post(base: string, action: string, data: object): Promise<void> {
  const response = await fetch(`${base}/odata/v4/control/${action}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(data) })
  if (!response.ok) throw new Error(`${action}: ${response.status} ${await response.text()}`)
}
