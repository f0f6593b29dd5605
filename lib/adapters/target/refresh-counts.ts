/**
 * Honest counts of a full refresh (README "Semantics", Statistics). A full refresh empties the
 * target and writes the source's rows again in one transaction, so the writes alone would count
 * every row as deleted and created. Before emptying, the owned rows are copied into a temporary
 * table of that transaction; when the last batch is written, one join of the two tells, by key:
 * created (new to the target), updated (present before, a written column differs), unchanged
 * (present before, all written columns equal) and deleted (gone from the source). The database
 * compares what it stored both times through the same converters, so equal source values are
 * equal here. SQLite and PostgreSQL only (dialects whose SQL is proven); elsewhere, and outside a
 * run-scoped transaction, the writes' own counts stand.
 */
import { randomUUID } from 'node:crypto'
import type { SqlService } from './prepared-writer.js'
import type { WriteStatistics } from '../types.js'

type Dialect = 'sqlite' | 'postgres'

const DIALECTS: Record<string, Dialect> = { sqlite: 'sqlite', 'better-sqlite': 'sqlite', postgres: 'postgres' }

interface Runner {
  run(query: string): Promise<unknown>
}

export type RefreshCounts = Required<Pick<WriteStatistics, 'created' | 'updated' | 'unchanged' | 'deleted'>>

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
    const runner = db as unknown as Runner
    // temporary, and dropped at commit (PostgreSQL) or by `counts` (SQLite); a rollback undoes it anyway
    await runner.run(`CREATE TEMP TABLE ${name}${dialect === 'postgres' ? ' ON COMMIT DROP' : ''} AS SELECT * FROM ${table}${owned}`)
    const [row] = (await runner.run(`SELECT count(*) AS n FROM ${name}`)) as Array<{ n: unknown }>
    return new RefreshSnapshot(runner, dialect, table, name, keys, owned, quote, Number(row?.n ?? 0))
  }

  /** The refresh's counts, comparing the written columns; drops the snapshot. */
  async counts(written: Iterable<string>): Promise<RefreshCounts> {
    const { quote, keys } = this
    const compared = [...written].filter(c => !keys.includes(c))
    const same = (c: string) => this.dialect === 'postgres' ? `t.${quote(c)} IS NOT DISTINCT FROM s.${quote(c)}` : `t.${quote(c)} IS s.${quote(c)}`
    const on = keys.map(k => `t.${quote(k)} = s.${quote(k)}`).join(' AND ')
    const identical = compared.length ? compared.map(same).join(' AND ') : '1 = 1'
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
}
