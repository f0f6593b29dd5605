/**
 * `@federation.replicate` on an ODP entity set (SEGW "Redefine ODP", imported with `cds import`):
 * its rows carry the delta queue's fields (ODQ_CHANGEMODE, ODQ_ENTITYCNTR), which describe a
 * change, not the entity. A replica selecting `*` (`as projection on X`, `{ *, … }`) leaves them
 * out of its table: they are added to the projection's `excluding` (so any later compile infers
 * the same elements) and dropped from elements already inferred. A column naming one explicitly
 * (`ODQ_CHANGEMODE as changeMode`, or `{ …, ODQ_CHANGEMODE }` without `*`) keeps it.
 */
import { ODP } from '../constants.js'
import { projectionSource } from '../model/csn.js'

interface Select {
  from?: { ref?: Array<string | { id: string }> }
  columns?: Array<'*' | { ref?: string[]; as?: string }>
  excluding?: string[]
}

/** Leaves the delta queue's fields out of one replica; whether the model changed (idempotent). */
export function excludeDeltaQueueFields(csn: { definitions?: Record<string, unknown> }, name: string): boolean {
  const def = csn.definitions?.[name] as { projection?: Select; query?: { SELECT?: Select }; elements?: Record<string, unknown> } | undefined
  const from = projectionSource(def)
  const source = from ? (csn.definitions?.[from] as { elements?: Record<string, unknown> } | undefined) : undefined
  if (!def || !source?.elements?.[ODP.changeMode]) return false
  const select = def.projection ?? def.query?.SELECT
  if (!select || (select.columns && !select.columns.includes('*'))) return false
  const explicit = new Set((select.columns ?? []).flatMap(column => (typeof column === 'object' && column.ref ? [column.as ?? column.ref[column.ref.length - 1]] : [])))
  const fields = Object.keys(source.elements).filter(field => field.startsWith(ODP.fieldPrefix) && !explicit.has(field))
  let changed = false
  const excluding = select.excluding ?? []
  for (const field of fields) {
    if (!excluding.includes(field)) {
      excluding.push(field)
      changed = true
    }
    if (def.elements && field in def.elements) {
      delete def.elements[field]
      changed = true
    }
  }
  if (changed) select.excluding = excluding
  return changed
}
