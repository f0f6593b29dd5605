/**
 * Column shapes compared (README "Schema drift"): which types are the same, which a target column
 * can take, and a target narrower than its source — a configuration fact reported once when the
 * pipeline is prepared, never as drift (drift is a change of the source between two checks).
 */
import cds from '@sap/cds'
import { LOGGER } from '../../constants.js'
import { ORIGIN_COLUMN } from '../../adapters/target/base.js'
import { shapeOfEntity, type ColumnShape } from '../../adapters/source/live-shape.js'
import type { PreparedPipeline } from '../run/types.js'

const LOG = cds.log(LOGGER.engine)

const INTEGER_BITS: Record<string, number> = { 'cds.UInt8': 8, 'cds.Int16': 16, 'cds.Integer': 32, 'cds.Int32': 32, 'cds.Int64': 64, 'cds.Integer64': 64 }

export function family(type: string | undefined): string | undefined {
  if (!type) return undefined
  if (type in INTEGER_BITS) return 'integer'
  switch (type) {
    case 'cds.Decimal':
    case 'cds.DecimalFloat':
      return 'decimal'
    case 'cds.Double':
      return 'double'
    case 'cds.String':
    case 'cds.LargeString':
      return 'string'
    case 'cds.DateTime':
    case 'cds.Timestamp':
      return 'datetime'
    case 'cds.Binary':
    case 'cds.LargeBinary':
      return 'binary'
    default:
      return type
  }
}

/** Types that are the same for drift purposes (DateTime ≈ Timestamp; integers by width). */
export function sameType(a: ColumnShape, b: ColumnShape): boolean {
  const fa = family(a.type)
  if (fa !== family(b.type)) return false
  return fa !== 'integer' || INTEGER_BITS[a.type!] === INTEGER_BITS[b.type!]
}

/** Whether a target column of type `to` takes every value of type `from` (sizes are judged apart). */
export function assignable(from: ColumnShape, to: ColumnShape): boolean {
  const source = family(from.type)
  const target = family(to.type)
  if (!source || !target || target === 'string') return true
  if (source === target) return source !== 'integer' || INTEGER_BITS[from.type!] <= INTEGER_BITS[to.type!]
  if (source === 'integer') return target === 'decimal' || target === 'double'
  if (source === 'decimal') return target === 'double'
  if (source === 'cds.Date') return target === 'datetime'
  return false
}

export function fitsLength(from: ColumnShape, to: ColumnShape): boolean {
  if (family(to.type) !== 'string' || family(from.type) !== 'string' || to.length === undefined) return true
  return from.length !== undefined && from.length <= to.length
}

export function fitsPrecision(from: ColumnShape, to: ColumnShape): boolean {
  if (family(to.type) !== 'decimal' || family(from.type) !== 'decimal' || to.precision === undefined) return true
  if (from.precision === undefined) return false
  const fromScale = from.scale ?? 0
  const toScale = to.scale ?? 0
  return fromScale <= toScale && from.precision - fromScale <= to.precision - toScale
}

/** Whether the target column takes every value the source column may deliver (type and size). */
export function fits(from: ColumnShape, to: ColumnShape): boolean {
  return assignable(from, to) && fitsLength(from, to) && fitsPrecision(from, to)
}

/** `String(100)`, `Decimal(9,2)`, `Integer`. */
export function typeLabel(shape: ColumnShape | undefined): string {
  if (!shape?.type) return 'unknown'
  const name = shape.type.startsWith('cds.') ? shape.type.slice(4) : shape.type
  if (shape.length !== undefined) return `${name}(${shape.length})`
  if (shape.precision !== undefined) return `${name}(${shape.precision}${shape.scale !== undefined ? `,${shape.scale}` : ''})`
  return name
}

/** A mapped column whose target is narrower than the source declares it. */
export interface NarrowerColumn {
  column: string
  target: string
  source: string
  targetType: string
}

/** The mapped columns whose target column cannot take every value the (imported) source declares. */
export function narrowerTarget(prepared: PreparedPipeline): NarrowerColumn[] {
  const sourceEntity = prepared.source.entityDefinition()
  const targetEntity = prepared.target.entityDefinition()
  if (!sourceEntity || !targetEntity || !prepared.mapping) return []
  const declared = shapeOfEntity(sourceEntity)
  const targets = shapeOfEntity(targetEntity)
  const out: NarrowerColumn[] = []
  for (const pair of prepared.mapping) {
    const from = declared[pair.source]
    const to = targets[pair.target]
    if (pair.target === ORIGIN_COLUMN || !from?.type || !to?.type || fits(from, to)) continue
    out.push({ column: pair.source, target: pair.target, source: typeLabel(from), targetType: typeLabel(to) })
  }
  return out
}

/** Logs a target narrower than its source once per prepared pipeline: configuration, not drift. */
export function warnNarrowerTarget(prepared: PreparedPipeline): void {
  const narrower = narrowerTarget(prepared)
  if (!narrower.length) return
  const { pipeline } = prepared
  const list = narrower.map(n => `'${n.column}'${n.target !== n.column ? ` (→ '${n.target}')` : ''} ${n.source} into ${n.targetType}`).join(', ')
  LOG.warn(`pipeline '${pipeline.name}': the target is narrower than the source: ${list}; values that do not fit are refused (onError '${pipeline.onError.mode}': ${pipeline.onError.mode === 'skip' ? 'such records are set aside' : 'the run stops'}). This is configuration, not schema drift`)
}
