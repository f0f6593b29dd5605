/**
 * The keys of the rows a change touches, as `@federation.emit` sends them: only key elements,
 * never another field (hidden, `@cds.api.ignore` or personal data stay out of every message).
 */
import { EMIT } from '../constants.js'
import { isAssociation, type CsnEntity } from '../model/csn.js'
import { ql, type QueryRunner } from '../model/ql.js'
import { primaryDatabase } from '../cap/index.js'

export type Keys = Record<string, unknown>

/** What the key reading needs of a CAP request. */
export interface ChangeRequest {
  event: string
  target?: CsnEntity
  query?: Record<string, { entity?: unknown; from?: unknown; into?: unknown; where?: unknown[] } | undefined>
  params?: unknown[]
  data?: unknown
  subject?: { ref?: unknown[] }
}

/** Key elements an emitted message carries: no associations, no virtual ones, no draft's IsActiveEntity. */
export function emittedKeyNames(entity: CsnEntity): string[] {
  return Object.entries(entity.elements)
    .filter(([name, el]) => el.key && !isAssociation(el) && !el.virtual && name !== 'IsActiveEntity')
    .map(([name]) => name)
}

/** The keys of a row (only the key elements), or undefined when one is missing. */
export function pickKeys(row: unknown, names: string[]): Keys | undefined {
  if (!row || typeof row !== 'object' || Array.isArray(row)) return undefined
  const keys: Keys = {}
  for (const name of names) {
    const value = (row as Record<string, unknown>)[name]
    if (value === undefined || value === null) return undefined
    keys[name] = value
  }
  return keys
}

/** The statement of a change request (`UPDATE`, `DELETE`, …) and its target reference. */
function statement(req: ChangeRequest): { ref?: unknown[]; where?: unknown[] } {
  const q = req.query?.UPDATE ?? req.query?.DELETE
  const target = (q?.entity ?? q?.from) as { ref?: unknown[] } | string | undefined
  return { ref: typeof target === 'string' ? [target] : target?.ref, where: q?.where }
}

/** `k1 = v1 and k2 = v2 …` naming every key once (either side of `=`), as keys; otherwise undefined. */
export function keysOfCondition(where: unknown[] | undefined, names: string[]): Keys | undefined {
  if (!where?.length) return undefined
  const keys: Keys = {}
  for (let i = 0; i < where.length; i += 4) {
    const [left, op, right, and] = where.slice(i, i + 4) as Array<{ ref?: unknown[]; val?: unknown } | string | undefined>
    if (op !== '=' || (and !== undefined && and !== 'and')) return undefined
    const ref = [left, right].find(side => typeof side === 'object' && side?.ref?.length === 1) as { ref: string[] } | undefined
    const val = [left, right].find(side => typeof side === 'object' && side !== null && 'val' in side) as { val: unknown } | undefined
    if (!ref || !val || !names.includes(ref.ref[0]) || ref.ref[0] in keys || val.val === null || val.val === undefined) return undefined
    keys[ref.ref[0]] = val.val
  }
  return Object.keys(keys).length === names.length ? keys : undefined
}

/**
 * The keys of a single-row change that names its row completely — an OData request on
 * `Orders(42)`, or `UPDATE(Orders, 42)` / `.where({ ID: 42 })` in code: no query to run.
 * Undefined for anything else (navigation paths, other conditions): the rows are read then.
 */
export function directKeys(req: ChangeRequest, names: string[]): Keys[] | undefined {
  const { ref, where } = statement(req)
  if (ref?.length !== 1) return undefined
  const step = ref[0] as { where?: unknown[] } | string
  const stepWhere = typeof step === 'object' ? step.where : undefined
  if (stepWhere?.length && where?.length) return undefined
  const condition = keysOfCondition(stepWhere ?? where, names)
  if (condition) return [condition]
  if (where?.length || req.params?.length !== 1) return undefined
  const param = req.params[0]
  const row = param !== null && typeof param === 'object' ? param : names.length === 1 ? { [names[0]]: param } : undefined
  const keys = pickKeys(row, names)
  return keys ? [keys] : undefined
}

/** Reads the keys of the rows an UPDATE or DELETE will touch, in the request's transaction. */
export async function affectedKeys(req: ChangeRequest, names: string[]): Promise<Keys[]> {
  const direct = directKeys(req, names)
  if (direct) return direct
  const { ref, where } = statement(req)
  const from = ref ? { ref } : req.subject
  if (!from) return []
  const query = ql.SELECT.from(from).columns(...names)
  if (where?.length) query.SELECT!.where = where
  const db: QueryRunner = primaryDatabase()!
  const rows = (await db.run(query)) as unknown[]
  return rows.map(row => pickKeys(row, names)).filter((keys): keys is Keys => !!keys)
}

/** A CQN condition matching exactly the given keys. */
export function whereKeys(names: string[], keys: Keys[]): unknown[] {
  if (names.length === 1) return [{ ref: [names[0]] }, 'in', { list: keys.map(k => ({ val: k[names[0]] })) }]
  const where: unknown[] = []
  for (const k of keys) {
    if (where.length) where.push('or')
    const xpr: unknown[] = []
    for (const name of names) {
      if (xpr.length) xpr.push('and')
      xpr.push({ ref: [name] }, '=', { val: k[name] })
    }
    where.push({ xpr })
  }
  return where
}

const identity = (names: string[], keys: Keys) => JSON.stringify(names.map(name => keys[name]))

/** Of the given keys, those that exist already (for UPSERT: Updated rather than Created). */
export async function existingKeys(entity: string, names: string[], keys: Keys[]): Promise<Set<string>> {
  const found = new Set<string>()
  const db: QueryRunner = primaryDatabase()!
  for (let i = 0; i < keys.length; i += EMIT.keyChunk) {
    const chunk = keys.slice(i, i + EMIT.keyChunk)
    const query = ql.SELECT.from(entity).columns(...names)
    query.SELECT!.where = whereKeys(names, chunk)
    for (const row of (await db.run(query)) as unknown[]) {
      const k = pickKeys(row, names)
      if (k) found.add(identity(names, k))
    }
  }
  return found
}

export function keyIdentity(names: string[], keys: Keys): string {
  return identity(names, keys)
}

/** The rows of a CREATE / UPSERT (one or many entries); rows given as arrays (`.rows()`) cannot be named. */
export function enteredRows(data: unknown): unknown[] {
  if (Array.isArray(data)) return data
  return data && typeof data === 'object' ? [data] : []
}
