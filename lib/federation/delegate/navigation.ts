/**
 * Navigation across the local/remote boundary (SPEC rule 4), e.g. `/Reviews(1)/book` (local →
 * remote) or `/Authors(1)/notes` (remote → local). A path that crosses is resolved step by
 * step: the keys the association joins on are read from the entry (through the application
 * service, so each side answers for itself), and the next step becomes a key filter. The
 * query that remains targets one entity with that key filter AND the client's `$filter`
 * (parenthesized), so `$filter`, `$select`, `$orderby` and `$top` apply as usual.
 */
import { entityNamed, fenced, isAssociationElement, joinPairs, sideOf, targetOf, type LinkedEntity } from './model.js'
import { and, distinctTuples, keyPredicate, type Token } from './keys.js'
import { FederationRequestError, stepName, type QueryRunner } from './expand.js'
import type { Row } from './remote.js'

type Step = string | { id: string; where?: Token[]; [k: string]: unknown }

export interface NavigationSelect {
  from: { ref: Step[]; [k: string]: unknown }
  where?: Token[]
  [k: string]: unknown
}

/** The entities along a path, or undefined when a step is not an association. */
export function entitiesOf(ref: Step[]): LinkedEntity[] | undefined {
  const first = entityNamed(stepName(ref[0]))
  if (!first) return undefined
  const entities = [first]
  for (let i = 1; i < ref.length; i++) {
    const element = entities[i - 1].elements[stepName(ref[i])]
    const target = isAssociationElement(element) ? targetOf(element) : undefined
    if (!target) return undefined
    entities.push(target)
  }
  return entities
}

/** Whether a `from` path touches more than one side, or a delegate with a where (model.ts `fenced`). */
export function crossesSides(ref: Step[] | undefined): boolean {
  if (!ref || ref.length < 2) return false
  const entities = entitiesOf(ref)
  if (!entities) return false
  const side = sideOf(entities[0])
  return entities.some(e => sideOf(e) !== side || fenced(e))
}

/**
 * Resolves a crossing path into `from: <target>` plus a key filter. Returns `null` when the
 * path leads nowhere (no rows); throws 404 when an entry along the path does not exist.
 */
export async function resolveNavigation(srv: QueryRunner, select: NavigationSelect): Promise<NavigationSelect | null> {
  const ref = select.from.ref
  const entities = entitiesOf(ref)!
  const filterOf = (step: Step) => (typeof step === 'object' && Array.isArray(step.where) && step.where.length ? step.where : undefined)
  let where: Token[] | undefined = filterOf(ref[0])
  for (let i = 1; i < ref.length; i++) {
    const parent = entities[i - 1]
    const assoc = parent.elements[stepName(ref[i])]
    const pairs = joinPairs(assoc)
    if (!pairs) throw new FederationRequestError(501, `Navigating '${assoc.name}' of '${parent.name}' needs an association with foreign keys or an equality 'on' condition`)
    const SELECT: Record<string, unknown> = { from: { ref: [parent.name] }, columns: pairs.map(p => ({ ref: [p.source] })), limit: null }
    if (where) SELECT.where = where
    const result = await srv.run({ SELECT })
    const rows = (Array.isArray(result) ? result : result ? [result] : []) as Row[]
    if (!rows.length) throw new FederationRequestError(404, `No '${parent.name}' entry matches the navigation path (in '${sideOf(parent)}')`)
    const tuples = distinctTuples(rows, pairs.map(p => p.source))
    if (!tuples.length) return null
    where = and(keyPredicate(pairs.map(p => p.target), tuples), filterOf(ref[i]))
  }
  const target = entities[entities.length - 1]
  return { ...select, from: { ref: [target.name] }, where: and(where, select.where) }
}
