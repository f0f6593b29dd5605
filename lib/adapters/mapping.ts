/**
 * Field mapping between source and target. A target declared as a projection on the source
 * entity (a consumption view, usually with `@cds.persistence.table`) contributes its renames
 * and its column restriction; otherwise fields map by equal names.
 */
import { dataElementNames, type CsnColumn, type CsnEntity } from '../model/csn.js'
import type { DataRecord } from '../pipeline/types.js'

export interface FieldMapping {
  source: string
  target: string
}

function projectionOf(entity: CsnEntity): { from?: string; columns?: Array<CsnColumn | '*'> } | undefined {
  const select = entity.query?.SELECT ?? entity.projection
  if (!select) return undefined
  const ref = select.from?.ref?.[0]
  return { from: typeof ref === 'string' ? ref : ref?.id, columns: select.columns }
}

export function deriveMapping(target: CsnEntity | undefined, source: CsnEntity | undefined): FieldMapping[] | undefined {
  if (!target) return undefined
  const targetNames = dataElementNames(target)
  const projection = projectionOf(target)
  if (projection?.from && (!source || projection.from === source.name) && projection.columns) {
    const sourceNames = source ? new Set(dataElementNames(source)) : undefined
    const mapping: FieldMapping[] = []
    for (const column of projection.columns) {
      if (column === '*') {
        for (const name of source ? dataElementNames(source) : targetNames)
          if (targetNames.includes(name) && !mapping.some(m => m.target === name)) mapping.push({ source: name, target: name })
        continue
      }
      const ref = column.ref
      if (!ref || ref.length !== 1) continue // expressions and paths are not copied
      const targetName = column.as ?? ref[0]
      if (!targetNames.includes(targetName) || (sourceNames && !sourceNames.has(ref[0]))) continue
      const existing = mapping.findIndex(m => m.target === targetName)
      if (existing >= 0) mapping.splice(existing, 1)
      mapping.push({ source: ref[0], target: targetName })
    }
    return mapping
  }
  const sourceNames = source ? new Set(dataElementNames(source)) : undefined
  return targetNames.filter(name => !sourceNames || sourceNames.has(name)).map(name => ({ source: name, target: name }))
}

/** The default `PIPELINE.MAP`: renames per mapping, drops fields the target does not have. */
export function applyMapping(records: DataRecord[], mapping: FieldMapping[] | undefined): DataRecord[] {
  if (!mapping) return records.map(record => ({ ...record }))
  const names = sameNames(mapping)
  return records.map(record => {
    if (names && hasExactly(record, names)) return { ...record }
    const out: DataRecord = {}
    for (const { source, target } of mapping) if (source in record) out[target] = record[source]
    return out
  })
}

const unrenamed = new WeakMap<FieldMapping[], string[] | null>()

/** The mapping's names when it renames nothing (the usual target), else undefined; worked out once per mapping. */
function sameNames(mapping: FieldMapping[]): string[] | undefined {
  let names = unrenamed.get(mapping)
  if (names === undefined) unrenamed.set(mapping, names = mapping.every(m => m.source === m.target) ? mapping.map(m => m.target) : null)
  return names ?? undefined
}

/**
 * Whether a plain record has exactly these fields, in this order: then a spread copy is the very
 * object the field-by-field loop builds (same fields, same order, same values), made in one step
 * (a fifth of the loop's time on a page of 1,000 rows).
 */
export function hasExactly(record: DataRecord, names: string[]): boolean {
  if (Object.getPrototypeOf(record) !== Object.prototype) return false
  let i = 0
  for (const key in record) if (key !== names[i++]) return false
  return i === names.length
}

/** Source name of a target field (or the field itself when unmapped). */
export function sourceNameOf(mapping: FieldMapping[] | undefined, target: string): string {
  return mapping?.find(m => m.target === target)?.source ?? target
}
