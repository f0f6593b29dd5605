/**
 * The keys waiting for their micro-batch, in the tracker table `PipelineEventKeys` (one row per
 * pipeline and key; a newer message replaces the row, so the last state wins). A message counts
 * as received once its row is stored: the handler awaits that, so CAP's inbox (`inboxed`) keeps
 * the message until then, and a crash after it loses nothing (the next drain finds the row).
 *
 * Every instance receives every message (broker fan-out) and stores its keys. A message with an
 * identity (CloudEvents `id`; `@federation.emit` sends one) stores each key under a version derived
 * from that identity, so the copies of one message are one row: a copy finding its version stored
 * (waiting, or applied and kept as a tombstone for TOMBSTONE_KEEP) writes nothing, and the key is
 * applied once. Without an identity each copy gets a random version, as before.
 */
import cds from '@sap/cds'
import { createHash, randomUUID } from 'node:crypto'
import { TRACKER_NAMESPACE } from '../constants.js'
import { connect, forUpdate, ql } from '../model/ql.js'
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
  /** Set once applied, for a row with a derived version: a tombstone a late copy of its message finds. */
  appliedAt?: string | null
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
/** Writes that met rows other instances stored meanwhile, read again at once before they count as failed attempts. */
const WRITE_CONFLICTS = 20
/** Pause before the second attempt (doubling: about 8 s over all attempts). */
const WRITE_PAUSE = 250

/** How long a write of waiting keys gathers messages (ms): at most this much added to a message's handling. */
const GATHER = 10
/** Rows per DELETE of applied keys (two parameters each: far below SQLite's and PostgreSQL's limits). */
const REMOVE_CHUNK = 1000

/**
 * How long this instance remembers when it received (or first saw) a key, at least (ms); ten windows
 * when that is longer. A key still waiting after that counts as seen anew: it waits one more window.
 */
const RECEIPT_KEEP = 10_000

/** How long an applied row of an identified message stays as a tombstone: fan-out copies arrive within seconds. */
const TOMBSTONE_KEEP = 60_000
/** How often a pipeline's old tombstones are removed (at most). */
const PURGE_EVERY = 10_000

/**
 * The version of the `index`-th key of a message with `identity`: the same on every instance that
 * receives a copy, in the UUID form of the column, with the version digit 5 (name-based) where
 * randomUUID() has 4 — which is how a derived version is told apart (isDerived).
 */
export function derivedVersion(identity: string, index: number): string {
  const hex = createHash('sha256').update(`${identity}#${index}`).digest('hex')
  const variant = ((parseInt(hex[16], 16) & 0x3) | 0x8).toString(16)
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-5${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`
}

const isDerived = (row: PendingKey) => row.version[14] === '5'

/** Whether a message of a key at `next` may replace the one at `current`: never an older by a newer (a late fan-out copy). */
const notOlder = (next: { eventTime: string }, current: { eventTime: string }) => Date.parse(current.eventTime) <= Date.parse(next.eventTime)

/** The pipeline and the tenant whose database the current step runs in (the batcher's `withinTenant`). */
const tombstoneSlot = (pipeline: string) => slotOf(pipeline, (cds.context as { tenant?: string } | undefined)?.tenant)

type Runner = { run(query: unknown): Promise<unknown> }

/**
 * Writes waiting keys, leaving out those whose row already holds the same derived version (a copy
 * of a message another instance stored — still waiting: writing it again changes nothing — or
 * already applied: its tombstone; writing it would apply it again) or a newer message of the key
 * (a late copy of an older message never replaces a newer state). The rows read are locked (on
 * databases that lock rows) so a concurrent copy cannot slip in between the read and the write.
 */
export async function storeKeys(runner: Runner, pipeline: string, entries: PendingKey[]): Promise<void> {
  const stored = new Map<string, { version: string; eventTime: string }>()
  for (const part of chunk(entries, REMOVE_CHUNK)) {
    const rows = (await runner.run(forUpdate(ql.SELECT.from(EVENT_KEYS_ENTITY).columns('recordKey', 'version', 'eventTime').where([
      { ref: ['pipeline'] }, '=', { val: pipeline },
      'and', { ref: ['recordKey'] }, 'in', { list: part.map(row => ({ val: row.recordKey })) },
    ] as never).orderBy('recordKey')))) as Array<{ recordKey: string; version: string; eventTime: string }>
    for (const row of rows) stored.set(row.recordKey, row)
  }
  const replacing: PendingKey[] = []
  const adding: PendingKey[] = []
  for (const row of entries) {
    const current = stored.get(row.recordKey)
    if (!current) adding.push(row)
    else if (current.version !== row.version && notOlder(row, current)) replacing.push(row)
  }
  if (replacing.length) await runner.run(ql.UPSERT.into(EVENT_KEYS_ENTITY).entries(replacing))
  // INSERT, not UPSERT: a row absent when read is not locked, and another instance may have stored,
  // applied and kept it as a tombstone since; an UPSERT would make that key wait (and be fetched)
  // again. The INSERT fails on such a row instead (isConflict), and the write reads again
  if (adding.length) await runner.run(ql.INSERT.into(EVENT_KEYS_ENTITY).entries(adding))
}

/** A key row another instance inserted between this write's read and its INSERT (PostgreSQL 23505, SQLite's UNIQUE constraint). */
export function isConflict(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown }
  return code === '23505' || code === 'UNIQUE_CONSTRAINT_VIOLATION' || /^SQLITE_CONSTRAINT_(PRIMARYKEY|UNIQUE)$/.test(String(code)) || /UNIQUE constraint failed|duplicate key value/.test(String(message))
}

/** A pause that does not keep the process alive (shutdown never waits for a retry). */
export const pause = (ms: number) => new Promise(resolve => setTimeout(resolve, ms).unref())

/** Rows in one order on every instance: concurrent UPSERTs of the same keys lock them alike and never deadlock. */
const ordered = (rows: Iterable<PendingKey>) => [...rows].sort((a, b) => (a.recordKey < b.recordKey ? -1 : a.recordKey > b.recordKey ? 1 : 0))

export class PendingKeys {
  /** Keys not yet written, per pipeline and tenant (written by its next write). */
  private readonly waiting = new Map<string, Waiting>()
  /** The write under way per pipeline and tenant: at most one at a time, keys arriving meanwhile gather for the next. */
  private readonly writing = new Map<string, Promise<void>>()
  /** When each pipeline's (and tenant's) old tombstones were last removed; only pipelines this instance left tombstones of. */
  private readonly purged = new Map<string, number>()
  /** Per pipeline and tenant: when this instance last received each key (ms), oldest first. */
  private readonly receipts = new Map<string, Map<string, number>>()
  /** Per pipeline: how long its receipts are kept (ms). */
  private readonly receiptKeep = new Map<string, number>()

  /** The pipeline's micro-batches wait `window` ms: its receipts are kept ten windows (at least RECEIPT_KEEP). */
  receiptsFor(pipeline: string, window: number): void {
    this.receiptKeep.set(pipeline, Math.max(RECEIPT_KEEP, 10 * window))
  }

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
  async put(pipeline: string, keys: Array<{ key: Record<string, unknown>; action: EventAction; payload?: unknown }>, eventTime: string, inHandlerTransaction = false, tenant?: string, identity?: string): Promise<void> {
    if (!keys.length) return
    this.received(pipeline, tenant, keys.map(({ key }) => JSON.stringify(key)))
    const rows = keys.map(({ key, action, payload }, index): PendingKey => ({
      pipeline, recordKey: JSON.stringify(key), action, payload: payload === undefined ? null : JSON.stringify(payload), eventTime,
      version: identity === undefined ? randomUUID() : derivedVersion(identity, index), appliedAt: null,
    }))
    if (inHandlerTransaction) {
      await storeKeys(await connect('db'), pipeline, ordered(new Map(rows.map(row => [row.recordKey, row])).values()))
      return
    }
    const slot = slotOf(pipeline, tenant)
    let waiting = this.waiting.get(slot)
    if (!waiting) {
      waiting = { pipeline, tenant, rows: new Map(), settled: [] }
      this.waiting.set(slot, waiting)
      if (!this.writing.has(slot)) this.schedule(slot)
    }
    // the newer message of a key wins, whichever arrived last (a late fan-out copy of an older one)
    for (const row of rows) {
      const gathered = waiting.rows.get(row.recordKey)
      if (!gathered || notOlder(row, gathered)) waiting.rows.set(row.recordKey, row)
    }
    const gathered = waiting
    return new Promise((resolve, reject) => gathered.settled.push({ resolve, reject }))
  }

  /**
   * When this instance received a waiting key (ms; its last message) — or, a key it has not
   * received (yet: a message reaches the instances of a broker's fan-out at different times, the
   * more so on a busy machine; or never: another instance's, one a previous process stored), when
   * it first saw the key waiting: now. Never the message's time, which says nothing of when the
   * instances got it (seconds earlier when the provider lags). Every instance receives every
   * message at about the same time, so each can tell from the oldest waiting key alone whether its
   * window has passed, and none sooner than the one that received it first.
   */
  receivedAt(pipeline: string, recordKey: string, tenant?: string): number {
    const at = this.receipts.get(slotOf(pipeline, tenant))?.get(recordKey)
    if (at !== undefined) return at
    this.received(pipeline, tenant, [recordKey])
    return Date.now()
  }

  private received(pipeline: string, tenant: string | undefined, recordKeys: string[]): void {
    const slot = slotOf(pipeline, tenant)
    let receipts = this.receipts.get(slot)
    if (!receipts) this.receipts.set(slot, receipts = new Map())
    const now = Date.now()
    const keep = this.receiptKeep.get(pipeline) ?? RECEIPT_KEEP
    // delete first: a Map keeps the order of first insertion, and the oldest must stay first
    for (const recordKey of recordKeys) {
      receipts.delete(recordKey)
      receipts.set(recordKey, now)
    }
    for (const [recordKey, at] of receipts) {
      if (now - at < keep) break
      receipts.delete(recordKey)
    }
  }

  /**
   * The tenant unsubscribed: its keys not yet written are dropped (its database goes); their
   * messages end as handled, with a warning, since no retry could write them anywhere.
   */
  dropTenant(tenant: string): void {
    for (const slot of this.receipts.keys()) if (slot.startsWith(`${tenant}\u0000`)) this.receipts.delete(slot)
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
    for (let attempt = 1, wait = WRITE_PAUSE, conflicts = 0; ;) {
      try {
        // in the tenant's own context: CAP opens the transaction on that tenant's database
        await withinTenant(tenant, async () => {
          const db = await connect('db')
          await db.tx(tx => storeKeys(tx, pipeline, entries))
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
        // another instance stored a copy of the same message meanwhile: expected with fan-out, read again at once
        if (isConflict(error) && ++conflicts <= WRITE_CONFLICTS) {
          if (LOG._debug) LOG.debug(`${labelOf(pipeline, tenant)}: ${entries.length} event keys met rows another instance stored; reading again`)
          continue
        }
        if (attempt >= WRITE_ATTEMPTS) {
          for (const each of waiting.settled) each.reject(error)
          return
        }
        LOG.warn(`${labelOf(pipeline, tenant)}: ${entries.length} event keys not stored (${(error as Error).message}); trying again`)
        await pause(wait)
        attempt++
        wait *= 2
      }
    }
  }

  /** The oldest waiting key of a pipeline (tombstones do not count) other than `except`; undefined when none waits. */
  async oldest(pipeline: string, except: ReadonlySet<string> = new Set()): Promise<Pick<PendingKey, 'recordKey' | 'eventTime'> | undefined> {
    const db = await connect('db')
    const rows = (await db.run(ql.SELECT.from(EVENT_KEYS_ENTITY).columns('recordKey', 'eventTime').where([
      { ref: ['pipeline'] }, '=', { val: pipeline }, 'and', { ref: ['appliedAt'] }, 'is', 'null',
    ] as never).orderBy('eventTime').limit(1 + except.size))) as Array<Pick<PendingKey, 'recordKey' | 'eventTime'>>
    return rows.find(row => !except.has(row.recordKey))
  }

  /** The waiting rows of the keys `recordKeys` (those still waiting). */
  async takeKeys(pipeline: string, recordKeys: string[]): Promise<PendingKey[]> {
    const db = await connect('db')
    const rows: PendingKey[] = []
    for (const part of chunk(recordKeys, REMOVE_CHUNK)) {
      rows.push(...(await db.run(ql.SELECT.from(EVENT_KEYS_ENTITY).where([
        { ref: ['pipeline'] }, '=', { val: pipeline }, 'and', { ref: ['appliedAt'] }, 'is', 'null',
        'and', { ref: ['recordKey'] }, 'in', { list: part.map(recordKey => ({ val: recordKey })) },
      ] as never).orderBy('eventTime'))) as PendingKey[])
    }
    return rows
  }

  /**
   * The oldest waiting keys of a pipeline (at most `limit`) other than `except` (keys held back for
   * their retry: few); removes its tombstones older than TOMBSTONE_KEEP now and then.
   */
  async take(pipeline: string, limit: number, except: ReadonlySet<string> = new Set()): Promise<PendingKey[]> {
    const db = await connect('db')
    const slot = tombstoneSlot(pipeline)
    const since = this.purged.get(slot)
    if (since !== undefined && Date.now() - since >= PURGE_EVERY) {
      this.purged.set(slot, Date.now())
      await db.run(ql.DELETE.from(EVENT_KEYS_ENTITY).where([
        { ref: ['pipeline'] }, '=', { val: pipeline }, 'and', { ref: ['appliedAt'] }, '<', { val: new Date(Date.now() - TOMBSTONE_KEEP).toISOString() },
      ] as never))
    }
    const rows = (await db.run(ql.SELECT.from(EVENT_KEYS_ENTITY).where([
      { ref: ['pipeline'] }, '=', { val: pipeline }, 'and', { ref: ['appliedAt'] }, 'is', 'null',
    ] as never).orderBy('eventTime').limit(limit + except.size))) as PendingKey[]
    return (except.size ? rows.filter(row => !except.has(row.recordKey)) : rows).slice(0, limit)
  }

  /**
   * Removes the rows a batch applied, unless a newer message of the key replaced them meanwhile;
   * rows of identified messages stay as tombstones (`appliedAt`) for late copies to find.
   * A version is written for one key only: `version in (…)` names exactly the rows taken, and
   * `recordKey in (…)` lets the database find them by its primary key (pipeline, recordKey) rather
   * than testing every waiting row against a chain of pairs — a backlog made that quadratic.
   */
  async remove(pipeline: string, rows: PendingKey[], tx?: Runner): Promise<void> {
    const runner = tx ?? await connect('db')
    const appliedAt = new Date().toISOString()
    const slot = tombstoneSlot(pipeline)
    if (!this.purged.has(slot) && rows.some(isDerived)) this.purged.set(slot, Date.now())
    for (const part of chunk(ordered(rows), REMOVE_CHUNK)) {
      for (const [derived, list] of [[false, part.filter(row => !isDerived(row))], [true, part.filter(isDerived)]] as const) {
        if (!list.length) continue
        const where = [
          { ref: ['pipeline'] }, '=', { val: pipeline },
          'and', { ref: ['recordKey'] }, 'in', { list: list.map(row => ({ val: row.recordKey })) },
          'and', { ref: ['version'] }, 'in', { list: list.map(row => ({ val: row.version })) },
        ] as never
        await runner.run(derived ? ql.UPDATE.entity(EVENT_KEYS_ENTITY).set({ appliedAt }).where(where) : ql.DELETE.from(EVENT_KEYS_ENTITY).where(where))
      }
    }
  }
}
