/** Run events and failure location (README "Run events"): the recorder, its settings and its writer. */
import cds from '@sap/cds'
import { LOGGER } from '../constants.js'
import type { RunRecorder } from './recorder.js'

export { RunRecorder, currentRun, elapsed } from './recorder.js'
export { runEventsSettings, RUN_EVENTS_DEFAULT_MAX, type RunEventsSettings } from './settings.js'
export { RUN_EVENT_KINDS, type RunEvent, type RunEventKind, type RunPhase } from './log.js'

const LOG = cds.log(LOGGER.engine)

/** Where the events go: the tracker's one INSERT of a run's events. */
export interface RunEventStore {
  recordEvents(rows: Array<Record<string, unknown>>): Promise<void>
}

/**
 * Writes a run's events, each once: while the run goes at most every `flushInterval` ms what is
 * new (one statement, so a running run's events can be followed), and the rest at its end. A
 * failure to write is logged once, never the run's.
 */
export class RunEventWriter {
  private stored = 0
  private last = performance.now()
  private warned = false

  constructor(private readonly store: RunEventStore, private readonly pipeline: string, private readonly runId: string, private readonly recorder: RunRecorder, private readonly flushInterval: number) {}

  /** While the run goes: writes the new events once `flushInterval` has passed since the last write. */
  async due(): Promise<void> {
    if (performance.now() - this.last >= this.flushInterval) await this.flush()
  }

  async flush(): Promise<void> {
    const events = this.recorder.log?.list()
    this.last = performance.now()
    if (!events || events.length <= this.stored) return
    const rows = events.slice(this.stored)
    try {
      await this.store.recordEvents(rows.map(event => ({ run_ID: this.runId, ...event })))
      this.stored += rows.length
    } catch (error) {
      if (!this.warned) LOG.warn(`pipeline '${this.pipeline}': the events of run ${this.runId} were not stored (is the tracker schema deployed with PipelineRunEvents?): ${(error as { code?: string }).code ?? (error as Error).name}`)
      this.warned = true
    }
  }
}
