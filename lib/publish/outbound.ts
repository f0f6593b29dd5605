/**
 * The messages `@federation.emit` sends for one transaction. The keys of its changes are gathered
 * and emitted together when it commits: consecutive changes of one topic (the 50 UPDATEs of a
 * batch, a bulk UPDATE's rows) become one message whose `data` is the array of their keys, at most
 * `emit.keysPerMessage` keys each; a message with one key carries it as before, `{ ID: 42 }`. Each
 * message has an `id` header (as CloudEvents do). A
 * topic change starts a new message, so the messages keep the order of the changes (Created,
 * Deleted, Created of one key stays three messages).
 *
 * On an outboxed messaging service (CAP's default for redis-, enterprise-messaging, kafka, …) the
 * messages are written into CAP's outbox when the transaction is about to commit (the context's
 * `commit` event, before the database commits), so they commit with the changes or not at all; a
 * crash after the commit loses nothing, CAP sends them on restart. One outbox entry per message
 * rather than per row is what lets a provider publish a thousand changes per second. Without the
 * outbox they are emitted once the transaction succeeded (not retried).
 */
import cds from '@sap/cds'
import { randomUUID } from 'node:crypto'
import { EMIT, LOGGER, SERVICE_NAME } from '../constants.js'
import { invalidConfig } from '../pipeline/errors.js'
import type { Keys } from './keys.js'
import { isQueued } from '../model/queued.js'
import { connectTo } from '../cap/index.js'

const LOG = cds.log(LOGGER.emit)

interface Messaging {
  emit(message: { event: string; data: object; headers: Record<string, string> }): Promise<unknown>
}

/** The root context of a transaction, as CAP hands it to handlers (`req.context`). */
export interface TxContext {
  context?: TxContext
  once?(event: 'commit' | 'succeeded' | 'done', fn: () => unknown): unknown
}

/** Consecutive changes of one topic on one messaging service. */
interface Run {
  messaging: Messaging
  queued: boolean
  event: string
  time: string
  keys: Keys[]
}

const gathered = new WeakMap<object, Run[]>()

/** `cds.requires['data-pipeline'].emit.keysPerMessage`: most keys per message (1: one message per row). */
export function keysPerMessage(): number {
  const entry = (cds.env.requires as Record<string, { emit?: unknown } | undefined>)[SERVICE_NAME]
  const setting = entry?.emit
  if (setting === undefined || setting === null) return EMIT.keysPerMessage
  if (typeof setting !== 'object' || Array.isArray(setting)) throw invalidConfig('emit', 'must be an object { keysPerMessage }')
  const { keysPerMessage: value = EMIT.keysPerMessage, ...rest } = setting as Record<string, unknown>
  const unknown = Object.keys(rest)[0]
  if (unknown) throw invalidConfig(`emit.${unknown}`, 'is unknown; emit has keysPerMessage')
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 10_000) throw invalidConfig('emit.keysPerMessage', `must be an integer between 1 and 10000, got ${JSON.stringify(value)}`)
  return value
}

/** The messages of a run, at most `perMessage` keys each: `data` the array of their keys, or the keys themselves for a lone key. */
export function messagesOf(event: string, keys: Keys[], time: string, perMessage: number): Array<{ event: string; data: object; headers: Record<string, string> }> {
  const messages = []
  for (let i = 0; i < keys.length; i += perMessage) {
    const part = keys.slice(i, i + perMessage)
    // `id`: the consumers' instances each receive the message and store its keys once (lib/events/store.ts);
    // set here, not by CAP at sending, so the outbox sends the same id again on a retry
    messages.push({ event, data: part.length === 1 ? part[0] : part, headers: { id: randomUUID(), time } })
  }
  return messages
}

async function emitRuns(runs: Run[], failSoft: boolean): Promise<void> {
  const perMessage = keysPerMessage()
  for (const run of runs) {
    for (const message of messagesOf(run.event, run.keys, run.time, perMessage)) {
      if (!failSoft) {
        await run.messaging.emit(message)
        continue
      }
      try {
        await run.messaging.emit(message)
      } catch (error) {
        LOG.error(`emitting '${message.event}' failed: ${(error as Error).message}`)
      }
    }
  }
}

/**
 * Adds the keys of one change to its transaction's messages. Without a transaction context to
 * wait for (a change outside any), they are emitted at once.
 */
export async function gather(serviceName: string, context: TxContext | undefined, timestamp: Date | undefined, event: string, keys: Keys[]): Promise<void> {
  if (!keys.length) return
  const messaging = await connectTo<Messaging>(serviceName)
  const run: Run = { messaging, queued: isQueued(messaging), event, time: (timestamp instanceof Date ? timestamp : new Date()).toISOString(), keys: [...keys] }
  const root = context?.context ?? context
  if (!root || typeof root.once !== 'function') return emitRuns([run], !run.queued)
  let runs = gathered.get(root)
  if (!runs) {
    const list: Run[] = (runs = [])
    gathered.set(root, list)
    // `commit`: the database transaction is still open, so the outbox entries commit with the changes
    root.once('commit', () => emitRuns(list.filter(r => r.queued), false))
    root.once('succeeded', () => emitRuns(list.filter(r => !r.queued), true))
    root.once('done', () => {
      // emptied too: a listener left on a rolled-back context must never send its changes
      list.length = 0
      gathered.delete(root)
    })
  }
  const last = runs[runs.length - 1]
  if (last && last.messaging === messaging && last.event === event) last.keys.push(...keys)
  else runs.push(run)
}
