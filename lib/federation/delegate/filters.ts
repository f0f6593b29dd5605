/**
 * `$filter` through an association into the other side (SPEC rule 5). Each comparison (or
 * `exists` from an `any`/`all` lambda) that reaches through an association to another side is
 * answered there first — through the application service, so that side's own rules apply —
 * and replaced in place by a key condition (`fk in (…)`, or an OR of ANDs for composite keys).
 * Replacing each comparison by an equivalent one keeps the boolean structure of the client's
 * filter intact; every replacement is parenthesized.
 *
 * The key list is bounded: when the other side matches more than `maxFilterKeys` rows the
 * request fails with 400 (a clear message naming the association) instead of sending an
 * unbounded URL.
 */
import {
  fenced, isAssociationElement, joinPairs, sideOf, targetOf,
  type LinkedElement, type LinkedEntity,
} from './model.js'
import { delegateSettings, distinctTuples, keyPredicate, matchesNothing, type Token } from './keys.js'
import { FederationRequestError, stepName, type QueryRunner } from './expand.js'
import type { Row } from './remote.js'

type Step = string | { id: string; where?: Token[]; [k: string]: unknown }
interface RefToken {
  ref: Step[]
  [k: string]: unknown
}

function isRef(token: unknown): token is RefToken {
  return Boolean(token && typeof token === 'object' && Array.isArray((token as RefToken).ref))
}

/** Where a path leaves the entity's side: the association at its first step, or an error below. */
function crossing(entity: LinkedEntity, ref: Step[]): LinkedElement | undefined {
  const side = sideOf(entity)
  let current: LinkedEntity | undefined = entity
  for (let i = 0; i < ref.length - 1 && current; i++) {
    const element: LinkedElement | undefined = current.elements[stepName(ref[i])]
    if (!isAssociationElement(element)) return undefined
    const target = targetOf(element)
    if (!target) return undefined
    // a delegate with a where answers for itself (its where applies), like another side
    if (sideOf(target) !== side || fenced(target)) {
      if (i === 0) return element
      throw new FederationRequestError(400, `Path '${ref.map(stepName).join('/')}' of '${entity.name}' crosses the federation boundary below its first step; filter through '${stepName(ref[i])}' of '${current.name}' directly`)
    }
    current = target
  }
  return undefined
}

/** A single-step `exists` path (from `any`/`all`) into another side. */
function crossingExists(entity: LinkedEntity, ref: Step[]): LinkedElement | undefined {
  const element = entity.elements[stepName(ref[0])]
  if (!isAssociationElement(element)) return undefined
  const target = targetOf(element)
  if (!target || (sideOf(target) === sideOf(entity) && !fenced(target))) return undefined
  if (ref.length > 1) throw new FederationRequestError(400, `Lambda path '${ref.map(stepName).join('/')}' of '${entity.name}' crosses the federation boundary; use a single navigation step`)
  return element
}

/** Every ref (deep, into functions, lists and sub-expressions) that crosses, with its association. */
function collectCrossings(entity: LinkedEntity, tokens: unknown[], into: Set<LinkedElement>): void {
  for (const token of tokens) {
    if (!token || typeof token !== 'object') continue
    if (isRef(token)) {
      const element = crossing(entity, token.ref)
      if (element) into.add(element)
    }
    const t = token as { args?: unknown[]; xpr?: unknown[]; list?: unknown[] }
    if (Array.isArray(t.args)) collectCrossings(entity, t.args, into)
    if (Array.isArray(t.xpr)) collectCrossings(entity, t.xpr, into)
    if (Array.isArray(t.list)) collectCrossings(entity, t.list, into)
  }
}

/** Drops the first step of refs through `assoc` (deep). */
function stripStep(tokens: unknown[], assoc: string): unknown[] {
  return tokens.map(token => {
    if (!token || typeof token !== 'object') return token
    const t = { ...(token as Record<string, unknown>) }
    if (isRef(t) && t.ref.length > 1 && stepName(t.ref[0]) === assoc) t.ref = t.ref.slice(1)
    for (const key of ['args', 'xpr', 'list'] as const) if (Array.isArray(t[key])) t[key] = stripStep(t[key] as unknown[], assoc)
    return t
  })
}

/** Splits a predicate at its top-level `and`/`or` (the `and` of `between … and …` stays). */
function splitTopLevel(tokens: unknown[]): Array<unknown[] | 'and' | 'or'> {
  const parts: Array<unknown[] | 'and' | 'or'> = []
  let current: unknown[] = []
  let between = false
  for (const token of tokens) {
    if (typeof token === 'string') {
      const word = token.toLowerCase()
      if (word === 'between') between = true
      else if (word === 'and' && between) between = false
      else if (word === 'and' || word === 'or') {
        parts.push(current, word)
        current = []
        continue
      }
    }
    current.push(token)
  }
  parts.push(current)
  return parts
}

export class FilterRewriter {
  constructor(private readonly srv: QueryRunner) {}

  /** `where` with every comparison into another side replaced by a key condition. */
  async rewrite(entity: LinkedEntity, where: Token[]): Promise<Token[]> {
    const out: Token[] = []
    for (const part of splitTopLevel(where)) {
      if (typeof part === 'string') out.push(part)
      else out.push(...(await this.segment(entity, part)))
    }
    return out
  }

  /** Whether a predicate reaches into another side anywhere. */
  crosses(entity: LinkedEntity, where: Token[] | undefined): boolean {
    if (!where?.length) return false
    const found = new Set<LinkedElement>()
    collectCrossings(entity, where, found)
    if (found.size) return true
    return where.some((token, i) => token === 'exists' && isRef(where[i + 1]) && Boolean(crossingExists(entity, (where[i + 1] as RefToken).ref)))
      || where.some(token => Boolean(token && typeof token === 'object' && Array.isArray((token as { xpr?: Token[] }).xpr) && this.crosses(entity, (token as { xpr: Token[] }).xpr)))
  }

  private async segment(entity: LinkedEntity, tokens: unknown[]): Promise<Token[]> {
    let i = 0
    const prefix: Token[] = []
    while (typeof tokens[i] === 'string' && (tokens[i] as string).toLowerCase() === 'not') prefix.push(tokens[i++])
    const body = tokens.slice(i)
    const only = body.length === 1 ? (body[0] as { xpr?: Token[] }) : undefined
    if (only && Array.isArray(only.xpr)) return [...prefix, { xpr: await this.rewrite(entity, only.xpr) }]

    if (body.length === 2 && typeof body[0] === 'string' && body[0].toLowerCase() === 'exists' && isRef(body[1])) {
      const assoc = crossingExists(entity, body[1].ref)
      if (!assoc) return tokens
      const step = body[1].ref[0]
      const where = typeof step === 'object' && Array.isArray(step.where) ? step.where : undefined
      return [...prefix, { xpr: await this.keysMatching(entity, assoc, where) }]
    }

    const found = new Set<LinkedElement>()
    collectCrossings(entity, body, found)
    if (!found.size) return tokens
    if (found.size > 1)
      throw new FederationRequestError(400, `One comparison in the filter on '${entity.name}' reaches through ${[...found].map(a => `'${a.name}'`).join(' and ')}; compare each association's elements separately`)
    const [assoc] = found
    return [...prefix, { xpr: await this.keysMatching(entity, assoc, stripStep(body, assoc.name) as Token[]) }]
  }

  /** The key condition on `entity` equivalent to "the association's target matches `where`". */
  private async keysMatching(entity: LinkedEntity, assoc: LinkedElement, where: Token[] | undefined): Promise<Token[]> {
    const target = targetOf(assoc)!
    const pairs = joinPairs(assoc)
    if (!pairs) throw new FederationRequestError(501, `Filtering through '${assoc.name}' of '${entity.name}' across the federation boundary needs an association with foreign keys or an equality 'on' condition`)
    const { maxFilterKeys } = delegateSettings()
    const targets = pairs.map(p => p.target)
    const tooMany = () => new FederationRequestError(400, `The filter through '${assoc.name}' of '${entity.name}' matches more than ${maxFilterKeys} rows of '${target.name}'; narrow it (the limit is cds.requires['data-pipeline'].federation.maxFilterKeys)`)
    // pages of keys with $count: the total decides early, and a page capped by the other
    // side's @cds.query.limit.max is followed instead of mistaken for the end
    const page = Math.min(maxFilterKeys + 1, 500)
    const rows: Row[] = []
    let total: number | undefined
    for (;;) {
      const SELECT: Record<string, unknown> = {
        from: { ref: [target.name] },
        columns: targets.map(t => ({ ref: [t] })),
        orderBy: targets.map(t => ({ ref: [t], sort: 'asc' })),
        limit: { rows: { val: page }, offset: { val: rows.length } },
        count: total === undefined,
      }
      if (where?.length) SELECT.where = where
      const result = await this.srv.run({ SELECT })
      const batch = (Array.isArray(result) ? result : result ? [result] : []) as Row[]
      total ??= typeof (result as { $count?: unknown })?.$count === 'number' ? (result as { $count: number }).$count : undefined
      if (total !== undefined && total > maxFilterKeys) throw tooMany()
      rows.push(...batch)
      if (rows.length > maxFilterKeys) throw tooMany()
      if (!batch.length || (total !== undefined ? rows.length >= total : batch.length < page)) break
    }
    const tuples = distinctTuples(rows, targets)
    return tuples.length ? keyPredicate(pairs.map(p => p.source), tuples) : matchesNothing()
  }
}

/** Refuses `$orderby` through an association into another side (no side can sort by the other's data). */
export function assertOrderBy(entity: LinkedEntity, orderBy: unknown[] | undefined): void {
  for (const item of orderBy ?? []) {
    if (isRef(item) && crossing(entity, item.ref))
      throw new FederationRequestError(400, `Ordering '${entity.name}' by '${item.ref.map(stepName).join('/')}' is not supported: it belongs to the other side of the federation boundary`)
  }
}
