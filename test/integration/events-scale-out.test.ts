/**
 * Event-driven replication with two app instances on one PostgreSQL database (issue 23): Redis
 * delivers every message to both (broker fan-out), both store the key in the shared waiting-keys
 * table, and the instance holding the pipeline's guard applies it: the provider is not asked
 * twice, and every change arrives once. Runs in the `postgres` project.
 */
import path from 'node:path'
import { FIXTURES, startApp, startProvider, type ProviderControl, type RunningApp } from '../helpers/apps'
import { createDatabase, deployTo, dropDatabase, pgQuery, postgresEnv, randomDatabaseName } from '../helpers/postgres'
import { redisMessaging, type TestMessaging } from '../helpers/events'
import { waitFor } from '../helpers/wait'

const APP = path.join(FIXTURES, 'events-consumer')
const PREFIX = `dp-test/events-scale-out/${process.pid}/${Date.now()}/`
const COUNT = 300

let provider: RunningApp & { control: ProviderControl }
let apps: RunningApp[] = []
let bus: TestMessaging
let database: string

beforeAll(async () => {
  database = await createDatabase(randomDatabaseName('events_scale'))
  provider = await startProvider()
  await deployTo(APP, database)
  const env = {
    ...postgresEnv(database),
    cds_requires_Provider_credentials_url: `${provider.url}/odata/v4/catalog`,
    cds_requires_messaging_publishPrefix: PREFIX,
    cds_requires_messaging_subscribePrefix: PREFIX,
    EVENTS_WINDOW: '200',
  }
  apps = await Promise.all([0, 1].map(() => startApp(APP, { env, timeout: 60_000 })))
  bus = await redisMessaging('events-scale-out-bus', { publishPrefix: PREFIX, subscribePrefix: PREFIX })
})

afterAll(async () => {
  await Promise.all(apps.map(app => app.stop()))
  await provider?.stop()
  if (database) await dropDatabase(database)
})

const count = async (filter: string) => {
  const response = await fetch(`${apps[0].url}/events-test/Books/$count?$filter=${encodeURIComponent(filter)}`)
  return Number(await response.text())
}

test(`two instances, ${COUNT} changes fanned out to both: each applied once, provider requests as for one instance`, async () => {
  for (const app of apps) await waitFor(() => app.output().includes('Create subscription'), 'both instances subscribed on Redis', 30_000)
  await provider.control.seed({ from: 1, count: COUNT })
  await provider.control.touch({ from: 1, count: COUNT, title: 'scaled' })
  const before = (await provider.control.stats()).requests
  await Promise.all(Array.from({ length: COUNT }, (_, i) => bus.emit('Book.Changed', { ID: i + 1 }, { time: new Date().toISOString() })))
  await waitFor(async () => (await count("title eq 'scaled'")) === COUNT, `all ${COUNT} changes in the replica`, 30_000).catch(async error => {
    console.log(`replica: ${await count("title eq 'scaled'")} of ${COUNT}\n--- instance 1:\n${apps[0].output().slice(-4000)}\n--- instance 2:\n${apps[1].output().slice(-4000)}`)
    throw error
  })
  await waitFor(async () => (await pgQuery(database, 'SELECT count(*) AS n FROM plugin_data_pipeline_PipelineEventKeys'))[0].n === '0', 'no key left waiting')
  const requests = (await provider.control.stats()).requests - before
  console.log(`[events-scale-out] ${COUNT} messages × 2 instances → ${requests} provider requests`)
  // one instance needs one or two micro-batches; fan-out must not double that per message
  expect(requests).toBeLessThanOrEqual(6)
  // both instances received every message; the applying was shared, never doubled per key
  const logs = apps.map(app => app.output())
  expect(logs.every(log => !/event batch .* failed/.test(log))).toBe(true)
})
