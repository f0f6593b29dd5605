/**
 * OData V4 source over a CAP remote service (so destinations, credentials and auth of
 * `cds.requires.<service>` apply). Reads `$select`-restricted, ordered pages: keyset
 * continuation, `@odata.nextLink` when the server pages, `$count` on the first page (so
 * a run that finds nothing new costs exactly one request) and on the page expected to be the last.
 */
import cds from '@sap/cds'
import { BaseSourceAdapter } from './base.js'
import { pageRead, pagesOf, type PageRequest, type PageResult } from './pager.js'
import { partitionedPages } from './partitions.js'
import { keyRanges, type KeyRanges } from './key-ranges.js'
import { type ODataVersion } from '../predicate.js'
import { odataQueryPath } from '../odata-client.js'
import { isRetryable, notServed, statusOf, withRetry } from '../retry.js'
import { MAX_DELTA_LINK_LENGTH, deltaEntry, isStoredDeltaLink, longDeltaLink, missingDeltaLink, refusedDeltaLink, relativeToService, trackingPreference } from './delta-links.js'
import { endSubscription, isDeltaQueueEntity, terminationOf } from './odp.js'
import { deltaPlan, readSegments, watermarkFields, type DeltaPlan } from '../watermark.js'
import { builtinType, dataElementNames, findEntity, keyNames, type CsnEntity } from '../../model/csn.js'
import { PipelineError } from '../../pipeline/errors.js'
import { cachedDocument, documentKey, forgetLiveDocument, parseEdmx, type ColumnShape, type LiveShape } from './live-shape.js'
import { LOGGER } from '../../constants.js'
import { toODataFilter, type Predicate } from '../predicate.js'
import type { DataRecord } from '../../pipeline/types.js'
import type { PreviewRequest, PreviewResult, TrackerState } from '../types.js'
import { connectTo } from '../../cap/index.js'

const LOG = cds.log(LOGGER.odata)

interface RemoteResult extends Array<DataRecord> {
  $count?: number
  /** V4 `@odata.nextLink`, as CAP's remote service exposes it */
  $nextLink?: string
  /** V2 `__next`, as CAP's remote service exposes it */
  $next?: string
  /** V4 `@odata.deltaLink` of a tracked read's last page, as CAP's remote service exposes it */
  $deltaLink?: string
  /** V2 `__delta` (SAP Gateway, ODP), as CAP's remote service exposes it */
  $delta?: string
}

interface SendingService {
  name: string
  send(request: { method: string; path: string; headers?: Record<string, string> }): Promise<unknown>
}

export class ODataSourceAdapter extends BaseSourceAdapter {
  protected version: ODataVersion = 'v4'
  protected service?: SendingService
  protected entity?: CsnEntity
  protected entitySet = ''

  /** Reads are GET requests to a remote: a delta run may start its first one early. */
  override get readsAhead(): boolean {
    return true
  }

  /**
   * A tracked read without a stored link is an initialisation (on ODP it opens a subscription in the
   * delta queue): only the run itself, holding the guard, makes it — never a read-ahead it may drop.
   * Sources with delta subscriptions never read ahead at all: a read-ahead from a token another
   * instance has moved past would ask ODP to repeat a delta request it may have confirmed already.
   */
  override readsAheadFrom(state: TrackerState): boolean {
    return this.pipeline.delta?.mode !== 'odata-delta' || (isStoredDeltaLink(state.lastKey) && !this.subscribes())
  }

  /** A flush drops the stored link: the subscription it belongs to is ended where the service offers it (odp.ts). */
  override async releasePosition(lastKey: string | null): Promise<void> {
    if (this.pipeline.delta?.mode === 'odata-delta' && isStoredDeltaLink(lastKey)) await this.endSubscription('flush')
  }

  /** Full reads of an entity with one key column read `parallel` key ranges at once (partitions.ts). */
  override get readsPartitioned(): boolean {
    return true
  }

  override async prepare(): Promise<void> {
    const { service, entity } = this.pipeline.config.source
    if (!service) throw new PipelineError('INVALID_CONFIG', 'Invalid pipeline config: source.service is required for an OData source', { target: 'source.service' })
    this.service = await connectTo<SendingService>(service)
    const name = entity ?? ''
    this.entity = findEntity(name.startsWith(`${service}.`) ? name : `${service}.${name}`) ?? findEntity(name)
    this.entitySet = name.startsWith(`${service}.`) ? name.slice(service.length + 1) : name
  }

  override entityDefinition(): CsnEntity | undefined {
    return this.entity
  }

  /** Schema drift: the entity set's properties in the provider's live `$metadata` (cached per process and service, see live-shape.ts). */
  override async liveShape({ maxAge }: { maxAge: number }): Promise<LiveShape> {
    const service = this.service!
    const { value, fetchedAt } = await cachedDocument<Map<string, Record<string, ColumnShape>>>(this.documentKey(), maxAge, async () =>
      parseEdmx(String(await service.send({ method: 'GET', path: '/$metadata', headers: { accept: 'application/xml' } }))))
    const elements = value.get(this.entitySet)
    return { basis: '$metadata', fetchedAt: new Date(fetchedAt).toISOString(), elements: elements ?? {}, ...(elements ? {} : { missing: true }) }
  }

  override forgetLiveShape(): void {
    forgetLiveDocument(this.documentKey())
  }

  private documentKey(): string {
    const credentials = (this.service as { options?: { credentials?: { url?: string; destination?: string } } } | undefined)?.options?.credentials
    return documentKey(`odata-${this.version}`, this.service?.name ?? '', credentials?.url ?? credentials?.destination)
  }

  keys(): string[] {
    const keys = this.entity ? keyNames(this.entity) : []
    if (!keys.length) throw new PipelineError('SOURCE_FAILED', `Source entity '${this.entitySet}' has no key elements in the imported model; import the provider's EDMX so keys are known`)
    return keys
  }

  override watermarkPlan(): DeltaPlan {
    return deltaPlan(this.pipeline, this.entity ? dataElementNames(this.entity) : undefined, this.keys(), this.typeOf)
  }

  async *readStream(tracker: TrackerState): AsyncGenerator<DataRecord[]> {
    const keys = this.keys()
    const plan = this.watermarkPlan()
    // delta links: a full or delta run is a tracked read (a partial refresh reads its slice untracked and keeps the link)
    if (plan.mode === 'odata-delta' && tracker.mode !== 'partial-refresh') {
      yield* this.readChanges(tracker, keys)
      return
    }
    const segments = readSegments(plan, tracker, keys)
    const orderColumns = new Set([...segments.flatMap(s => s.order), ...watermarkFields(plan)])
    const select = this.columns ? [...new Set([...this.columns, ...orderColumns])] : undefined
    if (this.partitions(tracker, segments)) {
      yield* partitionedPages({ name: this.pipeline.name, segment: segments[0], top: this.batchSize, parallel: this.pipeline.parallel, fetchPage: request => this.fetchPage(request, select), retry: this.pipeline.retry, progress: tracker.progress })
      return
    }
    yield* pagesOf(segments, this.batchSize, request =>
      withRetry(() => this.fetchPage(request, select), this.pipeline.retry, (error, attempt, delay) =>
        LOG.warn(`pipeline '${this.pipeline.name}': read failed (${(error as Error).message}); retry ${attempt} in ${delay} ms`)),
    { progress: tracker.progress })
  }

  /**
   * `delta.mode: 'odata-delta'` (delta-links.ts): a delta run with a stored link GETs it, any other
   * run reads the entity set anew; both with `Prefer: odata.track-changes` on every page, next links
   * followed. The last page's delta link is left in `tracker.deltaLink` for the engine to store
   * once the run's writes committed. A stored link the provider refuses fails the run: never a
   * silent full copy.
   *
   * Services with delta subscriptions (ODP, odp.ts): a re-initialisation first ends the subscription
   * of the stored link; the first request of an initial read is retried only where the provider
   * surely did not serve it (429, 503: a retry of a request it served would open a second
   * subscription); an initial read that does not finish (failed, or its run stopped taking pages)
   * ends what it may have opened, so the next initialisation leaves exactly one subscription.
   */
  private async *readChanges(tracker: TrackerState, keys: string[]): AsyncGenerator<DataRecord[]> {
    const service = this.pipeline.config.source.service ?? ''
    const stored = tracker.mode === 'delta' && isStoredDeltaLink(tracker.lastKey) ? tracker.lastKey : undefined
    if (!stored && isStoredDeltaLink(tracker.lastKey)) await this.endSubscription(`re-initialisation by a ${tracker.mode} run`)
    const select = this.columns ? [...new Set([...this.columns, ...keys, ...this.trackedColumns()])] : undefined
    // no $orderby where the service marks a key not sortable (ODP: none of its fields is)
    const orderBy = keys.every(key => !/^false$/i.test(String(this.entity?.elements[key]?.['@sap.sortable'] ?? ''))) ? keys : undefined
    let next: string | undefined = stored ?? odataQueryPath(this.entitySet, { select, orderBy }, this.typeOf, this.version)
    if (tracker.progress) tracker.progress.uncounted = true
    const opening = !stored && this.subscribes()
    let deltaLink: string | undefined
    let sent = false
    let finished = false
    try {
      while (next) {
        const path = next
        const retryable = opening && !sent ? notServed : isRetryable
        sent = true
        let result: RemoteResult
        const since = performance.now()
        try {
          result = await withRetry(() => this.fetchTracked(path), this.pipeline.retry, (error, attempt, delay) =>
            LOG.warn(`pipeline '${this.pipeline.name}': tracked read failed (${(error as Error).message}); retry ${attempt} in ${delay} ms`), 'source', retryable)
        } catch (error) {
          const status = statusOf(error)
          if (stored && status !== undefined && status >= 400 && status < 500) throw refusedDeltaLink(service, this.entitySet, status, error)
          throw error
        }
        const records = result.map(record => this.deltaRecord(record, keys))
        pageRead({ records, httpStatus: 200 }, since) // CAP's remote service answers only a successful GET
        if (records.length) yield records
        const nextLink = result.$nextLink ?? result.$next
        next = nextLink ? this.relativeLink(nextLink) : undefined
        if (!next) deltaLink = result.$deltaLink ?? result.$delta
      }
      finished = true
    } finally {
      if (opening && sent && !finished) await this.endSubscription('its initial read did not finish')
    }
    if (!deltaLink) throw missingDeltaLink(service, this.entitySet)
    const link = relativeToService(deltaLink, this.serviceUrl(), this.entitySet)
    if (link.length > MAX_DELTA_LINK_LENGTH) throw longDeltaLink(service, this.entitySet, link.length)
    tracker.deltaLink = link
  }

  /** Hook: one entry of a delta payload as the engine takes it (V2 adds ODP's change modes). */
  protected deltaRecord(record: DataRecord, keys: string[]): DataRecord {
    return deltaEntry(this.convertRecord(record), keys)
  }

  /** Hook: columns a tracked read selects beside those the target needs (V2: ODP's change mode). */
  protected trackedColumns(): string[] {
    return []
  }

  /** Whether the source keeps a subscription per tracked initial read (ODP: an ODP entity set, or a termination function import). */
  private subscribes(): boolean {
    return isDeltaQueueEntity(this.entity) || terminationOf(this.pipeline.config.source.service ?? '', this.entitySet) !== undefined
  }

  /** Ends the subscriber's delta subscription of the entity set where the imported service offers it (odp.ts). */
  private async endSubscription(why: string): Promise<void> {
    const termination = terminationOf(this.pipeline.config.source.service ?? '', this.entitySet)
    if (termination) await endSubscription(this.service!, termination, { pipeline: this.pipeline.name, entitySet: this.entitySet, why })
  }

  /** One page of a tracked read: `Prefer: odata.track-changes` and the page size the run reads. */
  private async fetchTracked(path: string): Promise<RemoteResult> {
    if (LOG._debug) LOG.debug('GET (tracked)', path)
    const result = await this.service!.send({ method: 'GET', path, headers: { Prefer: trackingPreference(this.batchSize) } })
    if (!Array.isArray(result)) throw new PipelineError('SOURCE_FAILED', `OData source '${this.pipeline.config.source.service}' answered a tracked read of '${this.entitySet}' without a collection`)
    return result as RemoteResult
  }

  private serviceUrl(): string | undefined {
    return (this.service as { options?: { credentials?: { url?: string } } } | undefined)?.options?.credentials?.url
  }

  override keyOrder(): string[] {
    return this.keys()
  }

  /** Deletes sweep: `$select` of the keys only, keyset pages in key order (next links followed), retried like reads. */
  override async *readKeys(): AsyncGenerator<DataRecord[]> {
    const keys = this.keys()
    yield* pagesOf([{ order: keys }], this.batchSize, request =>
      withRetry(() => this.fetchPage(request, keys), this.pipeline.retry, (error, attempt, delay) =>
        LOG.warn(`pipeline '${this.pipeline.name}': key read failed (${(error as Error).message}); retry ${attempt} in ${delay} ms`)),
    { exhaustive: true })
  }

  /** Deletes sweep with `parallel` > 1: the keys in ranges listed at once (key-ranges.ts). */
  override async keyRanges(): Promise<KeyRanges | undefined> {
    if (this.pipeline.parallel <= 1) return undefined
    const keys = this.keys()
    return keyRanges({ name: this.pipeline.name, order: keys, top: this.batchSize, parallel: this.pipeline.parallel, fetchPage: request => this.fetchPage(request, keys), retry: this.pipeline.retry })
  }

  /** The OData version of the source (`v4`, `v2`). */
  get odataVersion(): ODataVersion {
    return this.version
  }

  /** The CDS type of a source element (for literals). */
  elementType(field: string): string | undefined {
    return this.typeOf(field)
  }

  /**
   * Every row matching a filter (event micro-batches, lib/events): `filter` is a predicate, or
   * `$filter` text already encoded for the URL; `$select` of the columns the target needs; next
   * links followed; retried like reads.
   */
  async readWhere(filter: Predicate | string, top?: number): Promise<DataRecord[]> {
    const select = this.columns ? [...new Set([...this.columns, ...this.keys()])] : undefined
    const base = odataQueryPath(this.entitySet, { select, top }, this.typeOf, this.version)
    const text = typeof filter === 'string' ? filter : encodeURIComponent(toODataFilter(filter, this.typeOf, this.version))
    return this.readAll(`${base}${base.includes('?') ? '&' : '?'}$filter=${text}`, select)
  }

  /** One read and the pages its next links lead to, retried like reads. */
  private async readAll(path: string, select: string[] | undefined): Promise<DataRecord[]> {
    const rows: DataRecord[] = []
    let next: string | undefined = path
    for (let first = true; next; first = false) {
      const request: PageRequest = first ? { order: [], top: 0, count: false } : { order: [], top: 0, count: false, nextLink: next }
      const url: string = next
      const page = await withRetry(() => first ? this.fetchPath(url) : this.fetchPage(request, select), this.pipeline.retry)
      rows.push(...page.records)
      next = page.nextLink
    }
    return rows
  }

  protected typeOf = (field: string): string | undefined => builtinType(this.entity?.elements[field])

  /** The relative URL of one page. */
  protected pageUrl(request: PageRequest, select: string[] | undefined): string {
    if (request.nextLink) return this.relativeLink(request.nextLink)
    return odataQueryPath(this.entitySet, { select: request.columns ?? select, filter: request.filter, orderBy: request.order, top: request.top, skip: request.skip, count: request.count }, this.typeOf, this.version)
  }

  /** Next links may be absolute or relative to the service root. */
  protected relativeLink(link: string): string {
    if (/^https?:/i.test(link)) {
      const url = new URL(link)
      const at = url.pathname.lastIndexOf(`/${this.entitySet}`)
      return `${at >= 0 ? url.pathname.slice(at) : url.pathname}${url.search}`
    }
    return link.startsWith('/') ? link : `/${link}`
  }

  protected async fetchPage(request: PageRequest, select: string[] | undefined): Promise<PageResult> {
    return this.fetchPath(this.pageUrl(request, select))
  }

  protected async fetchPath(path: string): Promise<PageResult> {
    if (LOG._debug) LOG.debug('GET', path)
    const result = (await this.service!.send({ method: 'GET', path })) as RemoteResult | DataRecord
    if (!Array.isArray(result)) throw new PipelineError('SOURCE_FAILED', `OData source '${this.pipeline.config.source.service}' answered ${path} without a collection`)
    return {
      records: result.map(record => this.convertRecord(record)),
      count: typeof result.$count === 'number' ? result.$count : result.$count !== undefined ? Number(result.$count) : undefined,
      nextLink: result.$nextLink ?? result.$next,
      // CAP's remote service answers only a successful GET with a collection
      httpStatus: 200,
    }
  }

  /** Hook: turns one wire record into plain CDS values (V2 converts its date and time formats). */
  protected convertRecord(record: DataRecord): DataRecord {
    return record
  }

  /** Data inspector page with `$filter`, `$select`, `$top`, `$skip` pushed to the provider. */
  override async preview(request: PreviewRequest): Promise<PreviewResult> {
    const query = { select: request.columns, filter: request.filter, orderBy: this.entity ? keyNames(this.entity) : [], top: request.top + 1, skip: request.skip }
    const result = (await this.service!.send({ method: 'GET', path: odataQueryPath(this.entitySet, query, this.typeOf, this.version) })) as DataRecord[]
    return { rows: result.slice(0, request.top).map(record => this.convertRecord(record)), hasMore: result.length > request.top, limitedSupport: false }
  }
}
