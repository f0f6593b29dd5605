/**
 * The outbound call of a delegated read. The query targets the consumer entity; CAP's remote
 * service resolves it through the projection chain (renames, excluded columns, `$filter`,
 * `$orderby`, `$top/$skip`, `$count`, `$search`, expands among entities of the same remote)
 * and maps the first page back. CAP returns only that first page: server-driven paging
 * (`@odata.nextLink` in V4, `__next` in V2) is followed here, and the rows of the following
 * pages are renamed back with the rename registry (by full consumer entity name).
 */
import cds from '@sap/cds'
import { LOGGER } from '../../constants.js'
import { entityNamed, isAssociationElement, registry, type DelegateInfo } from './model.js'
import { prepareHcqlService } from '../../adapters/source/hcql.js'
import { nativeFetch } from './client.js'
import { withInList } from './inlist.js'
import { matchesNoRow, resolveViewWhere, withViewWhere } from './where.js'
import { flatSelect } from './query.js'
import { connectTo, newRequest } from '../../cap/index.js'

const LOG = cds.log(LOGGER.federation)

export type Row = Record<string, unknown>

export interface RemoteService {
  name: string
  kind?: string
  options?: { credentials?: { url?: string } }
  run(query: unknown): Promise<unknown>
  dispatch(req: unknown): Promise<unknown>
}

/** A remote read result: rows (with `$count` when asked), or one row for `SELECT.one`. */
export interface RemoteResult {
  rows: Row[]
  count?: number
  one: boolean
}

/** Remote statuses a proxy passes on as they are (the client's request was wrong, not the gateway). */
const PASSED_ON = new Set([400, 404, 405, 409, 412, 422])

/** The status the remote answered with, when CAP wrapped it into its 502 gateway error. */
export function remoteStatus(error: unknown): number | undefined {
  const reason = (error as { reason?: { response?: { status?: number }; status?: number } } | undefined)?.reason
  const status = reason?.response?.status ?? reason?.status
  return typeof status === 'number' ? status : undefined
}

/** Runs a remote call; a remote 4xx the client caused comes back with its own status instead of 502. */
export async function passOn<T>(call: () => Promise<T>): Promise<T> {
  try {
    return await call()
  } catch (error) {
    const status = remoteStatus(error)
    if (status && PASSED_ON.has(status)) {
      const message = (error as Error).message.replace(/^(Error during request to remote service|HCQL request to \S+ failed with status \d+): /, '')
      throw Object.assign(new Error(message), { status, statusCode: status, code: String(status), cause: error })
    }
    throw error
  }
}

/**
 * The remote service of a delegated entity. An HCQL remote (`kind: 'hcql'`) gets the plugin's
 * HCQL handlers once (service-relative entity names on the wire, remote errors shaped like
 * OData's): CAP's remote service then forwards the consumer's CQN — resolved through the
 * projection chain, so renames, excluded columns, `where`, `orderBy`, `limit`, `count` and
 * expands among entities of the same remote — as CQN, with no translation to URLs.
 */
export async function connectRemote(info: DelegateInfo): Promise<RemoteService> {
  // an HCQL remote is CAP's remote service with the handler registration of every service
  const remote = await connectTo<RemoteService & Parameters<typeof prepareHcqlService>[0]>(info.remoteService)
  if (remote.kind === 'hcql') prepareHcqlService(remote)
  return remote
}

interface SelectQuery {
  SELECT: {
    one?: boolean
    count?: boolean
    limit?: { rows?: { val?: number }; offset?: { val?: number } } | null
    columns?: unknown[]
    [key: string]: unknown
  }
}

/** A remote `$count`: a number, or the numeric string CAP's OData V2 client passes on from `__count`. */
export function countOf(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? value : undefined
  if (typeof value === 'string' && /^\d+$/.test(value.trim())) return Number(value)
  return undefined
}

/** The next page's path relative to the remote service root, or undefined. */
function nextPath(result: unknown, remote: RemoteService, info: DelegateInfo): string | undefined {
  const link = (result as { $nextLink?: string; $next?: string } | undefined)?.$nextLink ?? (result as { $next?: string } | undefined)?.$next
  if (!link || typeof link !== 'string') return undefined
  if (!/^[a-z]+:\/\//i.test(link)) return link.startsWith('/') ? link : `/${link}`
  const url = new URL(link)
  const base = remote.options?.credentials?.url
  const basePath = base ? new URL(base).pathname.replace(/\/$/, '') : ''
  if (basePath && url.pathname.startsWith(basePath)) return url.pathname.slice(basePath.length) + url.search
  const at = url.pathname.lastIndexOf(`/${info.entitySet}`)
  return at >= 0 ? url.pathname.slice(at) + url.search : undefined
}

/** Renames a row of a following page from remote to consumer names, expands included. */
export function toConsumerRow(row: Row, entityName: string): Row {
  const info = registry.lookup(entityName)
  const entity = entityNamed(entityName)
  if (!info || !entity) return row
  const out: Row = {}
  for (const [key, value] of Object.entries(row)) {
    if (key.startsWith('@') || key === '__metadata') continue
    const name = info.inverse.get(key) ?? key
    const element = entity.elements[name]
    if (value && typeof value === 'object' && isAssociationElement(element) && element.target) {
      out[name] = Array.isArray(value) ? value.map(v => toConsumerRow(v as Row, element.target!)) : toConsumerRow(value as Row, element.target)
    } else out[name] = value
  }
  return out
}

/**
 * Runs a SELECT on a delegated entity at its remote service and follows server-driven paging
 * until the requested `$top` (or everything, when none) has arrived.
 */
export async function fetchRemote(info: DelegateInfo, query: SelectQuery): Promise<RemoteResult> {
  const one = Boolean(query.SELECT.one)
  // the view's where, for this caller: CAP's resolution would drop it (where.ts)
  const where = info.where ? resolveViewWhere(info.where) : undefined
  if (matchesNoRow(where)) return { rows: [], one, count: query.SELECT.count ? 0 : undefined }
  const remote = await connectRemote(info)
  return withViewWhere(remote, info.remoteEntity, where, () => fetchPages(info, remote, query, one))
}

async function fetchPages(info: DelegateInfo, remote: RemoteService, query: SelectQuery, one: boolean): Promise<RemoteResult> {
  const wanted = query.SELECT.limit?.rows?.val
  // `limit: null` (no paging by the application service) is not OData: leave it out
  // own and inherited options (a draft-enabled service's queries inherit theirs, query.ts)
  const select = flatSelect(query.SELECT)
  if (!select.limit?.rows && !select.limit?.offset) delete select.limit
  // HCQL has no next links: a provider that caps its pages (`@cds.query.limit.max`) answers
  // short. The count (one COUNT at the provider) tells whether more rows are to be fetched.
  const hcql = remote.kind === 'hcql' && !one
  const askedCount = Boolean(select.count)
  if (hcql && !select.groupBy && !select.distinct) select.count = true
  let result: unknown
  try {
    result = await passOn(() => nativeFetch(remote, () => withInList(remote, () => remote.run({ SELECT: select }))))
  } catch (error) {
    // a single entity the remote does not have: no row (the protocol adapter answers 404)
    if (one && (error as { status?: number }).status === 404) return { rows: [], one: true }
    throw error
  }
  if (one || !Array.isArray(result)) {
    if (Array.isArray(result)) return { rows: result.slice(0, 1) as Row[], one: true }
    return { rows: result == null ? [] : [result as Row], one, count: typeof result === 'number' ? result : undefined }
  }
  const rows = [...result] as Row[]
  const count = countOf((result as { $count?: unknown }).$count)
  if (hcql) {
    const offset = select.limit?.offset?.val ?? 0
    const available = typeof count === 'number' ? Math.max(0, count - offset) : rows.length
    const goal = wanted === undefined ? available : Math.min(wanted, available)
    while (rows.length < goal) {
      // the next slice of the same query; CAP renames its rows back like the first page's
      const next = { ...flatSelect(query.SELECT), count: undefined, limit: { rows: { val: goal - rows.length }, offset: { val: offset + rows.length } } }
      const page = await passOn(() => nativeFetch(remote, () => remote.run({ SELECT: next })))
      if (!Array.isArray(page) || !page.length) break
      rows.push(...(page as Row[]))
    }
    return { rows, count: askedCount ? count : undefined, one: false }
  }
  let path = nextPath(result, remote, info)
  const target = entityNamed(info.remoteEntity)
  let pages = 1
  while (path && (wanted === undefined || rows.length < wanted)) {
    const request = newRequest({ method: 'GET', path, target, headers: {} })
    const page = await passOn(() => nativeFetch(remote, () => remote.dispatch(request)))
    pages++
    if (!Array.isArray(page) || !page.length) break
    for (const row of page as Row[]) rows.push(toConsumerRow(row, info.entity))
    path = nextPath(page, remote, info)
  }
  if (pages > 1 && LOG._debug) LOG.debug(`${info.entity}: followed ${pages - 1} next link(s) at ${info.remoteService}`)
  if (wanted !== undefined && rows.length > wanted) rows.length = wanted
  return { rows, count, one: false }
}
