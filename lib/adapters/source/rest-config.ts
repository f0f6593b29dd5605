/**
 * Registration rules of the REST source (SPEC "REST source adapter"). Pure: no CAP access,
 * so `resolvePipeline` can call it from anywhere. Every error names the offending key and
 * never echoes a value (a misplaced header could be a secret).
 */
import { invalidConfig } from '../../pipeline/errors.js'
import type { PipelineConfig } from '../../pipeline/types.js'
import { isPlainObject } from '../../pipeline/json.js'

export const REST_PAGINATION_TYPES = ['offset', 'page', 'cursor'] as const

const REST_KEYS = ['path', 'pagination', 'deltaParam', 'dataPath', 'timeout', 'keys']
const KEY_LISTING_KEYS = ['path', 'dataPath', 'pagination']
const PAGINATION_KEYS = ['type', 'pageSize', 'cursorParam', 'cursorPath']
const SECRET_LIKE = /(header|password|secret|token|authorization|api[-_]?key|credential|cookie)/i

const isName = (value: unknown): value is string => typeof value === 'string' && value.trim().length > 0
const isDotted = (value: unknown): value is string => isName(value) && value.split('.').every(part => part.length > 0)

/** Throws INVALID_CONFIG naming the first offending key of a REST-sourced pipeline. */
export function validateRestConfig(config: PipelineConfig): void {
  const { source, delta } = config
  const rest: unknown = config.rest
  if (source.query !== undefined)
    throw invalidConfig('source.query', 'is not supported by the REST source (replicate only): a REST source reads the collection at rest.path')
  if (!isName(source.service))
    throw invalidConfig('source.service', 'is required for a REST source: the binding cds.requires.<service> gives url and headers')
  if (!isPlainObject(rest)) throw invalidConfig('rest', 'is required for a REST source: { path, pagination: { type, pageSize } }')
  for (const key of Object.keys(rest)) {
    if (REST_KEYS.includes(key)) continue
    const hint = SECRET_LIKE.test(key) ? '; headers and other secrets belong in the service binding credentials (cds.requires.<service>.credentials.headers)' : ''
    throw invalidConfig(`rest.${key}`, `is not a REST source setting; expected one of ${REST_KEYS.join(', ')}${hint}`)
  }
  if (!isName(rest.path)) throw invalidConfig('rest.path', 'is required for a REST source and must be a non-empty string')
  const pagination = rest.pagination
  if (!isPlainObject(pagination)) throw invalidConfig('rest.pagination', `is required for a REST source: { type: ${REST_PAGINATION_TYPES.join(' | ')}, pageSize }`)
  for (const key of Object.keys(pagination))
    if (!PAGINATION_KEYS.includes(key)) throw invalidConfig(`rest.pagination.${key}`, `is not a pagination setting; expected one of ${PAGINATION_KEYS.join(', ')}`)
  if (!(REST_PAGINATION_TYPES as readonly unknown[]).includes(pagination.type))
    throw invalidConfig('rest.pagination.type', `must be one of ${REST_PAGINATION_TYPES.join(', ')}`)
  const pageSize = pagination.pageSize
  if (typeof pageSize !== 'number' || !Number.isInteger(pageSize) || pageSize < 1 || pageSize > 100_000)
    throw invalidConfig('rest.pagination.pageSize', 'is required and must be a positive integer (at most 100000)')
  if (pagination.type === 'cursor') {
    if (!isName(pagination.cursorParam)) throw invalidConfig('rest.pagination.cursorParam', "is required for pagination.type 'cursor': the query parameter carrying the cursor")
    if (!isDotted(pagination.cursorPath)) throw invalidConfig('rest.pagination.cursorPath', "is required for pagination.type 'cursor': the dotted path of the next cursor in the response")
  } else {
    for (const key of ['cursorParam', 'cursorPath'])
      if (pagination[key] !== undefined) throw invalidConfig(`rest.pagination.${key}`, "applies to pagination.type 'cursor' only")
  }
  if (rest.deltaParam !== undefined && !isName(rest.deltaParam)) throw invalidConfig('rest.deltaParam', 'must be a non-empty string (the query parameter carrying lastSync)')
  if (rest.dataPath !== undefined && !isDotted(rest.dataPath)) throw invalidConfig('rest.dataPath', "must be a dotted path such as 'data.items' (omit it when the body is the array)")
  if (rest.timeout !== undefined && (typeof rest.timeout !== 'number' || !Number.isInteger(rest.timeout) || rest.timeout < 1))
    throw invalidConfig('rest.timeout', 'must be a positive integer (milliseconds)')
  if (rest.keys !== undefined) validateKeyListing(rest.keys)
  if (isPlainObject(delta) && delta.mode !== undefined && delta.mode !== 'timestamp')
    throw invalidConfig('delta.mode', "must be 'timestamp' for a REST source: rest.deltaParam carries lastSync, an ISO timestamp")
}

/** `rest.keys`: the key listing a deletes sweep reads (`{ path, dataPath?, pagination? }`, pagination as `rest.pagination`). */
function validateKeyListing(keys: unknown): void {
  if (!isPlainObject(keys)) throw invalidConfig('rest.keys', 'must be an object { path, dataPath?, pagination? } (the key listing read by deletes.sweep)')
  for (const key of Object.keys(keys))
    if (!KEY_LISTING_KEYS.includes(key)) throw invalidConfig(`rest.keys.${key}`, `is not a key listing setting; expected one of ${KEY_LISTING_KEYS.join(', ')}`)
  if (!isName(keys.path)) throw invalidConfig('rest.keys.path', 'is required and must be a non-empty string (the endpoint listing all keys in ascending order)')
  if (keys.dataPath !== undefined && !isDotted(keys.dataPath)) throw invalidConfig('rest.keys.dataPath', "must be a dotted path such as 'data.keys'")
  const pagination = keys.pagination
  if (pagination === undefined) return
  if (!isPlainObject(pagination) || !(REST_PAGINATION_TYPES as readonly unknown[]).includes(pagination.type))
    throw invalidConfig('rest.keys.pagination.type', `must be one of ${REST_PAGINATION_TYPES.join(', ')}`)
  for (const key of Object.keys(pagination))
    if (!PAGINATION_KEYS.includes(key)) throw invalidConfig(`rest.keys.pagination.${key}`, `is not a pagination setting; expected one of ${PAGINATION_KEYS.join(', ')}`)
  const pageSize = pagination.pageSize
  if (typeof pageSize !== 'number' || !Number.isInteger(pageSize) || pageSize < 1 || pageSize > 100_000)
    throw invalidConfig('rest.keys.pagination.pageSize', 'is required and must be a positive integer (at most 100000)')
  if (pagination.type === 'cursor' && (!isName(pagination.cursorParam) || !isDotted(pagination.cursorPath)))
    throw invalidConfig(`rest.keys.pagination.${isName(pagination.cursorParam) ? 'cursorPath' : 'cursorParam'}`, "is required for pagination.type 'cursor'")
}
