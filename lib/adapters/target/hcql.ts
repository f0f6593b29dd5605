/**
 * HCQL target: writes to an entity of a CAP provider bound as a remote service with
 * `kind: 'hcql'`. Each batch costs two requests whatever its size: one SELECT of the batch's
 * keys (with the written columns) and one CQN UPSERT of the rows that are new or differ — so
 * counts are honest (a new key is created, a differing row updated, an identical row neither
 * written nor counted) and re-runs never duplicate. Truncate and slices are one CQN DELETE
 * each (the provider reports the affected rows). Every request is one transaction at the
 * provider; a batch is not atomic with the engine's tracker (as with the OData target).
 */
import { BaseTargetAdapter, ORIGIN_COLUMN, keysWhere, ownedRows, uniqueByKey } from './base.js'
import { sameRow } from './db.js'
import { previewPage } from '../preview.js'
import { and, toCqn, type Predicate } from '../predicate.js'
import { useHcqlService } from '../source/hcql.js'
import { withRetry } from '../retry.js'
import { PipelineError } from '../../pipeline/errors.js'
import { dataElementNames, findEntity, keyNames, type CsnEntity } from '../../model/csn.js'
import { ql, type QueryRunner } from '../../model/ql.js'
import type { DataRecord, SlicePredicate } from '../../pipeline/types.js'
import type { PreviewRequest, PreviewResult, TargetCapabilities, WriteContext, WriteStatistics } from '../types.js'

/** Keys per existence lookup: bounded request bodies and `in` lists. */
const CHUNK = 500

export class HcqlTargetAdapter extends BaseTargetAdapter {
  protected service?: QueryRunner
  protected entity?: CsnEntity
  protected keys: string[] = []

  capabilities(): TargetCapabilities {
    return { keyAddressableUpsert: true, truncate: true, batchDelete: true, batchInsert: true }
  }

  override async prepare(): Promise<void> {
    const { service, entity } = this.pipeline.config.target
    if (!service) throw new PipelineError('INVALID_CONFIG', 'Invalid pipeline config: target.service is required for an HCQL target', { target: 'target.service' })
    this.service = await useHcqlService(service)
    const name = entity ?? ''
    this.entity = findEntity(name.startsWith(`${service}.`) ? name : `${service}.${name}`) ?? findEntity(name)
    if (!this.entity) throw new PipelineError('INVALID_CONFIG', `Invalid pipeline config: target.entity '${name}' is not an entity of '${service}' in the model`, { target: 'target.entity' })
    this.keys = keyNames(this.entity)
    if (!this.keys.length) throw new PipelineError('INVALID_CONFIG', `Invalid pipeline config: target.entity '${name}' has no key; upserts need one`, { target: 'target.entity' })
  }

  override entityDefinition(): CsnEntity | undefined {
    return this.entity
  }

  override elementNames(): string[] | undefined {
    return this.entity ? dataElementNames(this.entity) : undefined
  }

  private retried<T>(operation: () => Promise<T>): Promise<T> {
    return withRetry(operation, this.pipeline.retry)
  }

  async writeBatch(records: DataRecord[], _context: WriteContext): Promise<WriteStatistics> {
    const rows = uniqueByKey(records, this.keys).map(row => this.known(row))
    const statistics = { created: 0, updated: 0, deleted: 0 }
    for (let i = 0; i < rows.length; i += CHUNK) {
      const chunk = rows.slice(i, i + CHUNK)
      const existing = await this.retried(() => this.existingRows(chunk))
      const changed = chunk.filter(row => {
        const before = existing.get(this.keyOf(row))
        if (!before) statistics.created++
        else if (!sameRow(row, before)) statistics.updated++
        else return false
        return true
      })
      // UPSERT is idempotent: a retry after a lost response writes the same state again
      if (changed.length) await this.retried(() => this.service!.run(ql.UPSERT.into(this.entity!.name).entries(changed)))
    }
    return statistics
  }

  /** Only elements of the target entity go on the wire (the provider rejects unknown ones). */
  private known(row: DataRecord): DataRecord {
    const elements = this.entity!.elements
    if (Object.keys(row).every(k => elements[k])) return row
    return Object.fromEntries(Object.entries(row).filter(([k]) => elements[k]))
  }

  private keyOf(row: DataRecord): string {
    return JSON.stringify(this.keys.map(k => (typeof row[k] === 'bigint' ? String(row[k]) : row[k] ?? null)))
  }

  /** The stored rows of the chunk's keys, with the columns the chunk writes. */
  private async existingRows(rows: DataRecord[]): Promise<Map<string, DataRecord>> {
    const keys = this.keys
    const columns = [...new Set([...keys, ...rows.flatMap(row => Object.keys(row))])].filter(c => this.entity!.elements[c])
    const where = keys.length === 1
      ? [{ ref: [keys[0]] }, 'in', { list: rows.map(r => ({ val: r[keys[0]] })) }]
      : toCqn({ or: rows.map(row => and(...keys.map(k => ({ field: k, op: 'eq' as const, value: row[k] ?? null })))!) })
    const found = (await this.service!.run(ql.SELECT.from(this.entity!.name).columns(...columns).where(where).limit(rows.length))) as DataRecord[]
    return new Map(found.map(row => [this.keyOf(row), row]))
  }

  async truncate(_context: WriteContext): Promise<number> {
    return this.deleteWhere(ownedRows(this.pipeline))
  }

  async deleteSlice(predicate: SlicePredicate, _context: WriteContext): Promise<number> {
    return this.deleteWhere(ownedRows(this.pipeline, predicate))
  }

  /** Soft deletes: one CQN DELETE of the owned rows with these keys. */
  override async deleteKeys(keys: DataRecord[], _context: WriteContext): Promise<number> {
    if (!keys.length) return 0
    const owned = ownedRows(this.pipeline)
    const byKey = { xpr: keysWhere(keys, this.keys.filter(k => k !== ORIGIN_COLUMN || this.pipeline.config.source.origin === undefined)) }
    const result = await this.retried(() => this.service!.run(ql.DELETE.from(this.entity!.name).where(owned ? [{ xpr: toCqn(owned) }, 'and', byKey] : [byKey])))
    return Number(typeof result === 'number' ? result : (result as { affected?: unknown } | undefined)?.affected) || 0
  }

  /** One CQN DELETE at the provider; it answers with the number of affected rows. */
  private async deleteWhere(filter: Predicate | undefined): Promise<number> {
    const query = ql.DELETE.from(this.entity!.name)
    if (filter) query.where(toCqn(filter))
    const result = await this.retried(() => this.service!.run(query))
    const affected = typeof result === 'number' ? result : (result as { affected?: unknown } | undefined)?.affected
    return Number(affected) || 0
  }

  override async preview(request: PreviewRequest): Promise<PreviewResult> {
    return previewPage(this.service!, this.entity!.name, this.keys, request)
  }
}
