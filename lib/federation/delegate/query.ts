/**
 * Copies of a query's SELECT. CAP derives queries from queries (`cds.ql` clone): the derived
 * SELECT holds only what changed and inherits every other option — `where`, `orderBy`,
 * `limit`, `count`, `search`, … — from its prototype. CAP's draft handling does this to every
 * query of a draft-enabled service. An object spread keeps own properties only, so a copy made
 * with one silently drops the client's query options: every copy goes through here.
 */
export function flatSelect<T extends object>(select: T): T {
  const out: Record<string, unknown> = {}
  // for…in walks the prototype chain: inherited options are copied too
  // oxlint-disable-next-line guard-for-in
  for (const key in select) out[key] = (select as Record<string, unknown>)[key]
  return out as T
}
