/**
 * Read-ahead of a delta run (README "Performance"): the first page is requested while the run
 * guard is being taken, instead of after it. A no-change delta run is one small request whose
 * answer the provider needs a few milliseconds for; the guard's transaction (and the START and
 * READ events before the request) would otherwise be spent one after the other with it.
 *
 * The read starts from the tracker state this process left at the pipeline's last successful
 * run. It is used only when the guard finds exactly that state (same `lastSync`, `lastKey`,
 * checkpoint: the same query); otherwise it is dropped and the run reads as always. Taken only
 * where that is safe to do speculatively: delta runs of sources whose reads have no side effects
 * (OData, HCQL), with no application handler for the run's START or READ events (they may
 * change or replace the read).
 */
import cds from '@sap/cds'
import { EVENTS, SERVICE_NAME } from '../../constants.js'
import type { BaseSourceAdapter } from '../../adapters/source/base.js'
import type { DataRecord } from '../../pipeline/types.js'
import type { TrackerState } from '../../adapters/types.js'

/** Application handlers of a pipeline's events (built-ins and the plugin's observers excluded). */
export function applicationHooks(name: string): Array<{ phase: string; event: string }> {
  const engine = (cds.services as Record<string, unknown>)[SERVICE_NAME] as { registeredHooks?(name: string): Array<{ phase: string; event: string }> } | undefined
  try {
    return engine?.registeredHooks?.(name) ?? []
  } catch {
    return []
  }
}

/** Whether nothing but the plugin itself takes part in starting the pipeline's read. */
export function readMayStartEarly(name: string): boolean {
  return !applicationHooks(name).some(hook => hook.event === EVENTS.START || hook.event === EVENTS.READ)
}

export class ReadAhead {
  /** When the request went out: the earliest moment the provider may have answered it from. */
  readonly startedAt = new Date()
  private readonly iterator: AsyncIterator<DataRecord[]>
  private readonly first: Promise<IteratorResult<DataRecord[]>>
  /** Settles with the first page (never rejects): for `underway`. */
  readonly sent: Promise<unknown>
  /** The columns the read selected (a schema drift check may leave some out for the run). */
  private readonly columns: string[] | undefined

  constructor(private readonly source: BaseSourceAdapter, readonly state: TrackerState) {
    this.columns = source.columns
    this.iterator = source.readStream(state)[Symbol.asyncIterator]()
    this.first = this.iterator.next()
    this.sent = this.first.catch(() => undefined) // surfaced when the run takes the read; ignored when dropped
  }

  /** Whether the run, holding the guard, reads from the same state. */
  matches(state: TrackerState): boolean {
    return state.lastSync === this.state.lastSync && state.lastKey === this.state.lastKey && state.mode === this.state.mode
  }

  /**
   * The run's source stream: the read already under way, or a fresh one when the schema drift
   * check changed the columns to select since it went out.
   */
  async *stream(): AsyncGenerator<DataRecord[]> {
    if (this.source.columns !== this.columns) {
      this.drop()
      yield* this.source.readStream(this.state)
      return
    }
    yield* replay(await this.first, this.iterator)
  }

  /** Lets a read nobody takes end without holding anything open. */
  drop(): void {
    void this.first.then(() => this.iterator.return?.(), () => undefined).catch(() => undefined)
  }
}

/** The records of an iterator whose first result was already taken: that one, then the rest. */
export async function* replay<T>(first: IteratorResult<T>, iterator: AsyncIterator<T>): AsyncGenerator<T> {
  if (first.done) return
  let finished = false
  try {
    yield first.value
    for (;;) {
      const next = await iterator.next()
      if (next.done) {
        finished = true
        return
      }
      yield next.value
    }
  } finally {
    if (!finished) await iterator.return?.()
  }
}
