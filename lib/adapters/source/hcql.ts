/**
 * HCQL source: a CAP provider served with `@protocol: 'hcql'`, bound as a CAP remote service
 * with `kind: 'hcql'` (`credentials.url: http://…/hcql/<service>`). CAP's remote service POSTs
 * CQN, so this is the CQN source over HTTP: ordered keyset pages (`where (order) > (last row)`,
 * never deep offsets), CQN `columns` for the column restriction, the three delta modes, and
 * `source.query` run at the provider. The first page of each segment (and the page expected to
 * be its last) asks for `count`, so a run ends without an extra empty-page request and a provider
 * that caps its page size (`@cds.query.limit.max`) is paged on instead of mistaken for the end.
 *
 * Entity names on the wire: CAP's remote service sends the consumer's fully qualified name
 * (`<ImportedService>.Books`), while the provider's HCQL adapter resolves names in *its* model
 * (`<ProviderService>.Books` or the service-relative `Books`). An API imported with `cds import`
 * is named after the EDMX file, so the names differ: `useHcqlService` makes the remote service
 * send service-relative names (see `wireName`).
 */
import cds from '@sap/cds'
import { CqnSourceAdapter } from './cqn.js'
import type { PageRequest, PageResult } from './pager.js'
import { LOGGER } from '../../constants.js'
import type { QueryRunner } from '../../model/ql.js'
import type { CsnEntity } from '../../model/csn.js'
import { cachedDocument, documentKey, entityOfCsn, forgetLiveDocument, type LiveShape } from './live-shape.js'
import type { DataRecord } from '../../pipeline/types.js'
import { connectTo } from '../../cap/index.js'

const LOG = cds.log(LOGGER.hcql)

interface HcqlRemote extends QueryRunner {
  kind?: string
  definition?: { name: string }
  options?: { credentials?: { url?: string } }
  prepend(fn: () => unknown): unknown
  before(event: string, handler: (req: { query?: unknown }) => void): unknown
  on(event: string, handler: (req: unknown, next: () => Promise<unknown>) => Promise<unknown>): unknown
}

/** Where each kind of CQN statement names its entity. */
const SUBJECTS = [['SELECT', 'from'], ['INSERT', 'into'], ['UPSERT', 'into'], ['UPDATE', 'entity'], ['DELETE', 'from']] as const

/**
 * The name the provider resolves: the consumer's service prefix stripped (`CatalogAPI.Books` →
 * `Books`). The provider's HCQL adapter finds service-relative names among its service's
 * entities, whatever its service is called. Names outside the remote service stay as they are.
 */
export function wireName(name: string, service: string): string {
  return name.startsWith(`${service}.`) ? name.slice(service.length + 1) : name
}

/** Rewrites the subject of a CQN statement (and of sub-selects in `from`) to wire names, in place. */
function toWireNames(query: unknown, service: string): void {
  if (!query || typeof query !== 'object') return
  for (const [kind, key] of SUBJECTS) {
    const clause = (query as Record<string, Record<string, unknown> | undefined>)[kind]
    const subject = clause?.[key]
    if (!subject) continue
    if (typeof subject === 'string') clause[key] = wireName(subject, service)
    else if (typeof subject === 'object') rewriteRef(subject as Record<string, unknown>, service)
  }
}

function rewriteRef(subject: Record<string, unknown>, service: string): void {
  const ref = subject.ref as Array<string | { id: string }> | undefined
  if (Array.isArray(ref) && ref.length) {
    const first = ref[0]
    if (typeof first === 'string') ref[0] = wireName(first, service)
    else if (first && typeof first === 'object' && typeof first.id === 'string') ref[0] = { ...first, id: wireName(first.id, service) }
  }
  if (subject.SELECT) toWireNames(subject, service)
  for (const arg of (subject.args as unknown[] | undefined) ?? []) if (arg && typeof arg === 'object') rewriteRef(arg as Record<string, unknown>, service)
}

/** The HTTP status of an HCQL remote error (CAP puts it into `code`), or undefined. */
function hcqlStatus(error: unknown): number | undefined {
  const code = (error as { code?: unknown })?.code
  const status = typeof code === 'number' ? code : typeof code === 'string' && /^\d{3}$/.test(code) ? Number(code) : undefined
  return status !== undefined && status >= 100 && status < 600 ? status : undefined
}

/**
 * CAP raises HCQL remote errors unwrapped (no generic 502): the message of the provider's
 * error and the HTTP status in `code`. They are given the shape CAP uses for OData remote errors
 * (`statusCode: 502`, the remote status in `reason.status`), so retries (5xx/408/429 retried,
 * other 4xx final) and the delegate proxy's pass-through of 4xx treat both protocols alike.
 * A request that got no response at all makes CAP 10.1 fail with a TypeError
 * (`reading 'data'` of the missing response); it is reported as a connection failure and retried.
 */
function normalizeError(error: unknown, service: HcqlRemote): unknown {
  if (!error || typeof error !== 'object' || (error as { reason?: unknown }).reason) return error
  const url = service.options?.credentials?.url ?? service.name
  const status = hcqlStatus(error)
  if (status !== undefined) {
    const message = String((error as Error).message ?? '').replace(/^Remote call failed with status code \d+: /, '')
    return Object.assign(new Error(`HCQL request to ${url} failed with status ${status}: ${message}`), {
      statusCode: 502, code: status, reason: { status, response: { status } }, cause: error,
    })
  }
  if (error instanceof TypeError && /reading 'data'/.test(error.message))
    return Object.assign(new Error(`HCQL request to ${url} failed: no response from the provider`), { statusCode: 502, cause: error })
  return error
}

const prepared = new WeakSet<object>()

/**
 * Connects to an HCQL remote service and (once per service instance) adds two handlers ahead
 * of CAP's own: a `before` handler that sends wire names, and an `on` handler that normalizes
 * errors. They apply to every query the service sends, also to the ones CAP's remote service
 * derives from consumer projections (delegated reads, replicate projections).
 */
export async function useHcqlService(name: string): Promise<HcqlRemote> {
  const service = await connectTo<HcqlRemote>(name)
  prepareHcqlService(service)
  return service
}

export function prepareHcqlService(service: HcqlRemote): void {
  if (prepared.has(service)) return
  prepared.add(service)
  const prefix = service.definition?.name ?? service.name
  service.prepend(() => {
    service.before('*', req => toWireNames(req.query, prefix))
    service.on('*', async (_req, next) => {
      try {
        return await next()
      } catch (error) {
        throw normalizeError(error, service)
      }
    })
  })
}

interface CountedResult extends Array<DataRecord> {
  $count?: number
}

export class HcqlSourceAdapter extends CqnSourceAdapter {
  /** Reads are SELECTs at a remote: a delta run may start its first one early (a CQN source on a local service may not: its reads run the service's handlers). */
  override get readsAhead(): boolean {
    return true
  }

  override async prepare(): Promise<void> {
    const { service } = this.pipeline.config.source
    if (service) await useHcqlService(service)
    await super.prepare()
  }

  /**
   * Schema drift: the entity in the provider's live `/$csn` (CAP's HCQL adapter serves its
   * service's model there), cached per process and service like `$metadata`. Asked for as text
   * (CAP's remote service would otherwise read the JSON body as a query result).
   */
  override async liveShape({ maxAge }: { maxAge: number }): Promise<LiveShape | undefined> {
    if (!this.entity || this.pipeline.config.source.query) return undefined
    const service = this.service as unknown as HcqlRemote & { send(request: object): Promise<unknown> }
    const { value, fetchedAt } = await cachedDocument<unknown>(this.documentKey(), maxAge, async () => {
      const body = await service.send({ method: 'GET', path: '/$csn', headers: { accept: 'application/json, text/plain;q=0.5, text/html;q=0.1' } })
      return typeof body === 'string' ? JSON.parse(body) : body
    })
    const elements = entityOfCsn(value, wireName(this.entity.name, service.definition?.name ?? service.name))
    return { basis: '$csn', fetchedAt: new Date(fetchedAt).toISOString(), elements: elements ?? {}, ...(elements ? {} : { missing: true }) }
  }

  override forgetLiveShape(): void {
    forgetLiveDocument(this.documentKey())
  }

  private documentKey(): string {
    const service = this.service as unknown as HcqlRemote | undefined
    return documentKey('hcql', service?.name ?? '', service?.options?.credentials?.url)
  }

  /** One keyset page; one asking for it (a segment's first, its last expected) also counts the rows from its start. */
  protected override async entityPage(entity: CsnEntity, columns: string[], request: PageRequest): Promise<PageResult> {
    const query = this.pageQuery(entity, columns, request)
    if (request.count) (query.SELECT as { count?: boolean }).count = true
    if (LOG._debug) LOG.debug('HCQL', this.pipeline.config.source.service, JSON.stringify(query))
    const result = (await this.service!.run(query)) as CountedResult
    const count = typeof result.$count === 'number' ? result.$count : result.$count !== undefined ? Number(result.$count) : undefined
    return { records: [...result], count: Number.isFinite(count) ? count : undefined }
  }
}
