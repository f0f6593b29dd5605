/**
 * The keys waiting for their micro-batch, in the tracker table `PipelineEventKeys` (one row per
 * pipeline and key; a newer message replaces the row, so the last state wins). A message counts
 * as received once its row is stored, in the handler's transaction: CAP's inbox (`inboxed`) keeps
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

export class PendingKeys {
  /**
   * Stores the keys of one message in the handler's transaction: CAP commits it with the
   * handler, and with `inboxed` (on cds 9's legacy locking: in the very transaction that holds
   * the inbox task) the task leaves the inbox together with the stored keys.
   */
  async put(pipeline: string, keys: Array<{ key: Record<string, unknown>; action: EventAction; payload?: unknown }>, eventTime: string): Promise<void> {
    if (!keys.length) return
    const rows = new Map<string, PendingKey>()
    for (const { key, action, payload } of keys) {
      const recordKey = JSON.stringify(key)
      rows.set(recordKey, { pipeline, recordKey, action, payload: payload === undefined ? null : JSON.stringify(payload), eventTime, version: randomUUID() })
    }
    const db = await connect('db')
    await db.run(ql.UPSERT.into(EVENT_KEYS_ENTITY).entries([...rows.values()]))
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
