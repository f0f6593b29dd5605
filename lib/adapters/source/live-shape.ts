/**
 * What a source really delivers, for the schema-drift check at run start (README "Schema
 * drift"): the columns of the source entity with their CDS types, read from the live provider —
 * OData `$metadata` (V4 and V2, parsed here), the HCQL provider's `/$csn`, the served model of
 * an in-process service, or the record keys of a REST source's first page.
 *
 * Documents fetched from a provider are cached per process and service (`maxAge`, default one
 * hour), so that in steady state the check costs no request: a delta run that finds nothing new
 * stays at one data request. A failed fetch is remembered for at most a minute. A read that
 * fails at the source drops the cached document (`forgetLiveDocument`), so the next run looks again.
 */
import { builtinType, dataElementNames, isAssociation, type CsnElement, type CsnEntity } from '../../model/csn.js'

/** One column as a source delivers it, in CDS terms (`cds.String`, `cds.Integer`, …). */
export interface ColumnShape {
  /** The CDS built-in type; undefined when the source tells no types (REST). */
  type?: string
  length?: number
  precision?: number
  scale?: number
}

export interface LiveShape {
  /** Where the shape was read: `$metadata`, `$csn`, `model` (in-process) or `records` (REST first page). */
  basis: '$metadata' | '$csn' | 'model' | 'records'
  /** When the underlying document was fetched (ISO). */
  fetchedAt: string
  /** Data columns by source name. */
  elements: Record<string, ColumnShape>
  /** The provider no longer serves the source entity at all. */
  missing?: boolean
}

/** Default age of a cached `$metadata` / `$csn` document: one hour. */
export const DEFAULT_MAX_AGE = 3_600_000
/** A failed fetch is not retried for this long (or maxAge, if shorter). */
const FAILURE_MAX_AGE = 60_000

interface CacheEntry {
  at: number
  value?: Promise<unknown>
  failed?: boolean
}

const documents = new Map<string, CacheEntry>()

/**
 * A provider document from the per-process cache, fetched when missing or older than
 * `maxAge` ms (0: every time). Concurrent callers share one request.
 */
export async function cachedDocument<T>(key: string, maxAge: number, fetch: () => Promise<T>): Promise<{ value: T; fetchedAt: number }> {
  const now = Date.now()
  const entry = documents.get(key)
  const limit = entry?.failed ? Math.min(maxAge, FAILURE_MAX_AGE) : maxAge
  if (entry?.value && now - entry.at < limit) return { value: (await entry.value) as T, fetchedAt: entry.at }
  const fresh: CacheEntry = { at: now }
  fresh.value = fetch().catch(error => {
    fresh.failed = true
    throw error
  })
  documents.set(key, fresh)
  return { value: (await fresh.value) as T, fetchedAt: fresh.at }
}

/** Drops cached documents of a service (all keys starting with `<kind>|<service>|`), e.g. after a failed read. */
export function forgetLiveDocument(prefix: string): void {
  for (const key of documents.keys()) if (key.startsWith(prefix)) documents.delete(key)
}

/** The cache key prefix of a service's documents. */
export function documentKey(kind: string, service: string, url: string | undefined): string {
  return `${kind}|${service}|${url ?? ''}`
}

// ---------------------------------------------------------------------------------------------
// CSN

/** A column shape of a CSN element (linked model or plain CSN). */
export function shapeOfElement(element: CsnElement | undefined, resolve: (el: CsnElement) => string | undefined = builtinType): ColumnShape {
  if (!element) return {}
  const el = element as CsnElement & { length?: number; precision?: number; scale?: number }
  const shape: ColumnShape = { type: resolve(element) ?? element.type }
  if (typeof el.length === 'number') shape.length = el.length
  if (typeof el.precision === 'number') shape.precision = el.precision
  if (typeof el.scale === 'number') shape.scale = el.scale
  return shape
}

/** The data columns of an entity definition as shapes. */
export function shapeOfEntity(entity: CsnEntity, resolve?: (el: CsnElement) => string | undefined): Record<string, ColumnShape> {
  const out: Record<string, ColumnShape> = {}
  for (const name of dataElementNames(entity)) out[name] = shapeOfElement(entity.elements[name], resolve)
  return out
}

/**
 * The entity `name` (service-relative, e.g. `Books`) of a provider's `$csn` document: the
 * definition `<service>.<name>` of a service in it (or the exact name).
 */
export function entityOfCsn(csn: unknown, name: string): Record<string, ColumnShape> | undefined {
  const definitions = (csn as { definitions?: Record<string, { kind?: string; elements?: Record<string, CsnElement>; type?: string }> })?.definitions
  if (!definitions) return undefined
  const services = Object.keys(definitions).filter(key => definitions[key]?.kind === 'service')
  const candidates = [name, ...services.map(service => `${service}.${name}`)]
  const found = candidates.map(key => definitions[key]).find(def => def?.kind === 'entity' && def.elements)
  if (!found?.elements) return undefined
  // types derived from other definitions of the document (e.g. `sap.common.Locale`) resolve there
  const resolve = (el: CsnElement): string | undefined => {
    let type = el.type
    for (let depth = 0; type && !type.startsWith('cds.') && depth < 8; depth++) type = definitions[type]?.type
    return type
  }
  const out: Record<string, ColumnShape> = {}
  for (const [column, element] of Object.entries(found.elements)) {
    if (isAssociation(element) || element.virtual || element.value !== undefined || element.elements) continue
    const shape = shapeOfElement(element, resolve)
    // sizes a derived type declares (`type Code : String(3)`) apply unless the element sets its own
    for (let def = definitions[element.type ?? ''], depth = 0; def && depth < 8; def = definitions[def.type ?? ''], depth++) {
      const sized = shapeOfElement(def as CsnElement)
      shape.length ??= sized.length
      shape.precision ??= sized.precision
      shape.scale ??= sized.scale
    }
    out[column] = Object.fromEntries(Object.entries(shape).filter(([, value]) => value !== undefined)) as ColumnShape
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// EDMX ($metadata of OData V4 and V2)

const ENTITIES: Record<string, string> = { quot: '"', apos: "'", lt: '<', gt: '>', amp: '&' }

function decode(text: string): string {
  return text.replace(/&(quot|apos|lt|gt|amp);/g, (_, name: string) => ENTITIES[name])
}

function attributes(text: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const match of text.matchAll(/([\w:.-]+)\s*=\s*(?:"([^"]*)"|'([^']*)')/g)) out[match[1]] = decode(match[2] ?? match[3] ?? '')
  return out
}

interface EdmProperty {
  name: string
  attrs: Record<string, string>
}

interface EdmEntityType {
  name: string
  baseType?: string
  properties: EdmProperty[]
}

/** The entity sets of an EDMX document with the properties of their entity types, as CDS shapes. */
export function parseEdmx(xml: string): Map<string, Record<string, ColumnShape>> {
  const text = xml.replace(/<!--[\s\S]*?-->/g, '')
  const types = new Map<string, EdmEntityType>()
  const sets = new Map<string, string>()
  let namespace = ''
  let alias = ''
  let current: EdmEntityType | undefined
  for (const match of text.matchAll(/<(\/?)([\w.]+:)?([\w.]+)((?:\s+[\w:.-]+\s*=\s*(?:"[^"]*"|'[^']*'))*)\s*(\/?)>/g)) {
    const [, closing, , tag, rest, selfClosing] = match
    if (closing) {
      if (tag === 'EntityType') current = undefined
      continue
    }
    const attrs = attributes(rest)
    switch (tag) {
      case 'Schema':
        namespace = attrs.Namespace ?? ''
        alias = attrs.Alias ?? ''
        break
      case 'EntityType': {
        const type: EdmEntityType = { name: attrs.Name, baseType: attrs.BaseType, properties: [] }
        types.set(`${namespace}.${attrs.Name}`, type)
        if (alias) types.set(`${alias}.${attrs.Name}`, type)
        current = selfClosing ? undefined : type
        break
      }
      case 'Property':
        if (current && attrs.Name) current.properties.push({ name: attrs.Name, attrs })
        break
      case 'EntitySet':
        if (attrs.Name && attrs.EntityType) sets.set(attrs.Name, attrs.EntityType)
        break
    }
  }
  const result = new Map<string, Record<string, ColumnShape>>()
  for (const [set, typeName] of sets) {
    const elements: Record<string, ColumnShape> = {}
    const chain: EdmEntityType[] = []
    for (let type = types.get(typeName); type && chain.length < 16 && !chain.includes(type); type = type.baseType ? types.get(type.baseType) : undefined) chain.unshift(type)
    if (!chain.length) continue
    for (const type of chain) for (const property of type.properties) elements[property.name] = shapeOfEdm(property.attrs)
    result.set(set, elements)
  }
  return result
}

const EDM_TYPES: Record<string, string> = {
  'Edm.String': 'cds.String',
  'Edm.Boolean': 'cds.Boolean',
  'Edm.Byte': 'cds.UInt8',
  'Edm.SByte': 'cds.Int16',
  'Edm.Int16': 'cds.Int16',
  'Edm.Int32': 'cds.Integer',
  'Edm.Int64': 'cds.Int64',
  'Edm.Decimal': 'cds.Decimal',
  'Edm.Double': 'cds.Double',
  'Edm.Single': 'cds.Double',
  'Edm.Date': 'cds.Date',
  'Edm.TimeOfDay': 'cds.Time',
  'Edm.Time': 'cds.Time',
  'Edm.DateTimeOffset': 'cds.Timestamp',
  'Edm.Guid': 'cds.UUID',
  'Edm.Binary': 'cds.Binary',
  'Edm.Stream': 'cds.LargeBinary',
}

/** A property's CDS shape, as `cds import` maps EDM types (V2 `Edm.DateTime` with display format Date is `cds.Date`). */
export function shapeOfEdm(attrs: Record<string, string>): ColumnShape {
  const edm = attrs.Type ?? ''
  let type = EDM_TYPES[edm]
  if (edm === 'Edm.DateTime') type = attrs['sap:display-format'] === 'Date' ? 'cds.Date' : 'cds.DateTime'
  const shape: ColumnShape = { type: type ?? edm }
  const number = (value: string | undefined) => (value !== undefined && /^\d+$/.test(value) ? Number(value) : undefined)
  if (type === 'cds.String' || type === 'cds.Binary') {
    const length = number(attrs.MaxLength)
    if (length !== undefined) shape.length = length
  }
  if (type === 'cds.Decimal') {
    const precision = number(attrs.Precision)
    const scale = number(attrs.Scale)
    if (precision !== undefined) shape.precision = precision
    if (scale !== undefined) shape.scale = scale
  }
  return shape
}

/** The columns of REST records (the union of the first page's keys); types unknown. */
export function shapeOfRecords(records: Array<Record<string, unknown>>): Record<string, ColumnShape> {
  const out: Record<string, ColumnShape> = {}
  for (const record of records) for (const key of Object.keys(record)) out[key] ??= {}
  return out
}
