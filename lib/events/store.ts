/**
 * The keys waiting for their micro-batch, in the tracker table `PipelineEventKeys` (one row per
 * pipeline and key; a newer message replaces the row, so the last state wins). A message counts
 * as received once its row is stored: the handler awaits that, so CAP's inbox (`inboxed`) keeps
 * the message until then, and a crash after it loses nothing (the next drain finds the row).
 */
import { randomUUID } from 'node:crypto'
import { TRACKER_NAMESPACE } from '../constants.js'
import { connect, ql } from '../model/ql.js'
import { chunk, keyPredicate } from '../federation/delegate/keys.js'
import type { EventAction } from './config.js'

export const EVENT_KEYS_ENTITY = `${TRACKER_NAMESPACE}.PipelineEventKeys` as const

export interface PendingKey {
  pipeline: string
  recordKey: string
  action: EventAction
  payload: string | null
  eventTime: string
  version: string
}

interface Waiting {
  rows: Map<string, PendingKey>
  settled: Array<{ resolve: () => void; reject: (error: unknown) => void }>
}

export class PendingKeys {
  /** Stores not yet written, per pipeline (written on the next turn of the event loop). */
  private readonly waiting = new Map<string, Waiting>()

  /**
   * Stores the keys of one message; resolves once they are in the database. Keys of messages
   * arriving together are written as one UPSERT in a transaction of its own (a burst costs a
   * few statements and connections, not one per message). `inHandlerTransaction`: written in the
   * handler's own transaction instead, where CAP's inbox runs the handler inside the transaction
   * holding the task and that transaction holds the only connection (cds 9's legacy locking on
   * SQLite); the task then leaves the inbox together with the stored keys.
   */
  async put(pipeline: string, keys: Array<{ key: Record<string, unknown>; action: EventAction; payload?: unknown }>, eventTime: string, inHandlerTransaction = false): Promise<void> {
    if (!keys.length) return
    const rows = keys.map(({ key, action, payload }): PendingKey => ({
      pipeline, recordKey: JSON.stringify(key), action, payload: payload === undefined ? null : JSON.stringify(payload), eventTime, version: randomUUID(),
    }))
    if (inHandlerTransaction) {
      const db = await connect('db')
      await db.run(ql.UPSERT.into(EVENT_KEYS_ENTITY).entries([...new Map(rows.map(row => [row.recordKey, row])).values()]))
      return
    }
    let waiting = this.waiting.get(pipeline)
    if (!waiting) {
      waiting = { rows: new Map(), settled: [] }
      this.waiting.set(pipeline, waiting)
      setImmediate(() => void this.write(pipeline))
    }
    for (const row of rows) waiting.rows.set(row.recordKey, row)
    const slot = waiting
    return new Promise((resolve, reject) => slot.settled.push({ resolve, reject }))
  }

  private async write(pipeline: string): Promise<void> {
    const waiting = this.waiting.get(pipeline)!
    this.waiting.delete(pipeline)
    try {
      const db = await connect('db')
      await db.tx(tx => tx.run(ql.UPSERT.into(EVENT_KEYS_ENTITY).entries([...waiting.rows.values()])))
      for (const each of waiting.settled) each.resolve()
    } catch (error) {
      for (const each of waiting.settled) each.reject(error)
    }
  }

  /** The oldest waiting keys of a pipeline (at most `limit`). */
  async take(pipeline: string, limit: number): Promise<PendingKey[]> {
    const db = await connect('db')
    return (await db.run(ql.SELECT.from(EVENT_KEYS_ENTITY).where({ pipeline }).orderBy('eventTime').limit(limit))) as PendingKey[]
  }

  /** Removes the rows a batch applied, unless a newer message of the key replaced them meanwhile. */
  async remove(pipeline: string, rows: PendingKey[], tx?: { run(query: unknown): Promise<unknown> }): Promise<void> {
    const runner = tx ?? await connect('db')
    for (const part of chunk(rows, 100)) {
      const tuples = part.map(row => [row.recordKey, row.version])
      await runner.run(ql.DELETE.from(EVENT_KEYS_ENTITY).where([{ ref: ['pipeline'] }, '=', { val: pipeline }, 'and', { xpr: keyPredicate(['recordKey', 'version'], tuples) }] as never))
    }
  }
}
