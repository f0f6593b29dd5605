/**
 * `delta.mode: 'odata-delta'` on two app instances (issue 38, point 2: schedules and scale-out): two
 * cds-serve processes of test/fixtures/changes-cluster/app on ONE PostgreSQL database (a fresh
 * one, deployed with `cds deploy`, dropped afterwards), one queued schedule for the pipeline (CAP's
 * task queue: one named task, whichever instance runs it), and manual runs on each instance. The
 * change-tracking provider (test/fixtures/changes-provider, over HTTP) lists every read it served.
 *
 * One subscription per pipeline, not per instance: exactly one tracked initial read across both
 * instances; every other read is a GET of a delta link the tracker stored. Runs in the `postgres`
 * project (vitest.config.ts).
 */
import path from 'node:path'
import { FIXTURES, startApp, type RunningApp } from '../helpers/apps'
import { basicAuth } from '../helpers/management'
import { createDatabase, deployTo, dropDatabase, pgQuery, postgresEnv, randomDatabaseName } from '../helpers/postgres'
import { waitFor } from '../helpers/wait'

const APP = path.join(FIXTURES, 'changes-cluster/app')
const EVERY = 1000

interface Run { ID: string; status: string; trigger: string; startTime: string; created: number; updated: number; unchanged: number; deleted: number }
interface Read { url: string; prefer: string }

let provider: RunningApp
let database = ''
let instances: RunningApp[] = []

async function control(action: string, body: object = {}): Promise<unknown> {
  const response = await fetch(`${provider.url}/control/${action}`, action === 'requests' ? {} : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
  if (!response.ok) throw new Error(`control ${action}: ${response.status}`)
  return response.json()
}
const reads = async () => (await control('requests')) as Read[]

beforeAll(async () => {
  provider = await startApp(path.join(FIXTURES, 'changes-provider'))
  await control('reset', { count: 10 })
  database = await createDatabase(randomDatabaseName('delta_links'))
  await deployTo(APP, database)
  const env = { ...postgresEnv(database), CHANGES_EVERY: `${EVERY}ms`, cds_requires_Changes_credentials_url: `${provider.url}/odata/v4/changes` }
  const started = await Promise.allSettled([0, 1].map(() => startApp(APP, { env, timeout: 90_000 })))
  instances = started.flatMap(result => (result.status === 'fulfilled' ? [result.value] : []))
  const failed = started.find(result => result.status === 'rejected') as PromiseRejectedResult | undefined
  if (failed) throw failed.reason
})
afterAll(async () => {
  await Promise.all(instances.map(app => app.stop().catch(() => undefined)))
  await provider?.stop()
  if (database) await dropDatabase(database)
})

const runs = () => pgQuery<Run>(database, `SELECT ID AS "ID", status, trigger, startTime AS "startTime", statistics_created AS created, statistics_updated AS updated,
  statistics_unchanged AS unchanged, statistics_deleted AS deleted FROM plugin_data_pipeline_PipelineRuns WHERE pipeline_name = 'products' ORDER BY startTime`)
const finished = async () => (await runs()).filter(run => run.status !== 'running')
const replica = () => pgQuery<{ ID: number; name: string }>(database, 'SELECT ID AS "ID", name FROM cluster_Products ORDER BY ID')
const instancesThatRan = async () => new Set((await pgQuery<{ instance: string }>(database, 'SELECT instance FROM cluster_RunLog')).map(row => row.instance))
const storedLink = async () => (await pgQuery<{ lastKey: string | null }>(database, `SELECT lastKey AS "lastKey" FROM plugin_data_pipeline_Pipelines WHERE name = 'products'`))[0]?.lastKey

/** A manual run on one instance; a run of the schedule may hold the pipeline (409): asked again. */
async function runOn(app: RunningApp): Promise<void> {
  await waitFor(async () => {
    const response = await fetch(`${app.url}/pipeline/execute`, { method: 'POST', headers: { 'content-type': 'application/json', ...basicAuth('admin') }, body: JSON.stringify({ name: 'products' }) })
    if (response.status === 409) return false
    expect(response.status, await response.text()).toBe(200)
    return true
  }, 'a manual run', 30_000, 100)
}

test('two instances, one queued schedule and manual runs on each: one tracked initial read for the pipeline; every later read follows a stored delta link', async () => {
  // one task in CAP's queue for the pipeline, whichever instance wrote it
  expect(await pgQuery(database, `SELECT task FROM cds_outbox_messages WHERE task LIKE '%products%'`)).toHaveLength(1)
  await waitFor(async () => (await finished()).length >= 1, 'the first queued run', 30 * EVERY)
  expect(await replica()).toHaveLength(10)

  await control('change', { ids: [1], name: 'changed once' })
  await waitFor(async () => (await replica()).find(row => row.ID === 1)?.name === 'changed once', 'the change applied by the schedule', 30 * EVERY)
  // manual runs on each instance between the ticks: both follow the tracker's link
  for (const app of instances) {
    await control('change', { ids: [11 + instances.indexOf(app)], name: 'created' })
    await runOn(app)
  }
  expect(await instancesThatRan()).toHaveProperty('size', 2)
  await control('delete', { ids: [2] })
  await waitFor(async () => !(await replica()).some(row => row.ID === 2), 'the delete applied by the schedule', 30 * EVERY)
  const seen = (await finished()).length
  await waitFor(async () => (await finished()).length >= seen + 2, 'two more queued runs', 30 * EVERY)

  const all = await finished()
  expect(all.filter(run => run.status !== 'idle'), JSON.stringify(all)).toEqual([])
  expect(all.filter(run => run.trigger === 'scheduled').length).toBeGreaterThanOrEqual(4)
  // the runs add up to the changes: nothing was copied twice (a second initial read would count the rows again)
  const total = (key: 'created' | 'updated' | 'unchanged' | 'deleted') => all.reduce((sum, run) => sum + Number(run[key]), 0)
  expect({ created: total('created'), updated: total('updated'), unchanged: total('unchanged'), deleted: total('deleted') }).toEqual({ created: 12, updated: 1, unchanged: 0, deleted: 1 })
  expect((await replica()).map(row => row.ID)).toEqual([1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12])

  const served = await reads()
  for (const read of served) expect(read.prefer).toMatch(/odata\.track-changes/)
  const initial = served.filter(read => !read.url.includes('$deltatoken') && !read.url.includes('$skiptoken'))
  expect(initial, 'tracked initial reads (subscriptions)').toHaveLength(1)
  // every other first page is a delta link the provider issued: $deltatoken=<its change sequence then>, never ahead of it
  const links = served.filter(read => read.url.includes('$deltatoken') && !read.url.includes('$skiptoken')).map(read => Number(/\$deltatoken=(\d+)/.exec(read.url)![1]))
  expect(links.length).toBeGreaterThanOrEqual(all.length - 1)
  expect(links).toEqual([...links].sort((a, b) => a - b))
  console.log(`[odata-delta-scale-out] ${all.length} runs on ${(await instancesThatRan()).size} instances; ${served.length} reads: ${initial.length} initial, delta links ${JSON.stringify(links)}`)
  expect(await storedLink()).toBe('/Products?$deltatoken=4')
})
