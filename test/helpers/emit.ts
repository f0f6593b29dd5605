/**
 * The provider side of event-driven replication in tests: a provider app with `@federation.emit`
 * and a plain CAP subscriber (no plugin), both child processes on CAP's redis-messaging against the
 * real Redis (127.0.0.1:6379). Each test run gets its own topic prefix (`publishPrefix` /
 * `subscribePrefix`), so parallel test files never see each other's messages.
 */
import path from 'node:path'
import { randomUUID } from 'node:crypto'
import { createClient } from 'redis'
import { FIXTURES, startApp, type RunningApp } from './apps'
import { waitFor } from './wait'

export interface Received {
  event: string
  data: Record<string, unknown>
  headers: Record<string, unknown>
}

/** A unique topic prefix for one test file. */
export const uniquePrefix = (what: string) => `test-${what}-${randomUUID().slice(0, 8)}/`

/** CDS_CONFIG for an app whose `messaging` publishes / subscribes under `prefix`. */
export const messagingConfig = (prefix: string, extra: object = {}) =>
  JSON.stringify({ requires: { messaging: { kind: 'redis-messaging', publishPrefix: prefix, subscribePrefix: prefix, ...extra } } })

/**
 * Waits until Redis has `subscribers` on each of the channels. redis-messaging subscribes after
 * 'listening' and logs 'Create subscription' before Redis confirms it: a message published in
 * between reaches nobody, so tests wait for Redis's own count, not for the log line.
 */
export async function waitForSubscribers(channels: string[], timeout = 15_000, subscribers = 1): Promise<void> {
  const client = createClient({ url: 'redis://127.0.0.1:6379' })
  await client.connect()
  try {
    await waitFor(async () => {
      const counts = (await client.pubSubNumSub(channels)) as Record<string, number>
      return channels.every(channel => Number(counts[channel]) >= subscribers)
    }, `Redis subscribers on ${channels.join(', ')}`, timeout)
  } finally {
    await client.quit()
  }
}

export interface Subscriber extends RunningApp {
  received(): Promise<Received[]>
  /** The first message matching `match`, waited for. */
  waitFor(match: (message: Received) => boolean, what: string, timeout?: number): Promise<Received>
}

/** The plain CAP subscriber app, subscribed to `topics` under `prefix`, once Redis has its subscriptions. */
export async function startSubscriber(prefix: string, topics: string[]): Promise<Subscriber> {
  const app = await startApp(path.join(FIXTURES, 'emit-subscriber'), { env: { CDS_CONFIG: messagingConfig(prefix), EMIT_TOPICS: topics.join(',') } })
  await waitForSubscribers(topics.map(topic => prefix + topic))
  const received = async () => {
    const response = await fetch(`${app.url}/odata/v4/received/messages()`)
    if (!response.ok) throw new Error(`messages(): ${response.status} ${await response.text()}`)
    return JSON.parse(((await response.json()) as { value: string }).value) as Received[]
  }
  return Object.assign(app, {
    received,
    waitFor: async (match: (message: Received) => boolean, what: string, timeout = 10_000) =>
      waitFor(async () => (await received()).find(match), what, timeout),
  })
}
