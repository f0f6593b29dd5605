/** The shapes a run is made from and reports: prepared pipeline, request, dispatcher, outcome. */
import type { RunMode, RunTrigger } from '../../constants.js'
import type { ResolvedPipeline } from '../../pipeline/types.js'
import type { BaseSourceAdapter } from '../../adapters/source/base.js'
import type { BaseTargetAdapter } from '../../adapters/target/base.js'
import type { FieldMapping } from '../../adapters/mapping.js'
import type { WriteStatistics } from '../../adapters/types.js'

export interface RunOutcome {
  runId: string
  status: 'completed' | 'failed'
  statistics: WriteStatistics
}

/** What the engine keeps of a prepared pipeline between runs. */
export interface PreparedPipeline {
  pipeline: ResolvedPipeline
  source: BaseSourceAdapter
  target: BaseTargetAdapter
  mapping?: FieldMapping[]
}

/** Dispatches a pipeline event as a CAP request, so `before/on/after(event, pipeline, fn)` apply. */
export type EventDispatcher = (event: string, pipeline: string, data: Record<string, unknown>) => Promise<Record<string, unknown>>

export interface RunRequest {
  mode: RunMode
  trigger: RunTrigger
  /** Replays the pipeline's open rejects instead of reading the source (README "Rejected records"). */
  replay?: boolean
}
