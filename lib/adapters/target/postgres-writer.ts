/**
 * Prepared statements on PostgreSQL (@cap-js/postgres on `pg`): multi-row INSERT (… ON CONFLICT)
 * with `$n::text` parameters — CAP's own INSERT reads each value as text (`value->>'column'` of
 * its JSON) and casts it with the same converters, so the text of the JSON value is bound.
 * Full-size chunks are named statements (parsed once per connection).
 */
import { createHash } from 'node:crypto'
import { PreparedWriter, type SqlService, type Statement } from './prepared-writer.js'
import type { DataRecord } from '../../pipeline/types.js'

interface Connection {
  query(query: { name?: string; text: string; values: unknown[] }): Promise<unknown>
}

/** PostgreSQL's limit of parameters per statement. */
const MAX_PARAMETERS = 65_535
/** Rows per statement: enough to amortise a round trip, few enough to keep statements small. */
const CHUNK_ROWS = 500

export class PostgresWriter extends PreparedWriter {
  private names = new Map<string, string>()

  protected async execute(tx: SqlService, statement: Statement, rows: DataRecord[]): Promise<void> {
    const dbc = tx.dbc as Connection
    const perRow = Math.max(1, statement.bound.length)
    const size = Math.max(1, Math.min(CHUNK_ROWS, Math.floor(MAX_PARAMETERS / perRow)))
    for (let start = 0; start < rows.length; start += size) {
      const chunk = rows.slice(start, start + size)
      const text = this.sql(statement, chunk.length)
      const values: unknown[] = []
      for (const row of chunk) this.values(statement, row, values)
      await dbc.query({ name: chunk.length === size ? this.nameOf(text) : undefined, text, values })
    }
  }

  protected parameter(index: number): string {
    return `$${index}::text`
  }

  /** The text `value->>'column'` yields from CAP's JSON (NULL for null and for what JSON writes as null). */
  protected bind(value: unknown): unknown {
    if (value === null || typeof value === 'string') return value
    if (typeof value === 'number') return Number.isFinite(value) ? JSON.stringify(value) : null
    if (typeof value === 'boolean') return value ? 'true' : 'false'
    if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString()
    return value
  }

  private nameOf(text: string): string {
    let name = this.names.get(text)
    if (!name) this.names.set(text, name = `cdp_${createHash('sha1').update(text).digest('hex')}`)
    return name
  }
}
