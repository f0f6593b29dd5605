/**
 * Which path a database target writes through, decided once per pipeline when it is prepared:
 * prepared bulk statements on the transaction's native connection (`PreparedWriter`), or CAP's
 * own INSERT/UPSERT wherever an entity has something only CAP's path honours.
 */
import { PostgresWriter } from './postgres-writer.js'
import { SqliteWriter } from './sqlite-writer.js'
import type { PreparedWriter, SqlService } from './prepared-writer.js'
import { builtinType, projectionSource, type CsnElement, type CsnEntity } from '../../model/csn.js'

export interface WritePath {
  /** `prepared`: the target's own prepared statements; `cap`: CAP's INSERT/UPSERT. */
  kind: 'prepared' | 'cap'
  /** Why (shown in debug logs and `DatabaseTargetAdapter.writePath`). */
  reason: string
  writer?: PreparedWriter
}

interface Handler {
  before?: string
  on?: string
  after?: string
  handler: { name?: string; toString(): string }
  for(request: { event: string; path: string; entity: string }): boolean
}

interface Handlers {
  before?: Handler[]
  on?: Handler[]
  after?: Handler[]
}

/** Scalar types the prepared statements bind as CAP's JSON would carry them. */
const SCALAR_TYPES = new Set([
  'cds.UUID', 'cds.String', 'cds.LargeString', 'cds.Boolean', 'cds.Integer', 'cds.Int16', 'cds.Int32', 'cds.Int64', 'cds.UInt8',
  'cds.Integer64', 'cds.Decimal', 'cds.DecimalFloat', 'cds.Double', 'cds.Date', 'cds.Time', 'cds.DateTime', 'cds.Timestamp',
])

/**
 * The databases the prepared writers are proven on (every fast-write test runs on both):
 * SQLite and PostgreSQL, told by CAP's service class — the configured kind alone is ambiguous
 * (`sql` is SQLite in development and HANA in production; a custom `impl` may carry any kind).
 * Everything else, SAP HANA included, writes through CAP's path.
 */
const DIALECTS: Array<{ service: string; dialect: string; Writer: new (service: SqlService, entity: CsnEntity) => PreparedWriter }> = [
  { service: 'SQLiteService', dialect: 'sqlite', Writer: SqliteWriter },
  { service: 'PostgresService', dialect: 'postgres', Writer: PostgresWriter },
]

const cap = (reason: string): WritePath => ({ kind: 'cap', reason })

/** The proven dialect of a database service: by its class (or a subclass of it), or undefined. */
export function provenDialect(service: object): (typeof DIALECTS)[number] | undefined {
  for (let proto = Object.getPrototypeOf(service) as object | null; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto) as object | null) {
    const name = (proto as { constructor?: { name?: string } }).constructor?.name
    const found = DIALECTS.find(d => d.service === name)
    if (found) return found
  }
  return undefined
}

export function chooseWritePath(service: unknown, entityName: string): WritePath {
  const db = service as SqlService & { isDatabaseService?: boolean; handlers?: Handlers; options?: { kind?: string } }
  if (!db?.isDatabaseService) return cap('the target service is not a database service')
  const kind = db.kind ?? db.options?.kind ?? '?'
  const proven = provenDialect(db)
  if (!proven) return cap(`no prepared writer for database kind '${kind}' (${db.constructor?.name ?? '?'}): the fast path is proven on SQLite and PostgreSQL only`)
  const { dialect, Writer } = proven
  const entity = db.model?.definitions[entityName] as (CsnEntity & Record<string, unknown>) | undefined
  if (!entity) return cap('the entity is not in the database service\'s model')
  if ((entity.query || entity.projection) && !entity['@cds.persistence.table']) return cap('the entity is a view, not a table')
  if (entity['@cds.persistence.skip'] && !(entity['@cds.persistence.table'] && skipInherited(entity, db.model!.definitions)))
    return cap('the entity is not persisted (@cds.persistence.skip)')
  if (entity['@odata.draft.enabled'] || entityName.endsWith('.drafts')) return cap('the entity is draft-enabled')
  for (const [name, element] of Object.entries(entity.elements)) {
    const reason = elementReason(name, element as CsnElement & Record<string, unknown>)
    if (reason) return cap(reason)
  }
  const handler = applicationHandler(db, entityName)
  if (handler) return cap(`the database service has a handler for ${handler} of this entity`)
  try {
    return { kind: 'prepared', reason: `plain table on ${dialect}`, writer: new Writer(db, entity) }
  } catch (error) {
    return cap(`prepared statements could not be rendered: ${(error as Error).message}`)
  }
}

/**
 * `cds import` marks imported entities @cds.persistence.skip and the compiler copies that to
 * projections on them; a `@cds.persistence.table` projection is a table all the same (the
 * compiler drops only one that carries the skip itself).
 */
function skipInherited(entity: CsnEntity, definitions: Record<string, unknown>): boolean {
  const source = projectionSource(entity)
  return source !== undefined && (definitions[source] as Record<string, unknown> | undefined)?.['@cds.persistence.skip'] === true
}

function elementReason(name: string, element: CsnElement & Record<string, unknown>): string | undefined {
  if (element.isAssociation || element.virtual || element.value !== undefined) return undefined // not a column of its own
  if (element.localized) return `element '${name}' is localized`
  if (element['@cds.valid.from'] || element['@cds.valid.to']) return `element '${name}' is temporal (@cds.valid.from/to)`
  if (element.elements || element.items) return `element '${name}' is structured or an array`
  const type = builtinType(element)
  if (!type || !SCALAR_TYPES.has(type)) return `element '${name}' has type ${type ?? 'unknown'}`
  return undefined
}

/**
 * A handler for writes of the entity on the database service that is not CAP's own (the
 * service's methods, `fill_in_keys`, `onDeep`, the `db_strict` column check): the application's
 * or another plugin's, which only CAP's path would run.
 */
function applicationHandler(db: SqlService & { handlers?: Handlers }, entity: string): string | undefined {
  // CAP wraps synchronous handlers (keeping their names), so its own are told by method name
  const methods = new Set<string>(['fill_in_keys', 'onDeep'])
  for (let proto = Object.getPrototypeOf(db) as object | null; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto) as object | null)
    for (const name of Object.getOwnPropertyNames(proto)) if (name.startsWith('on')) methods.add(name)
  const isOwn = (h: Handler) => methods.has(h.handler.name?.replace(/^bound /, '') ?? '') || h.handler.toString().includes('STRICT MODE')
  for (const phase of ['before', 'on', 'after'] as const)
    for (const event of ['CREATE', 'INSERT', 'UPSERT']) {
      const found = db.handlers?.[phase]?.find(h => h.for({ event, path: entity, entity }) && !isOwn(h))
      if (found) return `${phase} ${found[phase]}`
    }
  return undefined
}
