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
 *
 * The deleted entries of an OData delta payload (`delta.mode: 'odata-delta'`, records carrying
 * `@removed`, see adapters/source/delta-links.ts) take the same path: deleted by key, or flagged
 * when `delta.deletedAction: 'flag'` names a field (`true` for a Boolean field, else the time of the run).
 * There `delta.deletedField` may name a field of the target only (the provider marks deletions
 * itself): it is then neither read from the source nor a soft-delete mark of source rows.
 */
import { PipelineError } from '../../pipeline/errors.js'
import { ORIGIN_COLUMN } from '../../adapters/target/base.js'
import { builtinType, keyNames } from '../../model/csn.js'
import { REMOVED } from '../../adapters/source/delta-links.js'
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
    /** The soft-delete field (`delta.deletedField`), if any. */
    private readonly field: string | undefined,
    /** Target key columns (origin excluded) and their source names. */
    private readonly keys: Array<{ target: string; source: string }>,
    /** `flag`: the target field carrying the mark; undefined: delete. */
    private readonly flagField: string | undefined,
  ) {}

  /** The soft-delete handling of a pipeline, or undefined when neither `delta.deletedField` is set nor the source delivers deleted entries (`odata-delta`). */
  static of(prepared: PreparedPipeline): SoftDeletes | undefined {
    const { pipeline, source, target, mapping } = prepared
    const field = pipeline.delta?.deletedField
    const removals = pipeline.delta?.mode === 'odata-delta'
    if (!field && !removals) return undefined
    const setting = field ? 'delta.deletedField' : 'delta.mode'
    const sourceEntity = source.entityDefinition()
    const fromSource = field !== undefined && (!removals || !sourceEntity || field in sourceEntity.elements)
    // the source must read the field even when the target has no column for it
    if (fromSource && source.columns && !source.columns.includes(field)) source.columns = [...source.columns, field]
    const entity = target.entityDefinition()
    const origin = pipeline.config.source.origin
    const targetKeys = entity ? keyNames(entity).filter(k => origin === undefined || k !== ORIGIN_COLUMN) : []
    if (!targetKeys.length)
      throw new PipelineError('INVALID_CONFIG', `Invalid pipeline config: ${setting} needs a target with known keys to apply deletes (pipeline '${pipeline.name}')`, { target: setting })
    const sourceOf = (name: string) => mapping?.find(m => m.target === name)?.source ?? name
    const keys = targetKeys.map(k => ({ target: k, source: sourceOf(k) }))
    let flagField: string | undefined
    if (field && pipeline.delta?.deletedAction === 'flag') {
      flagField = mapping?.find(m => m.source === field)?.target ?? (entity?.elements[field] ? field : undefined)
      if (!flagField)
        throw new PipelineError('INVALID_CONFIG', `Invalid pipeline config: delta.deletedAction 'flag' needs a target element for '${field}' (target '${entity?.name ?? '?'}' has none)`, { target: 'delta.deletedAction' })
      if (!target.flagKeys) throw new PipelineError('INVALID_CONFIG', `Invalid pipeline config: delta.deletedAction 'flag' is not supported by the target of pipeline '${pipeline.name}' (database targets only)`, { target: 'delta.deletedAction' })
    } else if (!target.deleteKeys) {
      throw new PipelineError('INVALID_CONFIG', `Invalid pipeline config: ${setting}: the target of pipeline '${pipeline.name}' cannot delete by key (database and HCQL targets can)${removals ? "; delta.mode 'odata-delta' applies the provider's deleted entries by key" : ''}`, { target: setting })
    }
    return new SoftDeletes(prepared, fromSource ? field : undefined, keys, flagField)
  }

  /** Removes the soft-deleted records from `batch` (in place) and returns them. */
  take(batch: DataRecord[]): DataRecord[] {
    const gone: DataRecord[] = []
    let kept = 0
    for (const record of batch) {
      if (record[REMOVED] !== undefined || (this.field !== undefined && isDeletedValue(record[this.field]))) gone.push(record)
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
      const removedMark = this.removedMark()
      gone.forEach((record, i) => {
        const value = record[REMOVED] !== undefined ? removedMark : record[this.field!]
        const slot = byValue.get(JSON.stringify(value)) ?? { value, keys: [] }
        slot.keys.push(keys[i])
        byValue.set(JSON.stringify(value), slot)
      })
      for (const { value, keys: group } of byValue.values()) changed += await target.flagKeys!(group, this.flagField, value, context)
      return changed
    }
    return target.deleteKeys!(keys, context)
  }

  /** The flag value of an entry the provider reports deleted (it carries no value of the field). */
  private removedMark(): unknown {
    const type = builtinType(this.prepared.target.entityDefinition()?.elements[this.flagField!])
    return type === 'cds.Boolean' ? true : new Date().toISOString()
  }
}
