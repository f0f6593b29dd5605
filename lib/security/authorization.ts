/**
 * The data inspector answers what CAP would answer the user for the entity (README "Security"):
 * where the application's own services expose a pipeline's replica (or its local source entity),
 * the rows of a preview are those the user may read through one of them — checked by CAP itself,
 * running a key query through the service as the current user, so `@requires`, `@restrict` and
 * instance-based `where` apply exactly as in the app. No service lets the user read: 403.
 */
import cds from '@sap/cds'
import { PipelineError } from '../pipeline/errors.js'
import { deriveMapping } from '../adapters/mapping.js'
import { keyNames, projectionSource, type CsnEntity } from '../model/csn.js'
import { ql } from '../model/ql.js'
import { SERVICE_NAME } from '../constants.js'
import { MANAGEMENT_SERVICE } from './roles.js'
import type { DataRecord } from '../pipeline/types.js'

interface ServedService {
  name: string
  definition?: { '@cds.external'?: unknown }
  entities?: Record<string, CsnEntity>
  run(query: unknown): Promise<unknown>
}

/** An application service's entity that projects on `entity`, with its key names in the entity's terms. */
interface Exposure {
  service: ServedService
  entity: CsnEntity
  /** key name of the guarded entity → name in the service entity */
  keys: Array<[string, string]>
}

/** Service entities of the application that expose `entity` (directly, or through projections of it). */
function exposuresOf(entity: CsnEntity): Exposure[] {
  const found: Exposure[] = []
  const keys = keyNames(entity)
  for (const srv of Object.values(cds.services as unknown as Record<string, ServedService>)) {
    if (!(srv instanceof cds.ApplicationService) || srv.definition?.['@cds.external'] || [SERVICE_NAME, MANAGEMENT_SERVICE].includes(srv.name)) continue
    for (const candidate of Object.values(srv.entities ?? {})) {
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

/**
 * The rows (of `entity`, keys in its names via `keyOf`) the current user may read through the
 * application; all rows when no application service exposes the entity. Throws FORBIDDEN when
 * services expose it and none lets the user read it.
 */
export async function readableRows(entity: CsnEntity, rows: DataRecord[], keyOf: (row: DataRecord, key: string) => unknown): Promise<DataRecord[]> {
  const exposures = exposuresOf(entity)
  if (!exposures.length) return rows
  const readable = new Set<string>()
  let allowed = false
  for (const { service, entity: exposed, keys } of exposures) {
    const query = ql.SELECT.from(exposed.name).columns(...keys.map(([, to]) => to))
    if (rows.length && keys.length === 1) query.where({ [keys[0][1]]: { in: rows.map(row => keyOf(row, keys[0][0])) } })
    else if (!rows.length) query.limit(1)
    try {
      const found = (await service.run(query)) as DataRecord[]
      allowed = true
      for (const row of found) readable.add(JSON.stringify(keys.map(([, to]) => row[to])))
    } catch (error) {
      if (!denied(error)) throw error
    }
  }
  if (!allowed) {
    const user = (cds.context as { user?: { id?: string } } | undefined)?.user?.id ?? 'anonymous'
    throw new PipelineError('FORBIDDEN', `User '${user}' may not read ${entity.name} (${exposures.map(e => e.entity.name).join(', ')} answer 403); the data inspector shows what the application would`, { target: 'side' })
  }
  const ownKeys = exposures[0].keys.map(([from]) => from)
  return rows.filter(row => readable.has(JSON.stringify(ownKeys.map(k => keyOf(row, k)))))
}
