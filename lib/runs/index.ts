/** Run events and failure location (README "Run events"): the recorder, its settings and its store. */
import cds from '@sap/cds'
import { LOGGER } from '../constants.js'
import type { RunRecorder } from './recorder.js'

export { RunRecorder, currentRun, elapsed } from './recorder.js'
export { runEventsMax, RUN_EVENTS_DEFAULT_MAX } from './settings.js'
export { RUN_EVENT_KINDS, type RunEvent, type RunEventKind, type RunPhase } from './log.js'

const LOG = cds.log(LOGGER.engine)

/** Where the events go: the tracker's one INSERT of a run's events. */
export interface RunEventStore {
  recordEvents(rows: Array<Record<string, unknown>>): Promise<void>
}

/** Writes a run's events in one statement; a failure is logged, never the run's. */
export async function storeRunEvents(store: RunEventStore, pipeline: string, runId: string, recorder: RunRecorder): Promise<void> {
  const events = recorder.log?.list()
  if (!events?.length) return
  try {
    await store.recordEvents(events.map(event => ({ run_ID: runId, ...event })))
  } catch (error) {
    LOG.warn(`pipeline '${pipeline}': the events of run ${runId} were not stored (is the tracker schema deployed with PipelineRunEvents?): ${(error as { code?: string }).code ?? (error as Error).name}`)
  }
}
