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
import diagnostics from 'node:diagnostics_channel'
import cds from '@sap/cds'
import { EVENTS, SERVICE_NAME } from '../constants.js'
import type { BaseSourceAdapter } from '../adapters/source/base.js'
import type { DataRecord } from '../pipeline/types.js'
import type { TrackerState } from '../adapters/types.js'

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

/** Undici's (Node's fetch, CAP's native-fetch client) public channels: a request created, its headers written to the socket. */
const requestCreated = diagnostics.channel('undici:request:create')
const headersSent = diagnostics.channel('undici:client:sendHeaders')

interface UndiciMessage {
  request?: object
}

/**
 * Lets a read just started actually go out before the caller runs synchronous database work
 * (the write of the current batch, the run guard). A remote service puts its request on the
 * wire only some event-loop turns after `send()`, while database writes such as node:sqlite's
 * run synchronously: started right away, the write would hold the request back until it ends,
 * and read and write would take turns instead of overlapping.
 *
 * Ends as soon as the first request created after the call has its headers on the socket
 * (Node's fetch reports that on its diagnostics channels), or once `next` settles (in-process
 * sources). Other clients (the SAP Cloud SDK's) report nothing there: for them a few turns,
 * then at most ~1 ms.
 */
export async function underway(next: Promise<unknown>): Promise<void> {
  let ours: object | undefined
  let wentOut: () => void = () => undefined
  const sent = new Promise<void>(resolve => { wentOut = resolve })
  const onCreated = (message: unknown) => { ours ??= (message as UndiciMessage).request }
  const onSent = (message: unknown) => {
    if (ours === undefined || (message as UndiciMessage).request === ours) wentOut()
  }
  requestCreated.subscribe(onCreated)
  headersSent.subscribe(onSent)
  let over = false
  let timer: NodeJS.Timeout | undefined
  const fallback = async () => {
    for (let i = 0; i < 8 && !over; i++) await new Promise<void>(resolve => setImmediate(resolve))
    if (!over) await new Promise<void>(resolve => { timer = setTimeout(resolve, 1) })
  }
  try {
    await Promise.race([sent, next.then(() => undefined, () => undefined), fallback()])
  } finally {
    over = true
    clearTimeout(timer)
    requestCreated.unsubscribe(onCreated)
    headersSent.unsubscribe(onSent)
  }
}
