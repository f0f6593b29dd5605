/**
 * Key lists to OData V4 remotes as `k in (…)` (OData 4.01, served by CAP providers). CAP's remote
 * service writes a CQN `in` list as `(k eq 1 or k eq 2 or …)`, which a CAP provider evaluates
 * slowly and rejects beyond a few hundred terms ("Expression tree is too large"); stitching an
 * expand therefore needed one request per 100 keys. Here an ON handler placed before CAP's own
 * (only for the proxy's reads, in an async-local scope) takes the query CAP resolved to the
 * remote's names, lets CAP render it without the key list (`$select`, `$expand`, the rest of
 * `$filter`, `$orderby`, …), adds `k in (…)` with literals of the key's type (and `$top` = the
 * number of keys when `k` is the target's only key, so a full provider page needs no next link), and sends the
 * path through the same remote service — destination, authentication, client, `$batch` for long
 * URLs and the mapping of the answer back to consumer names all stay CAP's.
 *
 * A provider that answers 400 or 501 to `in` (an OData 4.0 server) gets the same read in CAP's
 * rendering at once (in chunks of `keyChunkSize` when the read is a stitch, whose rows are
 * grouped per parent anyway), and that remote service keeps CAP's rendering for the rest of the
 * process once the fallback succeeded. OData V2 and HCQL remotes are never touched.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import cds from '@sap/cds'
import { LOGGER } from '../../constants.js'
import { odataLiteral } from '../../adapters/predicate.js'
import { statusOf } from '../../adapters/retry.js'
import { inProcessSlots } from '../../adapters/source/slots.js'
import { INTEGER_TYPES, builtinType, type CsnElement } from '../../model/csn.js'
import { chunk, delegateSettings, type Token } from './keys.js'
import { flatSelect } from './query.js'
import { newRequest, urlify } from '../../cap/index.js'

const LOG = cds.log(LOGGER.federation)

/** Key types rendered here; any other keeps CAP's rendering. */
const STRING_TYPES = new Set(['cds.String', 'cds.LargeString'])
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const INTEGER = /^-?\d+$/

interface ResolvedSelect {
  where?: Token[]
  one?: boolean
  limit?: unknown
  count?: boolean
  columns?: unknown[]
  [key: string]: unknown
}

interface RemoteRequest {
  query?: { SELECT?: ResolvedSelect }
  target?: { elements?: Record<string, CsnElement | undefined> }
  headers?: Record<string, unknown>
}

interface InListRemote {
  kind?: string
  destination?: { url?: unknown }
  prepend(fn: () => unknown): unknown
  on(event: string, handler: (req: RemoteRequest, next: () => Promise<unknown>) => Promise<unknown>): unknown
  dispatch(req: unknown): Promise<unknown>
}

/** Remote services that answered 400/501 to `in` (CAP's rendering from then on). */
const rejecting = new WeakSet<object>()
const prepared = new WeakSet<object>()
/** Set around the proxy's own remote reads (the application's own calls keep CAP's rendering). */
const readScope = new AsyncLocalStorage<boolean>()
/** Set around the reads of an expand stitch (rows grouped per parent afterwards). */
const stitchScope = new AsyncLocalStorage<boolean>()

/** Whether the proxy's key lists to this remote go out as `in`. */
export function usesInList(remote: { kind?: string }): boolean {
  return remote.kind === 'odata' && !rejecting.has(remote)
}

/** An OData V4 literal of `value` for a key of CDS type `type`, or undefined when not rendered here. */
export function inListLiteral(value: unknown, type: string | undefined): string | undefined {
  if (value === null || value === undefined || !type) return undefined
  if (INTEGER_TYPES.has(type)) {
    const text = typeof value === 'number' || typeof value === 'bigint' ? String(value) : typeof value === 'string' ? value : ''
    return INTEGER.test(text) && (typeof value !== 'number' || Number.isSafeInteger(value)) ? text : undefined
  }
  if (type === 'cds.UUID') return typeof value === 'string' && UUID.test(value) ? value : undefined
  if (STRING_TYPES.has(type)) return typeof value === 'string' ? odataLiteral(value, 'cds.String', 'v4') : undefined
  return undefined
}

/** `field in (…)` as URL text (values encoded like CAP encodes its own literals). */
export function inListFilter(field: string, literals: string[]): string {
  return `${encodeURIComponent(field)}%20in%20(${literals.map(l => encodeURIComponent(l)).join(',')})`
}

/** The characters a key adds to an `in` list (an estimate for the consumer's values, used for chunking). */
export function inListCost(value: unknown): number {
  return (typeof value === 'string' ? encodeURIComponent(`'${value.replace(/'/g, "''")}'`).length : String(value).length) + 1
}

/**
 * Chunks of `items` for `in` lists: at most `budget` characters of literals each (at least one
 * key), and at most `cap` keys when a cap is given.
 */
export function chunkByLength<T>(items: T[], cost: (item: T) => number, budget: number, cap?: number): T[][] {
  const chunks: T[][] = []
  let current: T[] = []
  let used = 0
  for (const item of items) {
    const size = cost(item)
    if (current.length && (used + size > budget || (cap !== undefined && current.length >= cap))) {
      chunks.push(current)
      current = []
      used = 0
    }
    current.push(item)
    used += size
  }
  if (current.length) chunks.push(current)
  return chunks
}

interface InSplit {
  field: string
  values: unknown[]
  /** The `where` without the key list (undefined when nothing else). */
  rest: Token[] | undefined
  /** The `where` with another list in place of the key list. */
  withList(values: unknown[]): Token[]
}

const isRef = (token: Token): token is { ref: string[] } =>
  Boolean(token && typeof token === 'object' && Array.isArray((token as { ref?: unknown }).ref) && (token as { ref: unknown[] }).ref.length === 1 && typeof (token as { ref: unknown[] }).ref[0] === 'string')

function listValues(token: Token): unknown[] | undefined {
  const list = (token as { list?: unknown } | undefined)?.list
  if (!Array.isArray(list) || !list.length) return undefined
  const values: unknown[] = []
  for (const item of list) {
    if (!item || typeof item !== 'object' || !('val' in item) || Object.keys(item).length !== 1) return undefined
    values.push((item as { val: unknown }).val)
  }
  return values
}

/** `[ref, 'in', list]`, alone or as the first conjunct of an `and` chain (never beside an `or`). */
export function splitInList(where: Token[] | undefined): InSplit | undefined {
  if (!Array.isArray(where) || !where.length) return undefined
  if (where.some(t => typeof t === 'string' && t.toLowerCase() === 'or')) return undefined
  let inner = where
  let wrapped = false
  const first = where[0] as { xpr?: Token[] } | undefined
  if (first && typeof first === 'object' && Array.isArray(first.xpr) && !isRef(first)) {
    inner = first.xpr
    wrapped = true
  }
  if (inner.length !== 3 || !isRef(inner[0]) || inner[1] !== 'in') return undefined
  const values = listValues(inner[2])
  if (!values) return undefined
  const tail = wrapped ? where.slice(1) : where.slice(3)
  if (tail.length && tail[0] !== 'and') return undefined
  const rest = tail.length > 1 ? tail.slice(1) : undefined
  const field = (inner[0] as { ref: string[] }).ref[0]
  const withList = (list: unknown[]): Token[] => {
    const predicate: Token[] = [inner[0], 'in', { list: list.map(val => ({ val })) }]
    return rest ? [{ xpr: predicate }, 'and', { xpr: rest }] : predicate
  }
  return { field, values, rest, withList }
}

/** The `$filter` of `path` and-combined with `filter` (the list first). */
export function addFilter(path: string, filter: string): string {
  const at = path.indexOf('?')
  if (at < 0) return `${path}?$filter=${filter}`
  const options = path.slice(at + 1).split('&')
  const index = options.findIndex(o => o.startsWith('$filter='))
  if (index < 0) options.push(`$filter=${filter}`)
  else options[index] = `$filter=${filter}%20and%20(${options[index].slice('$filter='.length)})`
  return `${path.slice(0, at)}?${options.join('&')}`
}

function soleKey(target: RemoteRequest['target']): string | undefined {
  const keys = Object.entries(target?.elements ?? {}).filter(([, e]) => (e as { key?: boolean } | undefined)?.key)
  return keys.length === 1 && !(keys[0][1] as { isAssociation?: boolean }).isAssociation ? keys[0][0] : undefined
}

/** CAP's URL for a resolved SELECT (what its remote service would send). */
function urlOf(remote: object, select: ResolvedSelect): string {
  const { path } = urlify({ SELECT: select }, remote)
  // as CAP's remote service does (servers that reject "( x")
  return `/${path.replace(/^\//, '')}`.replace(/\( /g, '(').replace(/ \)/g, ')')
}

function get(remote: InListRemote, path: string, req: RemoteRequest): Promise<unknown> {
  return remote.dispatch(newRequest({ method: 'GET', path, target: req.target, headers: { ...req.headers } }))
}

/** The path of a page's `@odata.nextLink`, relative to the remote service root. */
function nextPage(remote: InListRemote, page: unknown): string | undefined {
  const link = (page as { $nextLink?: unknown } | undefined)?.$nextLink
  if (typeof link !== 'string' || !link) return undefined
  if (!/^[a-z]+:\/\//i.test(link)) return link.startsWith('/') ? link : `/${link}`
  const url = new URL(link)
  const base = typeof remote.destination?.url === 'string' ? new URL(remote.destination.url).pathname.replace(/\/$/, '') : ''
  if (base && url.pathname.startsWith(base)) return url.pathname.slice(base.length) + url.search
  throw new Error(`cannot follow the next link '${link}' of a remote key-list read`)
}

function asArray(result: unknown): unknown[] {
  if (Array.isArray(result)) return result
  return result == null ? [] : [result]
}

async function inListRead(remote: InListRemote, req: RemoteRequest, next: () => Promise<unknown>): Promise<unknown> {
  const select = req.query?.SELECT
  if (!readScope.getStore() || !select || rejecting.has(remote) || select.one) return next()
  if (select.columns?.some(c => c !== '*' && (typeof c !== 'object' || !c || !Array.isArray((c as { ref?: unknown }).ref)))) return next()
  const split = splitInList(select.where)
  if (!split) return next()
  const type = builtinType(req.target?.elements?.[split.field])
  const literals: string[] = []
  for (const value of split.values) {
    const literal = inListLiteral(value, type)
    if (literal === undefined) return next()
    literals.push(literal)
  }
  let path = addFilter(urlOf(remote, { ...flatSelect(select), where: split.rest }), inListFilter(split.field, literals))
  // the list is on the target's only key: at most one row per value. Saying so (`$top`) spares
  // the provider's next link, and the request for an empty next page, when the rows fill its page size.
  if (!select.limit && soleKey(req.target) === split.field) path += `&$top=${split.values.length}`
  try {
    return await get(remote, path, req)
  } catch (error) {
    const status = statusOf(error)
    if (status !== 400 && status !== 501) throw error
    // CAP's rendering of the same read; the remote is remembered only when that one succeeds
    // (a 400 of another cause fails the same way and is passed on as it is)
    const { keyChunkSize } = delegateSettings()
    const splittable = stitchScope.getStore() === true && !select.limit && !select.count && split.values.length > keyChunkSize
    let result: unknown
    if (splittable) {
      // the chunks at once (in slots of the process), each with its server-driven pages (no row of a chunk is left behind)
      const parts = await inProcessSlots(chunk(split.values, keyChunkSize).map(part => async () => {
        const rows: unknown[] = []
        let path: string | undefined = urlOf(remote, { ...flatSelect(select), where: split.withList(part) })
        while (path) {
          const page = await get(remote, path, req)
          rows.push(...asArray(page))
          path = nextPage(remote, page)
        }
        return rows
      }))
      result = parts.flat()
    } else result = await next()
    rejecting.add(remote)
    LOG.info(`the remote of '${(req.target as { name?: string } | undefined)?.name ?? '?'}' answered ${status} to a key list sent as 'in' (OData 4.01); key lists go out as 'or' chains from now on`)
    return result
  }
}

/** Adds the `in` rendering to an OData V4 remote service once. */
function prepare(remote: InListRemote): void {
  if (prepared.has(remote) || typeof remote.prepend !== 'function') return
  prepared.add(remote)
  remote.prepend(() => remote.on('READ', function inListForFederation(req, next) {
    return inListRead(remote, req, next)
  }))
}

/** Runs the proxy's own read on a remote service with key lists as `in` where that applies. */
export function withInList<T>(remote: object, call: () => Promise<T>): Promise<T> {
  if (!usesInList(remote as InListRemote)) return call()
  prepare(remote as InListRemote)
  return readScope.run(true, call)
}

/** Runs the reads of one expand stitch (their rows are grouped per parent, so chunk order is free). */
export function inStitch<T>(call: () => Promise<T>): Promise<T> {
  return stitchScope.run(true, call)
}
