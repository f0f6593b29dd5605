/**
 * The live proxy of `@federation.delegate`. On `serving` of each application service, ON
 * handlers are added — only for entities that need them — just ahead of CAP's generic CRUD
 * handler (so the application's own ON handlers still run first):
 *
 * - delegated entities (annotated, or projecting an annotated view): READ is answered by the
 *   remote service (see remote.ts), writes are forwarded live, and 405 when read-only;
 * - local entities with associations into a delegated entity, or targeted by one: READ runs
 *   locally, with the parts that cross the boundary (expands, navigation, filters) resolved
 *   on the other side (expand.ts, navigation.ts, filters.ts).
 *
 * Whatever reaches into the other side is read through the same application service
 * (`srv.run`), so every entity's own rules, caches and authorization apply recursively.
 */
import cds from '@sap/cds'
import { LOGGER } from '../../constants.js'
import {
  delegationOf, entityNamed, isAssociationElement, registry, sideOf, targetOf,
  type CacheOptions, type DelegateInfo, type LinkedEntity,
} from './model.js'
import { applyStitch, FederationRequestError, planColumns, stripAdded, type Column, type QueryRunner } from './expand.js'
import { assertOrderBy, FilterRewriter } from './filters.js'
import { crossesSides, resolveNavigation } from './navigation.js'
import { connectRemote, fetchRemote, passOn, remoteStatus, type RemoteResult, type Row } from './remote.js'
import { and, type Token } from './keys.js'
import { responseCache } from '../cache/response.js'
import { entityCache } from '../cache/entity.js'
import { logCacheScope } from '../cache/scope.js'
import { publicError, withCorrelation } from '../../security/redact.js'
import { ViewWhereError } from './where.js'
import { applicationServiceClass } from '../../cap/index.js'

const LOG = cds.log(LOGGER.federation)

interface Select {
  from: { ref: Array<string | { id: string; where?: Token[] }> }
  columns?: Array<Column | '*'>
  where?: Token[]
  orderBy?: unknown[]
  one?: boolean
  count?: boolean
  limit?: { rows?: { val?: number }; offset?: { val?: number } } | null
  [other: string]: unknown
}

interface Request {
  event: string
  query?: { SELECT?: Select; INSERT?: unknown; UPDATE?: unknown; DELETE?: unknown; UPSERT?: unknown }
  target?: LinkedEntity
  data?: unknown
  reject(status: number | { status: number; code: string; message: string; target?: string }, message?: string): never
}

type Next = () => Promise<unknown>

interface HandlerEntry {
  handler?: { name?: string }
}

interface ApplicationService extends QueryRunner {
  name: string
  entities: Iterable<LinkedEntity>
  handlers: { on: HandlerEntry[] }
  on(events: string | string[], entities: string[], handler: (req: Request, next: Next) => Promise<unknown>): unknown
  prepend(fn: () => unknown): unknown
}

/** All delegated infos seen while serving, for cache invalidation across views of one source. */
const delegatedInfos = new Map<string, DelegateInfo>()

function rowsOf(result: unknown): Row[] {
  if (Array.isArray(result)) return result as Row[]
  return result && typeof result === 'object' ? [result as Row] : []
}

function withCount<T extends unknown[]>(rows: T, count: number | undefined): T {
  if (count !== undefined) Object.defineProperty(rows, '$count', { value: count, enumerable: false, configurable: true, writable: true })
  return rows
}

function plainSelect(select: Select): Record<string, unknown> {
  const plain: Record<string, unknown> = {}
  for (const key of ['from', 'columns', 'where', 'orderBy', 'limit', 'count', 'search', 'one', 'groupBy', 'having', 'distinct']) {
    if (select[key] !== undefined) plain[key] = select[key]
  }
  return JSON.parse(JSON.stringify(plain)) as Record<string, unknown>
}

/** A read the entity cache can answer: one entity, no expand. */
function directRead(select: Select): boolean {
  return select.from.ref.length === 1 && !(select.columns ?? []).some(c => typeof c === 'object' && c.expand)
}

function toResult(result: RemoteResult): unknown {
  if (result.one) return result.rows[0] ?? null
  return withCount(result.rows, result.count)
}

/** Runs a delegated SELECT at its remote (or from its cache). */
async function readRemote(info: DelegateInfo, select: Select): Promise<unknown> {
  const cache = info.options.cache
  if (cache?.strategy === 'entity' && directRead(select)) {
    const plain = plainSelect(select)
    const step = select.from.ref[0]
    if (typeof step === 'object' && step.where?.length) plain.where = and(step.where, plain.where as Token[] | undefined)
    const loadAll = async (columns: string[]) =>
      (await fetchRemote(info, { SELECT: { from: { ref: [info.entity] }, columns: columns.map(c => ({ ref: [c] })), limit: null } })).rows
    try {
      return toResult(await entityCache.read(info, cache, plain, loadAll))
    } catch (error) {
      // the cache is a side path: when its store fails, the request is answered live
      if ((error as { status?: number; statusCode?: number }).status || (error as { statusCode?: number }).statusCode || remoteStatus(error)) throw error
      LOG.warn(`entity cache of '${info.entity}' failed, reading live:`, error)
      return toResult(await fetchRemote(info, { SELECT: select }))
    }
  }
  if (cache?.strategy === 'response') return toResult(await responseCache.get(info, cache, plainSelect(select), () => fetchRemote(info, { SELECT: select })))
  return toResult(await fetchRemote(info, { SELECT: select }))
}

/** READ on an entity of either side, with everything that crosses the boundary resolved. */
async function federatedRead(srv: ApplicationService, req: Request, next: Next): Promise<unknown> {
  const select = req.query?.SELECT
  const entity = entityNamed(req.target?.name)
  if (!select || !entity || !select.from?.ref) return next()
  const info = delegationOf(entity)
  const rewriter = new FilterRewriter(srv)
  let touched = Boolean(info)

  if (crossesSides(select.from.ref)) {
    touched = true
    const resolved = await resolveNavigation(srv, select)
    if (!resolved) return select.one ? null : withCount([], select.count ? 0 : undefined)
    select.from = resolved.from as Select['from']
    select.where = resolved.where
  }
  if (rewriter.crosses(entity, select.where)) {
    touched = true
    select.where = await rewriter.rewrite(entity, select.where!)
  }
  assertOrderBy(entity, select.orderBy)
  const plan = planColumns(entity, select.columns)
  if (!touched && !plan.stitches.length) return next()
  select.columns = plan.columns

  const result = info ? await readRemote(info, select) : await next()
  const roots = rowsOf(result)
  if (roots.length) {
    // at once: each stitch's parents come from this read alone, so expands into two remotes (or
    // a remote and the database) cost one round trip, not one per expand
    await Promise.all(plan.stitches.map(stitch => applyStitch(srv, roots, stitch, { rewrite: (e, w) => rewriter.rewrite(e, w) })))
    stripAdded(roots, plan.added)
  }
  return result
}

/** Association payloads of a write that belong to another side (never written through the proxy). */
function crossingPayload(entity: LinkedEntity, data: unknown): string | undefined {
  const side = sideOf(entity)
  for (const row of rowsOf(data)) {
    for (const [name, value] of Object.entries(row)) {
      const element = entity.elements[name]
      if (!isAssociationElement(element) || value === null || typeof value !== 'object') continue
      const target = targetOf(element)
      if (target && sideOf(target) !== side) return name
    }
  }
  return undefined
}

function invalidateCaches(info: DelegateInfo): void {
  for (const each of [info, ...[...delegatedInfos.values()].filter(i => i.remoteEntity === info.remoteEntity && i !== info)]) {
    const cache: CacheOptions | undefined = each.options.cache
    if (!cache) continue
    responseCache.invalidate(each, cache)
    entityCache.invalidate(each, cache)
  }
}

async function delegatedWrite(req: Request): Promise<unknown> {
  const info = delegationOf(req.target)
  if (!info) throw new FederationRequestError(500, `'${req.target?.name}' is not a delegated entity`)
  if (info.options.readonly)
    throw new FederationRequestError(405, `'${info.entity}' is delegated read-only (@federation.delegate: { readonly: true }); ${req.event} is not allowed`)
  const crossing = crossingPayload(req.target!, req.data)
  if (crossing) throw new FederationRequestError(400, `'${crossing}' of '${info.entity}' is not stored at ${info.remoteService}; write it through its own entity`)
  if (info.where && req.event !== 'CREATE') await assertInWhere(info, req)
  const remote = await connectRemote(info)
  try {
    return await passOn(() => remote.run(req.query))
  } finally {
    invalidateCaches(info)
  }
}

/**
 * An update or delete through a delegate with a where touches only a row the where lets the
 * caller read (CAP's resolution of the write drops the where as it does for reads): else 404.
 */
async function assertInWhere(info: DelegateInfo, req: Request): Promise<void> {
  const q = req.query as { UPDATE?: { entity?: Select['from'] }; DELETE?: { from?: Select['from'] }; UPSERT?: unknown } | undefined
  const target = q?.UPDATE?.entity ?? q?.DELETE?.from
  const step = target?.ref?.length === 1 ? target.ref[0] : undefined
  const where = typeof step === 'object' ? step.where : undefined
  if (!where?.length || (q?.UPDATE as { where?: unknown } | undefined)?.where || (q?.DELETE as { where?: unknown } | undefined)?.where)
    throw new FederationRequestError(400, `'${info.entity}' has a where: ${req.event} through it is allowed by key only`)
  const found = await fetchRemote(info, { SELECT: { from: { ref: [{ id: info.entity, where }] }, one: true } })
  if (!found.rows.length) throw new FederationRequestError(404, `No '${info.entity}' entry matches the key`)
}

/**
 * The answer to a failed request: credentials redacted, no SQL; a 5xx names the correlation id
 * under which the detail is logged. Always a fresh error: a remote error carries its request
 * (URL, headers), which CAP would otherwise serialize.
 */
function reject(req: Request, error: unknown): never {
  const shown = publicError(error, req.target?.name ? `'${req.target.name}'` : undefined)
  const e = error as { status?: unknown; statusCode?: unknown; code?: unknown; target?: unknown }
  const given = Number(e?.status ?? e?.statusCode)
  const status = given >= 400 && given < 600 ? given : 500
  if (status < 500 && !shown.database) {
    const code = typeof e?.code === 'string' ? e.code : String(status)
    return req.reject({ status, code, message: shown.message, ...(typeof e?.target === 'string' ? { target: e.target } : {}) })
  }
  LOG.error(`${req.event} of '${req.target?.name}' failed [correlation id ${shown.correlationId}]: ${shown.detail}`)
  return req.reject({ status, code: String(status), message: withCorrelation(shown.message, shown.correlationId) })
}

/** Registers ON handlers just ahead of CAP's generic CRUD handler (or first when there is none). */
function registerOn(srv: ApplicationService, events: string[], entities: string[], handler: (req: Request, next: Next) => Promise<unknown>): void {
  const list = srv.handlers?.on
  if (!Array.isArray(list)) {
    srv.prepend(() => srv.on(events, entities, handler))
    return
  }
  const before = list.length
  srv.on(events, entities, handler)
  const mine = list.splice(before)
  const generic = list.findIndex(h => h.handler?.name === 'handle_crud_requests')
  list.splice(generic >= 0 ? generic : 0, 0, ...mine)
}

const attached = new WeakSet<object>()

/** Which entities of a service need the proxy, and registers its handlers for them (once per service). */
export function attachDelegation(srv: ApplicationService): { delegated: string[]; local: string[] } {
  if (attached.has(srv)) return { delegated: [], local: [] }
  attached.add(srv)
  const delegated: string[] = []
  const local = new Set<string>()
  const entities = [...srv.entities]
  for (const entity of entities) {
    const info = delegationOf(entity)
    if (!info) continue
    delegated.push(entity.name)
    delegatedInfos.set(info.entity, info)
    registry.register(info)
    logCacheScope(info)
  }
  for (const entity of entities) {
    const side = sideOf(entity)
    for (const element of Object.values(entity.elements)) {
      if (!isAssociationElement(element)) continue
      const target = targetOf(element)
      if (!target || sideOf(target) === side) continue
      if (side === 'local') local.add(entity.name)
      if (sideOf(target) === 'local' && target.name.startsWith(`${srv.name}.`)) local.add(target.name)
    }
  }
  // a draft-enabled local entity is read as its drafts too (a Fiori object page in edit mode)
  for (const name of local) {
    const drafts = (entityNamed(name) as { drafts?: { name?: string } } | undefined)?.drafts?.name
    if (drafts && entityNamed(drafts)) local.add(drafts)
  }
  if (!delegated.length && !local.size) return { delegated, local: [] }

  const onRead = async (req: Request, next: Next) => {
    try {
      return await federatedRead(srv, req, next)
    } catch (error) {
      return reject(req, error)
    }
  }
  registerOn(srv, ['READ'], [...delegated, ...local], onRead)
  if (delegated.length) {
    registerOn(srv, ['CREATE', 'UPDATE', 'UPSERT', 'DELETE'], delegated, async (req: Request) => {
      try {
        return await delegatedWrite(req)
      } catch (error) {
        return reject(req, error)
      }
    })
  }
  if (LOG._debug) LOG.debug(`${srv.name}: delegated ${delegated.join(', ') || '-'}; federated local ${[...local].join(', ') || '-'}`)
  return { delegated, local: [...local] }
}

let registered = false

/** Adds the delegate proxy to every application service when it is served. */
export function registerDelegation(): void {
  if (registered) return
  registered = true
  cds.on('serving', (srv: unknown) => {
    const service = srv as ApplicationService & { constructor: unknown }
    const ApplicationServiceClass = applicationServiceClass()
    if (!(service instanceof ApplicationServiceClass) || !service.entities) return
    try {
      attachDelegation(service)
    } catch (error) {
      // a delegate whose where cannot be applied is refused: never serve the rows it excludes
      if (error instanceof ViewWhereError) throw error
      // a side path: the service keeps serving its local entities
      LOG.error(`could not attach @federation.delegate handlers to ${service.name}:`, error)
    }
  })
}

/** For tests and tools: what the proxy knows about an entity. */
export function delegateInfo(entity: string): DelegateInfo | undefined {
  return delegationOf(entity)
}

