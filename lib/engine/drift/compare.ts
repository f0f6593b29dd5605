/**
 * The comparison of schema drift: the live source's columns against the imported API the pipeline
 * was built with and the target (through the mapping), column by column; the report a run keeps.
 */
import type { ResolvedPipeline } from '../../pipeline/types.js'
import { watermarkFields } from '../../adapters/watermark.js'
import { assignable, family, fitsLength, fitsPrecision, sameType, typeLabel } from './shapes.js'
import { keyNames } from '../../model/csn.js'
import { ORIGIN_COLUMN } from '../../adapters/target/base.js'
import { shapeOfEntity, type ColumnShape, type LiveShape } from '../../adapters/source/live-shape.js'
import type { PreparedPipeline } from '../run/types.js'

export type DriftKind = 'added' | 'removed' | 'type' | 'length' | 'precision'

export interface DriftChange {
  change: DriftKind
  /** Source column (or the entity, for a source entity that is gone). */
  column: string
  /** The target column it is mapped to. */
  target?: string
  /** The column as the pipeline knew it (imported API, else the target), e.g. `String(100)`. */
  was?: string
  /** The column as the source delivers it now. */
  now?: string
  /** The target column's type, for differences judged against it. */
  targetType?: string
  /** The target cannot take what the source delivers now. */
  breaking: boolean
  /** No run can proceed without it (a removed key or watermark column, a removed entity). */
  fatal?: boolean
  message: string
}

export interface SchemaDriftReport {
  runId: string
  /** `<service>/<entity>` (or the REST path). */
  source: string
  /** Where the live schema was read: `$metadata`, `$csn`, `model`, `records`. */
  basis: LiveShape['basis']
  /** When the live schema was fetched (a cached document may be older than the run). */
  fetchedAt: string
  checkedAt: string
  policy: 'warn' | 'fail'
  breaking: boolean
  changes: DriftChange[]
  message: string
}

function sourceLabel(pipeline: ResolvedPipeline): string {
  const { source, rest } = pipeline.config
  const service = source.service ?? 'db'
  if (!source.entity && rest?.path) return `${service}${rest.path.startsWith('/') ? '' : '/'}${rest.path}`
  return `${service}/${source.entity ?? '?'}`
}

/** The differences between the live source and what the pipeline maps; undefined when there are none. */
export function compareShapes(prepared: PreparedPipeline, live: LiveShape, runId: string, policy: 'warn' | 'fail'): SchemaDriftReport | undefined {
  const { pipeline, source, target, mapping } = prepared
  const declaredEntity = source.entityDefinition()
  const targetEntity = target.entityDefinition()
  const shapes: ColumnShapes = { declared: declaredEntity ? shapeOfEntity(declaredEntity) : undefined, target: targetEntity ? shapeOfEntity(targetEntity) : undefined, keys: new Set(), watermarks: [] }
  const origin = pipeline.config.source.origin !== undefined
  const pairs = (mapping ?? Object.keys(shapes.declared ?? shapes.target ?? {}).map(name => ({ source: name, target: name })))
    .filter(pair => !(origin && pair.target === ORIGIN_COLUMN))
  shapes.keys = new Set(declaredEntity ? keyNames(declaredEntity) : targetEntity ? keyNames(targetEntity).map(key => pairs.find(p => p.target === key)?.source ?? key) : [])
  try {
    shapes.watermarks = watermarkFields(source.watermarkPlan())
  } catch {
    // a source without keys in its imported model fails the read itself, with its own message
  }
  const where = sourceLabel(pipeline)
  const changes: DriftChange[] = live.missing
    ? [{ change: 'removed', column: pipeline.config.source.entity ?? where, breaking: true, fatal: true, message: `the source entity '${where}' is no longer served (${live.basis})` }]
    : [...pairs.flatMap(pair => columnChange(pair, live.elements[pair.source], shapes) ?? []), ...addedColumns(live, pairs, shapes)]
  if (!changes.length) return undefined
  const breaking = changes.some(c => c.breaking)
  return {
    runId, source: where, basis: live.basis, fetchedAt: live.fetchedAt, checkedAt: new Date().toISOString(), policy, breaking, changes,
    message: `Schema drift at source '${where}' (${live.basis}): ${changes.map(c => c.message).join('; ')}`,
  }
}

/** What the comparison knows of each column: the imported source API, the target, the keys and the watermark fields. */
interface ColumnShapes {
  declared: Record<string, ColumnShape> | undefined
  target: Record<string, ColumnShape> | undefined
  keys: Set<string>
  watermarks: string[]
}

/** The change of one mapped column (`now`: its live shape, undefined when the source no longer has it). */
function columnChange(pair: { source: string; target: string }, now: ColumnShape | undefined, shapes: ColumnShapes): DriftChange | undefined {
  const targetShape = shapes.target?.[pair.target]
  const arrow = pair.target !== pair.source ? ` (→ '${pair.target}')` : ''
  if (!now) {
    const fatal = shapes.keys.has(pair.source) || shapes.watermarks.includes(pair.source)
    return {
      change: 'removed', column: pair.source, target: pair.target, was: typeLabel(shapes.declared?.[pair.source] ?? targetShape), breaking: true, ...(fatal ? { fatal } : {}),
      message: `column '${pair.source}'${arrow} removed${fatal ? ` (it is ${shapes.keys.has(pair.source) ? 'a key' : 'the delta watermark'})` : ''}`,
    }
  }
  if (!now.type) return undefined // REST: names only
  // drift is a change of the source since the imported API: a target narrower than that API
  // is configuration (shapes.ts, logged once), and a change is breaking only where the
  // target took the column before and no longer does
  const baseline = shapes.declared?.[pair.source]
  const was = baseline ?? targetShape
  const against = targetShape ? ` (target '${pair.target}' is ${typeLabel(targetShape)})` : ''
  const entry = (change: DriftKind, breaking: boolean, what: string): DriftChange => ({
    change, column: pair.source, target: pair.target, was: typeLabel(was), now: typeLabel(now), ...(targetShape ? { targetType: typeLabel(targetShape) } : {}), breaking,
    message: `column '${pair.source}'${arrow} ${what} ${typeLabel(was)} → ${typeLabel(now)}${against}`,
  })
  const typeChanged = was?.type !== undefined && !sameType(was, now)
  let typeBreaks = targetShape ? !assignable(now, targetShape) : typeChanged
  if (baseline?.type && targetShape && !assignable(baseline, targetShape) && family(baseline.type) === family(now.type)) typeBreaks = false
  if (typeChanged || (typeBreaks && !baseline?.type)) return entry('type', typeBreaks, 'changed type')
  if (family(now.type) === 'string') {
    const changed = was !== undefined && was.length !== now.length
    const breaks = targetShape ? !fitsLength(now, targetShape) && !(baseline && !fitsLength(baseline, targetShape)) : false
    if (changed || (breaks && !baseline)) return entry('length', breaks, 'changed length')
  } else if (family(now.type) === 'decimal') {
    const changed = was !== undefined && (was.precision !== now.precision || was.scale !== now.scale)
    const breaks = targetShape ? !fitsPrecision(now, targetShape) && !(baseline && !fitsPrecision(baseline, targetShape)) : false
    if (changed || (breaks && !baseline)) return entry('precision', breaks, 'changed precision')
  }
  return undefined
}

/** Columns the live source has that the pipeline neither maps nor knows from its imported API. */
function addedColumns(live: LiveShape, pairs: Array<{ source: string }>, shapes: ColumnShapes): DriftChange[] {
  const mapped = new Set(pairs.map(pair => pair.source))
  const known = shapes.declared ?? shapes.target ?? {}
  return Object.entries(live.elements)
    .filter(([column]) => !mapped.has(column) && !(column in known))
    .map(([column, shape]) => ({ change: 'added', column, ...(shape.type ? { now: typeLabel(shape) } : {}), breaking: false, message: `new column '${column}'${shape.type ? ` (${typeLabel(shape)})` : ''}, not mapped` }))
}
