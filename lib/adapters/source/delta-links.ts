/**
 * OData standard delta links (`delta.mode: 'odata-delta'`, issue 38): the pieces of a tracked read
 * that do not depend on the protocol version — the `Prefer` header, the link as it is stored, the
 * deleted entries of a delta payload as key records, and the error of a link the provider refuses.
 *
 * OData 4.01 "Requesting Changes": the first read carries `Prefer: odata.track-changes`, its last
 * page an `@odata.deltaLink`; a GET of that link answers the changes since (changed rows as they
 * are now, deleted ones as `{"@removed": {"reason": …}, "@id": …}` or with their key fields — the
 * 4.0 form is `{"@odata.context": "…/$deletedEntity", "id": …, "reason": …}`) and, on its last
 * page, the next delta link. The link is stored relative to the service root (no host, no
 * credentials) in the tracker's `lastKey`, and only with the run's final tracker update.
 *
 * OData V2 has no delta links of its own: SAP Gateway's delta query and ODP answer `__delta`
 * (`…?!deltatoken='…'`) on the last page, and Gateway services built on Apache Olingo's OData 2
 * library write deleted entries in the 4.0 form inside `results`. ODP's own form (a row with
 * ODQ_CHANGEMODE 'D') is odp.ts's.
 */
import { PipelineError } from '../../pipeline/errors.js'
import type { DataRecord } from '../../pipeline/types.js'

/** The field a deleted entry carries (OData 4.01 JSON); engine/deletes takes such records out of their batch. */
export const REMOVED = '@removed'
/** Tracker column `lastKey` is String(1000). */
export const MAX_DELTA_LINK_LENGTH = 1000

/** The `Prefer` header of every tracked request, delta-link requests included. */
export function trackingPreference(maxPageSize: number): string {
  return `odata.track-changes, odata.maxpagesize=${maxPageSize}`
}

/** A stored delta link: the path and query relative to the service root, always starting with `/`. */
export function isStoredDeltaLink(value: string | null | undefined): value is string {
  return typeof value === 'string' && value.startsWith('/')
}

/**
 * A link of the provider (absolute URL, path from the host, or relative to the service root) as
 * the path and query below the service root: host, port and any user info are dropped.
 */
export function relativeToService(link: string, serviceUrl: string | undefined, entitySet: string): string {
  let path: string
  if (/^https?:/i.test(link)) {
    const url = new URL(link)
    path = `${url.pathname}${url.search}`
  } else if (link.startsWith('/')) path = link
  else return `/${link}` // relative to the service root (the context URL's base)
  const root = serviceRoot(serviceUrl)
  if (root && path.startsWith(`${root}/`)) return path.slice(root.length)
  const at = path.lastIndexOf(`/${entitySet}`)
  return at >= 0 ? path.slice(at) : path
}

function serviceRoot(serviceUrl: string | undefined): string | undefined {
  if (!serviceUrl) return undefined
  try {
    return new URL(serviceUrl).pathname.replace(/\/+$/, '')
  } catch {
    return undefined
  }
}

/**
 * One entry of a delta payload: a changed row as it is, a deleted entry as a record of its key
 * fields (source names) with {@link REMOVED} set to its reason. Keys missing from the entry are
 * taken from its id (`Products(1)`, `Products(ID=1,Year=2026)`, or an absolute URL of that).
 */
export function deltaEntry(record: DataRecord, keys: string[]): DataRecord {
  // V4 through CAP's remote service: `$context`; V2 (CAP renames only `__…` there): `@odata.context`
  const context = record.$context ?? record['@odata.context']
  const deletedEntity = typeof context === 'string' && context.endsWith('/$deletedEntity')
  const removed = record[REMOVED] ?? (deletedEntity ? { reason: record.reason ?? 'deleted' } : undefined)
  if (removed === undefined || removed === null) return record
  const out: DataRecord = { [REMOVED]: removed }
  const id = record['@id'] ?? record.$id ?? (deletedEntity ? record.id : undefined)
  const fromId = typeof id === 'string' ? keysOfId(id, keys) : {}
  for (const key of keys) {
    const value = record[key] ?? fromId[key]
    if (value === undefined || value === null)
      throw new PipelineError('SOURCE_FAILED', `A deleted entry of the delta payload names no value for key '${key}' (neither a key field nor an @id with it)`)
    out[key] = value
  }
  return out
}

/** The key values of an entity id such as `Products(1)` or `Orders(ID=1,Item='a''b')`. */
export function keysOfId(id: string, keys: string[]): DataRecord {
  const path = /^https?:/i.test(id) ? new URL(id).pathname : id
  const open = path.lastIndexOf('(')
  if (open < 0 || !path.endsWith(')')) return {}
  const parts = splitPredicate(decodeURIComponent(path.slice(open + 1, -1)))
  const out: DataRecord = {}
  if (parts.length === 1 && !/^[A-Za-z_]\w*=/.test(parts[0])) {
    if (keys.length === 1) out[keys[0]] = literal(parts[0])
    return out
  }
  for (const part of parts) {
    const eq = part.indexOf('=')
    if (eq > 0) out[part.slice(0, eq)] = literal(part.slice(eq + 1))
  }
  return out
}

/** Splits `a=1,b='x,y'` at the commas outside quotes. */
function splitPredicate(text: string): string[] {
  const parts: string[] = []
  let current = ''
  let quoted = false
  for (const char of text) {
    if (char === "'") quoted = !quoted
    if (char === ',' && !quoted) {
      parts.push(current)
      current = ''
    } else current += char
  }
  parts.push(current)
  return parts.map(p => p.trim()).filter(Boolean)
}

function literal(text: string): string | number | boolean {
  if (text.startsWith("'") && text.endsWith("'")) return text.slice(1, -1).replace(/''/g, "'")
  if (/^-?\d{1,15}$/.test(text)) return Number(text)
  if (text === 'true' || text === 'false') return text === 'true'
  return text
}

/** The run error of a stored delta link the provider refuses (expired token, ended subscription). */
export function refusedDeltaLink(service: string, entitySet: string, status: number, cause: unknown): PipelineError {
  const reason = status === 410 ? '410 Gone: the change tracking token expired or the subscription ended' : `HTTP ${status}`
  const detail = cause instanceof Error ? `; the provider said: ${cause.message.replace(/^Error during request to remote service: /, '')}` : ''
  return new PipelineError('SOURCE_FAILED',
    `OData source '${service}' refused the stored delta link of '${entitySet}' (${reason}${detail}). Nothing was copied; run mode 'full' to re-initialise (a new tracked initial read)`,
    { cause })
}

/** The run error of a tracked read whose last page carries no delta link. */
export function missingDeltaLink(service: string, entitySet: string): PipelineError {
  return new PipelineError('SOURCE_FAILED',
    `OData source '${service}' answered the tracked read of '${entitySet}' without a delta link on its last page (@odata.deltaLink, or __delta in OData V2): the service does not track changes of this entity set (Prefer: odata.track-changes); use another delta.mode`)
}

/** The run error of a delta link too long for the tracker. */
export function longDeltaLink(service: string, entitySet: string, length: number): PipelineError {
  return new PipelineError('SOURCE_FAILED',
    `OData source '${service}' gave a delta link for '${entitySet}' of ${length} characters; the tracker stores at most ${MAX_DELTA_LINK_LENGTH}`)
}
