/**
 * Keeps credentials out of logs. CAP's remote-service logger prints a failed request's
 * error including its request headers, and masks only `authorization`; API-key and other
 * credential headers from service bindings would land in the log. The plugin redacts header
 * values in everything logged by the loggers it knows before they are formatted.
 */
import cds from '@sap/cds'
import { LOGGER } from './constants.js'

/** Headers whose values are harmless and useful when reading logs. */
const SAFE_HEADERS = new Set(['accept', 'accept-language', 'content-type', 'content-length', 'x-correlation-id', 'x-request-id', 'user-agent', 'odata-version', 'dataserviceversion'])
export const REDACTED = '***'

/** Masks the values of request `headers` maps found in `value` (in place, cycle-safe). */
export function redactHeaders(value: unknown, seen = new WeakSet<object>(), depth = 0): void {
  if (value === null || typeof value !== 'object' || seen.has(value) || depth > 6) return
  seen.add(value)
  for (const [key, child] of Object.entries(value)) {
    if (key === 'response') continue // response headers carry no credentials; Retry-After is still needed
    if (key.toLowerCase() === 'headers' && child && typeof child === 'object' && !Array.isArray(child)) {
      for (const header of Object.keys(child)) {
        if (!SAFE_HEADERS.has(header.toLowerCase())) {
          try {
            (child as Record<string, unknown>)[header] = REDACTED
          } catch { /* frozen or getter-only: leave */ }
        }
      }
    } else redactHeaders(child, seen, depth + 1)
  }
  // Error properties such as `reason` and `cause` are not always enumerable
  for (const key of ['reason', 'cause', 'request', 'config'] as const) {
    const child = (value as Record<string, unknown>)[key]
    if (child && typeof child === 'object' && !Object.prototype.propertyIsEnumerable.call(value, key)) redactHeaders(child, seen, depth + 1)
  }
}

type Format = (label: string, level: number, ...args: unknown[]) => unknown[]
interface Logger { setFormat(format: Format): unknown }

/** Loggers that may print remote requests: CAP's remote services and the plugin's own. */
const REDACTED_LOGGERS = ['remote', LOGGER.engine] as const

export function registerLogRedaction(): void {
  const log = cds.log as unknown as ((id: string) => Logger) & { format: Format }
  for (const id of REDACTED_LOGGERS) {
    log(id).setFormat((label, level, ...args) => {
      for (const arg of args) redactHeaders(arg)
      return log.format(label, level, ...args)
    })
  }
}
