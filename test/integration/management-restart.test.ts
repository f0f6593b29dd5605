/**
 * Overrides and schedule changes made over HTTP survive a restart of the host app (issue 4):
 * the management fixture runs as a child process on a file SQLite database, is changed
 * through /pipeline, stopped and started again. `clearSchedule` records `schedule: null`, so
 * the coded schedule of 'people' stays off after the restart until that override is cleared.
 */
import { spawnSync } from 'node:child_process'
import { createRequire } from 'node:module'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { FIXTURES, startApp, type RunningApp } from '../helpers/apps'
import { BOUND as B, fetchClient, jsonValue, type Client } from '../helpers/management'

const require = createRequire(import.meta.url)
const APP = path.join(FIXTURES, 'management')
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pipeline-restart-'))
const file = path.join(dir, 'db.sqlite')
const env = { CDS_CONFIG: JSON.stringify({ requires: { db: { kind: 'sqlite', credentials: { url: file } } } }) }

let app: RunningApp | undefined
let http: Client

async function boot() {
  app = await startApp(APP, { env })
  http = fetchClient(app.url)
}

beforeAll(() => {
  const deploy = spawnSync(process.execPath, [require.resolve('@sap/cds-dk/bin/cds.js'), 'deploy', '--to', `sqlite:${file}`], { cwd: APP, encoding: 'utf8', env: { ...process.env, CDS_ENV: '' } })
  if (deploy.status !== 0) throw new Error(`cds deploy failed:\n${deploy.stdout}\n${deploy.stderr}`)
})
afterAll(async () => {
  await app?.stop()
  fs.rmSync(dir, { recursive: true, force: true })
})

const row = async (name: string) => (await http.GET(`/pipeline/Pipelines('${name}')`)).data
const view = async (name: string) => jsonValue(await http.GET(`${B(name)}.configView()`))

test('setSchedule, clearSchedule, setOverrides and setEnabled persist across a restart', async () => {
  await boot()
  expect((await row('people')).schedule).toBe('every 1 h (spawn)')
  expect((await http.POST(`${B('books')}.setSchedule`, { every: 180000, engine: 'spawn' })).status).toBe(200)
  const overrides = { description: 'persisted', source: { batchSize: 7 }, 'delta.field': 'modifiedAt' }
  expect((await http.POST(`${B('books')}.setOverrides`, { overrides: JSON.stringify(overrides) })).status).toBe(200)
  expect((await http.POST(`${B('people')}.clearSchedule`, {})).status).toBe(200)
  expect((await http.POST(`${B('author-stats')}.setEnabled`, { enabled: false })).status).toBe(200)
  expect((await row('people')).schedule).toBeNull()
  await app!.stop()

  await boot()
  const books = await row('books')
  expect(books).toMatchObject({ schedule: 'every 3 min (spawn)', description: 'persisted', mode: 'delta' })
  const booksView = await view('books')
  expect(booksView.overrides).toEqual({ schedule: { every: 180000, engine: 'spawn' }, description: 'persisted', 'source.batchSize': 7, 'delta.field': 'modifiedAt' })
  expect(booksView.fields.find((f: any) => f.path === 'source.batchSize')).toMatchObject({ effective: 7, source: 'override' })
  expect(booksView.effective.schedule).toBe('every 3 min (spawn)')

  // the coded schedule of 'people' stays off: the null override was re-applied at registration
  expect((await row('people')).schedule).toBeNull()
  const peopleView = await view('people')
  expect(peopleView.overrides).toEqual({ schedule: null })
  expect(peopleView.fields.find((f: any) => f.path === 'schedule')).toMatchObject({ coded: '1h', effective: null, source: 'override' })
  expect((await row('author-stats')).enabled).toBe(false)

  // clearing the override brings the coded schedule back, also after the next restart
  expect((await http.POST(`${B('people')}.clearOverrides`, { keys: 'schedule' })).data.schedule).toBe('every 1 h (spawn)')
  await app!.stop()
  await boot()
  expect((await row('people')).schedule).toBe('every 1 h (spawn)')
  expect((await view('people')).overrides).toEqual({})
  expect((await row('books')).schedule).toBe('every 3 min (spawn)')
})
