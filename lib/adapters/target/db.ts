/**
 * Database target: idempotent upserts by key, counted honestly (a key that existed is an
 * update, a new key a create), deletes for full refreshes and slices. Runs inside the
 * caller's transaction (the engine's per-batch or per-run transaction).
 */
import { BaseTargetAdapter } from './base.js'
import { toCqn, type Predicate, fromSlice, and } from '../predicate.js'
import { PipelineError } from '../../engine/errors.js'
import { dataElementNames, findEntity, keyNames, type CsnEntity } from '../../model/csn.js'
import { connect, ql, type QueryRunner } from '../../model/ql.js'
import type { DataRecord, SlicePredicate } from '../../engine/config.js'
import type { TargetCapabilities, WriteContext, WriteStatistics } from '../types.js'

/** Column contributed by aspect `plugin.data_pipeline.sourced`. */
export const ORIGIN_COLUMN = 'source'

export class DatabaseTargetAdapter extends BaseTargetAdapter {
  protected db?: QueryRunner
  protected entity?: CsnEntity
  protected keys: string[] = []

  capabilities(): TargetCapabilities {
    return { keyAddressableUpsert: true, truncate: true, batchDelete: true, batchInsert: true }
  }

  override async prepare(): Promise<void> {
    const { service, entity } = this.pipeline.config.target
    this.db = await connect(service ?? 'db')
    this.entity = findEntity(entity!)
    if (!this.entity) throw new PipelineError('INVALID_CONFIG', `Invalid pipeline config: target.entity '${entity}' is not in the model`, { target: 'target.entity' })
    this.keys = keyNames(this.entity)
    if (!this.keys.length) throw new PipelineError('INVALID_CONFIG', `Invalid pipeline config: target.entity '${entity}' has no key; upserts need one`, { target: 'target.entity' })
    const origin = this.pipeline.config.source.origin
    if (origin !== undefined && !this.keys.includes(ORIGIN_COLUMN))
      throw new PipelineError('INVALID_CONFIG', `Invalid pipeline config: source.origin needs target.entity '${entity}' to include aspect plugin.data_pipeline.sourced (key column '${ORIGIN_COLUMN}')`, { target: 'source.origin' })
  }

  targetEntity(): CsnEntity | undefined {
    return this.entity
  }

  override elementNames(): string[] | undefined {
    return this.entity ? dataElementNames(this.entity) : undefined
  }

  keyNames(): string[] {
    return this.keys
  }

  async writeBatch(records: DataRecord[], _context: WriteContext): Promise<WriteStatistics> {
    const rows = this.dedupe(records)
    if (!rows.length) return { created: 0, updated: 0, deleted: 0 }
    const existing = await this.countExisting(rows)
    await this.db!.run(ql.UPSERT.into(this.entity!.name).entries(rows))
    return { created: rows.length - existing, updated: existing, deleted: 0 }
  }

  async truncate(_context: WriteContext): Promise<number> {
    const origin = this.pipeline.config.source.origin
    const query = ql.DELETE.from(this.entity!.name)
    if (origin !== undefined) query.where(toCqn({ field: ORIGIN_COLUMN, op: 'eq', value: origin }))
    return Number(await this.db!.run(query)) || 0
  }

  async deleteSlice(predicate: SlicePredicate, _context: WriteContext): Promise<number> {
    const origin = this.pipeline.config.source.origin
    const where = and(fromSlice(predicate), origin === undefined ? undefined : { field: ORIGIN_COLUMN, op: 'eq', value: origin })
    const query = ql.DELETE.from(this.entity!.name)
    if (where) query.where(toCqn(where))
    return Number(await this.db!.run(query)) || 0
  }

  /** One row per key, the last occurrence wins (a row read twice within a batch). */
  private dedupe(records: DataRecord[]): DataRecord[] {
    const byKey = new Map<string, DataRecord>()
    for (const record of records) byKey.set(JSON.stringify(this.keys.map(k => record[k] ?? null)), record)
    return byKey.size === records.length ? records : [...byKey.values()]
  }

  private async countExisting(rows: DataRecord[]): Promise<number> {
    const keys = this.keys
    let predicate: Predicate
    if (keys.length === 1) {
      const values = rows.map(r => r[keys[0]])
      const query = ql.SELECT.from(this.entity!.name).columns('count(1) as count').where({ [keys[0]]: { in: values } })
      return countOf(await this.db!.run(query))
    }
    predicate = { or: rows.map(row => and(...keys.map(k => ({ field: k, op: 'eq' as const, value: row[k] ?? null })))!) }
    const query = ql.SELECT.from(this.entity!.name).columns('count(1) as count').where(toCqn(predicate))
    return countOf(await this.db!.run(query))
  }
}

function countOf(result: unknown): number {
  const row = Array.isArray(result) ? result[0] : result
  return Number((row as { count?: unknown })?.count ?? 0)
}
