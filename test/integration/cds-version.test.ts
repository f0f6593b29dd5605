/**
 * What differs between `@sap/cds` 9 and 10 (SPEC "Versioning"), proven on the cds that really runs
 * — no injected version: `npm test` runs this file on cds 10, the cds 9 job (.ci/cds9/run) on cds 9.
 *
 * Queued schedules (CAP's persistent task queue) change live only on cds >= 10. On cds 9 a
 * setSchedule/clearSchedule of a queued schedule is persisted, takes effect at the next restart and
 * is answered with 409 and guidance (upgrade, engine 'spawn', restart); configView's
 * `meta.scheduleLiveChangeSupported` is false for such a pipeline. Spawn schedules change live on both.
 *
 * The app is the queued fixture in a child process on a SQLite file that survives its restart.
 */
import { execFile } from 'node:child_process'
import { createRequire } from 'node:module'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'
import { FIXTURES, startApp, type RunningApp } from '../helpers/apps'
import { basicAuth } from '../helpers/management'

const require = createRequire(import.meta.url)
const APP = path.join(FIXTURES, 'queued')
/** The `@sap/cds` the app runs on (the one its directory resolves). */
const CDS_VERSION = (require(require.resolve('@sap/cds/package.json', { paths: [APP] })) as { version: string }).version
const MAJOR = Number(CDS_VERSION.split('.')[0])
const LIVE = MAJOR >= 10

const PIPELINES = [
  { name: 'q-set', schedule: { every: '10m', engine: 'queued' } },
  { name: 'q-clear', schedule: { every: '10m', engine: 'queued' } },
  { name: 's-spawn', schedule: { every: '10m' } },
]
const task = (name: string) => `data-pipeline/${name}`

interface Task { task: string | null; msg: string }
interface ErrorBody { error: { message: string; target?: string; code?: string } }

function client(app: RunningApp) {
  const json = async <T>(response: Response, what: string): Promise<T> => {
    if (!response.ok) throw new Error(`${what}: ${response.status} ${await response.text()}`)
    const body = (await response.json()) as { value?: T } & T
    return (body.value !== undefined ? body.value : body) as T
  }
  const B = (name: string) => `${app.url}/pipeline/Pipelines('${name}')/DataPipelineManagementService`
  // /pipeline needs a role: the fixture's mocked admin (PipelineAdmin)
  const admin = { headers: basicAuth('admin') }
  const post = (url: string, body: object) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...admin.headers }, body: JSON.stringify(body) })
  return {
    /** The interval of the pipeline's queued task, or undefined without a task. */
    taskEvery: async (name: string): Promise<number | string | undefined> => {
      const rows = await json<Task[]>(await fetch(`${app.url}/queued/tasks(task='${encodeURIComponent(task(name))}')`), 'tasks')
      expect(rows.length, `tasks of ${name}`).toBeLessThanOrEqual(1)
      return rows[0] && (JSON.parse(rows[0].msg) as { queue: { every: number | string } }).queue.every
    },
    registration: async (): Promise<Record<string, unknown>> => JSON.parse(await json<string>(await fetch(`${app.url}/queued/registration()`), 'registration')),
    liveChangeSupported: async (name: string) => json<boolean>(await fetch(`${app.url}/queued/liveChangeSupported(name='${name}')`), 'liveChangeSupported'),
    label: async (name: string) => (await json<{ schedule: string | null }>(await fetch(`${app.url}/pipeline/Pipelines('${name}')`, admin), 'pipeline')).schedule,
    configView: async (name: string) => JSON.parse(await json<string>(await fetch(`${B(name)}.configView()`, admin), 'configView')) as {
      overrides: Record<string, unknown>; effective: { schedule: string | null }; meta: { scheduleLiveChangeSupported: boolean }
    },
    setSchedule: (name: string, body: object) => post(`${B(name)}.setSchedule`, body),
    clearSchedule: (name: string) => post(`${B(name)}.clearSchedule`, {}),
  }
}

describe(`@sap/cds ${CDS_VERSION}: queued schedules ${LIVE ? 'change live' : 'change at the next restart, with 409 guidance'}`, () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'cds-version-'))
  const database = path.join(dir, 'queued.sqlite')
  let app: RunningApp | undefined
  let api: ReturnType<typeof client>
  const start = async () => {
    app = await startApp(APP, { env: { cds_requires_db_credentials_url: database, QUEUED_PIPELINES: JSON.stringify(PIPELINES) } })
    api = client(app)
  }

  beforeAll(async () => {
    await promisify(execFile)(process.execPath, [require.resolve('@sap/cds-dk/bin/cds.js'), 'deploy', '--to', `sqlite:${database}`], {
      cwd: APP, env: { ...process.env, NODE_ENV: 'test', CDS_ENV: '' },
    })
    await start()
  })
  afterAll(async () => {
    await app?.stop().catch(() => undefined)
    rmSync(dir, { recursive: true, force: true })
  })

  test('the app runs the cds under test, with queued schedules registered as named tasks', async () => {
    // the cds 9 job runs this file on cds 9, npm test on cds 10: nothing else is expected
    expect([9, 10]).toContain(MAJOR)
    expect(app!.output()).not.toMatch(/loaded from different locations/)
    expect(await api.registration()).toEqual({})
    expect(await api.taskEvery('q-set')).toBe(600_000)
    expect(await api.taskEvery('q-clear')).toBe(600_000)
    expect(await api.taskEvery('s-spawn')).toBeUndefined()
  })

  test(`scheduleLiveChangeSupported is ${LIVE} for a queued pipeline (configView meta and the engine), true for spawn`, async () => {
    for (const name of ['q-set', 'q-clear']) {
      expect((await api.configView(name)).meta.scheduleLiveChangeSupported, name).toBe(LIVE)
      expect(await api.liveChangeSupported(name), name).toBe(LIVE)
    }
    expect((await api.configView('s-spawn')).meta.scheduleLiveChangeSupported).toBe(true)
    expect(await api.liveChangeSupported('s-spawn')).toBe(true)
  })

  test(LIVE
    ? 'setSchedule of a queued schedule rewrites its task at once'
    : 'setSchedule of a queued schedule is persisted and answered with 409 naming upgrade, spawn and restart; the task keeps its schedule', async () => {
    const response = await api.setSchedule('q-set', { every: 1_200_000, engine: 'queued' })
    if (LIVE) {
      expect(response.status).toBe(200)
      expect(await api.taskEvery('q-set')).toBe(1_200_000)
      expect(await api.label('q-set')).toBe('every 20 min (queued)')
    } else {
      expect(response.status).toBe(409)
      const { error } = (await response.json()) as ErrorBody
      expect(error.target).toBe('schedule')
      expect(error.message).toMatch(/saved/)
      expect(error.message).toContain(`@sap/cds ${CDS_VERSION} cannot change queued schedules live`)
      expect(error.message).toMatch(/next restart/)
      expect(error.message).toMatch(/Upgrade to @sap\/cds 10.*engine 'spawn'.*restart/)
      // the running task and the label still show what runs
      expect(await api.taskEvery('q-set')).toBe(600_000)
      expect(await api.label('q-set')).toBe('every 10 min (queued)')
    }
    // persisted either way
    expect((await api.configView('q-set')).overrides).toMatchObject({ schedule: { every: 1_200_000, engine: 'queued' } })
  })

  test(LIVE
    ? 'clearSchedule of a queued schedule removes its task at once'
    : 'clearSchedule of a queued schedule is persisted and answered with 409 guidance; the task stays until the restart', async () => {
    const response = await api.clearSchedule('q-clear')
    if (LIVE) {
      expect(response.status).toBe(200)
      expect(await api.taskEvery('q-clear')).toBeUndefined()
      expect(await api.label('q-clear')).toBeNull()
    } else {
      expect(response.status).toBe(409)
      const { error } = (await response.json()) as ErrorBody
      expect(error.target).toBe('schedule')
      expect(error.message).toMatch(/saved \(no schedule\)/)
      expect(error.message).toMatch(/Upgrade to @sap\/cds 10.*engine 'spawn'.*restart/)
      expect(await api.taskEvery('q-clear')).toBe(600_000)
      expect(await api.label('q-clear')).toBe('every 10 min (queued)')
    }
    expect((await api.configView('q-clear')).overrides).toMatchObject({ schedule: null })
  })

  test('a spawn schedule changes live on every cds', async () => {
    expect((await api.setSchedule('s-spawn', { every: 1_200_000, engine: 'spawn' })).status).toBe(200)
    expect(await api.label('s-spawn')).toBe('every 20 min (spawn)')
  })

  test('after a restart the persisted changes are in effect', async () => {
    await app!.stop()
    await start()
    expect(await api.registration()).toEqual({})
    expect(await api.taskEvery('q-set')).toBe(1_200_000)
    expect(await api.label('q-set')).toBe('every 20 min (queued)')
    expect(await api.taskEvery('q-clear')).toBeUndefined()
    expect(await api.label('q-clear')).toBeNull()
    expect(await api.label('s-spawn')).toBe('every 20 min (spawn)')
  })
})
