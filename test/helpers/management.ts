/**
 * HTTP helpers for the management API at /pipeline: never-throwing GET/POST that record
 * every response body (for the no-credentials check), OData function-parameter formatting,
 * and small polling utilities.
 */
import { basicAuth } from './auth'
export interface HttpResponse {
  status: number
  data: any
  headers: Record<string, string>
}

type Axiosish = {
  get(url: string, config?: object): Promise<HttpResponse>
  post(url: string, data?: unknown, config?: object): Promise<HttpResponse>
}

export const BOUND = (name: string) => `/pipeline/Pipelines('${encodeURIComponent(name.replace(/'/g, "''"))}')/DataPipelineManagementService`

/** `a='x',b=5` with single quotes doubled and the text URL-encoded. */
export function fnArgs(params: Record<string, string | number | boolean | undefined>): string {
  return Object.entries(params)
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => `${key}=${typeof value === 'string' ? `'${encodeURIComponent(value.replace(/'/g, "''"))}'` : value}`)
    .join(',')
}

export interface Client {
  GET(url: string, headers?: Record<string, string>): Promise<HttpResponse>
  POST(url: string, data?: unknown, headers?: Record<string, string>): Promise<HttpResponse>
  /** Every response body seen so far, as text. */
  bodies: string[]
}

/** A mocked user's Basic auth headers (test/helpers/auth.ts); /pipeline needs a role. */
export { basicAuth }

/**
 * Wraps an axios lookalike (cds.test's) so 4xx/5xx come back as responses instead of throwing.
 * Requests go as `user` (Basic auth; `null`: anonymous) unless a call passes its own authorization.
 */
export function client(axios: () => Axiosish, user: string | null = 'admin'): Client {
  const bodies: string[] = []
  const record = (res: HttpResponse) => {
    bodies.push(typeof res.data === 'string' ? res.data : JSON.stringify(res.data ?? null))
    return res
  }
  const config = (headers?: Record<string, string>) => ({ validateStatus: () => true, headers: { 'content-type': 'application/json', ...(user ? basicAuth(user) : {}), ...headers } })
  return {
    bodies,
    GET: async (url, headers) => record(await axios().get(url, config(headers))),
    POST: async (url, data = {}, headers) => record(await axios().post(url, data, config(headers))),
  }
}

/** A fetch-based client for apps in child processes; as `user` like `client`. */
export function fetchClient(base: string, user: string | null = 'admin'): Client {
  const bodies: string[] = []
  const send = async (method: string, url: string, data?: unknown, headers?: Record<string, string>): Promise<HttpResponse> => {
    const response = await fetch(`${base}${url}`, { method, headers: { 'content-type': 'application/json', ...(user ? basicAuth(user) : {}), ...headers }, body: data === undefined ? undefined : JSON.stringify(data) })
    const text = await response.text()
    bodies.push(text)
    let parsed: unknown = text
    try { parsed = text ? JSON.parse(text) : null } catch { /* keep text */ }
    return { status: response.status, data: parsed, headers: Object.fromEntries(response.headers.entries()) }
  }
  return { bodies, GET: (url, headers) => send('GET', url, undefined, headers), POST: (url, data = {}, headers) => send('POST', url, data, headers) }
}

/** The JSON text a LargeString function returns, parsed; fails with the body when not 200. */
export function jsonValue(res: HttpResponse): any {
  if (res.status !== 200) throw new Error(`expected 200, got ${res.status}: ${JSON.stringify(res.data)}`)
  return JSON.parse(res.data.value)
}

/** The OData error object of a response. */
export function errorOf(res: HttpResponse): { code?: string; message: string; target?: string } {
  return res.data?.error ?? {}
}

export { sleep, waitFor } from './wait'
