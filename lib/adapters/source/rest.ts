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
import { STATUS_CODES } from 'node:http'
import { BaseSourceAdapter } from './base.js'
import { withRetry } from '../retry.js'
import { pageRead } from './pager.js'
import { PipelineError } from '../../pipeline/errors.js'
import { deltaPlan, type DeltaPlan } from '../watermark.js'
import { LOGGER } from '../../constants.js'
import type { DataRecord, RestConfig } from '../../pipeline/types.js'
import type { TrackerState } from '../types.js'
import { shapeOfRecords, type LiveShape } from './live-shape.js'

const LOG = cds.log(LOGGER.rest)

/** What a `cds.requires.<service>` entry of a REST source may hold. */
interface RestBinding {
  kind?: string
  credentials?: {
    url?: string
    /** A destination name (BTP destination service or the `destinations` env variable). */
    destination?: string
    /** Path prefix appended to the URL (CAP remote-service convention). */
    path?: string
    headers?: Record<string, string>
  }
}

/** The part of `@sap-cloud-sdk/http-client` used here (typed locally: the SDK is an optional peer). */
interface CloudSdkHttpClient {
  executeHttpRequest(destination: object, config: object, options?: object): Promise<{ status: number; data: unknown }>
}

/** Where and how one run sends its requests. */
export type RestTransport =
  | { client: 'fetch'; url: string; headers: Record<string, string> }
  | { client: 'cloud-sdk'; destination: { destinationName: string } | { url: string; headers: Record<string, string> } }

const DEFAULT_TIMEOUT = 60_000

/** An HTTP failure of a REST source. `response.status` is the remote status (what retry decisions read). */
export class RestSourceError extends PipelineError {
  readonly response?: { status: number }
  readonly retryAfter?: number

  constructor(message: string, options: { remoteStatus?: number; retryAfter?: number } = {}) {
    super('SOURCE_FAILED', message)
    if (options.remoteStatus !== undefined) this.response = { status: options.remoteStatus }
    if (options.retryAfter !== undefined) this.retryAfter = options.retryAfter
  }
}

export const CLOUD_SDK = '@sap-cloud-sdk/http-client'
const INSTALL_HINT = `npm add ${CLOUD_SDK}@^4`

let cloudSdk: Promise<{ client?: CloudSdkHttpClient; problem?: string }> | undefined

/**
 * The SAP Cloud SDK HTTP client if the app has it installed (resolved like any peer dependency),
 * loaded once. `problem` says why not: not installed, or installed but failing to load.
 */
export function loadCloudSdk(): Promise<{ client?: CloudSdkHttpClient; problem?: string }> {
  cloudSdk ??= import(CLOUD_SDK).then(
    module => {
      const client = typeof (module as Partial<CloudSdkHttpClient>).executeHttpRequest === 'function' ? module : (module as { default?: unknown }).default
      if (typeof (client as Partial<CloudSdkHttpClient> | undefined)?.executeHttpRequest !== 'function') return { problem: `${CLOUD_SDK} has no executeHttpRequest` }
      return { client: client as CloudSdkHttpClient }
    },
    (error: NodeJS.ErrnoException) => {
      const missing = (error.code === 'ERR_MODULE_NOT_FOUND' || error.code === 'MODULE_NOT_FOUND') && String(error.message).includes(CLOUD_SDK)
      return { problem: missing ? `${CLOUD_SDK} is not installed` : `${CLOUD_SDK} failed to load: ${String(error.message).split('\n')[0]}` }
    },
  )
  return cloudSdk
}

/** CAP's switch between native fetch and the SAP Cloud SDK for remote services (undefined: not set). */
function nativeFetchSetting(): boolean | undefined {
  const value = (cds.env as unknown as { remote?: { native_fetch?: unknown } }).remote?.native_fetch
  return value === undefined || value === null ? undefined : Boolean(value)
}

/** Value at a dotted path (`data.items`); the object itself for an empty path. */
export function valueAt(body: unknown, path: string | undefined): unknown {
  if (!path) return body
  let value = body
  for (const part of path.split('.')) {
    if (value === null || typeof value !== 'object') return undefined
    value = (value as Record<string, unknown>)[part]
  }
  return value
}

interface Page {
  records: DataRecord[]
  body: unknown
}

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
    const pageSize = pagination.pageSize
    const base: Record<string, string> = {}
    if (deltaParam && tracker.mode === 'delta' && tracker.lastSync) base[deltaParam] = tracker.lastSync
    const transport = await this.transport()
    const secrets = this.secretsOf()

    if (pagination.type === 'cursor') {
      const seen = new Set<string>()
      let cursor: string | undefined
      for (;;) {
        const params: Record<string, string> = { ...base, limit: String(pageSize) }
        if (cursor !== undefined) params[pagination.cursorParam!] = cursor
        const { records, body } = await this.fetchPage(transport, params, secrets, cursor === undefined ? 'first page' : 'next cursor')
        if (records.length) yield records
        const next = valueAt(body, pagination.cursorPath)
        if (next === undefined || next === null || next === '') return
        if (typeof next !== 'string' && typeof next !== 'number')
          throw new RestSourceError(`${this.label()}: GET ${this.requestPath()}: the cursor at '${pagination.cursorPath}' is not a string or number`)
        const value = String(next)
        if (seen.has(value))
          throw new RestSourceError(`${this.label()}: GET ${this.requestPath()}: the server returned cursor '${abbreviate(value)}' (at '${pagination.cursorPath}') a second time; stopping instead of looping`)
        seen.add(value)
        cursor = value
      }
    }

    // offset / page: keep going until an empty page; a short page may come from a server that caps the page size
    let position = pagination.type === 'page' ? 1 : 0
    let previous: string | undefined
    for (;;) {
      const params: Record<string, string> = pagination.type === 'page'
        ? { ...base, page: String(position), pageSize: String(pageSize) }
        : { ...base, offset: String(position), limit: String(pageSize) }
      const where = `${pagination.type} ${position}`
      const { records } = await this.fetchPage(transport, params, secrets, where)
      if (!records.length) return
      const fingerprint = `${records.length}|${JSON.stringify(records[0])}|${JSON.stringify(records[records.length - 1])}`
      if (fingerprint === previous)
        throw new RestSourceError(`${this.label()}: GET ${this.requestPath()} (${where}) returned the same records as the page before; the server seems to ignore the '${pagination.type}' parameter — stopping instead of looping`)
      previous = fingerprint
      if (records.length < pageSize && LOG._debug) LOG.debug(`pipeline '${this.pipeline.name}': ${where} returned ${records.length} < ${pageSize} records (server-side cap?); reading on until an empty page`)
      yield records
      position += pagination.type === 'page' ? 1 : records.length
    }
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

  /**
   * Where and how requests go: a named destination (its URL and auth apply; needs the SAP Cloud
   * SDK) or the binding's URL and headers, sent with the HTTP client CAP would use (module comment).
   */
  protected async transport(): Promise<RestTransport> {
    const credentials = this.binding().credentials ?? {}
    const headers = { ...credentials.headers }
    if (credentials.destination) {
      const { client, problem } = await loadCloudSdk()
      if (!client)
        throw new PipelineError('INVALID_CONFIG', `REST source '${this.service}': cds.requires.${this.service}.credentials.destination ('${credentials.destination}') needs the SAP Cloud SDK to resolve the destination, but ${problem}; install it in the app (${INSTALL_HINT}) or give the binding a url instead`, { target: 'source.service' })
      // a named destination brings its own URL and authentication; binding headers are added per request
      return { client: 'cloud-sdk', destination: { destinationName: credentials.destination } }
    }
    if (!credentials.url)
      throw new PipelineError('INVALID_CONFIG', `REST source '${this.service}': cds.requires.${this.service}.credentials has neither url nor destination`, { target: 'source.service' })
    const native = nativeFetchSetting()
    if (native === true) return { client: 'fetch', url: credentials.url, headers }
    const { client, problem } = await loadCloudSdk()
    if (client) return { client: 'cloud-sdk', destination: { url: credentials.url, headers } }
    if (native === false)
      throw new PipelineError('INVALID_CONFIG', `REST source '${this.service}': cds.env.remote.native_fetch is false (remote calls through the SAP Cloud SDK), but ${problem}; install it in the app (${INSTALL_HINT}) or remove that setting`, { target: 'source.service' })
    return { client: 'fetch', url: credentials.url, headers }
  }

  protected binding(): RestBinding {
    const binding = (cds.env.requires as unknown as Record<string, RestBinding | undefined>)[this.service]
    if (!binding || typeof binding !== 'object')
      throw new PipelineError('INVALID_CONFIG', `REST source '${this.service}' is not configured: add cds.requires.${this.service} with kind 'rest' and credentials { url, headers }`, { target: 'source.service' })
    return binding
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
    const dataPath = this.rest.dataPath
    let body: unknown
    try {
      body = JSON.parse(text)
    } catch {
      throw new RestSourceError(`${this.label()}: GET ${path} (${where}) did not answer JSON; expected ${dataPath ? `an object with an array at dataPath '${dataPath}'` : 'a JSON array (or set rest.dataPath)'}`)
    }
    const records = valueAt(body, dataPath)
    if (!Array.isArray(records)) {
      throw new RestSourceError(dataPath
        ? `${this.label()}: GET ${path} (${where}) answered no array at dataPath '${dataPath}' (found ${describe(records)})`
        : `${this.label()}: GET ${path} (${where}) answered ${describe(body)}, not an array; set rest.dataPath to where the records are`)
    }
    if (records.some(record => record === null || typeof record !== 'object' || Array.isArray(record)))
      throw new RestSourceError(`${this.label()}: GET ${path} (${where}) answered entries at ${dataPath ? `dataPath '${dataPath}'` : 'the top level'} that are not objects`)
    pageRead({ records, httpStatus: this.lastStatus, bytes: Buffer.byteLength(text) }, since)
    return { records: records as DataRecord[], body }
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

  /** A clean error from an HTTP client error: remote status, Retry-After, path — never headers or bodies. */
  protected failure(error: unknown, path: string, secrets: string[], where: string, timeout?: number): RestSourceError {
    // the error and its causes, as far as they are objects (HTTP clients nest the response or the system error)
    interface ErrorLink { cause?: unknown; response?: { status?: unknown; headers?: Record<string, unknown> }; name?: unknown; code?: unknown; message?: unknown }
    const chain: ErrorLink[] = []
    for (let e = error as ErrorLink | undefined, depth = 0; e && typeof e === 'object' && depth < 6; e = e.cause as ErrorLink | undefined, depth++) chain.push(e)
    const response = chain.map(e => e.response).find(r => r && typeof r.status === 'number') as { status: number; headers?: Record<string, unknown> } | undefined
    if (response) {
      const status = response.status
      const retryAfter = retryAfterMs(headerOf(response.headers, 'retry-after'))
      const hint = status === 401 || status === 403 ? ' (check the credentials of the service binding)' : ''
      return new RestSourceError(`${this.label()}: GET ${path} (${where}) answered ${status} ${STATUS_CODES[status] ?? ''}`.trimEnd() + hint, { remoteStatus: status, retryAfter })
    }
    // fetch: AbortSignal.timeout's TimeoutError; axios (Cloud SDK): ECONNABORTED "timeout of … exceeded"
    if (timeout !== undefined && chain.some(e => e.name === 'TimeoutError' || (e.code === 'ECONNABORTED' && /timeout/i.test(String(e.message)))))
      return new RestSourceError(`${this.label()}: GET ${path} (${where}) timed out after ${timeout} ms (rest.timeout)`)
    const code = chain.map(e => e.code).find(c => typeof c === 'string' && /^E[A-Z_]+$/.test(c)) as string | undefined
    const innermost = chain[chain.length - 1]
    const detail = code ?? scrub(String(innermost?.message ?? error), secrets).slice(0, 200)
    return new RestSourceError(`${this.label()}: GET ${path} (${where}) failed: ${detail}`)
  }
}

function headerOf(headers: unknown, name: string): unknown {
  if (!headers || typeof headers !== 'object') return undefined
  const h = headers as Record<string, unknown> & { get?: (n: string) => unknown }
  if (typeof h.get === 'function') return h.get(name)
  const key = Object.keys(h).find(k => k.toLowerCase() === name)
  return key === undefined ? undefined : h[key]
}

/** `Retry-After` (seconds or HTTP date) in ms. */
function retryAfterMs(value: unknown): number | undefined {
  if (value === undefined || value === null || value === '') return undefined
  const seconds = Number(value)
  if (Number.isFinite(seconds)) return Math.max(0, seconds * 1000)
  const date = Date.parse(String(value))
  return Number.isNaN(date) ? undefined : Math.max(0, date - Date.now())
}

function scrub(text: string, secrets: string[]): string {
  let out = text
  for (const secret of secrets) out = out.split(secret).join('***')
  return out
}

function abbreviate(value: string): string {
  return value.length > 40 ? `${value.slice(0, 37)}...` : value
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing'
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`
}
