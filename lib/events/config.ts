/**
 * The `events` option of a pipeline (README "Event-driven replication"): which messaging service,
 * which topics, how a message names the key, what each topic does, and how messages are coalesced.
 * Checked at `addPipeline` like every other option; every error names the offending key. Key
 * names are checked later against the source entity (subscribe.ts), when the model is at hand.
 */
import { invalidConfig } from '../pipeline/errors.js'
import { parseDuration } from '../engine/config/duration.js'
import type { EventAction, EventTopicConfig, EventsConfig, EventsInput, PipelineConfig } from '../pipeline/types.js'
import { isPlainObject } from '../pipeline/json.js'

export const EVENT_ACTIONS: readonly EventAction[] = ['upsert', 'delete', 'payload']
export type { EventAction, EventTopicConfig, EventsConfig, EventsInput }

export interface ResolvedTopic {
  topic: string
  /** Key element (source name) → payload path (dot-separated); undefined: the key element names themselves. */
  key?: Record<string, string>
  action: EventAction
}

export interface ResolvedEvents {
  service: string
  /** undefined: the CAP-to-CAP default topics, derived from the source entity when subscribing. */
  topics?: ResolvedTopic[]
  window: number
  maxBatch: number
}

export const EVENTS_DEFAULTS = { service: 'messaging', window: 200, maxBatch: 1000 } as const
const KEYS = ['service', 'topics', 'window', 'maxBatch']
const TOPIC_KEYS = ['topic', 'key', 'action']
const PATH = /^[A-Za-z_$][\w$]*(\.[A-Za-z_$][\w$]*)*$/

/** The `events` of a pipeline config, checked (a query-shape pipeline has no keys to fetch). */
export function eventsOf(config: PipelineConfig): ResolvedEvents | undefined {
  const events = resolveEvents((config as { events?: unknown } | undefined)?.events)
  if (events && config.source?.query !== undefined) throw invalidConfig('events', 'is not possible with source.query (a derived snapshot has no keys to fetch)')
  return events
}

/** Validates `events`; undefined when not set (or `false`). */
export function resolveEvents(input: unknown): ResolvedEvents | undefined {
  if (input === undefined || input === null || input === false) return undefined
  if (input === true) return { service: EVENTS_DEFAULTS.service, window: EVENTS_DEFAULTS.window, maxBatch: EVENTS_DEFAULTS.maxBatch }
  if (typeof input === 'string') {
    if (!input.trim()) throw invalidConfig('events', 'must name a messaging service (or be true, or an object { service, topics, window, maxBatch })')
    return { service: input, window: EVENTS_DEFAULTS.window, maxBatch: EVENTS_DEFAULTS.maxBatch }
  }
  if (!isPlainObject(input)) throw invalidConfig('events', 'must be true, a messaging service name or an object { service, topics, window, maxBatch }')
  for (const key of Object.keys(input)) if (!KEYS.includes(key)) throw invalidConfig(`events.${key}`, `is not an events setting; expected one of ${KEYS.join(', ')}`)
  const { service = EVENTS_DEFAULTS.service, topics, window = EVENTS_DEFAULTS.window, maxBatch = EVENTS_DEFAULTS.maxBatch } = input
  if (typeof service !== 'string' || !service.trim()) throw invalidConfig('events.service', 'must be the name of a messaging service in cds.requires')
  if (typeof window !== 'number' && typeof window !== 'string') throw invalidConfig('events.window', "must be milliseconds or a duration such as '200ms'")
  const windowMs = window === 0 ? 0 : parseDuration(window, 'events.window')
  if (windowMs > 60_000) throw invalidConfig('events.window', 'must be at most 1 minute (it delays every change)')
  if (typeof maxBatch !== 'number' || !Number.isInteger(maxBatch) || maxBatch < 1 || maxBatch > 100_000) throw invalidConfig('events.maxBatch', 'must be an integer between 1 and 100000')
  let resolved: ResolvedTopic[] | undefined
  if (topics !== undefined) {
    if (!Array.isArray(topics) || !topics.length) throw invalidConfig('events.topics', "must be a non-empty array of topic names or { topic, key, action } (leave it out for the provider's Created/Updated/Deleted topics)")
    resolved = topics.map((each, i) => resolveTopic(each, `events.topics[${i}]`))
    const seen = new Set<string>()
    resolved.forEach(({ topic }, i) => {
      if (seen.has(topic)) throw invalidConfig(`events.topics[${i}].topic`, `'${topic}' is listed twice`)
      seen.add(topic)
    })
  }
  return { service, ...(resolved ? { topics: resolved } : {}), window: windowMs, maxBatch }
}

function resolveTopic(input: unknown, at: string): ResolvedTopic {
  if (typeof input === 'string') {
    if (!input.trim()) throw invalidConfig(at, 'must be a non-empty topic name')
    return { topic: input, action: 'upsert' }
  }
  if (!isPlainObject(input)) throw invalidConfig(at, 'must be a topic name or an object { topic, key, action }')
  for (const key of Object.keys(input)) if (!TOPIC_KEYS.includes(key)) throw invalidConfig(`${at}.${key}`, `is not a topic setting; expected one of ${TOPIC_KEYS.join(', ')}`)
  const { topic, key, action = 'upsert' } = input
  if (typeof topic !== 'string' || !topic.trim()) throw invalidConfig(`${at}.topic`, 'is required and must be a non-empty string (the message topic or CloudEvents type)')
  if (!(EVENT_ACTIONS as readonly unknown[]).includes(action)) throw invalidConfig(`${at}.action`, `'${String(action)}' is invalid; expected one of ${EVENT_ACTIONS.join(', ')}`)
  return { topic, action: action as EventAction, ...(key === undefined ? {} : { key: resolveKey(key, `${at}.key`) }) }
}

/** `key`: a payload field for a single key (its element resolved later), or a mapping element → payload path. */
function resolveKey(input: unknown, at: string): Record<string, string> {
  if (typeof input === 'string') {
    if (!PATH.test(input)) throw invalidConfig(at, `'${input}' is not a payload field name (letters, digits, _ and . for nested fields)`)
    return { '': input } // the element is the source's single key, resolved when subscribing
  }
  if (!isPlainObject(input) || !Object.keys(input).length) throw invalidConfig(at, "must be a payload field name or a mapping { <key element>: '<payload field>' }")
  for (const [element, path] of Object.entries(input)) {
    if (!/^[A-Za-z_][\w]*$/.test(element)) throw invalidConfig(`${at}.${element}`, 'must name a key element of the source entity')
    if (typeof path !== 'string' || !PATH.test(path)) throw invalidConfig(`${at}.${element}`, 'must be a payload field name (letters, digits, _ and . for nested fields)')
  }
  return input as Record<string, string>
}
