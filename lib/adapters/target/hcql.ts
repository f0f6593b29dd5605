/**
 * HCQL target: writes to an entity of a CAP provider bound as a remote service with
 * `kind: 'hcql'`. A batch is one request where it can be (each request is one transaction at
 * the provider; a batch is not atomic with the engine's tracker, as with the OData target):
 *
 * - after a full run's truncate (or a slice's delete), and after a batch that found none of its keys, a CQN INSERT
 *   of the batch: it fails as a whole if any key exists, so success means every row was
 *   created (honest counts without a lookup). Any failure sends the batch down the counted
 *   path below and ends inserting first until a batch finds no key again.
 * - otherwise two requests: a SELECT of the batch's keys (with the written columns) and a CQN
 *   UPSERT of the rows that are new or differ — a new key is created, a differing row updated,
 *   an identical row neither written nor counted. UPSERT is idempotent, so re-runs and
 *   retries never duplicate.
 *
 * Request bodies stay within the provider's body-parser limit (CAP's default 100 KB; a binding
 * may raise it with `bodyLimit`, e.g. `'1mb'`): a larger batch is split, and a 413 answer splits
 * further. Truncate and slices are one CQN DELETE each (the provider reports the affected rows).
 */
import { BaseTargetAdapter, ORIGIN_COLUMN, keysWhere, ownedRows, uniqueByKey } from './base.js'
import { sameRow } from './row-compare.js'
import { previewPage } from '../preview.js'
import { toCqn, type Predicate } from '../predicate.js'
import { useHcqlService } from '../source/hcql.js'
import { statusOf, withRetry } from '../retry.js'
import { PipelineError } from '../../pipeline/errors.js'
import { dataElementNames, findEntity, keyNames, type CsnEntity } from '../../model/csn.js'
import { ql, type QueryRunner } from '../../model/ql.js'
import type { DataRecord, SlicePredicate } from '../../pipeline/types.js'
import type { PreviewRequest, PreviewResult, TargetCapabilities, WriteContext, WriteStatistics } from '../types.js'

/** CAP's default body-parser limit (express.json's 100 KB), what a provider accepts unless configured otherwise. */
const DEFAULT_BODY_LIMIT = 100 * 1024
/** Room for the CQN around the rows (`{"INSERT":{"into":…,"entries":[…]}}`). */
const ENVELOPE = 1024

export class HcqlTargetAdapter extends BaseTargetAdapter {
  protected service?: QueryRunner
  protected entity?: CsnEntity
  protected keys: string[] = []
  /** Whether the next batch of this run goes as an INSERT first (all its keys expected new). */
  private insertFirst?: { runId: string; on: boolean }
  /** Bytes per request body: the binding's `bodyLimit`, lowered when the provider answers 413. */
  private bodyLimit = DEFAULT_BODY_LIMIT

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
    this.bodyLimit = bodyLimitOf((this.service as { options?: { bodyLimit?: unknown } }).options?.bodyLimit)
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
    return withRetry(operation, this.pipeline.retry, undefined, 'target')
  }

  async writeBatch(records: DataRecord[], context: WriteContext): Promise<WriteStatistics> {
    const rows = uniqueByKey(records, this.keys).map(row => this.known(row))
    const statistics = { created: 0, updated: 0, deleted: 0 }
    let pending = rows
    while (pending.length) {
      const limit = this.bodyLimit
      let written = 0
      for (const part of this.parts(pending)) {
        await this.writePart(part, context, statistics)
        written += part.length
        if (this.bodyLimit !== limit) break // a 413 lowered the limit: the rest in smaller bodies
      }
      pending = pending.slice(written)
    }
    return statistics
  }

  /** One body's worth of rows: INSERT first where every key is expected new, else counted. */
  private async writePart(rows: DataRecord[], context: WriteContext, statistics: WriteStatistics): Promise<void> {
    try {
      let written: 'failed' | 'unknown' | undefined
      if (this.insertFirst?.runId === context.runId && this.insertFirst.on) {
        const outcome = await this.insertNew(rows)
        if (outcome === 'inserted') {
          statistics.created += rows.length
          return
        }
        this.insertFirst.on = false
        written = outcome
      }
      const { created, updated } = await this.counted(rows, written === 'unknown')
      statistics.created += created
      statistics.updated += updated
      // none of the keys existed: the next batches are likely new as well (appends, refills)
      this.insertFirst = { runId: context.runId, on: created === rows.length }
    } catch (error) {
      if (statusOf(error) !== 413 || rows.length < 2) throw error
      // the provider's limit is lower than assumed: smaller bodies from now on
      this.bodyLimit = Math.max(ENVELOPE * 2, Math.floor(this.bodyLimit / 2))
      for (const part of this.parts(rows, 2)) await this.writePart(part, context, statistics)
    }
  }

  /**
   * One CQN INSERT, sent once (a retry could only repeat what failed): 'inserted', or why the
   * counted path takes over — 'failed' when the provider answered (it rolled the INSERT back,
   * e.g. on a key that exists), 'unknown' when no answer came (the INSERT may have committed).
   * A 413 is thrown: the rows are split instead.
   */
  private async insertNew(rows: DataRecord[]): Promise<'inserted' | 'failed' | 'unknown'> {
    try {
      await this.service!.run(ql.INSERT.into(this.entity!.name).entries(rows))
      return 'inserted'
    } catch (error) {
      const status = statusOf(error)
      if (status === 413) throw error
      return status === undefined || (status === 502 && !(error as { reason?: unknown }).reason) ? 'unknown' : 'failed'
    }
  }

  /**
   * Honest counts from a lookup of the rows' keys, then one UPSERT of the new and differing
   * rows. `maybeWritten`: an INSERT of exactly these rows got no answer; if every row is now
   * stored as sent, that INSERT committed and they count as created.
   */
  private async counted(rows: DataRecord[], maybeWritten: boolean): Promise<{ created: number; updated: number }> {
    const existing = await this.retried(() => this.existingRows(rows))
    let created = 0
    let identical = 0
    const changed = rows.filter(row => {
      const before = existing.get(this.keyOf(row))
      if (!before) created++
      else if (sameRow(row, before)) {
        identical++
        return false
      }
      return true
    })
    if (maybeWritten && identical === rows.length) return { created: rows.length, updated: 0 }
    // UPSERT is idempotent: a retry after a lost response writes the same state again
    if (changed.length) await this.retried(() => this.service!.run(ql.UPSERT.into(this.entity!.name).entries(changed)))
    return { created, updated: changed.length - created }
  }

  /**
   * The rows in bodies within the body limit (JSON as sent), at least `min` parts. Rows are
   * measured one by one, so one wide row does not push a body over the limit.
   */
  private parts(rows: DataRecord[], min = 1): DataRecord[][] {
    if (rows.length < 2) return rows.length ? [rows] : []
    const limit = this.bodyLimit - ENVELOPE
    if (min === 1 && Buffer.byteLength(JSON.stringify(rows, bigintAsString)) <= limit) return [rows]
    const sizes = rows.map(row => Buffer.byteLength(JSON.stringify(row, bigintAsString)) + 1)
    const total = sizes.reduce((a, b) => a + b, 0)
    const budget = Math.min(limit, min > 1 ? Math.ceil(total / min) : Infinity)
    const parts: DataRecord[][] = []
    let start = 0
    let size = 0
    for (let i = 0; i < rows.length; i++) {
      if (i > start && size + sizes[i] > budget) {
        parts.push(rows.slice(start, i))
        start = i
        size = 0
      }
      size += sizes[i]
    }
    parts.push(rows.slice(start))
    return parts
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
    const where = keysWhere(rows, keys)
    // counted and ordered: a provider that caps its page size (CAP's default is 1,000 rows) is paged on
    const found: DataRecord[] = []
    let total: number | undefined
    for (;;) {
      const query = ql.SELECT.from(this.entity!.name).columns(...columns).where(where).orderBy(...keys)
      if (found.length) query.limit(rows.length, found.length)
      else {
        query.limit(rows.length)
        ;(query as { SELECT?: { count?: boolean } }).SELECT!.count = true
      }
      const page = (await this.service!.run(query)) as DataRecord[] & { $count?: unknown }
      total ??= Number(page.$count)
      found.push(...page)
      if (!page.length || !(found.length < total)) break
    }
    return new Map(found.map(row => [this.keyOf(row), row]))
  }

  async truncate(context: WriteContext): Promise<number> {
    const deleted = await this.deleteWhere(ownedRows(this.pipeline))
    this.insertFirst = { runId: context.runId, on: true }
    return deleted
  }

  async deleteSlice(predicate: SlicePredicate, context: WriteContext): Promise<number> {
    const deleted = await this.deleteWhere(ownedRows(this.pipeline, predicate))
    this.insertFirst = { runId: context.runId, on: true }
    return deleted
  }

  /** Soft deletes: one CQN DELETE of the owned rows with these keys. */
  override async deleteKeys(keys: DataRecord[], _context: WriteContext): Promise<number> {
    if (!keys.length) return 0
    const owned = ownedRows(this.pipeline)
    const byKey = { xpr: keysWhere(keys, this.keys.filter(k => k !== ORIGIN_COLUMN || this.pipeline.config.source.origin === undefined)) }
    const where = owned ? [{ xpr: toCqn(owned) }, 'and', byKey] : [byKey]
    return this.deleted(() => ql.DELETE.from(this.entity!.name).where(where), where)
  }

  /** One CQN DELETE at the provider; it answers with the number of affected rows. */
  private async deleteWhere(filter: Predicate | undefined): Promise<number> {
    const where = filter ? toCqn(filter) : undefined
    return this.deleted(() => {
      const query = ql.DELETE.from(this.entity!.name)
      if (where) query.where(where)
      return query
    }, where)
  }

  /**
   * Runs a DELETE; CAP's generic handler answers one that matched no row with 404 (it then
   * checks whether the subject exists). That 404 counts as 0 rows once a SELECT of the same
   * filter is answered: an unreachable or wrong endpoint still fails the run.
   */
  private async deleted(query: () => unknown, where: unknown[] | undefined): Promise<number> {
    try {
      const result = await this.retried(() => this.service!.run(query()))
      return Number(typeof result === 'number' ? result : (result as { affected?: unknown } | undefined)?.affected) || 0
    } catch (error) {
      if (statusOf(error) !== 404) throw error
      const count = ql.SELECT.one.from(this.entity!.name).columns('count(1) as n')
      if (where) count.where(where)
      const found = (await this.retried(() => this.service!.run(count))) as { n?: unknown } | undefined
      if (Number(found?.n)) throw error
      return 0
    }
  }

  override async preview(request: PreviewRequest): Promise<PreviewResult> {
    return previewPage(this.service!, this.entity!.name, this.keys, request)
  }
}

/** A body-parser style limit (`'100kb'`, `'1mb'`, bytes) in bytes; CAP's default when unset or unreadable. */
export function bodyLimitOf(value: unknown): number {
  if (typeof value === 'number' && value > 0) return value
  const match = typeof value === 'string' ? /^\s*(\d+(?:\.\d+)?)\s*(b|kb|mb|gb)?\s*$/i.exec(value) : null
  if (!match) return DEFAULT_BODY_LIMIT
  const unit = { b: 1, kb: 1024, mb: 1024 ** 2, gb: 1024 ** 3 }[(match[2] ?? 'b').toLowerCase() as 'b']
  return Math.floor(Number(match[1]) * unit)
}

function bigintAsString(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? String(value) : value
}
