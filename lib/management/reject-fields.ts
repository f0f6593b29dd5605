/**
 * Rejected records as the management service answers them: hidden fields are stripped when a
 * reject is stored (engine/records/rejects.ts); rows stored before that are stripped here too, also when
 * expanded from a run or a pipeline. Sensitive fields read are audited (SensitiveDataRead).
 */
import { fieldPolicy } from '../security/hidden.js'
import { auditRejectRead, storedWithout } from '../security/reject-records.js'
import type { PreparedPipeline } from '../engine/run/types.js'

/** The part of the registry this needs. */
export interface PreparedPipelines {
  has(name: string): boolean
  prepare(name: string): Promise<PreparedPipeline>
}

/** Strips hidden fields of PipelineRejects rows (`pipeline` names theirs when the rows do not). */
export async function hideRejectFields(registry: PreparedPipelines, rows: unknown, pipeline?: unknown): Promise<void> {
  for (const row of (Array.isArray(rows) ? rows : [rows]) as Array<Record<string, unknown> | undefined>) {
    const name = row?.pipeline_name ?? pipeline
    if (!row || typeof name !== 'string' || (typeof row.record !== 'string' && typeof row.mapped !== 'string')) continue
    const prepared = registry.has(name) ? await registry.prepare(name).catch(() => undefined) : undefined
    const policy = prepared && fieldPolicy(prepared)
    row.record = storedWithout(row.record, policy?.hidden.source)
    row.mapped = storedWithout(row.mapped, policy?.hidden.target)
    if (policy) auditRejectRead(row, policy, prepared.target.entityDefinition()?.name ?? name)
  }
}

/** The same for rejects expanded from runs or pipelines (`$expand=rejects`). */
export async function hideExpandedRejectFields(registry: PreparedPipelines, rows: unknown, pipelineOf: (row: Record<string, unknown>) => unknown): Promise<void> {
  for (const row of (Array.isArray(rows) ? rows : [rows]) as Array<Record<string, unknown> | undefined>)
    if (row && Array.isArray(row.rejects)) await hideRejectFields(registry, row.rejects, pipelineOf(row))
}
