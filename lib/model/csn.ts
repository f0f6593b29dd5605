/**
 * The few facts of CAP's linked CSN the plugin reads, typed narrowly so the engine does not
 * depend on the shape of `@sap/cds` typings.
 */
import { servedModel } from '../cap/index.js'

export interface CsnElement {
  name?: string
  type?: string
  key?: boolean
  virtual?: boolean
  notNull?: boolean
  target?: string
  isAssociation?: boolean
  value?: unknown
  elements?: Record<string, CsnElement>
  [annotation: `@${string}`]: unknown
}

export interface CsnColumn {
  ref?: string[]
  as?: string
  [other: string]: unknown
}

export interface CsnEntity {
  name: string
  kind?: string
  elements: Record<string, CsnElement>
  query?: { SELECT?: { from?: { ref?: Array<string | { id: string }> }; columns?: Array<CsnColumn | '*'> } }
  projection?: { from?: { ref?: Array<string | { id: string }> }; columns?: Array<CsnColumn | '*'> }
  [annotation: `@${string}`]: unknown
}

export interface CsnModel {
  definitions: Record<string, CsnEntity | { kind?: string }>
}

type SourceRef = { ref?: Array<string | { id: string }> }

/** The single entity a view selects from (`as projection on X`, `as select from X`), if it is one. */
export function projectionSource(def: { projection?: { from?: SourceRef }; query?: { SELECT?: { from?: SourceRef } } } | undefined): string | undefined {
  const from = (def?.projection ?? def?.query?.SELECT)?.from
  const first = from?.ref?.length === 1 ? from.ref[0] : undefined
  return typeof first === 'string' ? first : first?.id
}

/** The application's current model (cds.model); undefined before loading. */
export function currentModel(): CsnModel | undefined {
  return servedModel<CsnModel>()
}

export function findEntity(name: string, model: CsnModel | undefined = currentModel()): CsnEntity | undefined {
  const def = model?.definitions[name] as CsnEntity | undefined
  return def && (def.kind === 'entity' || def.elements) ? def : undefined
}

/** Key element names of an entity, without associations. */
export function keyNames(entity: CsnEntity): string[] {
  return Object.entries(entity.elements)
    .filter(([, el]) => el.key && !isAssociation(el))
    .map(([name]) => name)
}

export function isAssociation(el: CsnElement): boolean {
  return Boolean(el.isAssociation || el.target || el.type === 'cds.Association' || el.type === 'cds.Composition')
}

/** Plain data elements (no associations, no virtual or calculated ones). */
export function dataElementNames(entity: CsnEntity): string[] {
  return Object.entries(entity.elements)
    .filter(([, el]) => !isAssociation(el) && !el.virtual && el.value === undefined && !el.elements)
    .map(([name]) => name)
}

/** The CDS built-in type of an element (`cds.String`, …), following derived types. */
export function builtinType(el: CsnElement | undefined): string | undefined {
  let type = el?.type
  // a derived type may derive from another one: followed to the built-in (a few levels at most)
  for (let i = 0; type && !type.startsWith('cds.') && i < 10; i++) {
    const base = currentModel()?.definitions[type] as CsnElement | undefined
    if (!base?.type) return base?.type
    type = base.type
  }
  return type
}

/** The built-in integer types. */
export const INTEGER_TYPES: ReadonlySet<string> = new Set(['cds.Integer', 'cds.Int16', 'cds.Int32', 'cds.Int64', 'cds.UInt8', 'cds.Integer64'])
