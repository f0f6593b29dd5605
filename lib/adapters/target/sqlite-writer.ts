/**
 * Prepared statements on SQLite (@cap-js/sqlite: node:sqlite or better-sqlite3): prepared
 * statements per column set and connection, run on the transaction's connection — rows in
 * multi-row chunks of a few dozen (`chunkRows`), the rest one by one. Cheaper than CAP's
 * `json_each` (no JSON written and parsed again, no OLD join for inserts), and than one call per
 * row: each call crosses into the driver and answers a result object (≈ 25 % of the insert's
 * CPU on 11 columns); hundreds of rows per call are slower again (argument lists of thousands).
 */
import { PreparedWriter, type SqlService, type Statement } from './prepared-writer.js'
import { builtinType, type CsnElement } from '../../model/csn.js'
import type { DataRecord } from '../../pipeline/types.js'

/** The native connection: both drivers prepare statements whose `run` takes an array of parameters. */
interface Connection {
  prepare(sql: string): { run(parameters: unknown[]): unknown }
}

type Native = { run(parameters: unknown[]): unknown }

/** Statements per connection (CAP pools connections; a statement belongs to one). */
const prepared = new WeakMap<object, Map<string, Native>>()

/** Column types whose affinity stores an integer the same whether bound as REAL or INTEGER. */
const NUMERIC_TYPES = new Set(['cds.Integer', 'cds.Int16', 'cds.Int32', 'cds.Int64', 'cds.UInt8', 'cds.Integer64', 'cds.Decimal', 'cds.DecimalFloat', 'cds.Double', 'cds.Boolean'])

/** Rows per multi-row statement: at most 25, and at most 999 parameters (SQLite's historical limit). */
export function chunkRows(parametersPerRow: number): number {
  return Math.max(1, Math.min(25, Math.floor(999 / Math.max(1, parametersPerRow))))
}

export class SqliteWriter extends PreparedWriter {
  protected async execute(tx: SqlService, statement: Statement, rows: DataRecord[]): Promise<void> {
    const dbc = tx.dbc as Connection
    let statements = prepared.get(dbc)
    if (!statements) prepared.set(dbc, statements = new Map())
    const native = (count: number): Native => {
      const sql = this.sql(statement, count)
      let found = statements.get(sql)
      if (!found) statements.set(sql, found = dbc.prepare(sql))
      return found
    }
    const size = chunkRows(statement.bound.length)
    const parameters: unknown[] = []
    let start = 0
    if (size > 1 && rows.length >= size) {
      const chunk = native(size)
      for (; start + size <= rows.length; start += size) {
        parameters.length = 0
        for (let i = start; i < start + size; i++) this.values(statement, rows[i], parameters)
        chunk.run(parameters)
      }
    }
    // the remainder row by row: one more statement per column set, not one per remainder size
    if (start < rows.length) {
      const single = native(1)
      for (; start < rows.length; start++) {
        parameters.length = 0
        single.run(this.values(statement, rows[start], parameters))
      }
    }
  }

  protected parameter(): string {
    return '?'
  }

  /**
   * What `value->>'$.column'` yields from CAP's JSON: TEXT for strings, INTEGER for integral
   * numbers (the drivers bind a JS number as REAL, which a TEXT column would store as '5.0'),
   * REAL otherwise, 1/0 for booleans, NULL for null and for what JSON writes as null (NaN).
   */
  protected bind(value: unknown, element: CsnElement): unknown {
    if (value === null || typeof value === 'string') return value
    if (typeof value === 'boolean') value = value ? 1 : 0
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) return null
      if (Number.isInteger(value) && Math.abs(value) < 2 ** 63 && !NUMERIC_TYPES.has(builtinType(element) ?? '')) return BigInt(value)
      return value
    }
    if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : value.toISOString()
    return value
  }

  /** CAP's `ISO(x)` (a JavaScript function it registers with SQLite) runs here, before binding. */
  protected override marker(sql: string): { value: string; convert?: (value: unknown) => unknown } {
    const iso = /^ISO\((__cdp_param__)\)$/.exec(sql)
    return iso ? { value: iso[1], convert: toIso } : { value: sql }
  }
}

const CANONICAL = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|1\d|2[0-8])T([01]\d|2[0-3]):[0-5]\d:[0-5]\d\.\d{3}Z$/

/** @cap-js/sqlite's ISO: `d && new Date(d).toISOString()`; a canonical value (a day every month has) is its own result. */
function toIso(value: unknown): unknown {
  if (typeof value === 'bigint') value = Number(value) // SQLite hands an INTEGER to ISO as a number
  if (typeof value === 'string' && CANONICAL.test(value)) return value
  return value && new Date(value as string).toISOString()
}
