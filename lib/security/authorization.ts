/**
 * The data inspector answers what CAP would answer the user for the entity (README "Security"):
 * where the application's own services serve a pipeline's replica — as an entity of the service
 * itself or through projections of it — (or its local source entity), the rows of a preview are
 * those the user may read through one of them — checked by CAP itself, running key queries through
 * the service as the current user, so `@requires`, `@restrict` and instance-based `where` apply
 * exactly as in the app. No service lets the user read: 403, before any row is read. An entity no
 * service serves is checked against its own `@requires` and `@restrict` (a `where` needs a service
 * to apply: without one it grants nothing).
 */
import cds from '@sap/cds'
import { PipelineError } from '../pipeline/errors.js'
import { deriveMapping } from '../adapters/mapping.js'
import { toCqn, type Predicate } from '../adapters/predicate.js'
import { keyNames, projectionSource, type CsnEntity } from '../model/csn.js'
import { ql, type Query } from '../model/ql.js'
import { SERVICE_NAME } from '../constants.js'
import { MANAGEMENT_SERVICE } from './roles.js'
import type { DataRecord } from '../pipeline/types.js'
import { anonymousUser, currentContext, servedServices } from '../cap/index.js'

interface ServedService {
  name: string
  definition?: { '@cds.external'?: unknown }
  entities?: Record<string, CsnEntity>
  run(query: unknown): Promise<unknown>
}

interface User {
  id?: string
  is(role: string): boolean
  _is_privileged?: boolean
}

/** An application service's entity that serves `entity`, with its key names in the entity's terms. */
interface Exposure {
  service: ServedService
  entity: CsnEntity
  /** key name of the guarded entity → name in the service entity */
  keys: Array<[string, string]>
}

/**
 * Service entities of the application that serve `entity`: the entity itself when it is an entity
 * of an application service (a replica declared in the service), and projections of it.
 */
function exposuresOf(entity: CsnEntity): Exposure[] {
  const found: Exposure[] = []
  const keys = keyNames(entity)
  for (const srv of new Set(Object.values(servedServices() as Record<string, ServedService>))) {
    if (!(srv instanceof cds.ApplicationService) || srv.definition?.['@cds.external'] || [SERVICE_NAME, MANAGEMENT_SERVICE].includes(srv.name)) continue
    for (const candidate of Object.values(srv.entities ?? {})) {
      if (candidate.name === entity.name) {
        found.push({ service: srv, entity: candidate, keys: keys.map(k => [k, k]) })
        continue
      }
      if (projectionSource(candidate) !== entity.name) continue
      const mapping = deriveMapping(candidate, entity) ?? []
      const mapped = keys.map(k => [k, mapping.find(m => m.source === k)?.target] as [string, string | undefined])
      if (mapped.every(([, to]) => to)) found.push({ service: srv, entity: candidate, keys: mapped as Array<[string, string]> })
    }
  }
  return found
}

function denied(error: unknown): boolean {
  const e = error as { code?: unknown; status?: unknown; statusCode?: unknown }
  return [401, 403, '401', '403'].includes((e?.code ?? e?.status ?? e?.statusCode) as never)
}

/** The key rows the service answers the current user for `query`; undefined when it refuses (401/403). */
async function readAs(exposure: Exposure, query: Query): Promise<DataRecord[] | undefined> {
  try {
    return (await exposure.service.run(query)) as DataRecord[]
  } catch (error) {
    if (denied(error)) return undefined
    throw error
  }
}

const list = (value: unknown): unknown[] => (value === undefined || value === null ? [] : Array.isArray(value) ? value : [value])
const CRUD_GRANTS = new Set(['*', 'READ', 'WRITE', 'CREATE', 'UPDATE', 'DELETE'])

/**
 * Why the entity's own annotations refuse the user reading it (undefined: they do not), for an entity
 * no application service serves: `@requires` needs one of its roles; `@restrict` needs a grant of
 * READ (or `*`) to one of the user's roles (`to` omitted: anyone) without `where` — a `where` is
 * applied by a service to its reads, and there is none here. As in CAP, a `@restrict` that grants
 * only actions leaves reading open.
 */
function declaredRefusal(entity: CsnEntity, user: User): string | undefined {
  if (user._is_privileged) return undefined
  const requires = list(entity['@requires']).map(String)
  if (requires.length && !requires.some(role => user.is(role))) return `its @requires: ${requires.join(', ')}`
  const restrict = list(entity['@restrict']) as Array<{ grant?: unknown; to?: unknown; where?: unknown }>
  const grants = (r: { grant?: unknown }) => (r.grant === undefined ? ['*'] : list(r.grant).map(String))
  if (!restrict.some(r => grants(r).some(g => CRUD_GRANTS.has(g)))) return undefined
  const granted = restrict.some(r => !r.where && grants(r).some(g => g === '*' || g === 'READ') && (r.to === undefined ? ['any'] : list(r.to).map(String)).some(role => user.is(role)))
  if (!granted) return 'its @restrict grants this user no READ (a where of it applies only through a service)'
  return undefined
}

function currentUser(): User {
  return (currentContext()?.user ?? anonymousUser()) as User
}

/** What the current user may read of an entity: the rows among those given (keys in the entity's names via `keyOf`). */
export interface ReadAccess {
  readable(rows: DataRecord[], keyOf: (row: DataRecord, key: string) => unknown): Promise<DataRecord[]>
}

const ALL: ReadAccess = { readable: async rows => rows }

/**
 * What the current user may read of `entity` through the application, decided before any row is
 * read. Throws FORBIDDEN naming the entity when application services serve it and none lets the
 * user read it, or, when none serves it, when its own `@requires`/`@restrict` refuse the user.
 */
export async function readAccess(entity: CsnEntity): Promise<ReadAccess> {
  const user = currentUser()
  const exposures = exposuresOf(entity)
  if (!exposures.length) {
    const refusal = declaredRefusal(entity, user)
    if (refusal) throw new PipelineError('FORBIDDEN', `User '${user.id ?? 'anonymous'}' may not read ${entity.name} (${refusal}); the data inspector shows what the application would`, { target: 'side' })
    return ALL
  }
  const allowed: Exposure[] = []
  for (const exposure of exposures) {
    const probe = ql.SELECT.from(exposure.entity.name).columns(...exposure.keys.map(([, to]) => to)).limit(1)
    if (await readAs(exposure, probe)) allowed.push(exposure)
  }
  if (!allowed.length) {
    // the entity itself served: its service answers; a projection of it: that projection
    const answering = [...new Set(exposures.map(e => (e.entity.name === entity.name ? e.service.name : e.entity.name)))]
    throw new PipelineError('FORBIDDEN', `User '${user.id ?? 'anonymous'}' may not read ${entity.name} (${answering.join(', ')} ${answering.length > 1 ? 'answer' : 'answers'} 403); the data inspector shows what the application would`, { target: 'side' })
  }
  return { readable: (rows, keyOf) => readableRows(allowed, rows, keyOf) }
}

/** The rows whose keys one of the services answers the user for (instance-based `where` applied by CAP). */
async function readableRows(exposures: Exposure[], rows: DataRecord[], keyOf: (row: DataRecord, key: string) => unknown): Promise<DataRecord[]> {
  if (!rows.length) return rows
  const readable = new Set<string>()
  for (const exposure of exposures) {
    const { keys } = exposure
    const query = ql.SELECT.from(exposure.entity.name).columns(...keys.map(([, to]) => to))
    if (keys.length === 1) query.where({ [keys[0][1]]: { in: rows.map(row => keyOf(row, keys[0][0])) } })
    else if (keys.length) {
      const match: Predicate = { or: rows.map(row => ({ and: keys.map(([from, to]) => ({ field: to, op: 'eq' as const, value: keyOf(row, from) })) })) }
      query.where(toCqn(match))
    }
    for (const row of (await readAs(exposure, query)) ?? []) readable.add(JSON.stringify(keys.map(([, to]) => row[to])))
  }
  const ownKeys = exposures[0].keys.map(([from]) => from)
  return rows.filter(row => readable.has(JSON.stringify(ownKeys.map(k => keyOf(row, k)))))
}
