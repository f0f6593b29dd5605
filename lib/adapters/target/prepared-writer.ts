/**
 * Prepared bulk statements for a plain table: INSERT, and INSERT … ON CONFLICT(keys) DO UPDATE,
 * with one parameter per value, run on the native connection of the caller's transaction.
 *
 * What gets stored is what CAP's own INSERT/UPSERT store: the SQL around each parameter is the
 * input converter CAP wraps around its `json_each` extraction (taken from the service's own
 * CQN2SQL renderer), columns a batch leaves out get CAP's `@cds.on.insert` / `default` /
 * `@cds.on.update` expressions or NULL as CAP gives them, and each value is bound as the database
 * would see CAP's JSON value (the dialect's `bind`). A batch whose rows differ in their columns or
 * carry values CAP's JSON would change (objects, buffers, bigints) is not taken (`columnsOf`
 * answers undefined) and goes through CAP.
 */
import type { CsnElement } from '../../model/csn.js'
import type { DataRecord } from '../../pipeline/types.js'

/** The database service as far as the writers use it (CAP's SQLService and one of its transactions). */
export interface SqlService {
  kind?: string
  model?: { definitions: Record<string, unknown> }
  class: { CQN2SQL: new (service: unknown) => Renderer }
  run<T>(fn: (tx: SqlService) => Promise<T>): Promise<T>
  run(query: unknown): Promise<unknown>
  /** The native connection of a transaction that has begun. */
  dbc?: unknown
}

/** The parts of CAP's CQN2SQL renderer the writers use. */
export interface Renderer {
  cqn?: unknown
  class: { _convertInput: string }
  quote(name: string): string
  name(name: string, query?: unknown): string
  managed(columns: Array<{ name: string; sql: string }>, elements: Record<string, unknown>): Array<{ name: string; sql: string; onInsert?: string; onUpdate?: string; converter(sql: string): string }>
}

/** One column of the table: its quoted name and how CAP writes it. */
interface Column {
  name: string
  quoted: string
  element: CsnElement
  /** The value expression around the parameter marker (CAP's input converter). */
  value: string
  /** CAP's converter done in JavaScript instead (see `marker`). */
  convert?: (value: unknown) => unknown
  /** How often the marker occurs in `value` (a converter may use its input twice). */
  uses: number
  /** CAP's value when an INSERT leaves the column out (`@cds.on.insert`, `default`), else NULL. */
  onInsert: string
  /** CAP's value when an UPSERT leaves the column out of an existing row, if it sets one (`@cds.on.update`). */
  onUpdate?: string
}

interface Statement {
  /** `INSERT INTO table (columns)` */
  head: string
  /** One row's `(values)`, parameters as markers. */
  tuple: string
  /** `ON CONFLICT …` of an upsert, else empty. */
  tail: string
  /** Present columns in parameter order, each repeated as often as its marker occurs. */
  bound: Column[]
  /** Rendered multi-row texts by row count (a few: full chunks and the last remainders). */
  texts?: Map<number, string>
}

/** Multi-row texts kept per statement: one per full chunk size plus recent remainders. */
const TEXTS_KEPT = 4

const MARKER = '__cdp_param__'
const MARKERS = new RegExp(MARKER, 'g')

export abstract class PreparedWriter {
  protected readonly table: string
  private readonly columns = new Map<string, Column>()
  private readonly keys: string[]
  private readonly statements = new Map<string, Statement>()

  constructor(service: SqlService, entity: { name: string; elements: Record<string, CsnElement> }) {
    const renderer = new service.class.CQN2SQL(service)
    renderer.cqn = {} // managed() renders CAP's own default branches from the query kind; they are not used here
    this.table = renderer.quote(renderer.name(entity.name, { _target: entity }))
    const physical = Object.keys(entity.elements).filter(name => isPhysical(entity.elements[name]))
    const managed = renderer.managed(physical.map(name => ({ name, sql: MARKER })), entity.elements)
    for (const column of managed) {
      const element = entity.elements[column.name]
      const { value, convert } = this.marker(column.sql)
      this.columns.set(column.name, {
        convert,
        name: column.name,
        quoted: renderer.quote(column.name),
        element,
        value,
        uses: value.split(MARKER).length - 1,
        onInsert: column.onInsert ? column.converter(column.onInsert) : 'NULL',
        onUpdate: column.onUpdate ? column.converter(column.onUpdate) : undefined,
      })
    }
    this.keys = physical.filter(name => entity.elements[name].key)
  }

  /**
   * The batch's columns when the prepared statements write it exactly as CAP would: every row
   * has the same columns, all of them columns of the table, every key set, and only values
   * CAP's JSON keeps as they are. Otherwise undefined.
   */
  columnsOf(rows: DataRecord[]): string[] | undefined {
    const names = Object.keys(rows[0])
    for (const name of names) if (!this.columns.has(name)) return undefined
    for (const key of this.keys) if (!names.includes(key)) return undefined
    for (const row of rows) {
      let count = 0
      for (const name in row) {
        const value = row[name]
        if (!this.columns.has(name) || !bindable(value)) return undefined
        count++
      }
      if (count !== names.length) return undefined
      for (const key of this.keys) if (row[key] === null || row[key] === undefined) return undefined
    }
    return names
  }

  /** Plain INSERT of rows whose keys are new (`columnsOf` agreed). */
  insert(tx: SqlService, columns: string[], rows: DataRecord[]): Promise<void> {
    return this.execute(tx, this.statement('insert', columns), rows)
  }

  /** INSERT … ON CONFLICT(keys) DO UPDATE: new keys are inserted, existing rows take the batch's values (`columnsOf` agreed). */
  upsert(tx: SqlService, columns: string[], rows: DataRecord[]): Promise<void> {
    return this.execute(tx, this.statement('upsert', columns), rows)
  }

  /** Runs the statement once per row (or in multi-row chunks) on the transaction's connection. */
  protected abstract execute(tx: SqlService, statement: Statement, rows: DataRecord[]): Promise<void>

  /** The dialect's parameter marker for the n-th parameter (1-based) of a row tuple. */
  protected abstract parameter(index: number): string

  /** A value as the database sees it in CAP's JSON (`value->>…`), for the column's element. */
  protected abstract bind(value: unknown, element: CsnElement): unknown

  /** The converted parameter expression; a dialect may move CAP's converter into JavaScript (`convert`, applied after `bind`). */
  protected marker(sql: string): { value: string; convert?: (value: unknown) => unknown } {
    return { value: sql }
  }

  /** Parameters of one row, in statement order. */
  protected values(statement: Statement, row: DataRecord, into: unknown[] = []): unknown[] {
    for (const column of statement.bound) {
      const value = this.bind(row[column.name], column.element)
      into.push(column.convert ? column.convert(value) : value)
    }
    return into
  }

  /** The statement's SQL for `count` rows (multi-row VALUES), its markers numbered by the dialect from 1. */
  protected sql(statement: Statement, count = 1): string {
    // a multi-row text is long (hundreds of tuples): rendered once per row count, not per chunk
    const texts = statement.texts ??= new Map()
    const cached = texts.get(count)
    if (cached) return cached
    let next = 1
    const tuples = Array.from({ length: count }, () => statement.tuple.replace(MARKERS, () => this.parameter(next++)))
    const text = `${statement.head} VALUES ${tuples.join(',')}${statement.tail}`
    if (texts.size >= TEXTS_KEPT) texts.delete(texts.keys().next().value!)
    texts.set(count, text)
    return text
  }

  private statement(kind: 'insert' | 'upsert', names: string[]): Statement {
    const signature = `${kind}:${names.join(',')}`
    let statement = this.statements.get(signature)
    if (!statement) {
      const present = new Set(names)
      const all = [...this.columns.values()]
      const bound: Column[] = []
      for (const column of all) if (present.has(column.name)) for (let i = 0; i < column.uses; i++) bound.push(column)
      let tail = ''
      if (kind === 'upsert') {
        const set = all.filter(c => !this.keys.includes(c.name) && (present.has(c.name) || c.onUpdate))
          .map(c => `${c.quoted} = ${present.has(c.name) ? `excluded.${c.quoted}` : c.onUpdate}`)
        tail = ` ON CONFLICT(${this.keys.map(k => this.columns.get(k)!.quoted).join(',')}) DO ${set.length ? `UPDATE SET ${set.join(',')}` : 'NOTHING'}`
      }
      statement = {
        head: `INSERT INTO ${this.table} (${all.map(c => c.quoted).join(',')})`,
        tuple: `(${all.map(c => present.has(c.name) ? c.value : c.onInsert).join(',')})`,
        tail,
        bound,
      }
      this.statements.set(signature, statement)
    }
    return statement
  }
}

/** A column CAP writes: not virtual, not calculated, not an association (its foreign keys are). */
function isPhysical(element: CsnElement): boolean {
  return !element.virtual && element.value === undefined && !element.isAssociation
}

/** Values CAP's JSON serialisation passes through as a scalar (no objects, buffers, bigints, functions). */
function bindable(value: unknown): boolean {
  if (value === null) return true
  const type = typeof value
  return type === 'string' || type === 'number' || type === 'boolean' || value instanceof Date
}

export type { Column, Statement }
