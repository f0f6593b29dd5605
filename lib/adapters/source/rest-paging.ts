/**
 * REST pagination (SPEC "REST source adapter"): `cursor` follows the cursor at `cursorPath` until
 * it is missing, `offset` and `page` read on until an empty page. Each stops with an error
 * instead of looping when the server repeats a cursor or answers the same page again.
 */
import cds from '@sap/cds'
import { LOGGER } from '../../constants.js'
import { RestSourceError } from './rest-errors.js'
import { valueAt, type Page } from './rest-response.js'
import type { DataRecord, RestConfig } from '../../pipeline/types.js'

const LOG = cds.log(LOGGER.rest)

/** Fetches one page with the given query parameters; `where` names it in errors and logs. */
export type PageFetcher = (params: Record<string, string>, where: string) => Promise<Page>

export interface PagingContext {
  pipeline: string
  /** Names the source and request in errors: `REST source 'x': GET /path`. */
  request: string
}

/** The collection's record batches, page by page, starting from the `base` query parameters. */
export async function* restPages(pagination: RestConfig['pagination'], base: Record<string, string>, fetchPage: PageFetcher, context: PagingContext): AsyncGenerator<DataRecord[]> {
  if (pagination.type === 'cursor') yield* cursorPages(pagination, base, fetchPage, context)
  else yield* numberedPages(pagination, base, fetchPage, context)
}

async function* cursorPages(pagination: RestConfig['pagination'], base: Record<string, string>, fetchPage: PageFetcher, { request }: PagingContext): AsyncGenerator<DataRecord[]> {
  const seen = new Set<string>()
  let cursor: string | undefined
  for (;;) {
    const params: Record<string, string> = { ...base, limit: String(pagination.pageSize) }
    if (cursor !== undefined) params[pagination.cursorParam!] = cursor
    const { records, body } = await fetchPage(params, cursor === undefined ? 'first page' : 'next cursor')
    if (records.length) yield records
    const next = valueAt(body, pagination.cursorPath)
    if (next === undefined || next === null || next === '') return
    if (typeof next !== 'string' && typeof next !== 'number')
      throw new RestSourceError(`${request}: the cursor at '${pagination.cursorPath}' is not a string or number`)
    const value = String(next)
    if (seen.has(value))
      throw new RestSourceError(`${request}: the server returned cursor '${abbreviate(value)}' (at '${pagination.cursorPath}') a second time; stopping instead of looping`)
    seen.add(value)
    cursor = value
  }
}

/** offset / page: keep going until an empty page; a short page may come from a server that caps the page size. */
async function* numberedPages(pagination: RestConfig['pagination'], base: Record<string, string>, fetchPage: PageFetcher, { pipeline, request }: PagingContext): AsyncGenerator<DataRecord[]> {
  const pageSize = pagination.pageSize
  let position = pagination.type === 'page' ? 1 : 0
  let previous: string | undefined
  for (;;) {
    const params: Record<string, string> = pagination.type === 'page'
      ? { ...base, page: String(position), pageSize: String(pageSize) }
      : { ...base, offset: String(position), limit: String(pageSize) }
    const where = `${pagination.type} ${position}`
    const { records } = await fetchPage(params, where)
    if (!records.length) return
    const fingerprint = `${records.length}|${JSON.stringify(records[0])}|${JSON.stringify(records[records.length - 1])}`
    if (fingerprint === previous)
      throw new RestSourceError(`${request} (${where}) returned the same records as the page before; the server seems to ignore the '${pagination.type}' parameter — stopping instead of looping`)
    previous = fingerprint
    if (records.length < pageSize && LOG._debug) LOG.debug(`pipeline '${pipeline}': ${where} returned ${records.length} < ${pageSize} records (server-side cap?); reading on until an empty page`)
    yield records
    position += pagination.type === 'page' ? 1 : records.length
  }
}

function abbreviate(value: string): string {
  return value.length > 40 ? `${value.slice(0, 37)}...` : value
}
