/**
 * CAP's redis-messaging on the real Redis (127.0.0.1:6379) for the event-driven replication
 * tests: one service per test file with its own topic prefix, so parallel files never see each
 * other's messages. The test emits the provider's messages on it (`emit(topic, data, headers)`).
 */
import cds from '@sap/cds'

export interface TestMessaging {
  emit(topic: string, data: unknown, headers?: Record<string, unknown>): Promise<unknown>
}

/** Configures `cds.requires[name]` as redis-messaging (what an app puts in package.json) and connects it. */
export async function redisMessaging(name: string, extra: Record<string, unknown> = {}): Promise<TestMessaging> {
  const prefix = `dp-test/${name}/${process.pid}/${Date.now()}/`
  const requires = cds.env.requires as unknown as Record<string, unknown>
  requires[name] = {
    kind: 'redis-messaging',
    impl: '@sap/cds/libx/_runtime/messaging/redis-messaging.js',
    // CAP drops the user part of the URI (`//user:` → `//:`): an empty user and password keep the host
    credentials: { uri: 'redis://:@127.0.0.1:6379' },
    publishPrefix: prefix,
    subscribePrefix: prefix,
    outboxed: false,
    ...extra,
  }
  return (await cds.connect.to(name)) as unknown as TestMessaging
}
