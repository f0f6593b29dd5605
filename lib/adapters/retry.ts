/**
 * Retry with exponential backoff and full jitter. 4xx responses are final except
 * 408 and 429; a 429's `Retry-After` header is honoured.
 */
import type { RetryConfig } from '../pipeline/types.js'
import { currentRun, type RunPhase } from '../runs/index.js'

/** The value at a property path of an unknown value (`at(e, 'reason', 'response', 'status')`). */
function at(value: unknown, ...path: string[]): unknown {
  let node = value
  for (const key of path) {
    if (typeof node !== 'object' || node === null) return undefined
    node = (node as Record<string, unknown>)[key]
  }
  return node
}

/** HTTP status of an error thrown by CAP remote services, fetch wrappers or our adapters. */
export function statusOf(error: unknown): number | undefined {
  // CAP remote services wrap the remote status into `reason` and report 502 themselves
  const candidates = [at(error, 'reason', 'response', 'status'), at(error, 'reason', 'status'), at(error, 'response', 'status'), at(error, 'status'), at(error, 'statusCode'), at(error, 'cause', 'status')]
  return candidates.find((value): value is number => typeof value === 'number' && value >= 100 && value < 600)
}

/** `Retry-After` in ms, if the error carries one (seconds or HTTP date). */
export function retryAfterOf(error: unknown): number | undefined {
  const explicit = at(error, 'retryAfter')
  if (typeof explicit === 'number') return explicit
  const headers = at(error, 'reason', 'response', 'headers') ?? at(error, 'response', 'headers')
  const get = at(headers, 'get')
  const value = typeof get === 'function' ? (get as (name: string) => unknown).call(headers, 'retry-after') : at(headers, 'retry-after') ?? at(headers, 'Retry-After')
  if (value === undefined || value === null) return undefined
  const seconds = Number(value)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const date = Date.parse(String(value))
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now())
}

export function isRetryable(error: unknown): boolean {
  const status = statusOf(error)
  if (status === undefined) return true // network failures, resets, timeouts
  if (status === 408 || status === 429) return true
  return status >= 500
}

/** Failures where the provider surely did not serve the request: it was refused as too many (429) or while unavailable (503). */
export function notServed(error: unknown): boolean {
  const status = statusOf(error)
  return status === 429 || status === 503
}

export async function withRetry<T>(
  operation: (attempt: number) => Promise<T>,
  retry: Required<RetryConfig>,
  onRetry?: (error: unknown, attempt: number, delay: number) => void,
  phase: RunPhase = 'source',
  retryable: (error: unknown) => boolean = isRetryable,
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await operation(attempt)
    } catch (error) {
      if (attempt >= retry.maxRetries || !retryable(error)) throw error
      const backoff = Math.min(retry.maxDelay, retry.baseDelay * 2 ** attempt)
      const delay = retryAfterOf(error) ?? Math.round(backoff / 2 + Math.random() * (backoff / 2))
      onRetry?.(error, attempt + 1, delay)
      retried(error, attempt + 1, delay, phase)
      await new Promise(resolve => setTimeout(resolve, delay))
    }
  }
}

/** A retry as a run event: the status or error code as its reason, never the message (it may quote URLs or values). */
function retried(error: unknown, attempt: number, waitMs: number, phase: RunPhase): void {
  const run = currentRun()
  if (!run) return
  const httpStatus = statusOf(error)
  const code = at(error, 'code')
  const reason = httpStatus ? `HTTP ${httpStatus}` : typeof code === 'string' && /^[A-Z][A-Z_0-9]{1,39}$/.test(code) ? code : at(error, 'name') === 'TimeoutError' ? 'timeout' : 'request failed'
  run.event('retry', { phase, httpStatus, attempt, waitMs, message: reason })
}
