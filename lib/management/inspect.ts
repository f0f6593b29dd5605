/**
 * The data inspector: validated, paged previews of a pipeline's source or target.
 * Column and filter names are checked against the entity's elements; values are bound by
 * the adapters (CQN values / typed OData literals), never spliced into query text.
 */
import cds from '@sap/cds'
import { PipelineError } from '../pipeline/errors.js'
import { COMPARISONS, and, type Operator, type Predicate } from '../adapters/predicate.js'
import { builtinType, dataElementNames, keyNames, type CsnEntity } from '../model/csn.js'
import { sourceKindOf } from '../adapters/factory.js'
import { LOGGER } from '../constants.js'
import type { PreparedPipeline } from '../engine/run.js'
import type { DataRecord } from '../pipeline/types.js'

const LOG = cds.log(LOGGER.engine)

export const HIDE_ANNOTATION = '@HideFromDataInspector'
export const SENSITIVE_ANNOTATION = '@PersonalData.IsPotentiallySensitive'
export const MAX_TOP = 200
export const DEFAULT_TOP = 50
const OPERATORS: readonly Operator[] = [...COMPARISONS, 'contains']

export type Capability = 'full' | 'limited' | 'none'

export interface InspectParams {
  side?: string | null
  columnsJson?: string | null
  filters?: string | null
  top?: number | null
  skip?: number | null
}

export interface InspectResult {
  columns: Array<{ name: string; type: string }>
  rows: DataRecord[]
  hasMore: boolean
  limitedSupport: boolean
}

const invalid = (target: string, message: string) => new PipelineError('INVALID_PARAMETER', `${target}: ${message}`, { target })

function entityOf(prepared: PreparedPipeline, side: 'source' | 'target'): CsnEntity | undefined {
  return side === 'source' ? prepared.source.entityDefinition() : prepared.target.entityDefinition()
}

function isHidden(entity: CsnEntity | undefined): boolean {
  return Boolean(entity?.[HIDE_ANNOTATION])
}

export function capabilities(prepared: PreparedPipeline, enabled: boolean): { source: Capability; target: Capability } {
  if (!enabled) return { source: 'none', target: 'none' }
  const { pipeline } = prepared
  const kind = sourceKindOf(pipeline)
  const source: Capability = isHidden(entityOf(prepared, 'source')) ? 'none'
    : pipeline.shape === 'query' || kind === 'rest' || kind === 'custom' ? 'limited' : 'full'
  const target: Capability = isHidden(entityOf(prepared, 'target')) || !prepared.target.preview || pipeline.config.target.adapter ? 'none' : 'full'
  return { source, target }
}

/** Visible columns of a side: data elements without `@HideFromDataInspector`. */
function visibleColumns(entity: CsnEntity): Array<{ name: string; type: string }> {
  return dataElementNames(entity)
    .filter(name => !entity.elements[name][HIDE_ANNOTATION])
    .map(name => ({ name, type: builtinType(entity.elements[name]) ?? 'cds.String' }))
}

function parseJson(text: string, parameter: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    throw invalid(parameter, 'is not valid JSON')
  }
}

export function parseFilters(text: string | null | undefined, allowed: Set<string> | undefined): Predicate | undefined {
  if (!text) return undefined
  const list = parseJson(text, 'filters')
  if (!Array.isArray(list)) throw invalid('filters', 'must be a JSON array of { field, op, value }')
  const parts: Predicate[] = list.map((entry, i) => {
    const { field, op, value } = (entry ?? {}) as { field?: unknown; op?: unknown; value?: unknown }
    if (typeof field !== 'string' || !field) throw invalid('filters', `entry ${i} needs a field name`)
    if (allowed ? !allowed.has(field) : !/^[A-Za-z_]\w*$/.test(field)) throw invalid('filters', `field '${field}' is not an element of this side`)
    if (typeof op !== 'string' || !OPERATORS.includes(op as Operator)) throw invalid('filters', `op '${String(op)}' is invalid; expected one of ${OPERATORS.join(', ')}`)
    if (value !== null && typeof value === 'object') throw invalid('filters', `value of '${field}' must be a string, number, boolean or null`)
    return { field, op: op as Operator, value: value ?? null }
  })
  return and(...parts)
}

export async function inspectData(prepared: PreparedPipeline, params: InspectParams, enabled: boolean): Promise<InspectResult> {
  const side = params.side
  if (side !== 'source' && side !== 'target') throw invalid('side', `'${String(side)}' is invalid; expected source or target`)
  const top = params.top ?? DEFAULT_TOP
  if (!Number.isInteger(top) || top < 1 || top > MAX_TOP) throw invalid('top', `must be an integer between 1 and ${MAX_TOP}`)
  const skip = params.skip ?? 0
  if (!Number.isInteger(skip) || skip < 0) throw invalid('skip', 'must be a non-negative integer')
  if (!enabled) throw new PipelineError('FORBIDDEN', 'The data inspector is disabled (management.inspect: false)')

  const capability = capabilities(prepared, enabled)[side]
  const entity = entityOf(prepared, side)
  if (capability === 'none') return { columns: [], rows: [], hasMore: false, limitedSupport: false }

  const visible = entity ? visibleColumns(entity) : undefined
  const allowed = visible && new Set(visible.map(c => c.name))
  let columns = visible?.map(c => c.name) ?? []
  if (params.columnsJson) {
    const requested = parseJson(params.columnsJson, 'columnsJson')
    if (!Array.isArray(requested) || requested.some(c => typeof c !== 'string')) throw invalid('columnsJson', 'must be a JSON array of column names')
    for (const name of requested as string[])
      if (allowed ? !allowed.has(name) : !/^[A-Za-z_]\w*$/.test(name)) throw invalid('columnsJson', `column '${name}' is not an element of this side`)
    if ((requested as string[]).length) columns = requested as string[]
  }
  const filter = parseFilters(params.filters, allowed)
  const adapter = side === 'source' ? prepared.source : prepared.target
  const result = await adapter.preview!({ columns, filter, top, skip })
  const hidden = entity ? new Set(Object.keys(entity.elements).filter(n => entity.elements[n][HIDE_ANNOTATION])) : new Set<string>()
  const rows = result.rows.map(row => Object.fromEntries(Object.entries(row).filter(([k]) => !hidden.has(k) && !k.startsWith('@'))))
  const columnInfo = visible ? visible.filter(c => columns.includes(c.name)) : Object.keys(rows[0] ?? {}).map(name => ({ name, type: 'cds.String' }))
  if (entity) auditSensitiveRead(entity, columns, rows)
  return { columns: columnInfo, rows, hasMore: result.hasMore, limitedSupport: result.limitedSupport || capability === 'limited' }
}

/** Best effort: a `SensitiveDataRead` per previewed row when audit logging is configured. */
function auditSensitiveRead(entity: CsnEntity, columns: string[], rows: DataRecord[]): void {
  const sensitive = columns.filter(name => entity.elements[name]?.[SENSITIVE_ANNOTATION])
  if (!sensitive.length || !rows.length || !(cds.env.requires as Record<string, unknown>)['audit-log']) return
  const keys = keyNames(entity)
  // In a root transaction of its own, one event after the other: CAP queues the events in
  // cds.outbox.Messages inside the current transaction, and the preview's request transaction has
  // committed by the time these writes run (on PostgreSQL the writes were then lost).
  const root = cds as unknown as { tx<T>(fn: () => Promise<T>): Promise<T> }
  void root.tx(async () => {
    const audit = (await cds.connect.to('audit-log')) as unknown as { log(event: string, data: object): Promise<unknown> }
    for (const row of rows) await audit.log('SensitiveDataRead', {
      data_subject: { type: entity.name, id: Object.fromEntries(keys.map(k => [k, row[k] ?? null])) },
      object: { type: entity.name, id: Object.fromEntries(keys.map(k => [k, row[k] ?? null])) },
      attributes: sensitive.map(name => ({ name })),
    })
  }).catch(error => LOG.warn(`data inspector: audit logging failed (preview not blocked): ${(error as Error).message}`))
}
