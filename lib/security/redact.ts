/**
 * Redaction: the one place that keeps credentials and database internals out of everything the
 * plugin writes or answers — HTTP answers of the management service and the delegate proxy,
 * stored run errors (PipelineRuns.error, Pipelines.lastError) and log lines.
 *
 * - Credentials: URL userinfo (`http://user:***@host`), authorization-like headers and values
 *   (`Authorization: Basic ***`, `x-api-key`, `"password": "***"`), query parameters named like
 *   a key, token, secret, signature or password, and — whatever form they appear in — every
 *   secret value of the service bindings in `cds.requires` (`redactText`).
 * - Database internals: an error of the database (SQL text, `no such table`, `SQLITE_…`, driver
 *   codes) is answered with a message for the user and a correlation id; the detail goes to the
 *   log only, at error level with the same id (`publicError`).
 *
 * CAP's remote-service logger prints a failed request's headers, masking only `authorization`:
 * the loggers named in `REDACTED_LOGGERS` get their header values and texts redacted before
 * they are formatted (`registerLogRedaction`).
 */
import { randomUUID } from 'node:crypto'
import { inspect } from 'node:util'
import { LOGGER } from '../constants.js'
import { allRequires } from '../cap/settings.js'
import { capLog, currentContext } from '../cap/index.js'

export const REDACTED = '***'

/** Headers whose values are harmless and useful when reading logs. */
const SAFE_HEADERS = new Set(['accept', 'accept-language', 'content-type', 'content-length', 'x-correlation-id', 'x-correlationid', 'x-request-id', 'user-agent', 'odata-version', 'dataserviceversion'])

/** Names of values that are credentials: as header, query parameter, JSON or binding property. */
const SECRET_NAME = String.raw`(?:[\w.-]*[-_.])?(?:password|passwd|pwd|secret|client[-_]?secret|token|access[-_]?token|refresh[-_]?token|api[-_]?key|access[-_]?key|signature|sig|authorization|credentials?|cookie)`
const SECRET_NAME_RE = new RegExp(`^${SECRET_NAME}$`, 'i')
/** Binding properties that are never secrets even though their names look alike. */
const NOT_SECRET = new Set(['forwardauthtoken', 'authentication', 'authenticationtype', 'tokenserviceurl', 'tokenserviceurltype'])

const PATTERNS: Array<[RegExp, string]> = [
  // URL userinfo: scheme://user:password@host
  [/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@'"<>]+@/gi, `$1${REDACTED}@`],
  // query parameters named like a credential
  [new RegExp(`([?&;]${SECRET_NAME}=)[^&#\\s'"<>]*`, 'gi'), `$1${REDACTED}`],
  // Authorization schemes anywhere in a text
  [/\b(Basic|Bearer|Digest|Negotiate|Token)\s+[A-Za-z0-9._~+/=-]{6,}/g, `$1 ${REDACTED}`],
  // "name": "value", name: 'value', name=value for credential-like names (JSON, headers, logs)
  [new RegExp(`(["']?\\b${SECRET_NAME}["']?\\s*[:=]\\s*)(?:"[^"]*"|'[^']*'|(?!(?:Basic|Bearer|Digest|Negotiate|Token)\\s)[^\\s,;}&]+)`, 'gi'), `$1"${REDACTED}"`],
]

function addSecret(into: Set<string>, value: unknown): void {
  if (typeof value !== 'string' || value.length < 4 || value === REDACTED) return
  into.add(value)
  for (const form of [encodeURIComponent(value), Buffer.from(value).toString('base64')]) if (form !== value) into.add(form)
}

/** Secret values of one binding's credentials: secret-named properties, header values, URL userinfo. */
function collectSecrets(value: unknown, into: Set<string>, key = '', depth = 0): void {
  if (depth > 5 || value === null || value === undefined) return
  if (typeof value === 'string') {
    if (key && SECRET_NAME_RE.test(key) && !NOT_SECRET.has(key.toLowerCase())) addSecret(into, value)
    if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) {
      try {
        const url = new URL(value)
        addSecret(into, decodeURIComponent(url.password))
        addSecret(into, url.password)
        for (const [name, param] of url.searchParams) if (SECRET_NAME_RE.test(name)) addSecret(into, param)
      } catch { /* not a URL */ }
    }
    return
  }
  if (typeof value !== 'object') return
  for (const [child, each] of Object.entries(value)) {
    if (key.toLowerCase() === 'headers' && !SAFE_HEADERS.has(child.toLowerCase())) addSecret(into, each)
    collectSecrets(each, into, child, depth + 1)
  }
}

/** Every secret value of the service bindings (`cds.requires.<service>.credentials`), longest first. */
export function bindingSecrets(): string[] {
  const requires = allRequires<unknown>()
  const secrets = new Set<string>()
  for (const conf of Object.values(requires)) {
    if (conf && typeof conf === 'object') collectSecrets((conf as { credentials?: unknown }).credentials, secrets, 'credentials')
  }
  return [...secrets].sort((a, b) => b.length - a.length)
}

/** A text with every credential it may carry masked. */
export function redactText(text: string, secrets: string[] = bindingSecrets()): string {
  let out = text
  for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join(REDACTED)
  for (const [pattern, replacement] of PATTERNS) out = out.replace(pattern, replacement)
  return out
}

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

// ---------------------------------------------------------------------------------------------
// Database errors: a message for the user in answers, the detail in the log

const SQL_TEXT = /no such (?:table|column)|SQLITE_|syntax error|constraint failed|relation "[^"]*" does not exist|column "[^"]*" does not exist|invalid table name|invalid column name|\b(?:SELECT|INSERT|UPDATE|DELETE|UPSERT|CREATE|DROP|ALTER)\b[\s\S]*\b(?:FROM|INTO|SET|TABLE|WHERE|VALUES)\b/
const MISSING_TABLE = /no such table:?\s*(?:main\.)?([\w$.]+)|relation "([^"]+)" does not exist|invalid table name:?\s*(?:Could not find table\/view\s*)?([\w$.]+)/i

/**
 * The table a database error says is missing (`no such table: X` on SQLite, `relation "x" does
 * not exist` on PostgreSQL, `invalid table name` on HANA), as the database names it.
 */
export function missingTable(error: unknown): string | undefined {
  if (!isDatabaseError(error)) return undefined
  const missing = MISSING_TABLE.exec(String((error as Error).message))
  return missing ? (missing[1] ?? missing[2] ?? missing[3]) : undefined
}

/** Whether an error comes from the database (its message would show SQL or the schema). */
export function isDatabaseError(error: unknown): boolean {
  const e = error as { code?: unknown; sql?: unknown; query?: unknown; sqlState?: unknown; severity?: unknown; message?: unknown } | undefined
  if (!e || typeof e !== 'object') return false
  if (typeof e.code === 'string' && /SQLITE_/.test(e.code)) return true
  if (typeof e.sql === 'string' || typeof e.sqlState === 'string') return true
  if (typeof e.severity === 'string' && typeof e.code === 'string' && /^[0-9A-Z]{5}$/.test(e.code)) return true // PostgreSQL
  return typeof e.message === 'string' && SQL_TEXT.test(e.message)
}

/** The correlation id of the current request (CAP's `x-correlation-id`/`req.id`), or a new one. */
export function correlationId(): string {
  const context = currentContext()
  return typeof context?.id === 'string' && context.id ? context.id : randomUUID()
}

export interface PublicError {
  /** What the answer (or a stored run error) says: no SQL, no credentials. */
  message: string
  /** The complete message for the log (credentials redacted). */
  detail: string
  correlationId: string
  database: boolean
}

/**
 * What to answer for an error, and what to log. `what` names the operation in the user's
 * message, e.g. `pipeline 'Books'`. Messages without database internals stay as they are
 * (credentials redacted).
 */
export function publicError(error: unknown, what?: string): PublicError {
  // the id a failed run logged its error under (rememberCorrelation), so the answer names it too
  const known = (error as { correlationId?: unknown } | undefined)?.correlationId
  const raw = typeof (error as Error)?.message === 'string' ? (error as Error).message : String(error)
  // …or the one a message made from such an answer names already
  const named = /correlation id ([0-9a-f-]{36})/i.exec(raw)?.[1]
  const id = typeof known === 'string' ? known : (named ?? correlationId())
  const detail = redactText(raw)
  const database = isDatabaseError(error)
  // what the user is to do next, where the run could tell (engine/run/guidance.ts)
  const guidance = (error as { guidance?: unknown } | undefined)?.guidance
  if (typeof guidance === 'string') return { message: redactText(guidance), detail, correlationId: id, database }
  if (!database) return { message: detail, detail, correlationId: id, database: false }
  const table = missingTable(error)
  const subject = what ? ` of ${what}` : ''
  const message = table
    ? `A database table${subject} (${table}) is not deployed: run cds deploy and restart the app (for a tenant: upgrade its database), then try again. Correlation id ${id}`
    : `The database rejected a statement${subject}; the details are in the application log under correlation id ${id}`
  return { message, detail, correlationId: id, database: true }
}

/** Marks an error with the correlation id its detail was logged under (for the answer made later). */
export function rememberCorrelation(error: unknown, id: string): void {
  if (error && typeof error === 'object' && Object.isExtensible(error)) Object.defineProperty(error, 'correlationId', { value: id, enumerable: false, configurable: true })
}

/** A message for an HTTP answer: with the correlation id the log has the detail under. */
export function withCorrelation(message: string, id: string): string {
  return /correlation id [0-9a-f-]{36}/i.test(message) ? message : `${message} (correlation id ${id})`
}

// ---------------------------------------------------------------------------------------------
// Loggers


/**
 * Loggers that may print bindings, remote requests or errors: CAP's server (`connect to … { url }`,
 * with the label CAP gives it), its remote services, and the plugin's own.
 */
const REDACTED_LOGGERS: Array<[string, { label: string }?]> = [['cds.serve', { label: 'cds' }], ['remote'], ...[...new Set(Object.values(LOGGER))].map(id => [id] as [string])]

/** A copy of a plain value with its texts redacted (structure kept for JSON log formats). */
function redactValue(value: unknown, secrets: string[], depth: number): unknown {
  if (typeof value === 'string') return redactText(value, secrets)
  if (value === null || typeof value !== 'object' || depth > 6) return value
  if (Array.isArray(value)) return value.map(each => redactValue(each, secrets, depth + 1))
  const proto = Object.getPrototypeOf(value)
  if (proto !== Object.prototype && proto !== null) return redactText(inspect(value, { depth: 4, breakLength: Infinity }), secrets)
  return Object.fromEntries(Object.entries(value).map(([key, each]) => [key, redactValue(each, secrets, depth + 1)]))
}

/** A log argument without credentials: texts redacted, errors printed (headers masked) and redacted. */
export function redactLogArgument(arg: unknown, secrets: string[]): unknown {
  if (typeof arg === 'string') return redactText(arg, secrets)
  if (arg === null || typeof arg !== 'object') return arg
  redactHeaders(arg)
  if (arg instanceof Error) return redactText(inspect(arg, { depth: 4, breakLength: Infinity }), secrets)
  return redactValue(arg, secrets, 0)
}

export function registerLogRedaction(): void {
  const log = capLog()
  for (const [id, options] of REDACTED_LOGGERS) {
    log(id, options).setFormat((label, level, ...args) => {
      const secrets = bindingSecrets()
      return log.format(label, level, ...args.map(arg => redactLogArgument(arg, secrets)))
    })
  }
}
