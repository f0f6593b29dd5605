/**
 * Database target: idempotent upserts by key, counted honestly (a key that existed is an
 * update, a new key a create), deletes for full refreshes and slices. Runs inside the
 * caller's transaction (the engine's per-batch or per-run transaction). Plain tables are
 * written with prepared statements on that transaction's connection (see write-path.ts),
 * everything else through CAP's INSERT/UPSERT.
 */
import cds from '@sap/cds'
import { chooseWritePath, type WritePath } from './write-path.js'
import type { SqlService } from './prepared-writer.js'
import { RefreshSnapshot, type RefreshCounts } from './refresh-counts.js'
import { WrittenKeys } from './written-keys.js'
import { LOGGER } from '../../constants.js'
import { BaseTargetAdapter, ORIGIN_COLUMN, keysWhere, ownedRows, uniqueByKey } from './base.js'
import { previewPage } from '../preview.js'
import { after, and, toCqn, type Predicate } from '../predicate.js'
import { PipelineError } from '../../pipeline/errors.js'
import { INTEGER_TYPES, builtinType, dataElementNames, findEntity, isAssociation, keyNames, type CsnElement, type CsnEntity } from '../../model/csn.js'
import { connect, ql, type QueryRunner } from '../../model/ql.js'
import type { DataRecord, SlicePredicate } from '../../pipeline/types.js'
import type { PreviewRequest, PreviewResult, TargetCapabilities, WriteContext, WriteStatistics } from '../types.js'
import { sqlInternals } from '../../cap/index.js'
import { compareKeys, normalizeKey, sameRow } from './row-compare.js'

export { ORIGIN_COLUMN }

const LOG = cds.log(LOGGER.db)

export class DatabaseTargetAdapter extends BaseTargetAdapter {
  protected db?: QueryRunner
  protected entity?: CsnEntity
  protected keys: string[] = []
  /** A full run's refill of the target it truncated: the run, and the keys written since. */
  private refill?: { runId: string; written: WrittenKeys }
  /** A full run's copy of the rows before its truncate, and the columns it wrote: its honest counts (refresh-counts.ts). */
  private snapshot?: { runId: string; rows: RefreshSnapshot; written: Set<string> }
  private keyKinds?: Array<'number' | 'string' | undefined>
  /** Whether a batch's column list qualifies for INSERT `rows` (see flatColumns). */
  private flat?: { signature: string; ok: boolean }
  /** Savepoints taken by `isolate` (unique names). */
  private savepoints = 0
  /** How batches are written: prepared statements or CAP's INSERT/UPSERT, and why (decided in prepare). */
  writePath: WritePath = { kind: 'cap', reason: 'not prepared' }

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
    this.writePath = chooseWritePath(this.db, this.entity.name)
    LOG.debug(`pipeline '${this.pipeline.name}': target ${this.entity.name} written by ${this.writePath.kind === 'prepared' ? 'prepared statements' : "CAP's INSERT/UPSERT"} (${this.writePath.reason})`)
  }

  override entityDefinition(): CsnEntity | undefined {
    return this.entity
  }

  /** Data inspector page, filters pushed to the database. */
  override async preview(request: PreviewRequest): Promise<PreviewResult> {
    return previewPage(this.db!, this.entity!.name, this.keys, request)
  }

  override elementNames(): string[] | undefined {
    return this.entity ? dataElementNames(this.entity) : undefined
  }

  keyNames(): string[] {
    return this.keys
  }

  async writeBatch(records: DataRecord[], context: WriteContext): Promise<WriteStatistics> {
    const rows = uniqueByKey(records, this.keys)
    if (!rows.length) return { created: 0, updated: 0, deleted: 0 }
    // a full refresh with a copy of the rows before counts each batch by key against it, as the run does at its end
    const refresh = this.snapshot?.runId === context.runId ? this.snapshot : undefined
    if (refresh) for (const column in rows[0]) refresh.written.add(column)
    const writer = this.writePath.writer
    if (this.onlyNewKeys(rows, context)) {
      const prepared = writer?.columnsOf(rows)
      if (prepared) await this.native(tx => writer!.insert(tx, prepared, rows))
      else {
        const columns = this.flatColumns(rows)
        await this.db!.run(columns
          ? ql.INSERT.into(this.entity!.name).columns(...columns).rows(rows.map(row => columns.map(c => row[c])))
          : ql.INSERT.into(this.entity!.name).entries(rows))
      }
      return (refresh && await this.refreshCounts(refresh, rows)) || { created: rows.length, updated: 0, deleted: 0 }
    }
    // honest counts: a new key is created, an existing row is updated only if a value differs;
    // unchanged rows (e.g. re-read at the watermark) are neither written nor counted
    const existing = await this.existingRows(rows)
    let created = 0
    const changed = rows.filter(row => {
      const before = existing.get(this.keyOf(row))
      if (!before) created++
      return !before || !sameRow(row, before)
    })
    const prepared = changed.length ? writer?.columnsOf(changed) : undefined
    if (prepared) await this.native(tx => writer!.upsert(tx, prepared, changed))
    else if (changed.length) await this.db!.run(ql.UPSERT.into(this.entity!.name).entries(changed))
    // a refresh: the target held only this run's rows, so a key found there was counted by the batch that wrote it first
    const counted = refresh && await this.refreshCounts(refresh, rows.filter(row => !existing.has(this.keyOf(row))))
    return counted || { created, updated: changed.length - created, deleted: 0, unchanged: rows.length - changed.length }
  }

  /** A refresh's batch counted by key against the rows before it (refresh-counts.ts); undefined: its writes' counts stand. */
  private async refreshCounts(refresh: NonNullable<DatabaseTargetAdapter['snapshot']>, firstWritten: DataRecord[]): Promise<WriteStatistics | undefined> {
    const counts = await refresh.rows.batchCounts(firstWritten, this.comparedColumns(refresh.written))
    return counts && { ...counts, deleted: 0 }
  }

  /** The written columns a refresh compares: stored ones (no virtual, association or calculated element). */
  private comparedColumns(written: Set<string>): string[] {
    const elements = this.entity!.elements as Record<string, CsnElement>
    return [...written].filter(c => elements[c] && !elements[c].virtual && !isAssociation(elements[c]) && elements[c].value === undefined)
  }

  /**
   * A write inside a savepoint of the caller's transaction: on failure only its own statements
   * are undone (ROLLBACK TO SAVEPOINT), and the transaction goes on — PostgreSQL would abort it
   * at the failed statement, SQLite and HANA keep it anyway. Used by `onError: 'skip'`.
   */
  override async isolate<T>(write: () => Promise<T>): Promise<T> {
    const savepoint = `data_pipeline_${++this.savepoints}`
    await this.db!.run(`SAVEPOINT ${savepoint}`)
    let result: T
    try {
      result = await write()
    } catch (error) {
      await this.db!.run(`ROLLBACK TO SAVEPOINT ${savepoint}`)
      await this.db!.run(`RELEASE SAVEPOINT ${savepoint}`)
      throw error
    }
    await this.db!.run(`RELEASE SAVEPOINT ${savepoint}`)
    return result
  }

  /** Runs on the native connection of the current transaction (the engine's), begun if it has not run a statement yet. */
  private native(write: (tx: SqlService) => Promise<void>): Promise<void> {
    return sqlInternals<SqlService>(this.db!).run(async tx => {
      if (!tx.dbc) await tx.run('SELECT 1')
      await write(tx)
    })
  }

  private keyOf(row: DataRecord): string {
    return JSON.stringify(this.keys.map(k => normalizeKey(row[k])))
  }

  async truncate(context: WriteContext): Promise<number> {
    this.snapshot = undefined
    // in a run-scoped transaction, the rows before are kept for the refresh's counts (reconcileRefresh)
    if (context.atomic) {
      const origin = this.pipeline.config.source.origin
      const rows = await RefreshSnapshot.take(this.db, this.entity!, this.keys, origin === undefined ? undefined : { column: ORIGIN_COLUMN, value: String(origin) })
      if (rows) this.snapshot = { runId: context.runId, rows, written: new Set() }
    }
    const deleted = await this.deleteWhere(ownedRows(this.pipeline))
    this.refill = { runId: context.runId, written: new WrittenKeys(compareKeys) }
    // with a copy, the rows gone from the source are counted by key at the end (reconcileRefresh), not here
    return this.snapshot ? 0 : deleted
  }

  /** A full refresh's counts by key against the rows before it (undefined: the writes' counts stand). */
  override async reconcileRefresh(context: WriteContext): Promise<RefreshCounts | undefined> {
    const snapshot = this.snapshot
    this.snapshot = undefined
    if (snapshot?.runId !== context.runId) return undefined
    return snapshot.rows.counts(this.comparedColumns(snapshot.written))
  }

  async deleteSlice(predicate: SlicePredicate, _context: WriteContext): Promise<number> {
    return this.deleteWhere(ownedRows(this.pipeline, predicate))
  }

  /** Deletes sweep: owned keys in keyset pages (`where (columns) > (last row)`), never one unbounded read. */
  override async *readKeys(columns: string[], size: number, within?: Predicate, range?: { to?: Predicate }): AsyncGenerator<DataRecord[]> {
    const owned = ownedRows(this.pipeline)
    let last: DataRecord | undefined
    for (;;) {
      const filter = last ? and(owned, range ? range.to : within, after(columns, last)) : and(owned, within)
      const query = ql.SELECT.from(this.entity!.name).columns(...columns).orderBy(...keyOrder(columns)).limit(size)
      if (filter) query.where(toCqn(filter))
      const rows = (await this.db!.run(query)) as DataRecord[]
      if (rows.length) yield rows
      if (rows.length < size) return
      last = rows[rows.length - 1]
    }
  }

  override async deleteKeys(keys: DataRecord[], _context: WriteContext): Promise<number> {
    if (!keys.length) return 0
    return Number(await this.db!.run(ql.DELETE.from(this.entity!.name).where(this.ownedKeys(keys)))) || 0
  }

  override async countRows(): Promise<number> {
    const owned = ownedRows(this.pipeline)
    const query = ql.SELECT.one.from(this.entity!.name).columns('count(1) as n')
    if (owned) query.where(toCqn(owned))
    return Number(((await this.db!.run(query)) as { n?: unknown } | undefined)?.n ?? 0)
  }

  /** Soft delete 'flag': only rows not flagged yet (null, or false for a Boolean) change, so each row counts once. */
  override async flagKeys(keys: DataRecord[], field: string, value: unknown, _context: WriteContext): Promise<number> {
    if (!keys.length) return 0
    const boolean = builtinType(this.entity!.elements[field]) === 'cds.Boolean'
    const unflagged: Predicate = boolean ? { or: [{ field, op: 'eq', value: null }, { field, op: 'eq', value: false }] } : { field, op: 'eq', value: null }
    const where = [...this.ownedKeys(keys), 'and', { xpr: toCqn(unflagged) }]
    return Number(await this.db!.run(ql.UPDATE.entity(this.entity!.name).set({ [field]: value }).where(where))) || 0
  }

  /** Where tokens: the pipeline's own rows (its origin) with these keys (target names, origin column excluded). */
  private ownedKeys(keys: DataRecord[]): unknown[] {
    const columns = this.keys.filter(k => k !== ORIGIN_COLUMN || this.pipeline.config.source.origin === undefined)
    const owned = ownedRows(this.pipeline)
    const byKey = { xpr: keysWhere(keys, columns) }
    return owned ? [{ xpr: toCqn(owned) }, 'and', byKey] : [byKey]
  }

  private async deleteWhere(filter: Predicate | undefined): Promise<number> {
    const query = ql.DELETE.from(this.entity!.name)
    if (filter) query.where(toCqn(filter))
    return Number(await this.db!.run(query)) || 0
  }

  /**
   * True when none of the batch's keys can exist yet: the run truncated the target and the
   * batch's keys lie outside every key interval it has written since (ordered keyset reads, one
   * or several ranges at once, deliver exactly that; written-keys.ts). Such a batch is a plain INSERT with no count of existing keys; anything else (keys
   * out of order, a second write of a key, key types whose equality the database might judge
   * differently from JavaScript) takes the counted UPSERT.
   */
  private onlyNewKeys(rows: DataRecord[], context: WriteContext): boolean {
    const refill = this.refill
    if (refill?.runId !== context.runId) return false
    let low: unknown[] | undefined
    let high: unknown[] | undefined
    // one key column: its lowest and highest value, without a tuple per row
    const bounds = this.keys.length === 1 ? this.singleKeyBounds(rows) : undefined
    if (bounds) [low, high] = bounds
    else for (const row of rows) {
      const key = this.keys.map(k => row[k])
      if (!this.orderedKey(key)) {
        this.refill = undefined
        return false
      }
      if (!low || compareKeys(key, low) < 0) low = key
      if (!high || compareKeys(key, high) > 0) high = key
    }
    return refill.written.add(low!, high!)
  }

  /**
   * The columns of a batch whose rows all carry the same plain columns with scalar values, and
   * every column that has a default or a managed value: then INSERT `rows` (value arrays,
   * ~30 % cheaper than `entries` objects in CAP's SQLite INSERT) writes exactly what
   * `entries` would. Otherwise undefined, and the batch goes as `entries`.
   */
  private flatColumns(rows: DataRecord[]): string[] | undefined {
    const columns = Object.keys(rows[0])
    const signature = columns.join(',')
    if (this.flat?.signature !== signature) {
      const elements = this.entity!.elements as Record<string, CsnElement & { default?: unknown }>
      const plain = columns.every(c => {
        const element = elements[c]
        return element && !element.virtual && !element.isAssociation && !element.elements && element.value === undefined && !element.target
      })
      const defaulted = Object.entries(elements)
        .filter(([, e]) => e.default !== undefined || e['@cds.on.insert'] !== undefined || e['@cds.on.update'] !== undefined)
        .every(([name]) => columns.includes(name))
      this.flat = { signature, ok: plain && defaulted }
    }
    if (!this.flat.ok) return undefined
    for (const row of rows) {
      let count = 0
      for (const column in row) {
        const value = row[column]
        if (value === undefined || (value !== null && typeof value === 'object')) return undefined
        count++
      }
      if (count !== columns.length || !columns.every(c => c in row)) return undefined
    }
    return columns
  }

  /** A single key's [lowest], [highest] of the rows when every value is an ordered key (`orderedKey`); else undefined, and the rows take the tuple loop. */
  private singleKeyBounds(rows: DataRecord[]): [unknown[], unknown[]] | undefined {
    const [name] = this.keys
    let low = rows[0][name]
    let high = low
    for (const row of rows) {
      const value = row[name]
      if (!this.orderedValue(value, 0)) return undefined
      if ((value as number | string) < (low as number | string)) low = value
      else if ((value as number | string) > (high as number | string)) high = value
    }
    return [[low], [high]]
  }

  /** Keys of integer, string and UUID types (CAP stores a UUID as text), where distinct in JavaScript means distinct in the database. */
  private orderedKey(key: unknown[]): boolean {
    return key.every((value, i) => this.orderedValue(value, i))
  }

  /** One value of the i-th key column, as `orderedKey` judges it. */
  private orderedValue(value: unknown, i: number): boolean {
    this.keyKinds ??= this.keys.map(k => {
      const type = builtinType(this.entity!.elements[k])
      return type === 'cds.String' || type === 'cds.UUID' ? 'string' : type && INTEGER_TYPES.has(type) ? 'number' : undefined
    })
    const kind = this.keyKinds[i]
    return kind !== undefined && typeof value === kind && (typeof value !== 'number' || Number.isSafeInteger(value))
  }

  /** The stored rows of the batch's keys, by key, with the columns the batch writes. */
  private async existingRows(rows: DataRecord[]): Promise<Map<string, DataRecord>> {
    const keys = this.keys
    const columns = [...new Set([...keys, ...Object.keys(rows[0])])].filter(c => this.entity!.elements[c])
    const found = (await this.db!.run(ql.SELECT.from(this.entity!.name).columns(...columns).where(keysWhere(rows, keys)))) as DataRecord[]
    return new Map(found.map(row => [this.keyOf(row), row]))
  }

}

/**
 * The sweep's key order. Keys are never null, so where nulls go changes no row's place — but
 * PostgreSQL's primary-key index serves `ASC NULLS LAST` (its default) only, and CAP renders a
 * plain ascending order as `NULLS FIRST`: every page sorted the whole table (55 ms per 1,000 keys
 * at 1M rows instead of 0.25 ms; bench/delta-token.mjs). SQLite reads its index either way.
 */
function keyOrder(columns: string[]): Array<{ ref: string[]; sort: 'asc'; nulls: 'last' }> {
  return columns.map(column => ({ ref: [column], sort: 'asc', nulls: 'last' }))
}
