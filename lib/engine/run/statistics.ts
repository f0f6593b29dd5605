/**
 * A run's counts: how batch and write statistics add up, what a run reports of them, and the
 * live counters of this process's active runs (read by the management service's progress views).
 */
import type { WriteStatistics } from '../../adapters/types.js'
import type { RunProgress } from '../tracker/index.js'

/** Running totals of active runs in this process, for progress views of per-run transactions. */
export const liveStatistics = new Map<string, WriteStatistics>()
/** Progress of active runs in this process (README "Progress and freshness"), for the same views. */
export const liveProgress = new Map<string, RunProgress>()

/** Adds one statistics record to a total (`unchanged` and `skipped` only where reported). */
export function addStatistics(total: WriteStatistics, delta: Partial<WriteStatistics> | undefined): void {
  if (!delta) return
  total.created += Number(delta.created ?? 0)
  total.updated += Number(delta.updated ?? 0)
  total.deleted += Number(delta.deleted ?? 0)
  if (delta.unchanged) total.unchanged = (total.unchanged ?? 0) + Number(delta.unchanged)
  if (delta.skipped !== undefined) total.skipped = (total.skipped ?? 0) + Number(delta.skipped)
}

/** A run's statistics as reported (outcome, DONE): `unchanged` only where rows were found unchanged. */
export function outcomeStatistics(statistics: WriteStatistics): WriteStatistics {
  const { unchanged, ...rest } = statistics
  return unchanged ? { ...rest, unchanged } : rest
}
