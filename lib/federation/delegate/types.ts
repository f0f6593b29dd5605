/**
 * The shapes the delegate proxy works with: CAP's linked definitions as read here, a delegated
 * entity's options and what the model says of it (DelegateInfo), and association join pairs.
 */
import type { DelegateCacheStrategy } from '../../constants.js'
import type { Token } from './keys.js'
import type { ViewWhere } from './where.js'

/** The parts of CAP's linked definitions read here. */
export interface LinkedElement {
  name: string
  type?: string
  key?: boolean
  virtual?: boolean
  value?: unknown
  target?: string
  _target?: LinkedEntity
  isAssociation?: boolean
  is2many?: boolean
  cardinality?: { max?: number | string }
  keys?: Array<{ ref: string[]; as?: string }>
  on?: unknown[]
  elements?: Record<string, LinkedElement>
  length?: number
  precision?: number
  scale?: number
  [annotation: `@${string}`]: unknown
}

export interface LinkedEntity {
  name: string
  kind?: string
  elements: Record<string, LinkedElement>
  query?: { SELECT?: ProjectionClause; _target?: LinkedEntity }
  projection?: ProjectionClause
  _service?: { name: string }
  [annotation: `@${string}`]: unknown
}

export interface ProjectionClause {
  from?: { ref?: Array<string | { id: string }>; as?: string }
  where?: Token[]
  columns?: Array<'*' | { ref?: Array<string | { id: string }>; as?: string; [other: string]: unknown }>
}

export interface CacheOptions {
  ttl: number
  strategy: DelegateCacheStrategy
  tenantScoped: boolean
}

export interface DelegateOptions {
  /** Writes answer 405 (`@federation.delegate: { readonly: true }`; `@readonly` is CAP's own and also honoured). */
  readonly: boolean
  cache?: CacheOptions
}

export interface DelegateInfo {
  /** Full name of the consumer entity (service entity or consumption view). */
  entity: string
  /** Name under `cds.requires` to connect to. */
  remoteService: string
  /** Full name of the remote entity in the imported API, e.g. `FedA.Books`. */
  remoteEntity: string
  /** Entity set name at the remote service, e.g. `Books`. */
  entitySet: string
  /** consumer element → remote element (only elements with a remote counterpart). */
  renames: Map<string, string>
  /** remote element → consumer element. */
  inverse: Map<string, string>
  options: DelegateOptions
  /** The views' where along the chain, in remote names (where.ts); undefined when none. */
  where?: ViewWhere
}

/** One element pair an association joins on: `parent[source] = child[target]`. */
export interface JoinPair {
  source: string
  target: string
}
