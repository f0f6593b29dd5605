/** The data inspector's page of a modeled entity, read through any CQN runner (database, in-process or HCQL service). */
import { toCqn } from './predicate.js'
import { ql, type QueryRunner } from '../model/ql.js'
import type { DataRecord } from '../pipeline/types.js'
import type { PreviewRequest, PreviewResult } from './types.js'

/** One page in key order, filters pushed down; one row more than asked tells whether there are more. */
export async function previewPage(runner: QueryRunner, entity: string, keys: string[], request: PreviewRequest): Promise<PreviewResult> {
  const query = ql.SELECT.from(entity).orderBy(...keys).limit(request.top + 1, request.skip)
  if (request.columns.length) query.columns(...request.columns)
  if (request.filter) query.where(toCqn(request.filter))
  const rows = (await runner.run(query)) as DataRecord[]
  return { rows: rows.slice(0, request.top), hasMore: rows.length > request.top, limitedSupport: false }
}
