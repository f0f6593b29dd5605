/**
 * OData target (`target.kind: 'odata' | 'odata-v2'`, or a bound service of that kind): true
 * upserts — the existing keys of a batch are looked up, existing rows are PATCHed and new ones
 * POSTed, in one `$batch` change set where the remote supports it — so re-runs never
 * duplicate. Truncate and slices page the keys and delete row by row.
 */
import { BaseTargetAdapter, ownedRows, uniqueByKey } from './base.js'
import { ODataClient, type ChangeRequest } from '../odata-client.js'
import { and, type Predicate } from '../predicate.js'
import { withRetry } from '../retry.js'
import { PipelineError } from '../../pipeline/errors.js'
import { dataElementNames, type CsnEntity } from '../../model/csn.js'
import { requiredKind } from '../kinds.js'
import type { DataRecord, SlicePredicate } from '../../pipeline/types.js'
import type { PreviewRequest, PreviewResult, TargetCapabilities, WriteContext, WriteStatistics } from '../types.js'

/** Keys per existence lookup and per delete page: bounded URLs and change sets. */
const CHUNK = 100

export class ODataTargetAdapter extends BaseTargetAdapter {
  protected client?: ODataClient

  capabilities(): TargetCapabilities {
    return { keyAddressableUpsert: true, truncate: true, batchDelete: true, batchInsert: true }
  }

  override async prepare(): Promise<void> {
    const { service, entity, kind } = this.pipeline.config.target
    if (!service) throw new PipelineError('INVALID_CONFIG', 'Invalid pipeline config: target.service is required for an OData target', { target: 'target.service' })
    const version = (kind ?? requiredKind(service)) === 'odata-v2' ? 'v2' : 'v4'
    this.client = await ODataClient.connect(service, entity!, version)
    this.client.keys()
  }

  override entityDefinition(): CsnEntity | undefined {
    return this.client?.entity
  }

  override elementNames(): string[] | undefined {
    return this.client?.entity ? dataElementNames(this.client.entity) : undefined
  }

  private retried<T>(operation: () => Promise<T>): Promise<T> {
    return withRetry(operation, this.pipeline.retry, undefined, 'target')
  }

  async writeBatch(records: DataRecord[], _context: WriteContext): Promise<WriteStatistics> {
    const client = this.client!
    const keys = client.keys()
    const rows = uniqueByKey(records, keys)
    const statistics = { created: 0, updated: 0, deleted: 0 }
    for (let i = 0; i < rows.length; i += CHUNK) {
      const chunk = rows.slice(i, i + CHUNK)
      const existing = await this.retried(() => this.existingKeys(chunk))
      const changes: ChangeRequest[] = chunk.map(row => {
        const exists = existing.has(JSON.stringify(keys.map(k => row[k] ?? null)))
        if (exists) {
          statistics.updated++
          const body = Object.fromEntries(Object.entries(row).filter(([k]) => !keys.includes(k)))
          return { method: 'PATCH', url: client.keyPath(row), body }
        }
        statistics.created++
        return { method: 'POST', url: client.entitySet, body: row }
      })
      await this.retried(() => client.change(changes))
    }
    return statistics
  }

  /** Keys (as JSON tuples) of the chunk's rows that exist at the remote. */
  private async existingKeys(rows: DataRecord[]): Promise<Set<string>> {
    const client = this.client!
    const keys = client.keys()
    const filter: Predicate = { or: rows.map(row => and(...keys.map(k => ({ field: k, op: 'eq' as const, value: row[k] ?? null })))!) }
    const found = await client.get(client.queryPath({ select: keys, filter, top: rows.length }))
    return new Set(found.map(row => JSON.stringify(keys.map(k => row[k] ?? null))))
  }

  async truncate(_context: WriteContext): Promise<number> {
    return this.deleteWhere(ownedRows(this.pipeline))
  }

  async deleteSlice(predicate: SlicePredicate, _context: WriteContext): Promise<number> {
    return this.deleteWhere(ownedRows(this.pipeline, predicate))
  }

  /** Pages the matching keys and deletes row by row (OData has no bulk delete). */
  private async deleteWhere(filter: Predicate | undefined): Promise<number> {
    const client = this.client!
    const keys = client.keys()
    let deleted = 0
    for (;;) {
      const page = await this.retried(() => client.get(client.queryPath({ select: keys, filter, orderBy: keys, top: CHUNK })))
      if (!page.length) return deleted
      await this.retried(() => client.change(page.map(row => ({ method: 'DELETE', url: client.keyPath(row) }))))
      deleted += page.length
    }
  }

  override async preview(request: PreviewRequest): Promise<PreviewResult> {
    const client = this.client!
    const rows = await client.get(client.queryPath({ select: request.columns, filter: request.filter, orderBy: client.keys(), top: request.top + 1, skip: request.skip }))
    return { rows: rows.slice(0, request.top), hasMore: rows.length > request.top, limitedSupport: false }
  }
}
