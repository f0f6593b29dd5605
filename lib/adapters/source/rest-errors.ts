/**
 * Errors of a REST source, built from the remote status, Retry-After and the request path only:
 * never headers or bodies (HTTP client errors carry the request config with its headers, so they
 * are never passed on as `cause`), and binding header values are scrubbed from any text.
 */
import { STATUS_CODES } from 'node:http'
import { PipelineError } from '../../pipeline/errors.js'

/** An HTTP failure of a REST source. `response.status` is the remote status (what retry decisions read). */
export class RestSourceError extends PipelineError {
  readonly response?: { status: number }
  readonly retryAfter?: number

  constructor(message: string, options: { remoteStatus?: number; retryAfter?: number } = {}) {
    super('SOURCE_FAILED', message)
    if (options.remoteStatus !== undefined) this.response = { status: options.remoteStatus }
    if (options.retryAfter !== undefined) this.retryAfter = options.retryAfter
  }
}

/** A clean error from an HTTP client error (`label` names the source, `where` the page). */
export function restFailure(label: string, error: unknown, path: string, secrets: string[], where: string, timeout?: number): RestSourceError {
  // the error and its causes, as far as they are objects (HTTP clients nest the response or the system error)
  interface ErrorLink { cause?: unknown; response?: { status?: unknown; headers?: Record<string, unknown> }; name?: unknown; code?: unknown; message?: unknown }
  const chain: ErrorLink[] = []
  for (let e = error as ErrorLink | undefined, depth = 0; e && typeof e === 'object' && depth < 6; e = e.cause as ErrorLink | undefined, depth++) chain.push(e)
  const response = chain.map(e => e.response).find(r => r && typeof r.status === 'number') as { status: number; headers?: Record<string, unknown> } | undefined
  if (response) {
    const status = response.status
    const retryAfter = retryAfterMs(headerOf(response.headers, 'retry-after'))
    const hint = status === 401 || status === 403 ? ' (check the credentials of the service binding)' : ''
    return new RestSourceError(`${label}: GET ${path} (${where}) answered ${status} ${STATUS_CODES[status] ?? ''}`.trimEnd() + hint, { remoteStatus: status, retryAfter })
  }
  // fetch: AbortSignal.timeout's TimeoutError; axios (Cloud SDK): ECONNABORTED "timeout of … exceeded"
  if (timeout !== undefined && chain.some(e => e.name === 'TimeoutError' || (e.code === 'ECONNABORTED' && /timeout/i.test(String(e.message)))))
    return new RestSourceError(`${label}: GET ${path} (${where}) timed out after ${timeout} ms (rest.timeout)`)
  const code = chain.map(e => e.code).find(c => typeof c === 'string' && /^E[A-Z_]+$/.test(c)) as string | undefined
  const innermost = chain[chain.length - 1]
  const detail = code ?? scrub(String(innermost?.message ?? error), secrets).slice(0, 200)
  return new RestSourceError(`${label}: GET ${path} (${where}) failed: ${detail}`)
}

function headerOf(headers: unknown, name: string): unknown {
  if (!headers || typeof headers !== 'object') return undefined
  const h = headers as Record<string, unknown> & { get?: (n: string) => unknown }
  if (typeof h.get === 'function') return h.get(name)
  const key = Object.keys(h).find(k => k.toLowerCase() === name)
  return key === undefined ? undefined : h[key]
}

/** `Retry-After` (seconds or HTTP date) in ms. */
function retryAfterMs(value: unknown): number | undefined {
  if (value === undefined || value === null || value === '') return undefined
  const seconds = Number(value)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const date = Date.parse(String(value))
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now())
}

/** The text with every binding header value replaced by `***`. */
export function scrub(text: string, secrets: string[]): string {
  let out = text
  for (const secret of secrets) out = out.split(secret).join('***')
  return out
}
