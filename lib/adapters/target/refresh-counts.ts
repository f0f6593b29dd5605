/**
 * Honest counts of a full refresh (README "Semantics", Statistics). A full refresh empties the
 * target and writes the source's rows again in one transaction, so the writes alone would count
 * every row as deleted and created. Before emptying, the owned rows are copied into a temporary
 * table of that transaction; when the last batch is written, one join of the two tells, by key:
 * created (new to the target), updated (present before, a written column differs), unchanged
 * (present before, all written columns equal) and deleted (gone from the source). The database
 * compares what it stored both times through the same converters, so equal source values are
 * equal here. Each batch is counted the same way as it is written (`batchCounts`: its keys joined
 * with the copy, which is indexed by key), so the batches' figures add up to the run's (issue 37).
 * SQLite and PostgreSQL only (dialects whose SQL is proven); elsewhere, and outside a run-scoped
 * transaction, the writes' own counts stand.
 */
import { randomUUID } from 'node:crypto'
import type { SqlService } from './prepared-writer.js'
import type { WriteStatistics } from '../types.js'
import type { DataRecord } from '../../pipeline/types.js'
import { sqlInternals } from '../../cap/index.js'

type Dialect = 'sqlite' | 'postgres'

const DIALECTS: Record<string, Dialect> = { sqlite: 'sqlite', 'better-sqlite': 'sqlite', postgres: 'postgres' }

interface Runner {
  run(query: string, values?: unknown[]): Promise<unknown>
}

export type RefreshCounts = Required<Pick<WriteStatistics, 'created' | 'updated' | 'unchanged' | 'deleted'>>
export type BatchCounts = Required<Pick<WriteStatistics, 'created' | 'updated' | 'unchanged'>>

/** Keys per statement of `batchCounts` (its parameters: keys × key columns stay far below either dialect's limit). */
const KEYS_PER_STATEMENT = 500

export class RefreshSnapshot {
  private constructor(
    private readonly db: Runner,
    private readonly dialect: Dialect,
    private readonly table: string,
    private readonly name: string,
    private readonly keys: string[],
    private readonly owned: string,
    private readonly quote: (name: string) => string,
    /** Owned rows before the refresh. */
    readonly before: number,
  ) {}

  /**
   * Copies the owned rows (all, or those whose `origin` column holds `origin`) into a temporary
   * table; undefined where the database's dialect is not one of the proven ones.
   */
  static async take(service: unknown, entity: { name: string }, keys: string[], origin?: { column: string; value: string }): Promise<RefreshSnapshot | undefined> {
    const db = service as SqlService & { options?: { kind?: string; dialect?: string } }
    const dialect = DIALECTS[db.options?.dialect ?? db.kind ?? db.options?.kind ?? '']
    if (!dialect || !db.class?.CQN2SQL) return undefined
    const renderer = new db.class.CQN2SQL(db)
    renderer.cqn = {}
    const quote = (name: string) => renderer.quote(name)
    const table = quote(renderer.name(entity.name, { _target: entity }))
    const owned = origin ? ` WHERE ${quote(origin.column)} = '${origin.value.replace(/'/g, "''")}'` : ''
    const name = `cdp_refresh_${randomUUID().replace(/-/g, '')}`
    const runner = sqlInternals<Runner>(db)
    // temporary, and dropped at commit (PostgreSQL) or by `counts` (SQLite); a rollback undoes it anyway
    await runner.run(`CREATE TEMP TABLE ${name}${dialect === 'postgres' ? ' ON COMMIT DROP' : ''} AS SELECT * FROM ${table}${owned}`)
    // each batch looks its keys up here (batchCounts), the last count joins all of them
    await runner.run(`CREATE INDEX ${name}_keys ON ${name} (${keys.map(quote).join(', ')})`)
    // PostgreSQL's autovacuum never analyzes a temporary table: without statistics each batch's lookup
    // hash-joins the whole copy (117 ms per statement at 1M rows, 0.2 ms analyzed; bench/delta-token.mjs)
    if (dialect === 'postgres') await runner.run(`ANALYZE ${name}`)
    const [row] = (await runner.run(`SELECT count(*) AS n FROM ${name}`)) as Array<{ n: unknown }>
    return new RefreshSnapshot(runner, dialect, table, name, keys, owned, quote, Number(row?.n ?? 0))
  }

  /** The refresh's counts, comparing the written columns; drops the snapshot. */
  async counts(written: Iterable<string>): Promise<RefreshCounts> {
    const { on, identical } = this.comparison(written)
    const owned = this.owned.replace(' WHERE ', ' WHERE t.')
    try {
      const [after] = (await this.db.run(`SELECT count(*) AS n FROM ${this.table}${this.owned}`)) as Array<{ n: unknown }>
      // a first copy (nothing before): every row is new, no join needed
      if (!this.before) return { created: Number(after?.n ?? 0), updated: 0, unchanged: 0, deleted: 0 }
      const [match] = (await this.db.run(
        `SELECT count(*) AS matched, coalesce(sum(CASE WHEN ${identical} THEN 1 ELSE 0 END), 0) AS unchanged FROM ${this.table} t JOIN ${this.name} s ON ${on}${owned}`,
      )) as Array<{ matched: unknown; unchanged: unknown }>
      const matched = Number(match?.matched ?? 0)
      const unchanged = Number(match?.unchanged ?? 0)
      return { created: Number(after?.n ?? 0) - matched, updated: matched - unchanged, unchanged, deleted: this.before - matched }
    } finally {
      if (this.dialect === 'sqlite') await this.db.run(`DROP TABLE IF EXISTS temp.${this.name}`)
    }
  }

  /**
   * The counts of a batch just written (`rows`: keys written for the first time in this refresh),
   * by key against the rows before, as `counts` judges them: created (the target shows the key, the
   * copy does not), updated, unchanged. Undefined when a key value cannot be bound as the database
   * stored it (then the batch reports its writes and the run's end corrects the figures).
   */
  async batchCounts(rows: DataRecord[], written: Iterable<string>): Promise<BatchCounts | undefined> {
    if (!rows.length) return { created: 0, updated: 0, unchanged: 0 }
    // a first copy (nothing before): every row is new
    if (!this.before) return { created: rows.length, updated: 0, unchanged: 0 }
    const values = rows.map(row => this.keys.map(k => this.bindable(row[k])))
    if (values.some(key => key.some(value => value === UNBINDABLE))) return undefined
    const { on, identical } = this.comparison(written)
    const owned = this.owned.replace(' WHERE ', ' AND t.')
    const counts = { present: 0, matched: 0, unchanged: 0 }
    for (let start = 0; start < values.length; start += KEYS_PER_STATEMENT) {
      const chunk = values.slice(start, start + KEYS_PER_STATEMENT)
      const [row] = (await this.db.run(
        `SELECT count(*) AS present, count(s.${this.quote(this.keys[0])}) AS matched, coalesce(sum(CASE WHEN s.${this.quote(this.keys[0])} IS NOT NULL AND ${identical} THEN 1 ELSE 0 END), 0) AS unchanged ` +
        `FROM ${this.table} t LEFT JOIN ${this.name} s ON ${on} WHERE ${this.keyIn(chunk.length)}${owned}`,
        chunk.flat(),
      )) as Array<{ present: unknown; matched: unknown; unchanged: unknown }>
      counts.present += Number(row?.present ?? 0)
      counts.matched += Number(row?.matched ?? 0)
      counts.unchanged += Number(row?.unchanged ?? 0)
    }
    return { created: counts.present - counts.matched, updated: counts.matched - counts.unchanged, unchanged: counts.unchanged }
  }

  /** The join of target (t) and copy (s) by key, and whether the written columns are all the same. */
  private comparison(written: Iterable<string>): { on: string; identical: string } {
    const { quote, keys } = this
    const compared = [...written].filter(c => !keys.includes(c))
    const same = (c: string) => this.dialect === 'postgres' ? `t.${quote(c)} IS NOT DISTINCT FROM s.${quote(c)}` : `t.${quote(c)} IS s.${quote(c)}`
    return { on: keys.map(k => `t.${quote(k)} = s.${quote(k)}`).join(' AND '), identical: compared.length ? compared.map(same).join(' AND ') : '1 = 1' }
  }

  /** `t`'s key among `count` keys given as parameters (SQLite: a row value needs a VALUES subquery; PostgreSQL: typed by the columns). */
  private keyIn(count: number): string {
    const { keys, quote } = this
    let index = 0
    const parameter = () => (this.dialect === 'postgres' ? `$${++index}` : '?')
    const tuple = () => keys.length === 1 ? parameter() : `(${keys.map(parameter).join(', ')})`
    const tuples = Array.from({ length: count }, tuple).join(', ')
    if (keys.length === 1) return `t.${quote(keys[0])} IN (${tuples})`
    const left = `(${keys.map(k => `t.${quote(k)}`).join(', ')})`
    return this.dialect === 'postgres' ? `${left} IN (${tuples})` : `${left} IN (VALUES ${tuples})`
  }

  /** A key value as a parameter compares with what the database stored (as a CAP where clause binds it); UNBINDABLE otherwise. */
  private bindable(value: unknown): unknown {
    if (typeof value === 'string' || typeof value === 'bigint' || (typeof value === 'number' && Number.isFinite(value))) return value
    if (this.dialect === 'postgres' && (value instanceof Date || typeof value === 'boolean')) return value
    return UNBINDABLE
  }
}

const UNBINDABLE = Symbol('unbindable')
