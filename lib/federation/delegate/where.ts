/**
 * The `where` of a delegated view (`entity MyNotes as projection on remote.Notes where owner =
 * $user`). CAP's remote services resolve a query on a consumer view through its projection chain
 * but drop the views' `where` — every row of the remote entity would come back. So the proxy
 * carries the where itself:
 *
 * - at startup (`compileViewWhere`, called while the delegation is computed) the wheres of every
 *   level of the projection chain are translated to the remote entity's element names — also of
 *   elements the consumer view does not project — and checked: only comparisons, `in` lists,
 *   `between`, `is [not] null`, `and`/`or`/`not`, OData functions, literals and `$user`,
 *   `$user.<attribute>`, `$tenant`. Anything else (paths through associations, `exists`,
 *   sub-selects, other variables, a remote that is not OData or HCQL) refuses the delegate with
 *   an error naming the entity and the where: never rows the where would exclude;
 * - per request (`resolveViewWhere`) `$user`/`$tenant` become the current request's values;
 *   a variable without a value (a missing attribute) matches nothing;
 * - every remote read of the delegate (`withViewWhere` around the proxy's call) gets the where
 *   AND-combined into the query CAP resolved to the remote's names, in a `before` handler of the
 *   remote service — so it goes out as `$filter` (or CQN to HCQL) with the client's filter,
 *   `$count`, `$top`, key lists, paging and the entity cache's loads alike.
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import { and, matchesNothing, type Token } from './keys.js'
import { currentContext } from '../../cap/index.js'

/** A view's where in the remote entity's element names, `$user`/`$tenant` still symbolic. */
export interface ViewWhere {
  tokens: Token[]
  /** The where as written along the chain, for messages and logs. */
  text: string
  /** Whether it depends on the caller (`$user…`, `$tenant`). */
  callerDependent: boolean
}

/** A where at one level of the projection chain, refs in that level's source element names. */
export interface LevelWhere {
  entity: string
  tokens: Token[]
  /** As written at its level. */
  text: string
  /** Why it cannot be sent (reported only when the entity turns out to be a delegate). */
  error?: string
}

export class ViewWhereError extends Error {
  readonly status = 500
  constructor(entity: string, where: string, reason: string) {
    super(`[federation] @federation.delegate '${entity}' is refused: its where (${where}) ${reason}; without it the delegate would serve rows the where excludes`)
    this.name = 'ViewWhereError'
  }
}

const OPERATORS = new Set(['=', '==', '!=', '<>', '<', '>', '<=', '>=', 'and', 'or', 'not', 'in', 'is', 'null', 'between'])
/** OData functions CAP's remote services translate (V4 and V2). */
const FUNCTIONS = new Set(['contains', 'startswith', 'endswith', 'tolower', 'toupper', 'length', 'indexof', 'substring', 'trim', 'concat', 'year', 'month', 'day', 'hour', 'minute', 'second', 'round', 'floor', 'ceiling'])
const VARIABLE = '$'

type Mapping = (name: string) => string | null | undefined

/** Why a where cannot be sent to the remote. */
class Unsendable extends Error {}

function tokenText(token: Token): string {
  if (typeof token === 'string') return token
  const t = token as { ref?: unknown[]; val?: unknown; xpr?: Token[]; list?: Token[]; func?: string; args?: Token[] }
  if (Array.isArray(t.ref)) return t.ref.map(s => (typeof s === 'string' ? s : (s as { id?: string }).id)).join('.')
  if ('val' in (t as object)) return typeof t.val === 'string' ? `'${t.val}'` : String(t.val)
  if (Array.isArray(t.xpr)) return `(${t.xpr.map(tokenText).join(' ')})`
  if (Array.isArray(t.list)) return `(${t.list.map(tokenText).join(', ')})`
  if (t.func) return `${t.func}(${(t.args ?? []).map(tokenText).join(', ')})`
  return JSON.stringify(token)
}

export function whereText(tokens: Token[]): string {
  return tokens.map(tokenText).join(' ')
}

function isVariable(ref: unknown[]): boolean {
  return typeof ref[0] === 'string' && ref[0].startsWith(VARIABLE)
}

/**
 * Checks a where and maps its element refs with `map` (source names → next level's names).
 * Throws a reason (string) when the where cannot be sent safely.
 */
function mapTokens(tokens: Token[], map: Mapping, alias: string | undefined): Token[] {
  return tokens.map(token => {
    if (typeof token === 'string') {
      if (!OPERATORS.has(token.toLowerCase())) throw new Unsendable(`uses '${token}', which the proxy does not send to the remote`)
      return token
    }
    if (!token || typeof token !== 'object') throw new Unsendable(`has an unsupported part ${JSON.stringify(token)}`)
    const t = token as Record<string, unknown>
    if ('val' in t) return { val: t.val }
    if (Array.isArray(t.xpr)) return { xpr: mapTokens(t.xpr, map, alias) }
    if (Array.isArray(t.list)) return { list: mapTokens(t.list, map, alias) }
    if (typeof t.func === 'string') {
      if (!FUNCTIONS.has(t.func.toLowerCase())) throw new Unsendable(`uses the function '${t.func}', which the proxy does not send to the remote`)
      return { func: t.func, args: mapTokens((t.args as Token[] | undefined) ?? [], map, alias) }
    }
    if (Array.isArray(t.ref) && t.ref.every(s => typeof s === 'string')) {
      let ref = t.ref as string[]
      if (isVariable(ref)) {
        if (ref[0] === '$user' && ref.length <= 2) return { ref: [...ref] }
        if (ref[0] === '$tenant' && ref.length === 1) return { ref: [...ref] }
        throw new Unsendable(`uses '${ref.join('.')}'; only $user, $user.<attribute> and $tenant are resolved per request`)
      }
      if (alias && ref.length === 2 && ref[0] === alias) ref = ref.slice(1)
      if (ref.length !== 1) throw new Unsendable(`reaches through '${ref.join('.')}'; only elements of the entity itself can be sent to the remote`)
      const mapped = map(ref[0])
      if (!mapped) throw new Unsendable(`uses '${ref[0]}', which is computed or not an element of the remote entity`)
      return { ref: [mapped] }
    }
    throw new Unsendable(`has a part the proxy cannot send to the remote (${tokenText(token)}): exists, sub-selects and casts are not supported`)
  })
}

function checked(level: LevelWhere, map: Mapping, alias: string | undefined): LevelWhere {
  if (level.error) return level
  try {
    return { ...level, tokens: mapTokens(level.tokens, map, alias) }
  } catch (error) {
    if (error instanceof Unsendable) return { ...level, error: error.message }
    throw error
  }
}

/** A level's own where, checked (its refs in the names of the level's source). */
export function levelWhere(entity: string, tokens: Token[], alias: string | undefined): LevelWhere {
  return checked({ entity, tokens, text: whereText(tokens) }, name => name, alias)
}

/** A level's where one level further down the chain (refs mapped to that source's names). */
export function mapLevel(level: LevelWhere, map: Mapping): LevelWhere {
  return checked(level, map, undefined)
}

function mentionsVariable(tokens: Token[]): boolean {
  return JSON.stringify(tokens).includes(`"ref":["${VARIABLE}`)
}

/** `x is [not] null` as `x = null` / `x != null`: what CAP's OData rendering understands. */
function odataNulls(tokens: Token[]): Token[] {
  const out: Token[] = []
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i]
    const word = (k: number) => (typeof tokens[k] === 'string' ? (tokens[k] as string).toLowerCase() : undefined)
    if (word(i) === 'is' && word(i + 1) === 'not' && word(i + 2) === 'null') { out.push('!=', { val: null }); i += 2; continue }
    if (word(i) === 'is' && word(i + 1) === 'null') { out.push('=', { val: null }); i += 1; continue }
    const t = token as { xpr?: Token[]; args?: Token[]; func?: string }
    if (t && typeof t === 'object' && Array.isArray(t.xpr)) out.push({ xpr: odataNulls(t.xpr) })
    else if (t && typeof t === 'object' && typeof t.func === 'string') out.push({ func: t.func, args: odataNulls(t.args ?? []) })
    else out.push(token)
  }
  return out
}

const SENDABLE_KINDS = new Set(['odata', 'odata-v2', 'odata-v4', 'hcql'])

/**
 * The whole chain's where (each level already in remote names), for a remote of `kind`; undefined
 * when no level has one. Throws ViewWhereError when the remote cannot evaluate it.
 */
export function compileViewWhere(entity: string, levels: LevelWhere[], kind: string | undefined): ViewWhere | undefined {
  if (!levels.length) return undefined
  const text = levels.map(l => levels.length > 1 ? `${l.text} (${l.entity})` : l.text).join(' and ')
  const failed = levels.find(l => l.error)
  if (failed) throw new ViewWhereError(entity, text, failed.error!)
  if (!kind || !SENDABLE_KINDS.has(kind)) throw new ViewWhereError(entity, text, `cannot be sent to a remote of kind '${kind ?? 'unknown'}' (only OData and HCQL remotes evaluate it)`)
  const combined = and(...levels.map(l => l.tokens))!
  return { tokens: kind === 'hcql' ? combined : odataNulls(combined), text, callerDependent: mentionsVariable(combined) }
}

interface Context {
  tenant?: string
  locale?: string
  user?: { id?: string; tenant?: string; attr?: Record<string, unknown> }
}

/** The value of `$user`, `$user.<attr>` or `$tenant` for the current request (undefined: none). */
function variableValue(ref: string[]): unknown {
  const ctx: Context = currentContext() ?? {}
  if (ref[0] === '$tenant') return ctx.tenant ?? undefined
  const attribute = ref[1] ?? 'id'
  if (attribute === 'id') return ctx.user?.id
  if (attribute === 'tenant') return ctx.tenant ?? ctx.user?.tenant
  if (attribute === 'locale') return ctx.locale
  return ctx.user?.attr?.[attribute]
}

const NOTHING = Symbol('nothing')

function substitute(tokens: Token[]): Token[] | typeof NOTHING {
  const out: Token[] = []
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i] as { ref?: string[]; xpr?: Token[]; list?: Token[]; func?: string; args?: Token[] }
    if (token && typeof token === 'object' && Array.isArray(token.ref) && isVariable(token.ref)) {
      const value = variableValue(token.ref)
      if (value === undefined || value === null || (Array.isArray(value) && !value.length)) return NOTHING
      if (Array.isArray(value)) {
        // a multi-valued attribute compared with `=`: any of its values
        if (out[out.length - 1] === '=' && out.length >= 2) {
          out[out.length - 1] = 'in'
          out.push({ list: value.map(val => ({ val })) })
          continue
        }
        return NOTHING
      }
      out.push({ val: value })
      continue
    }
    if (token && typeof token === 'object' && Array.isArray(token.xpr)) {
      const inner = substitute(token.xpr)
      if (inner === NOTHING) return NOTHING
      out.push({ xpr: inner })
    } else if (token && typeof token === 'object' && typeof token.func === 'string') {
      const args = substitute(token.args ?? [])
      if (args === NOTHING) return NOTHING
      out.push({ func: token.func, args })
    } else out.push(token)
  }
  return out
}

/**
 * The where for the current request: `$user`/`$tenant` replaced by their values; a predicate
 * that matches nothing when a variable has no value (never `owner = null`, which would match
 * rows without an owner).
 */
export function resolveViewWhere(where: ViewWhere): Token[] {
  if (!where.callerDependent) return where.tokens
  const resolved = substitute(where.tokens)
  return resolved === NOTHING ? matchesNothing() : resolved
}

interface Scope {
  remoteEntity: string
  where: Token[]
}

interface ResolvedRequest {
  event?: string
  query?: { SELECT?: { from?: { ref?: Array<string | { id: string; where?: Token[] }> }; where?: Token[] } }
  target?: { name?: string }
}

interface WhereRemote {
  name?: string
  prepend(fn: () => unknown): unknown
  before(event: string, handler: (req: ResolvedRequest) => void): unknown
}

const scope = new AsyncLocalStorage<Scope>()
const prepared = new WeakSet<object>()

/** Adds the where of the current scope to a resolved read (a `before` handler: ahead of every ON handler). */
function addWhere(req: ResolvedRequest): void {
  const current = scope.getStore()
  const select = req.query?.SELECT
  if (!current || !select?.from?.ref) return
  if (req.target?.name !== current.remoteEntity || select.from.ref.length !== 1)
    throw new Error(`[federation] the where of a delegate on '${current.remoteEntity}' cannot be applied to a read of '${req.target?.name ?? '?'}'`)
  const step = select.from.ref[0]
  let where = select.where
  if (typeof step === 'object') {
    // a read by key: the key becomes part of the filter (OData has no $filter on a single entity)
    where = and(step.where, where)
    select.from.ref = [step.id]
  }
  select.where = and(where, current.where)
}

function prepare(remote: WhereRemote): void {
  if (prepared.has(remote) || typeof remote.prepend !== 'function') return
  prepared.add(remote)
  remote.prepend(() => remote.before('READ', function viewWhereForFederation(req) { addWhere(req) }))
}

/** Runs the proxy's read of a delegate with a where: every query it sends carries the where. */
export function withViewWhere<T>(remote: object, remoteEntity: string, where: Token[] | undefined, call: () => Promise<T>): Promise<T> {
  if (!where) return call()
  prepare(remote as WhereRemote)
  return scope.run({ remoteEntity, where }, call)
}

/** Whether a where of the current request matches no row at all (no remote call needed). */
export function matchesNoRow(where: Token[] | undefined): boolean {
  return Boolean(where && JSON.stringify(where) === JSON.stringify(matchesNothing()))
}
