/**
 * Soft deletes (README "Deletes in delta mode"): a source row read with `delta.deletedField`
 * set — `true`, or any non-null value such as a deletion timestamp — is a delete, not data.
 * Such rows are taken out of their batch before MAP, and within the batch's transaction their
 * keys are deleted from the replica (`deletedAction: 'delete'`, the default) or the replica's
 * row keeps its data and gets the field set (`'flag'`). Only rows that really change count as
 * `deleted`: a key that is not (or no longer) in the replica, or a row already flagged, counts
 * nothing, so re-reading a deleted row at the watermark never inflates the statistics.
 *
 * Keys are translated to target names by the pipeline's field mapping (the target projection's
 * renames), not by `PIPELINE.MAP` handlers, which never see soft-deleted rows.
 */
import { PipelineError } from '../../pipeline/errors.js'
import { ORIGIN_COLUMN } from '../../adapters/target/base.js'
import { keyNames } from '../../model/csn.js'
import type { DataRecord } from '../../pipeline/types.js'
import type { PreparedPipeline } from '../run/types.js'
import type { WriteContext } from '../../adapters/types.js'

/** True for a set soft-delete field: `true`, `1`, a timestamp…; false for null, `false`, `0`, `''`, `'false'`, `'0'`. */
export function isDeletedValue(value: unknown): boolean {
  if (value === null || value === undefined || value === false || value === 0 || value === '') return false
  return !(typeof value === 'string' && /^(false|0)$/i.test(value))
}

export class SoftDeletes {
  private constructor(
    private readonly prepared: PreparedPipeline,
    private readonly field: string,
    /** Target key columns (origin excluded) and their source names. */
    private readonly keys: Array<{ target: string; source: string }>,
    /** `flag`: the target field carrying the mark; undefined: delete. */
    private readonly flagField: string | undefined,
  ) {}

  /** The soft-delete handling of a pipeline, or undefined when `delta.deletedField` is not set. */
  static of(prepared: PreparedPipeline): SoftDeletes | undefined {
    const { pipeline, source, target, mapping } = prepared
    const field = pipeline.delta?.deletedField
    if (!field) return undefined
    // the source must read the field even when the target has no column for it
    if (source.columns && !source.columns.includes(field)) source.columns = [...source.columns, field]
    const entity = target.entityDefinition()
    const origin = pipeline.config.source.origin
    const targetKeys = entity ? keyNames(entity).filter(k => origin === undefined || k !== ORIGIN_COLUMN) : []
    if (!targetKeys.length)
      throw new PipelineError('INVALID_CONFIG', `Invalid pipeline config: delta.deletedField needs a target with known keys (pipeline '${pipeline.name}')`, { target: 'delta.deletedField' })
    const sourceOf = (name: string) => mapping?.find(m => m.target === name)?.source ?? name
    const keys = targetKeys.map(k => ({ target: k, source: sourceOf(k) }))
    let flagField: string | undefined
    if (pipeline.delta?.deletedAction === 'flag') {
      flagField = mapping?.find(m => m.source === field)?.target ?? (entity?.elements[field] ? field : undefined)
      if (!flagField)
        throw new PipelineError('INVALID_CONFIG', `Invalid pipeline config: delta.deletedAction 'flag' needs a target element for '${field}' (target '${entity?.name ?? '?'}' has none)`, { target: 'delta.deletedAction' })
      if (!target.flagKeys) throw new PipelineError('INVALID_CONFIG', `Invalid pipeline config: delta.deletedAction 'flag' is not supported by the target of pipeline '${pipeline.name}' (database targets only)`, { target: 'delta.deletedAction' })
    } else if (!target.deleteKeys) {
      throw new PipelineError('INVALID_CONFIG', `Invalid pipeline config: delta.deletedField: the target of pipeline '${pipeline.name}' cannot delete by key (database and HCQL targets can)`, { target: 'delta.deletedField' })
    }
    return new SoftDeletes(prepared, field, keys, flagField)
  }

  /** Removes the soft-deleted records from `batch` (in place) and returns them. */
  take(batch: DataRecord[]): DataRecord[] {
    const gone: DataRecord[] = []
    let kept = 0
    for (const record of batch) {
      if (isDeletedValue(record[this.field])) gone.push(record)
      else batch[kept++] = record
    }
    batch.length = kept
    return gone
  }

  /** Deletes (or flags) the replica's rows of these soft-deleted source records; returns how many changed. */
  async apply(gone: DataRecord[], context: WriteContext): Promise<number> {
    if (!gone.length) return 0
    const { target } = this.prepared
    const keys = gone.map(record => Object.fromEntries(this.keys.map(k => [k.target, record[k.source] ?? null])))
    if (this.flagField) {
      // rows flagged with different values (timestamps) go one value at a time
      let changed = 0
      const byValue = new Map<string, { value: unknown; keys: DataRecord[] }>()
      gone.forEach((record, i) => {
        const value = record[this.field]
        const slot = byValue.get(JSON.stringify(value)) ?? { value, keys: [] }
        slot.keys.push(keys[i])
        byValue.set(JSON.stringify(value), slot)
      })
      for (const { value, keys: group } of byValue.values()) changed += await target.flagKeys!(group, this.flagField, value, context)
      return changed
    }
    return target.deleteKeys!(keys, context)
  }
}
