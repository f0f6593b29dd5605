/**
 * REST source (SPEC "REST source adapter"): a JSON collection addressed by `rest.path` on the
 * service binding `cds.requires.<source.service>`, read page by page with `offset`, `page` or
 * `cursor` pagination, optionally narrowed by a delta query parameter carrying `lastSync`.
 *
 * HTTP client: the one CAP chooses for its own remote services
 * (`@sap/cds/libx/_runtime/remote/utils/cloudSdkProvider.js`), so that installing this plugin
 * never changes how an app talks to remote systems:
 *   - `cds.env.remote.native_fetch: true` → Node's global `fetch`; `false` → the SAP Cloud SDK;
 *   - not set → the SAP Cloud SDK (`@sap-cloud-sdk/http-client`) when the app has it installed,
 *     otherwise `fetch`.
 * A binding that names a BTP/CAP destination (`credentials.destination`) always goes through the
 * SDK (DESIGN: the SDK "where CAP destinations apply"), which resolves the destination's URL and
 * authentication; without the SDK, `execute` refuses it with INVALID_CONFIG naming the binding and
 * the install command. The SDK is an optional peer dependency of this package, never installed by it.
 * Otherwise `credentials.url` plus the `credentials.headers` map are used. Header values are
 * secrets: no error message or log line built here contains one, and errors of the HTTP
 * clients (which carry the request config with its headers) are never passed on as `cause`.
 *
 * Ordering: a REST API has no ordering this adapter can enforce. Offset and page pagination
 * are only stable when the server returns its collection in a stable order (e.g. by key);
 * rows inserted or deleted at the source while a run pages may shift pages. Reads are
 * idempotent upserts, and the next delta run re-reads from the watermark, so a shifted row is
 * picked up later — but prefer cursor pagination when the API offers it.
 */
import cds from '@sap/cds'
import { BaseSourceAdapter } from './base.js'
import { withRetry } from '../retry.js'
import { pageRead } from './pager.js'
import { loadCloudSdk, restBinding, restTransport, type RestBinding, type RestTransport } from './rest-transport.js'
import { RestSourceError, restFailure, scrub } from './rest-errors.js'
import { parsePage, type Page } from './rest-response.js'
import { restPages } from './rest-paging.js'
import { PipelineError } from '../../pipeline/errors.js'
import { deltaPlan, type DeltaPlan } from '../watermark.js'
import { LOGGER } from '../../constants.js'
import type { DataRecord, RestConfig } from '../../pipeline/types.js'
import type { TrackerState } from '../types.js'
import { shapeOfRecords, type LiveShape } from './live-shape.js'


const LOG = cds.log(LOGGER.rest)

const DEFAULT_TIMEOUT = 60_000

export class RestSourceAdapter extends BaseSourceAdapter {
  protected rest!: RestConfig
  protected service = ''

  override async prepare(): Promise<void> {
    const { service } = this.pipeline.config.source
    if (!service) throw new PipelineError('INVALID_CONFIG', 'Invalid pipeline config: source.service is required for a REST source', { target: 'source.service' })
    this.service = service
    this.rest = this.pipeline.config.rest!
    // fail at execute, before a run starts, when the binding cannot be served (no url, SDK missing)
    await this.transport()
  }

  /** Schema drift: a REST source has no schema; its columns are the keys of the run's first page. */
  override get shapeFromRecords(): boolean {
    return true
  }

  override async liveShape({ firstBatch }: { maxAge: number; firstBatch?: DataRecord[] }): Promise<LiveShape | undefined> {
    if (!firstBatch?.length) return undefined
    return { basis: 'records', fetchedAt: new Date().toISOString(), elements: shapeOfRecords(firstBatch) }
  }

  /** REST has no ordering we can enforce (see the module comment). */
  override get readsInWatermarkOrder(): boolean {
    return false
  }

  /** Timestamp delta on `delta.field` when given; otherwise the run's start is the next `lastSync`. */
  override watermarkPlan(): DeltaPlan {
    return deltaPlan(this.pipeline, undefined, [])
  }

  /** Records per request. */
  override get batchSize(): number {
    return this.rest?.pagination?.pageSize ?? this.pipeline.batchSize
  }

  /** The status of the last successful GET (run events; reads go one at a time). */
  private lastStatus?: number

  async *readStream(tracker: TrackerState): AsyncGenerator<DataRecord[]> {
    const { pagination, deltaParam } = this.rest
    const base: Record<string, string> = {}
    if (deltaParam && tracker.mode === 'delta' && tracker.lastSync) base[deltaParam] = tracker.lastSync
    const transport = await this.transport()
    const secrets = this.secretsOf()

    const request = `${this.label()}: GET ${this.requestPath()}`
    yield* restPages(pagination, base, (params, where) => this.fetchPage(transport, params, secrets, where), { pipeline: this.pipeline.name, request })
  }

  /**
   * Deletes sweep: the records of the key listing `rest.keys` (ascending key order is the
   * listing's contract; the sweep checks it), read with this adapter's paging and retries.
   */
  override async *readKeys(): AsyncGenerator<DataRecord[]> {
    const keys = this.rest.keys
    if (!keys) throw new PipelineError('INVALID_CONFIG', 'Invalid pipeline config: rest.keys is required for deletes.sweep with a REST source', { target: 'rest.keys' })
    const listing = Object.create(this) as RestSourceAdapter
    listing.rest = { ...this.rest, path: keys.path, dataPath: keys.dataPath ?? this.rest.dataPath, pagination: keys.pagination ?? this.rest.pagination, deltaParam: undefined }
    yield* listing.readStream({ name: this.pipeline.name, mode: 'full', lastSync: null, lastKey: null })
  }

  /** Where and how requests go (rest-transport.ts). */
  protected transport(): Promise<RestTransport> {
    return restTransport(this.service)
  }

  protected binding(): RestBinding {
    return restBinding(this.service)
  }

  /** Header values of the binding: scrubbed from any text this adapter produces. */
  protected secretsOf(): string[] {
    const headers = this.binding().credentials?.headers ?? {}
    return Object.values(headers).map(String).filter(value => value.length >= 4)
  }

  protected label(): string {
    return `REST source '${this.service}'`
  }

  /** The request path relative to the binding URL: credentials.path + rest.path. */
  protected requestPath(): string {
    const prefix = this.binding().credentials?.path ?? ''
    const path = this.rest.path
    const joined = `${prefix.replace(/\/+$/, '')}/${path.replace(/^\/+/, '')}`
    return joined.startsWith('/') ? joined : `/${joined}`
  }

  protected async fetchPage(transport: RestTransport, params: Record<string, string>, secrets: string[], where: string): Promise<Page> {
    const path = this.requestPath()
    const query = new URLSearchParams(params).toString()
    const url = `${path}${path.includes('?') ? '&' : '?'}${query}`
    const since = performance.now()
    const text = await withRetry(
      () => this.get(transport, url, path, secrets, where),
      this.pipeline.retry,
      (error, attempt, delay) => LOG.warn(`pipeline '${this.pipeline.name}': ${(error as Error).message}; retry ${attempt} in ${delay} ms`),
    )
    const page = parsePage(text, this.rest.dataPath, this.label(), path, where)
    pageRead({ records: page.records, httpStatus: this.lastStatus, bytes: Buffer.byteLength(text) }, since)
    return page
  }

  /** One GET; the body as text. Failures become RestSourceErrors built from status and path only. */
  protected async get(transport: RestTransport, url: string, path: string, secrets: string[], where: string): Promise<string> {
    if (LOG._debug) LOG.debug(`pipeline '${this.pipeline.name}': GET ${scrub(url, secrets)} (${transport.client === 'fetch' ? 'native fetch' : 'SAP Cloud SDK'})`)
    const timeout = this.rest.timeout ?? DEFAULT_TIMEOUT
    return transport.client === 'fetch'
      ? this.getWithFetch(transport, url, path, secrets, where, timeout)
      : this.getWithCloudSdk(transport, url, path, secrets, where, timeout)
  }

  /** Node's global fetch: binding URL + path, binding headers, a timeout covering headers and body. */
  protected async getWithFetch(transport: Extract<RestTransport, { client: 'fetch' }>, url: string, path: string, secrets: string[], where: string, timeout: number): Promise<string> {
    const headers = new Headers({ accept: 'application/json' })
    for (const [name, value] of Object.entries(transport.headers)) headers.set(name, String(value))
    let response: Response
    try {
      response = await fetch(`${transport.url.replace(/\/+$/, '')}${url}`, { method: 'GET', headers, signal: AbortSignal.timeout(timeout) })
    } catch (error) {
      throw this.failure(error, path, secrets, where, timeout)
    }
    if (!response.ok) {
      await response.body?.cancel().catch(() => undefined)
      throw this.failure({ response: { status: response.status, headers: response.headers } }, path, secrets, where, timeout)
    }
    this.lastStatus = response.status
    try {
      return await response.text()
    } catch (error) {
      throw this.failure(error, path, secrets, where, timeout)
    }
  }

  /** The SAP Cloud SDK: a named destination (binding headers added) or the binding URL and headers. */
  protected async getWithCloudSdk(transport: Extract<RestTransport, { client: 'cloud-sdk' }>, url: string, path: string, secrets: string[], where: string, timeout: number): Promise<string> {
    const { client } = await loadCloudSdk()
    let response: { status: number; data: unknown }
    try {
      response = await client!.executeHttpRequest(transport.destination, {
        method: 'GET',
        url,
        headers: { accept: 'application/json', ...('destinationName' in transport.destination ? this.binding().credentials?.headers : {}) },
        timeout,
        responseType: 'text',
        transformResponse: [(data: unknown) => data],
      }, { fetchCsrfToken: false })
    } catch (error) {
      throw this.failure(error, path, secrets, where, timeout)
    }
    this.lastStatus = response.status
    const data = response.data
    if (typeof data === 'string') return data
    if (Buffer.isBuffer(data)) return data.toString('utf8')
    return JSON.stringify(data ?? null)
  }

  /** A clean error from an HTTP client error (rest-errors.ts). */
  protected failure(error: unknown, path: string, secrets: string[], where: string, timeout?: number): RestSourceError {
    return restFailure(this.label(), error, path, secrets, where, timeout)
  }
}
