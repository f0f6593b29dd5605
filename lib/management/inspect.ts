/**
 * The data inspector: validated, paged previews of a pipeline's source or target.
 * Column and filter names are checked against the entity's elements; values are bound by
 * the adapters (CQN values / typed OData literals), never spliced into query text.
 */
import { PipelineError } from '../pipeline/errors.js'
import { COMPARISONS, and, type Operator, type Predicate } from '../adapters/predicate.js'
import { builtinType, dataElementNames, keyNames, type CsnElement, type CsnEntity } from '../model/csn.js'
import { sourceKindOf } from '../adapters/factory.js'
import type { PreparedPipeline } from '../engine/run/types.js'
import type { DataRecord } from '../pipeline/types.js'
import { fieldPolicy } from '../security/hidden.js'
import { auditConfigured, auditSensitiveRead } from '../security/audit.js'
import { comparisonProblem } from '../engine/records/index.js'
import { readAccess, type ReadAccess } from '../security/authorization.js'
import { sourceNameOf } from '../adapters/mapping.js'

export { HIDE_ANNOTATION, SENSITIVE_ANNOTATION } from '../security/hidden.js'
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

export function capabilities(prepared: PreparedPipeline, enabled: boolean): { source: Capability; target: Capability } {
  if (!enabled) return { source: 'none', target: 'none' }
  const { pipeline } = prepared
  const kind = sourceKindOf(pipeline)
  // a hidden entity on either side hides both: the source shows what the replica holds
  const hidden = fieldPolicy(prepared).entityHidden
  const source: Capability = hidden ? 'none'
    : pipeline.shape === 'query' || kind === 'rest' || kind === 'custom' ? 'limited' : 'full'
  const target: Capability = hidden || !prepared.target.preview || pipeline.config.target.adapter ? 'none' : 'full'
  return { source, target }
}

/** What a side may show: its columns (undefined: not known, any name) and the element of each name. */
interface SideView {
  columns?: Array<{ name: string; type: string }>
  element: (name: string) => CsnElement | undefined
  hidden: Set<string>
  sensitive: Set<string>
}

/**
 * The columns of a side: data elements without hidden ones; the source side shows at most the
 * columns the pipeline reads (the mapping's), named and typed as the source's.
 */
function sideView(prepared: PreparedPipeline, side: 'source' | 'target'): SideView {
  const policy = fieldPolicy(prepared)
  const hidden = policy.hidden[side]
  const sensitive = policy.sensitive[side]
  const target = prepared.target.entityDefinition()
  if (side === 'target') {
    const element = (name: string) => target?.elements[name]
    const columns = target && dataElementNames(target).filter(name => !hidden.has(name)).map(name => ({ name, type: builtinType(target.elements[name]) ?? 'cds.String' }))
    return { columns, element, hidden, sensitive }
  }
  const source = prepared.source.entityDefinition()
  const element = (name: string) => source?.elements[name] ?? target?.elements[targetNameOf(prepared, name)]
  const names = policy.sourceRead
    ? policy.sourceRead.filter(name => !source || dataElementNames(source).includes(name))
    : source && dataElementNames(source)
  const columns = names?.filter(name => !hidden.has(name)).map(name => ({ name, type: builtinType(element(name)) ?? 'cds.String' }))
  return { columns, element, hidden, sensitive }
}

function targetNameOf(prepared: PreparedPipeline, source: string): string {
  return prepared.mapping?.find(m => m.source === source)?.target ?? source
}

function parseJson(text: string, parameter: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    throw invalid(parameter, 'is not valid JSON')
  }
}

export function parseFilters(text: string | null | undefined, allowed: Set<string> | undefined, element: (name: string) => CsnElement | undefined = () => undefined): Predicate | undefined {
  if (!text) return undefined
  const list = parseJson(text, 'filters')
  if (!Array.isArray(list)) throw invalid('filters', 'must be a JSON array of { field, op, value }')
  const parts: Predicate[] = list.map((entry, i) => {
    const { field, op, value } = (entry ?? {}) as { field?: unknown; op?: unknown; value?: unknown }
    if (typeof field !== 'string' || !field) throw invalid('filters', `entry ${i} needs a field name`)
    if (allowed ? !allowed.has(field) : !/^[A-Za-z_]\w*$/.test(field)) throw invalid('filters', `field '${field}' is not an element of this side`)
    if (typeof op !== 'string' || !OPERATORS.includes(op as Operator)) throw invalid('filters', `op '${String(op)}' is invalid; expected one of ${OPERATORS.join(', ')}`)
    if (value !== null && typeof value === 'object') throw invalid('filters', `value of '${field}' must be a string, number, boolean or null`)
    // a value the column's type cannot hold is the caller's mistake (400), not the database's (500)
    const el = element(field)
    const type = el && builtinType(el)
    if (op === 'contains' && type && type !== 'cds.String' && type !== 'cds.LargeString') throw invalid('filters', `op 'contains' of '${field}' needs a String element (it is ${type})`)
    const problem = el && value !== null && value !== undefined ? comparisonProblem(el, value) : undefined
    if (problem) throw new PipelineError('INVALID_PARAMETER', `filters: value of '${field}': ${problem}`, { target: 'filters' })
    return { field, op: op as Operator, value: value ?? null }
  })
  return and(...parts)
}

function fieldsOf(predicate: Predicate | undefined): string[] {
  if (!predicate) return []
  if ('field' in predicate) return [predicate.field]
  return ('and' in predicate ? predicate.and : predicate.or).flatMap(fieldsOf)
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
  // read like the app lets this user read (its services' @requires/@restrict): the replica on both
  // sides (the source holds the replica's data), the source entity too on the source side; 403 before
  // any row is read, the rows of an instance-based `where` by their keys after
  const guards = [prepared.target.entityDefinition(), ...(side === 'source' ? [entity] : [])].filter((e): e is CsnEntity => Boolean(e))
  const access: ReadAccess[] = []
  for (const guard of guards) access.push(await readAccess(guard))

  const view = sideView(prepared, side)
  const visible = view.columns
  const allowed = visible && new Set(visible.map(c => c.name))
  const permitted = (name: string) => (allowed ? allowed.has(name) : /^[A-Za-z_]\w*$/.test(name) && !view.hidden.has(name))
  let columns = visible?.map(c => c.name) ?? []
  if (params.columnsJson) {
    const requested = parseJson(params.columnsJson, 'columnsJson')
    if (!Array.isArray(requested) || requested.some(c => typeof c !== 'string')) throw invalid('columnsJson', 'must be a JSON array of column names')
    for (const name of requested as string[])
      if (!permitted(name)) throw invalid('columnsJson', `column '${name}' is not an element of this side`)
    if ((requested as string[]).length) columns = requested as string[]
  }
  const filter = parseFilters(params.filters, allowed, view.element)
  if (!allowed) for (const field of fieldsOf(filter)) if (!permitted(field)) throw invalid('filters', `field '${field}' is not an element of this side`)
  // sensitive data shown or filtered on is audited per row, by its key
  const sensitive = [...new Set([...columns, ...fieldsOf(filter)])].filter(name => view.sensitive.has(name))
  const keys = entity ? keyNames(entity).filter(k => !view.hidden.has(k)) : []
  const audited = sensitive.length > 0 && auditConfigured()
  const nameIn = (guard: CsnEntity, key: string) => (side === 'source' && guard !== entity ? sourceNameOf(prepared.mapping, key) : key)
  const guardKeys = guards.flatMap(guard => keyNames(guard).map(k => nameIn(guard, k)))
  const queried = columns.length ? [...new Set([...columns, ...keys, ...guardKeys])].filter(permittedOrKey) : columns
  function permittedOrKey(name: string): boolean {
    return !view.hidden.has(name) && (!allowed || allowed.has(name) || keys.includes(name) || guardKeys.includes(name))
  }
  const adapter = side === 'source' ? prepared.source : prepared.target
  const result = await adapter.preview!({ columns: queried, filter, top, skip })
  for (const [i, guard] of guards.entries()) result.rows = await access[i].readable(result.rows, (row, key) => row[nameIn(guard, key)])
  const shown = (k: string) => !view.hidden.has(k) && !k.startsWith('@') && (!allowed || allowed.has(k)) && (!columns.length || columns.includes(k))
  if (audited) auditSensitiveRead({ type: entity?.name ?? prepared.pipeline.name, ids: result.rows.map(row => Object.fromEntries(keys.map(k => [k, row[k] ?? null]))), attributes: sensitive })
  const rows = result.rows.map(row => Object.fromEntries(Object.entries(row).filter(([k]) => shown(k))))
  const columnInfo = visible ? visible.filter(c => columns.includes(c.name)) : Object.keys(rows[0] ?? {}).map(name => ({ name, type: 'cds.String' }))
  return { columns: columnInfo, rows, hasMore: result.hasMore, limitedSupport: result.limitedSupport || capability === 'limited' }
}
