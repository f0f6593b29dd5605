/**
 * Where a run starts reading: the tracker's watermark, or — for a delta run of a source read in
 * watermark order — the checkpoint an unfinished run left, plus a partial refresh's slice.
 */
import cds from '@sap/cds'
import { LOGGER, type RunMode } from '../../constants.js'
import { PipelineError } from '../../pipeline/errors.js'
import type { Watermark } from '../../adapters/watermark.js'
import type { TrackerState } from '../../adapters/types.js'
import type { ResolvedPipeline, SlicePredicate } from '../../pipeline/types.js'
import type { ReadPosition } from '../tracker/index.js'
import type { PreparedPipeline } from './types.js'

const LOG = cds.log(LOGGER.engine)

/** What a batch commits beside its writes (per-batch transactions): the run and how far it read. */
export interface Checkpoint extends Watermark {
  runId: string
}

/** The tracker state handed to the source: resumes from a checkpoint left by an unfinished run. */
export function startPosition(prepared: PreparedPipeline, mode: RunMode, row: ReadPosition): TrackerState {
  const { pipeline } = prepared
  const name = pipeline.name
  let { lastSync, lastKey } = row
  if (mode === 'delta' && row.checkpoint && prepared.source.readsInWatermarkOrder) {
    try {
      const checkpoint = JSON.parse(row.checkpoint) as Checkpoint
      if (checkpoint.lastSync && (!lastSync || Date.parse(checkpoint.lastSync) > Date.parse(lastSync))) lastSync = checkpoint.lastSync
      if (checkpoint.lastKey !== null && checkpoint.lastKey !== undefined) lastKey = checkpoint.lastKey
    } catch {
      LOG.warn(`pipeline '${name}': ignoring an unreadable checkpoint`)
    }
  }
  const state: TrackerState = { name, mode, lastSync: toIso(lastSync), lastKey }
  if (mode === 'partial-refresh') state.slice = resolveSlice(pipeline)
  return state
}

function resolveSlice(pipeline: ResolvedPipeline): SlicePredicate {
  const slice = pipeline.config.refresh?.slice
  const value = typeof slice === 'function' ? slice() : slice
  if (!value || typeof value !== 'object' || !Object.keys(value).length)
    throw new PipelineError('INVALID_PARAMETER', `partial-refresh needs refresh.slice on pipeline '${pipeline.name}' (the predicate of the rows to rebuild)`, { target: 'refresh.slice' })
  return value
}

export function toIso(value: string | null): string | null {
  if (!value) return null
  const time = Date.parse(value)
  return Number.isNaN(time) ? value : new Date(time).toISOString()
}
