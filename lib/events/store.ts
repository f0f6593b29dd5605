/**
 * The keys waiting for their micro-batch, in the tracker table `PipelineEventKeys` (one row per
 * pipeline and key; a newer message replaces the row, so the last state wins). A message counts
 * as received once its row is stored: the handler awaits that, so CAP's inbox (`inboxed`) keeps
 * the message until then, and a crash after it loses nothing (the next drain finds the row).
 */
import cds from '@sap/cds'
import { randomUUID } from 'node:crypto'
import { TRACKER_NAMESPACE } from '../constants.js'
import { connect, ql } from '../model/ql.js'
import { chunk } from '../federation/delegate/keys.js'
import type { EventAction } from './config.js'
import { labelOf, slotOf, withinTenant } from './tenant.js'

const LOG = cds.log('data-pipeline|events')

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
  pipeline: string
  /** Whose database the keys go to (multitenancy); undefined: the provider's (or the only) one. */
  tenant?: string
  rows: Map<string, PendingKey>
  settled: Array<{ resolve: () => void; reject: (error: unknown) => void }>
}

/** Attempts of one write of waiting keys before its messages fail (a lock conflict or a busy pool is transient). */
const WRITE_ATTEMPTS = 6
/** Pause before the second attempt (doubling: about 8 s over all attempts). */
const WRITE_PAUSE = 250

/** How long a write of waiting keys gathers messages (ms): at most this much added to a message's handling. */
const GATHER = 10
/** Rows per DELETE of applied keys (two parameters each: far below SQLite's and PostgreSQL's limits). */
const REMOVE_CHUNK = 1000

/** A pause that does not keep the process alive (shutdown never waits for a retry). */
export const pause = (ms: number) => new Promise(resolve => setTimeout(resolve, ms).unref())

/** Rows in one order on every instance: concurrent UPSERTs of the same keys lock them alike and never deadlock. */
const ordered = (rows: Iterable<PendingKey>) => [...rows].sort((a, b) => (a.recordKey < b.recordKey ? -1 : a.recordKey > b.recordKey ? 1 : 0))

export class PendingKeys {
  /** Keys not yet written, per pipeline and tenant (written by its next write). */
  private readonly waiting = new Map<string, Waiting>()
  /** The write under way per pipeline and tenant: at most one at a time, keys arriving meanwhile gather for the next. */
  private readonly writing = new Map<string, Promise<void>>()

  /**
   * Stores the keys of one message; resolves once they are in the database. Keys of messages
   * arriving together are written as one UPSERT in a transaction of its own, one write per
   * pipeline at a time (a burst, or every instance receiving every message, costs a few
   * statements and one connection, not one per message); a failed write is tried again, so a
   * message without an inbox is not lost to a passing lock conflict. `inHandlerTransaction`:
   * written in the handler's own transaction instead, where CAP's inbox runs the handler inside
   * the transaction holding the task and that transaction holds the only connection (cds 9's
   * legacy locking on SQLite); the task then leaves the inbox together with the stored keys.
   * `tenant`: the keys go to that tenant's database, gathered and written apart from any other
   * tenant's (a tenant whose database fails holds no other back).
   */
  async put(pipeline: string, keys: Array<{ key: Record<string, unknown>; action: EventAction; payload?: unknown }>, eventTime: string, inHandlerTransaction = false, tenant?: string): Promise<void> {
    if (!keys.length) return
    const rows = keys.map(({ key, action, payload }): PendingKey => ({
      pipeline, recordKey: JSON.stringify(key), action, payload: payload === undefined ? null : JSON.stringify(payload), eventTime, version: randomUUID(),
    }))
    if (inHandlerTransaction) {
      const db = await connect('db')
      await db.run(ql.UPSERT.into(EVENT_KEYS_ENTITY).entries(ordered(new Map(rows.map(row => [row.recordKey, row])).values())))
      return
    }
    const slot = slotOf(pipeline, tenant)
    let waiting = this.waiting.get(slot)
    if (!waiting) {
      waiting = { pipeline, tenant, rows: new Map(), settled: [] }
      this.waiting.set(slot, waiting)
      if (!this.writing.has(slot)) this.schedule(slot)
    }
    for (const row of rows) waiting.rows.set(row.recordKey, row)
    const gathered = waiting
    return new Promise((resolve, reject) => gathered.settled.push({ resolve, reject }))
  }

  /**
   * The tenant unsubscribed: its keys not yet written are dropped (its database goes); their
   * messages end as handled, with a warning, since no retry could write them anywhere.
   */
  dropTenant(tenant: string): void {
    for (const [slot, waiting] of this.waiting) {
      if (waiting.tenant !== tenant) continue
      this.waiting.delete(slot)
      LOG.warn(`${labelOf(waiting.pipeline, tenant)}: the tenant unsubscribed; ${waiting.rows.size} event keys not stored are dropped`)
      for (const each of waiting.settled) each.resolve()
    }
  }

  /**
   * The next write of a pipeline, GATHER ms on: messages arriving meanwhile join it. One write per
   * turn of the event loop was one commit per message at a steady stream (Redis hands messages over
   * one by one), and a commit of a file SQLite blocks the process for its fsync.
   */
  private schedule(slot: string): void {
    const done = new Promise<void>(resolve => setTimeout(resolve, GATHER))
      .then(() => this.write(slot))
      .finally(() => {
        this.writing.delete(slot)
        if (this.waiting.has(slot)) this.schedule(slot)
      })
    this.writing.set(slot, done)
  }

  private async write(slot: string): Promise<void> {
    const waiting = this.waiting.get(slot)
    if (!waiting) return
    this.waiting.delete(slot)
    const { pipeline, tenant } = waiting
    const entries = ordered(waiting.rows.values())
    for (let attempt = 1, wait = WRITE_PAUSE; ; attempt++, wait *= 2) {
      try {
        // in the tenant's own context: CAP opens the transaction on that tenant's database
        await withinTenant(tenant, async () => {
          const db = await connect('db')
          await db.tx(tx => tx.run(ql.UPSERT.into(EVENT_KEYS_ENTITY).entries(entries)))
        })
        for (const each of waiting.settled) each.resolve()
        return
      } catch (error) {
        if ((error as { code?: string }).code === 'UNKNOWN_TENANT') {
          // unsubscribed meanwhile: nowhere to write them, and no retry changes that
          LOG.warn(`${labelOf(pipeline, tenant)}: the tenant unsubscribed; ${entries.length} event keys not stored are dropped`)
          for (const each of waiting.settled) each.resolve()
          return
        }
        if (attempt >= WRITE_ATTEMPTS) {
          for (const each of waiting.settled) each.reject(error)
          return
        }
        LOG.warn(`${labelOf(pipeline, tenant)}: ${entries.length} event keys not stored (${(error as Error).message}); trying again`)
        await pause(wait)
      }
    }
  }

  /** The oldest waiting keys of a pipeline (at most `limit`). */
  async take(pipeline: string, limit: number): Promise<PendingKey[]> {
    const db = await connect('db')
    return (await db.run(ql.SELECT.from(EVENT_KEYS_ENTITY).where({ pipeline }).orderBy('eventTime').limit(limit))) as PendingKey[]
  }

  /**
   * Removes the rows a batch applied, unless a newer message of the key replaced them meanwhile.
   * A version is written once, for one key: `version in (…)` names exactly the rows taken, and
   * `recordKey in (…)` lets the database find them by its primary key (pipeline, recordKey) rather
   * than testing every waiting row against a chain of pairs — a backlog made that quadratic.
   */
  async remove(pipeline: string, rows: PendingKey[], tx?: { run(query: unknown): Promise<unknown> }): Promise<void> {
    const runner = tx ?? await connect('db')
    for (const part of chunk(ordered(rows), REMOVE_CHUNK)) {
      await runner.run(ql.DELETE.from(EVENT_KEYS_ENTITY).where([
        { ref: ['pipeline'] }, '=', { val: pipeline },
        'and', { ref: ['recordKey'] }, 'in', { list: part.map(row => ({ val: row.recordKey })) },
        'and', { ref: ['version'] }, 'in', { list: part.map(row => ({ val: row.version })) },
      ] as never))
    }
  }
}
