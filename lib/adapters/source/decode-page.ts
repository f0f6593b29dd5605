/**
 * A V4 page decoded here instead of by CAP's remote service: CAP parses the JSON, then walks
 * every row again (`Object.keys` and `Object.entries` of each, renaming `@odata.*` annotations
 * to hidden `$…` properties): a second pass that cost about as much as the parse itself and
 * most of the garbage of a page. Asked for with an `accept` that also names XML — at q=0, so
 * never served — which makes CAP's remote service hand the body on as text
 * (libx/_runtime/remote/Service.js: an accept naming xml reads text). Should CAP parse it all
 * the same, its decoded answer is used as before (odata.ts).
 */
import type { DataRecord } from '../../pipeline/types.js'

/** CAP's own accept for OData reads, plus XML refused (q=0): JSON answers, handed on as text. */
export const PAGE_ACCEPT = 'application/json,text/plain,application/xml;q=0'

const ANNOTATION = '@odata.'

export interface DecodedPage extends Array<DataRecord> {
  $count?: number
  $nextLink?: string
}

/**
 * What CAP's remote service answers for a V4 collection: the rows of `value`, without their
 * `@odata.*` annotations (at any depth), `$count` and `$nextLink` from `@odata.count` and
 * `@odata.nextLink`; the body itself when it has no `value` (no collection). Throws when the
 * text is no JSON.
 */
export function decodeV4Page(text: string): DecodedPage | undefined {
  const body = JSON.parse(text) as Record<string, unknown> | null
  if (!body || typeof body !== 'object' || !('value' in body)) return body as unknown as DecodedPage | undefined
  const rows = body.value as DecodedPage
  if (!Array.isArray(rows)) return rows
  // rows carry annotations (etags, types) only where the text names one after `value` begins
  // (an annotation is a property name, so a string value naming one only costs the slower walk)
  const start = text.indexOf('"value"')
  if (text.indexOf(ANNOTATION, start) >= 0) for (const row of rows) withoutAnnotations(row)
  const count = body['@odata.count']
  const next = body['@odata.nextLink']
  if (count !== undefined) Object.defineProperty(rows, '$count', { value: count, enumerable: false, configurable: true, writable: true })
  if (next !== undefined) Object.defineProperty(rows, '$nextLink', { value: next, enumerable: false, configurable: true, writable: true })
  return rows
}

/** Removes `@odata.*` properties of an object, of its nested objects and of the objects in its arrays. */
function withoutAnnotations(value: unknown): void {
  if (!value || typeof value !== 'object') return
  if (Array.isArray(value)) {
    for (const item of value) withoutAnnotations(item)
    return
  }
  const record = value as Record<string, unknown>
  for (const key of Object.keys(record)) {
    if (key.startsWith(ANNOTATION)) delete record[key]
    else withoutAnnotations(record[key])
  }
}
