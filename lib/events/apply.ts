/**
 * One micro-batch of a pipeline's event keys, written as a delta batch of a run is
 * (engine/run/index.ts): current rows fetched by key list, MAP, validation or the rejects of
 * `onError: 'skip'`, WRITE, soft deletes, all in one transaction. Keys the source no longer
 * returns and `delete` messages follow the pipeline's delete policy: `delta.deletedAction:
 * 'flag'` flags the replica's row, anything else deletes it. The watermark is never touched:
 * the scheduled delta run stays the safety net.
 */
import { EVENTS } from '../constants.js'
import { ORIGIN_COLUMN } from '../adapters/target/db.js'
import { keyNames, builtinType, type CsnElement } from '../model/csn.js'
import { connect, type QueryRunner } from '../model/ql.js'
import { SoftDeletes } from '../engine/deletes/soft-delete.js'
import { RunRejects } from '../engine/records/rejects.js'
import { validatorOf } from '../engine/records/index.js'
import { addStatistics } from '../engine/run/statistics.js'
import type { EventDispatcher, PreparedPipeline } from '../engine/run/types.js'
import { fieldPolicy, hiddenValuesOf, redactError } from '../security/hidden.js'
import { tupleId } from '../federation/delegate/keys.js'
import type { DataRecord } from '../pipeline/types.js'
import type { WriteContext, WriteStatistics } from '../adapters/types.js'
import type { PendingKey } from './store.js'
import { readByKeys } from './fetch.js'

export interface BatchOutcome {
  statistics: WriteStatistics
  /** Keys written or deleted. */
  applied: number
  /** Keys set aside (`onError: 'skip'`). */
  skipped: number
  /** Source requests of the batch. */
  fetched: number
}

/** Source key names of the pipeline (as messages name them, and the source's rows carry them). */
export function sourceKeys(prepared: PreparedPipeline): string[] {
  const entity = prepared.source.entityDefinition()
  if (entity) return keyNames(entity)
  const target = prepared.target.entityDefinition()
  const origin = prepared.pipeline.config.source.origin
  return target ? keyNames(target).filter(k => origin === undefined || k !== ORIGIN_COLUMN).map(k => prepared.mapping?.find(m => m.target === k)?.source ?? k) : []
}

/**
 * The elements of the source keys (by source name), for the type check of keys at receipt: the
 * source entity's, or (a source without a model entity, e.g. REST) the target's mapped ones.
 */
export function keyElements(prepared: PreparedPipeline): Record<string, CsnElement | undefined> {
  const source = prepared.source.entityDefinition()
  if (source) return Object.fromEntries(keyNames(source).map(k => [k, source.elements[k]]))
  const target = prepared.target.entityDefinition()
  const targetOf = (name: string) => prepared.mapping?.find(m => m.source === name)?.target ?? name
  return Object.fromEntries(sourceKeys(prepared).map(k => [k, target?.elements[targetOf(k)]]))
}

/** Writes one micro-batch; `done` runs in the same transaction (the batch's keys leave the waiting table with the write). */
export async function applyBatch(prepared: PreparedPipeline, rows: PendingKey[], batchId: string, dispatch: EventDispatcher, done: (tx: QueryRunner) => Promise<void>): Promise<BatchOutcome> {
  const { pipeline, source } = prepared
  const keys = sourceKeys(prepared)
  const upserts = rows.filter(r => r.action === 'upsert').map(r => JSON.parse(r.recordKey) as DataRecord)
  const records: DataRecord[] = rows.filter(r => r.action === 'payload' && r.payload).map(r => JSON.parse(r.payload!) as DataRecord)
  const gone: DataRecord[] = rows.filter(r => r.action === 'delete').map(r => JSON.parse(r.recordKey) as DataRecord)
  let fetched = 0
  if (upserts.length) {
    const { rows: found, requests } = await readByKeys(source, upserts)
    fetched = requests
    const present = new Set(found.map(row => tupleId(keys.map(k => row[k]))))
    for (const key of upserts) if (!present.has(tupleId(keys.map(k => key[k])))) gone.push(key)
    records.push(...found)
  }
  const softDeletes = SoftDeletes.of(prepared)
  const softGone = softDeletes?.take(records) ?? []
  const context: WriteContext = { runId: batchId, mode: 'delta', batchIndex: 0 }
  const statistics: WriteStatistics = { created: 0, updated: 0, deleted: 0 }
  let mapped: DataRecord[] = []
  const write = async (runner: QueryRunner) => {
    if (records.length) {
      if (pipeline.onError.mode === 'skip') {
        const rejects = new RunRejects({ ...prepared, runId: batchId, dispatch, stamp: list => stamp(list, pipeline.config.source.origin) })
        await rejects.start()
        addStatistics(statistics, await rejects.processBatch(records, 0, 'delta', runner))
      } else {
        const out = await dispatch(EVENTS.MAP, pipeline.name, { runId: batchId, batchIndex: 0, sourceRecords: records, targetRecords: [] })
        mapped = stamp(out.targetRecords as DataRecord[] | undefined, pipeline.config.source.origin)
        const entity = prepared.target.entityDefinition()
        if (entity) validatorOf(entity).assertValid(mapped, pipeline.name)
        if (mapped.length) {
          const written = await dispatch(EVENTS.WRITE, pipeline.name, { runId: batchId, batchIndex: 0, mode: 'delta', targetRecords: mapped, statistics: undefined })
          addStatistics(statistics, written.statistics as Partial<WriteStatistics> | undefined)
        }
      }
    }
    if (softGone.length) statistics.deleted += await softDeletes!.apply(softGone, context)
    if (gone.length) statistics.deleted += await deleteKeys(prepared, softDeletes, gone, context)
    await done(runner)
  }
  try {
    await (await connect('db')).tx(runner => write(runner))
  } catch (error) {
    // an error never quotes a hidden field's value (as in runs)
    throw redactError(error, hiddenValuesOf(fieldPolicy(prepared), records, mapped))
  }
  const skipped = statistics.skipped ?? 0
  return { statistics, applied: rows.length - skipped, skipped, fetched }
}

/** Keys gone at the source (or named by a `delete` message): flagged or deleted per the pipeline's policy. */
async function deleteKeys(prepared: PreparedPipeline, softDeletes: SoftDeletes | undefined, gone: DataRecord[], context: WriteContext): Promise<number> {
  const { pipeline, target, mapping } = prepared
  const field = pipeline.delta?.deletedField
  if (softDeletes && field && pipeline.delta?.deletedAction === 'flag') {
    const flag = mapping?.find(m => m.source === field)?.target ?? field
    const type = builtinType(target.entityDefinition()?.elements[flag])
    const value = type === 'cds.Boolean' ? true : new Date().toISOString()
    return softDeletes.apply(gone.map(key => ({ ...key, [field]: value })), context)
  }
  if (!target.deleteKeys) return 0
  const entity = target.entityDefinition()
  const origin = pipeline.config.source.origin
  const targetKeys = entity ? keyNames(entity).filter(k => origin === undefined || k !== ORIGIN_COLUMN) : []
  const sourceOf = (name: string) => mapping?.find(m => m.target === name)?.source ?? name
  return target.deleteKeys(gone.map(key => Object.fromEntries(targetKeys.map(k => [k, key[sourceOf(k)] ?? null]))), context)
}

function stamp(records: DataRecord[] | undefined, origin: string | undefined): DataRecord[] {
  const list = Array.isArray(records) ? records : []
  if (origin !== undefined) for (const record of list) record[ORIGIN_COLUMN] = origin
  return list
}
