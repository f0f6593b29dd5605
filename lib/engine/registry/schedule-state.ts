import type { ScheduleSpec } from '../../pipeline/types.js'
import type { SpawnTimer } from '../schedule/spawn-timer.js'

/** What runs live for one pipeline in this process (kept apart from its definition: no timer outlives a schedule change). */
export interface ScheduleState {
  timer?: SpawnTimer
  /** The schedule running live (spawn timer or queued task); differs from the effective one after a deferred queued change. */
  installed?: ScheduleSpec
  /** The schedule was applied live at least once in this process. */
  activated?: boolean
  /** Serialises schedule changes of this pipeline. */
  scheduling?: Promise<void>
  /** Spawn timers of tenants with a schedule of their own (fan-out). */
  tenantTimers?: Map<string, SpawnTimer>
}
