/**
 * A small OData client over a CAP remote service (so `cds.requires.<service>` credentials,
 * destinations and auth apply): typed literals, key predicates, `$batch` change sets
 * (JSON batch for V4), with per-request fallback when the remote has no `$batch`.
 */
import { PipelineError } from '../pipeline/errors.js'
import { builtinType, findEntity, keyNames, type CsnEntity } from '../model/csn.js'
import { odataLiteral, toODataFilter, type ODataVersion, type Predicate } from './predicate.js'
import type { DataRecord } from '../pipeline/types.js'
import { connectTo } from '../cap/index.js'

export interface SendingService {
  name: string
  send(request: { method: string; path: string; data?: unknown; headers?: Record<string, string> }): Promise<unknown>
}

export interface ChangeRequest {
  method: 'POST' | 'PATCH' | 'PUT' | 'DELETE'
  /** Path relative to the service root, without leading slash, e.g. `Books(1)`. */
  url: string
  body?: DataRecord
}

export interface ODataQuery {
  select?: string[]
  filter?: Predicate
  orderBy?: string[]
  top?: number
  skip?: number
  count?: boolean
}

interface BatchResponse {
  responses?: Array<{ id?: string; status?: number; body?: { error?: { message?: string } } }>
}

export class ODataClient {
  private batchSupported = true

  private constructor(
    readonly service: SendingService,
    readonly entity: CsnEntity | undefined,
    readonly entitySet: string,
    readonly version: ODataVersion,
  ) {}

  static async connect(serviceName: string, entityName: string, version: ODataVersion): Promise<ODataClient> {
    const service = await connectTo<SendingService>(serviceName)
    const qualified = entityName.startsWith(`${serviceName}.`)
    const entity = findEntity(qualified ? entityName : `${serviceName}.${entityName}`) ?? findEntity(entityName)
    return new ODataClient(service, entity, qualified ? entityName.slice(serviceName.length + 1) : entityName, version)
  }

  typeOf = (field: string): string | undefined => builtinType(this.entity?.elements[field])

  keys(): string[] {
    const keys = this.entity ? keyNames(this.entity) : []
    if (!keys.length) throw new PipelineError('INVALID_CONFIG', `Entity '${this.entitySet}' of service '${this.service.name}' has no key elements in the imported model; import the provider's EDMX so keys are known`)
    return keys
  }

  /** `$filter`-safe literal of a value for the element's type. */
  literal(field: string, value: unknown): string {
    return odataLiteral(value, this.typeOf(field), this.version)
  }

  /** `Books(1)` or `Books(ID=1,source='a')`. */
  keyPath(record: DataRecord): string {
    const keys = this.keys()
    const parts = keys.map(k => this.literal(k, record[k]))
    const inner = keys.length === 1 ? parts[0] : keys.map((k, i) => `${k}=${parts[i]}`).join(',')
    return `${this.entitySet}(${encodeURIComponent(inner).replace(/%3D/g, '=').replace(/%2C/g, ',')})`
  }

  queryPath(query: ODataQuery): string {
    return odataQueryPath(this.entitySet, query, this.typeOf, this.version)
  }


  async get(path: string): Promise<DataRecord[] & { $count?: number; $nextLink?: string; $next?: string }> {
    const result = await this.service.send({ method: 'GET', path })
    if (!Array.isArray(result)) throw new PipelineError('SOURCE_FAILED', `OData service '${this.service.name}' answered ${path} without a collection`)
    return result as DataRecord[] & { $count?: number; $nextLink?: string }
  }

  /** Runs changes as one change set per call; falls back to single requests without `$batch`. */
  async change(requests: ChangeRequest[]): Promise<void> {
    if (!requests.length) return
    if (this.batchSupported && this.version === 'v4') {
      try {
        await this.jsonBatch(requests)
        return
      } catch (error) {
        const status = (error as { reason?: { response?: { status?: number } } }).reason?.response?.status
        if (status !== 404 && status !== 405 && status !== 501) throw error
        this.batchSupported = false
      }
    }
    for (const request of requests) await this.service.send({ method: request.method, path: `/${request.url}`, data: request.body })
  }

  private async jsonBatch(requests: ChangeRequest[]): Promise<void> {
    // only statuses are read: `return=minimal` spares the remote re-reading and serializing
    // every written row (a CAP provider then answers 204 without a body); the preference is
    // for requests with a body only (a CAP provider rejects it on DELETE)
    const body = {
      requests: requests.map((request, i) => ({
        id: String(i + 1), atomicityGroup: 'changes', method: request.method, url: request.url,
        headers: { 'content-type': 'application/json', ...(request.body ? { prefer: 'return=minimal' } : {}) }, ...(request.body ? { body: request.body } : {}),
      })),
    }
    const response = (await this.service.send({ method: 'POST', path: '/$batch', data: body, headers: { 'content-type': 'application/json', accept: 'application/json' } })) as BatchResponse
    const failed = response?.responses?.find(r => (r.status ?? 200) >= 400)
    if (failed) {
      const error = new PipelineError('TARGET_FAILED', `OData target '${this.service.name}' rejected a change set: ${failed.body?.error?.message ?? `status ${failed.status}`}`)
      Object.assign(error, { reason: { response: { status: failed.status } } })
      throw error
    }
  }
}

/**
 * `/Books?$select=…&$filter=…&$orderby=…&$top=…` — one builder for every OData read of the plugin
 * (sources, target lookups, previews); literals are typed by `typeOf`, text is URL-encoded.
 */
export function odataQueryPath(entitySet: string, query: ODataQuery, typeOf: (field: string) => string | undefined, version: ODataVersion): string {
  const params: string[] = []
  if (query.select?.length) params.push(`$select=${query.select.join(',')}`)
  if (query.filter) params.push(`$filter=${encodeURIComponent(toODataFilter(query.filter, typeOf, version))}`)
  if (query.orderBy?.length) params.push(`$orderby=${encodeURIComponent(query.orderBy.map(c => `${c} asc`).join(','))}`)
  if (query.top !== undefined) params.push(`$top=${query.top}`)
  if (query.skip) params.push(`$skip=${query.skip}`)
  if (query.count) params.push(version === 'v2' ? '$inlinecount=allpages' : '$count=true')
  return `/${entitySet}${params.length ? `?${params.join('&')}` : ''}`
}
