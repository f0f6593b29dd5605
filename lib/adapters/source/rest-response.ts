/**
 * A REST source's answers: the JSON body of one page and the records at `rest.dataPath`,
 * checked to be an array of objects, with errors that say what was found instead.
 */
import { RestSourceError } from './rest-errors.js'
import type { DataRecord } from '../../pipeline/types.js'

/** Value at a dotted path (`data.items`); the object itself for an empty path. */
export function valueAt(body: unknown, path: string | undefined): unknown {
  if (!path) return body
  let value = body
  for (const part of path.split('.')) {
    if (value === null || typeof value !== 'object') return undefined
    value = (value as Record<string, unknown>)[part]
  }
  return value
}

export interface Page {
  records: DataRecord[]
  body: unknown
}

/** Parses a page's body; `label` names the source, `where` the page (for errors). */
export function parsePage(text: string, dataPath: string | undefined, label: string, path: string, where: string): Page {
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    throw new RestSourceError(`${label}: GET ${path} (${where}) did not answer JSON; expected ${dataPath ? `an object with an array at dataPath '${dataPath}'` : 'a JSON array (or set rest.dataPath)'}`)
  }
  const records = valueAt(body, dataPath)
  if (!Array.isArray(records)) {
    throw new RestSourceError(dataPath
      ? `${label}: GET ${path} (${where}) answered no array at dataPath '${dataPath}' (found ${describe(records)})`
      : `${label}: GET ${path} (${where}) answered ${describe(body)}, not an array; set rest.dataPath to where the records are`)
  }
  if (records.some(record => record === null || typeof record !== 'object' || Array.isArray(record)))
    throw new RestSourceError(`${label}: GET ${path} (${where}) answered entries at ${dataPath ? `dataPath '${dataPath}'` : 'the top level'} that are not objects`)
  return { records: records as DataRecord[], body }
}

function describe(value: unknown): string {
  if (value === undefined) return 'nothing'
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`
}
