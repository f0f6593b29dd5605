/**
 * Wiring a pipeline to CAP messaging: `cds.connect.to(events.service)` as the app configured it
 * (local, file-based, Redis, Event Mesh with `format: 'cloudevents'`, `inboxed` or not) and
 * `srv.on(topic, handler)` per topic. Nothing of a broker is written here. A handler stores the
 * keys its message names (store.ts) and returns once they are stored, so CAP's inbox keeps the
 * message until then.
 */
import cds from '@sap/cds'
import { invalidConfig } from '../pipeline/errors.js'
import { isListening } from '../lifecycle.js'
import type { DataRecord } from '../pipeline/types.js'
import type { EventAction, ResolvedEvents, ResolvedTopic } from './config.js'
import { isQueued } from '../model/queued.js'
import { keyProblem } from '../engine/records/index.js'
import type { CsnElement } from '../model/csn.js'

const LOG = cds.log('data-pipeline|events')

/** What a handler gets from CAP: the message's data and headers (CloudEvents attributes with `format: 'cloudevents'`). */
export interface InboundMessage {
  event?: string
  data?: unknown
  headers?: Record<string, unknown>
}

export interface MessagingService {
  name?: string
  on(topic: string, handler: (message: InboundMessage) => unknown): unknown
  subscribedTopics?: Map<string, string>
  startListening?(): Promise<void> | void
}

/**
 * Whether the service's inbox runs handlers inside the transaction that holds the task while that
 * transaction holds the database's only connection (`inboxed` with cds 9's `legacyLocking`, on
 * SQLite): a handler must then write in its own transaction, any other would wait forever.
 */
export function handlerHoldsOnlyConnection(srv: MessagingService): boolean {
  const options = (srv as { options?: { inboxed?: unknown; inbox?: unknown } }).options
  if (!options?.inboxed && !options?.inbox) return false
  const facade = cds as unknown as { queued?(srv: unknown): { queued?: { legacyLocking?: boolean } }; db?: { options?: { pool?: { max?: number } } }; env: { requires: { queue?: { legacyLocking?: boolean } } } }
  const legacyLocking = facade.queued?.(srv)?.queued?.legacyLocking ?? facade.env.requires.queue?.legacyLocking
  return Boolean(legacyLocking) && facade.db?.options?.pool?.max === 1
}

/**
 * Whether the service writes every message it receives into CAP's queue table before any handler
 * runs: queued (`outboxed`, CAP's default for redis-messaging) without `inboxed`. One connection
 * and commit per message, and a message whose write fails (a busy pool) is gone — three instances
 * on PostgreSQL lost most messages that way.
 */
export function receivesQueued(srv: MessagingService): boolean {
  const options = (srv as { options?: { inboxed?: unknown; inbox?: unknown } }).options
  if (options?.inboxed || options?.inbox) return false
  return isQueued(srv)
}

const warnedQueued = new Set<string>()

/** One key named by a message, with what to do with it. */
export interface MessageKey {
  key: DataRecord
  action: EventAction
  payload?: DataRecord
}


/** The topics of a pipeline: as configured, or the provider's `<entity>.Created|Updated|Deleted` (CAP to CAP). */
export function topicsOf(events: ResolvedEvents, sourceEntity: string): ResolvedTopic[] {
  if (events.topics) return events.topics
  return [
    { topic: `${sourceEntity}.Created`, action: 'upsert' },
    { topic: `${sourceEntity}.Updated`, action: 'upsert' },
    { topic: `${sourceEntity}.Deleted`, action: 'delete' },
  ]
}

/** Key element → payload path of a topic, checked against the source's keys (errors name the topic's key). */
export function keyPaths(topic: ResolvedTopic, index: number | undefined, keys: string[]): Record<string, string> {
  const at = index === undefined ? 'events' : `events.topics[${index}].key`
  if (!keys.length) throw invalidConfig(at, 'needs a source with known key elements (import the provider\'s model)')
  if (!topic.key) return Object.fromEntries(keys.map(k => [k, k]))
  if ('' in topic.key) {
    if (keys.length !== 1) throw invalidConfig(at, `names one payload field, but the source has the compound key ${keys.join(', ')}: map each { <key element>: '<payload field>' }`)
    return { [keys[0]]: topic.key[''] }
  }
  for (const element of Object.keys(topic.key)) if (!keys.includes(element)) throw invalidConfig(`${at}.${element}`, `is not a key element of the source (its keys: ${keys.join(', ')})`)
  const missing = keys.filter(k => !(k in topic.key!))
  if (missing.length) throw invalidConfig(at, `does not map the key element(s) ${missing.join(', ')}`)
  return topic.key
}

function valueAt(data: unknown, path: string): unknown {
  let value: unknown = data
  for (const part of path.split('.')) value = value && typeof value === 'object' ? (value as Record<string, unknown>)[part] : undefined
  return value
}

/** The keys a message names (one per record of its data; a data array names several), and the ones it cannot name. */
export function keysOf(message: InboundMessage, topic: ResolvedTopic, paths: Record<string, string>): { keys: MessageKey[]; unnamed: number } {
  const records = Array.isArray(message.data) ? message.data : [message.data]
  const keys: MessageKey[] = []
  let unnamed = 0
  for (const record of records) {
    const key: DataRecord = {}
    for (const [element, path] of Object.entries(paths)) key[element] = valueAt(record, path)
    if (Object.values(key).some(v => v === undefined || v === null || (typeof v === 'object'))) unnamed++
    else keys.push({ key, action: topic.action, ...(topic.action === 'payload' ? { payload: record as DataRecord } : {}) })
  }
  return { keys, unnamed }
}

/** A key a message names that no row of the source can have: its element, and why (the value quoted). */
export interface RefusedKey {
  element: string
  problem: string
}

/**
 * The keys of a message whose values the source's key elements can hold, and those they cannot
 * (`ID: 'not-a-number'` for an Integer key, a UUID key that is no UUID, a String(10) key of 11
 * characters, a Date key that is no date, …): refused at receipt, never stored, so no micro-batch
 * fails for them. Key elements without a known type are not checked.
 */
export function checkKeys(keys: MessageKey[], elements: Record<string, CsnElement | undefined>): { valid: MessageKey[]; refused: RefusedKey[] } {
  const valid: MessageKey[] = []
  const refused: RefusedKey[] = []
  for (const each of keys) {
    let refusal: RefusedKey | undefined
    for (const [element, value] of Object.entries(each.key)) {
      const definition = elements[element]
      const problem = definition ? keyProblem(definition, value) : undefined
      if (problem) {
        refusal = { element, problem }
        break
      }
    }
    if (refusal) refused.push(refusal)
    else valid.push(each)
  }
  return { valid, refused }
}

/** The message's id (CloudEvents `id`) as logs quote it. */
export function messageIdOf(message: InboundMessage): string | undefined {
  const id = message.headers?.id
  return (typeof id === 'string' && id !== '') || typeof id === 'number' ? String(id) : undefined
}

/**
 * What the copies of one message share and no other message has: its `id` (CloudEvents; CAP sets
 * one with `format: 'cloudevents'`, `@federation.emit` always) with the topic, `source` (an id is
 * unique per source) and `time`. Undefined without an `id`: such copies cannot be told from two
 * changes, and are stored apart as before.
 */
export function identityOf(message: InboundMessage, topic: string): string | undefined {
  const { id, source, time } = message.headers ?? {}
  if ((typeof id !== 'string' && typeof id !== 'number') || id === '') return undefined
  return JSON.stringify([topic, String(id), source ?? null, time ?? null])
}

/** The message's time (CloudEvents `time`), else now: where its lag starts. */
export function eventTimeOf(message: InboundMessage): string {
  const time = message.headers?.time
  const parsed = typeof time === 'string' ? Date.parse(time) : NaN
  return new Date(Number.isNaN(parsed) || parsed > Date.now() ? Date.now() : parsed).toISOString()
}

/**
 * Registers the handlers of one pipeline's topics on its messaging service. A service that
 * already listens (a pipeline added after the server started) is asked to listen to the new
 * topics only, through its own `startListening`.
 */
export async function subscribeTopics(name: string, events: ResolvedEvents, topics: ResolvedTopic[], handler: (topic: ResolvedTopic, message: InboundMessage) => Promise<void>): Promise<MessagingService> {
  let srv: MessagingService
  try {
    srv = (await cds.connect.to(events.service)) as unknown as MessagingService
  } catch (error) {
    throw invalidConfig('events.service', `'${events.service}' cannot be connected (${(error as Error).message}); configure it under cds.requires as a messaging service`)
  }
  if (typeof srv?.on !== 'function') throw invalidConfig('events.service', `'${events.service}' is not a messaging service`)
  if (receivesQueued(srv) && !warnedQueued.has(events.service)) {
    warnedQueued.add(events.service)
    LOG.warn(`messaging service '${events.service}' is queued (outboxed, CAP's default for redis-messaging) but not inboxed: every message it receives is written to CAP's queue table first, one connection each, and a message whose write fails is lost (the scheduled delta run catches its change). Configure it with "outboxed": false (the pipeline stores the keys itself, several messages per write, with retries) or "inboxed": true`)
  }
  const before = new Set(srv.subscribedTopics?.keys() ?? [])
  for (const topic of topics) srv.on(topic.topic, message => handler(topic, message))
  if (isListening() && typeof srv.startListening === 'function' && srv.subscribedTopics) {
    const all = srv.subscribedTopics
    const added = new Map([...all].filter(([name]) => !before.has(name)))
    if (added.size) {
      srv.subscribedTopics = added
      let started: Promise<void> | void
      try {
        started = srv.startListening() // takes its topics synchronously
      } finally {
        srv.subscribedTopics = all
      }
      await started
    }
  }
  LOG.info(`pipeline '${name}': subscribed to ${topics.map(t => `'${t.topic}'`).join(', ')} on '${events.service}'`)
  return srv
}
