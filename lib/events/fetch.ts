/**
 * The current rows of a micro-batch's keys, with one key-list request per chunk, using the key
 * lists of the delegates (federation/delegate): a single key to OData V4 as `k in (…)` (same
 * literals, chunked by URL length; CAP's remote service moves a long one into `$batch`), compound
 * keys, OData V2 and providers that reject `in` as an `or` chain in chunks of `keyChunkSize`;
 * in-process and HCQL sources as a CQN `in` / `or` of key tuples. A custom source adapter takes
 * part by implementing `readByKeys(keys)`.
 */
import cds from '@sap/cds'
import { ODataSourceAdapter } from '../adapters/source/odata.js'
import { CqnSourceAdapter } from '../adapters/source/cqn.js'
import type { BaseSourceAdapter } from '../adapters/source/base.js'
import { statusOf } from '../adapters/retry.js'
import { chunk, delegateSettings, keyPredicate } from '../federation/delegate/keys.js'
import { chunkByLength, inListFilter, inListLiteral } from '../federation/delegate/inlist.js'
import { PipelineError } from '../pipeline/errors.js'
import { keyNames } from '../model/csn.js'
import type { DataRecord } from '../pipeline/types.js'
import type { Predicate } from '../adapters/predicate.js'

const LOG = cds.log('data-pipeline|events')
/** Keys per CQN query of a single-key entity (a database or HCQL service takes long lists). */
const CQN_CHUNK = 1000

/** OData sources that answered 400/501 to `in` (an OData 4.0 provider): `or` chains from then on. */
const rejectsIn = new WeakSet<object>()

type CustomReader = BaseSourceAdapter & { readByKeys(keys: DataRecord[]): Promise<DataRecord[]> }
const custom = (source: BaseSourceAdapter): source is CustomReader => typeof (source as Partial<CustomReader>).readByKeys === 'function'

/** Whether the source can read rows by key. */
export function readsByKey(source: BaseSourceAdapter): boolean {
  return source instanceof ODataSourceAdapter || (source instanceof CqnSourceAdapter && !source.pipeline.config.source.query) || custom(source)
}

/** The rows of `keys` (source names) the source still has; a key it no longer has is missing from the answer. */
export async function readByKeys(source: BaseSourceAdapter, keys: DataRecord[]): Promise<{ rows: DataRecord[]; requests: number }> {
  if (!keys.length) return { rows: [], requests: 0 }
  if (source instanceof ODataSourceAdapter) return readOData(source, keys)
  if (source instanceof CqnSourceAdapter) {
    const entity = source.entityDefinition()
    const names = entity ? keyNames(entity) : []
    const rows: DataRecord[] = []
    const parts = chunk(keys, names.length === 1 ? CQN_CHUNK : delegateSettings().keyChunkSize)
    for (const part of parts) rows.push(...await source.readWhere(keyPredicate(names, part.map(k => names.map(n => k[n])))))
    return { rows, requests: parts.length }
  }
  if (custom(source)) return { rows: await source.readByKeys(keys), requests: 1 }
  throw new PipelineError('NOT_SUPPORTED', `events: the source of pipeline '${source.pipeline.name}' (${source.constructor.name}) cannot read rows by key; use action 'payload' or implement readByKeys()`, { target: 'events' })
}

async function readOData(source: ODataSourceAdapter, keys: DataRecord[]): Promise<{ rows: DataRecord[]; requests: number }> {
  const names = source.keys()
  const settings = delegateSettings()
  const type = names.length === 1 ? source.elementType(names[0]) : undefined
  const literals = type ? keys.map(k => inListLiteral(k[names[0]], type)) : []
  if (source.odataVersion === 'v4' && !rejectsIn.has(source) && type && literals.every(l => l !== undefined)) {
    const chunks = chunkByLength(literals as string[], l => encodeURIComponent(l).length + 1, settings.keyListLength, settings.keyChunkLimit)
    try {
      const rows: DataRecord[] = []
      for (const list of chunks) rows.push(...await source.readWhere(inListFilter(names[0], list), list.length))
      return { rows, requests: chunks.length }
    } catch (error) {
      const status = statusOf(error)
      if (status !== 400 && status !== 501) throw error
      rejectsIn.add(source)
      LOG.info(`pipeline '${source.pipeline.name}': the provider answered ${status} to a key list sent as 'in'; key lists go out as 'or' chains from now on`)
    }
  }
  const rows: DataRecord[] = []
  const parts = chunk(keys, settings.keyChunkSize)
  for (const part of parts) {
    const filter: Predicate = { or: part.map(k => ({ and: names.map(n => ({ field: n, op: 'eq' as const, value: k[n] ?? null })) })) }
    rows.push(...await source.readWhere(filter))
  }
  return { rows, requests: parts.length }
}
