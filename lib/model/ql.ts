/**
 * Loosely typed access to CAP's query builders (`cds.ql`). The plugin builds queries from
 * runtime names, which the static typings of `@sap/cds` cannot follow.
 */
import cds from '@sap/cds'
import { connectTo, primaryDatabase, type QueryRunner } from '../cap/index.js'

export interface Query {
  columns(...columns: unknown[]): Query
  where(...args: unknown[]): Query
  orderBy(...args: unknown[]): Query
  limit(rows: number, offset?: number): Query
  entries(rows: unknown[]): Query
  rows(rows: unknown[][]): Query
  set(data: Record<string, unknown>): Query
  SELECT?: { orderBy?: unknown[]; columns?: unknown[]; one?: boolean; where?: unknown[] }
}

export interface QueryBuilders {
  SELECT: { from(entity: string | object, ...rest: unknown[]): Query; one: { from(entity: string | object, ...rest: unknown[]): Query } }
  UPSERT: { into(entity: string | object): Query }
  INSERT: { into(entity: string | object): Query }
  UPDATE: { entity(entity: string | object): Query; (entity: string | object): Query }
  DELETE: { from(entity: string | object): Query }
}

export const ql = cds.ql as unknown as QueryBuilders

/** A service that runs queries (database or in-process service). */
export type { QueryRunner } from '../cap/index.js'

export async function connect(name: string): Promise<QueryRunner> {
  return connectTo<QueryRunner>(name)
}

export function isDatabaseService(service: unknown): boolean {
  return Boolean((service as { isDatabaseService?: boolean })?.isDatabaseService) || service === primaryDatabase()
}

/** CAP's pessimistic lock on a SELECT (FOR UPDATE where the database has it; SQLite has one writer anyway). */
export function forUpdate(query: unknown): unknown {
  return (query as { forUpdate(): unknown }).forUpdate()
}
