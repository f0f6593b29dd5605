/**
 * Event-driven replication survives kill -9 (issue 23): a consumer in a child process (SQLite
 * file) receives a message over Redis and stores its key; it is killed before the micro-batch
 * writes it (a long coalescing window), and the restarted app applies the stored key.
 */
import { execFile } from 'node:child_process'
import { createRequire } from 'node:module'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { FIXTURES, startApp, type ProviderControl, type RunningApp } from '../helpers/apps'
import { sharedProvider } from '../helpers/shared-provider'
import { redisMessaging, type TestMessaging } from '../helpers/events'
import { waitFor } from '../helpers/wait'
import { waitForSubscribers } from '../helpers/emit'
import { basicAuth } from '../helpers/auth'

const require = createRequire(import.meta.url)
const APP = path.join(FIXTURES, 'events-consumer')
const PREFIX = `dp-test/events-crash/${process.pid}/${Date.now()}/`

let provider: RunningApp & { control: ProviderControl }
let consumer: RunningApp | undefined
let bus: TestMessaging
let dir: string
let env: Record<string, string>

const read = async <T>(app: RunningApp, query: string): Promise<T[]> => {
  const response = await fetch(`${app.url}/events-test/${query}`)
  if (!response.ok) throw new Error(`${query}: ${response.status} ${await response.text()}`)
  return ((await response.json()) as { value: T[] }).value
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'events-crash-'))
  const database = path.join(dir, 'consumer.sqlite')
  const deploy = promisify(execFile)(process.execPath, [require.resolve('@sap/cds-dk/bin/cds.js'), 'deploy', '--to', `sqlite:${database}`], { cwd: APP, env: { ...process.env, NODE_ENV: 'test', CDS_ENV: '' } })
  deploy.catch(() => undefined)
  provider = await sharedProvider()
  await deploy
  env = {
    cds_requires_db_credentials_url: database,
    cds_requires_Provider_credentials_url: `${provider.url}/odata/v4/catalog`,
    cds_requires_messaging_publishPrefix: PREFIX,
    cds_requires_messaging_subscribePrefix: PREFIX,
  }
  bus = await redisMessaging('events-crash-bus', { publishPrefix: PREFIX, subscribePrefix: PREFIX })
})

afterAll(async () => {
  await consumer?.stop()
  await provider?.stop()
  rmSync(dir, { recursive: true, force: true })
})

test('a key received but not yet written when the app is killed (kill -9) is applied after the restart', async () => {
  await provider.control.seed({ from: 1, count: 3 })
  await provider.control.touch({ from: 2, title: 'before the crash' })
  consumer = await startApp(APP, { env: { ...env, EVENTS_WINDOW: '60000' } })
  await waitForSubscribers([`${PREFIX}Book.Changed`], 20_000)
  await bus.emit('Book.Changed', { ID: 2 })
  await waitFor(async () => (await read(consumer!, 'PipelineEventKeys')).length === 1, 'the key stored by the first process').catch(e => { console.log('consumer output:', consumer!.output()); throw e })
  expect(await read(consumer, 'Books')).toEqual([])
  await consumer.kill()

  consumer = await startApp(APP, { env: { ...env, EVENTS_WINDOW: '50' } })
  await waitFor(async () => (await read<{ ID: number; title: string }>(consumer!, 'Books')).some(row => row.ID === 2 && row.title === 'before the crash'), 'the stored key applied by the restarted app', 20_000)
  await waitFor(async () => (await read(consumer!, 'PipelineEventKeys')).length === 0, 'no key left waiting')

  // the statistics: read-only in the management API, for viewers
  const stats = await waitFor(async () => {
    const response = await fetch(`${consumer!.url}/pipeline/PipelineEventStats?$filter=pipeline eq 'followed'`, { headers: basicAuth('viewer') })
    const rows = ((await response.json()) as { value?: Array<Record<string, unknown>> }).value ?? []
    return rows.length && Number(rows[0].applied) >= 1 ? rows : undefined
  }, 'the event statistics of the restarted app')
  expect(stats).toHaveLength(1)
  expect(stats[0]).toMatchObject({ pipeline: 'followed', skipped: 0 })
  expect(stats[0].lagP95).toEqual(expect.any(Number))
  const write = await fetch(`${consumer.url}/pipeline/PipelineEventStats`, { method: 'POST', headers: { ...basicAuth('admin'), 'content-type': 'application/json' }, body: JSON.stringify({ pipeline: 'x', minute: new Date().toISOString() }) })
  expect(write.status).toBeGreaterThanOrEqual(400)
  expect(write.status).toBeLessThan(500)
})
