/**
 * The console behind the app router (issue 33, point 6): the real @sap/approuter (a child process, the
 * way `npm start` runs it in an approuter module) in front of the console-shell fixture under a path
 * prefix, with the route a CAP project's xs-app.json uses for its service:
 *   { "source": "^/data/(.*)$", "target": "$1", "destination": "srv-api" }
 * so the console is at /data/pipeline-console/ and must call /data/pipeline/…, never /pipeline/… at the
 * root (which the app router does not route). `authenticationMethod: none` (no XSUAA here): the app
 * router then treats the route as public and passes the browser's Authorization header through
 * unchanged (lib/backend-request/headers.js: only non-public routes drop it and, with forwardAuthToken,
 * send the session's JWT instead), so the mocked users sign in with Basic auth as in the other console
 * tests. Headless Chromium records every request the page makes.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import fs from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'
import type { Browser, BrowserContext, Page, Request } from 'playwright-core'
import { FIXTURES, ROOT, startApp, type RunningApp } from '../helpers/apps'
import { launchBrowser } from '../helpers/browser'
import { basic, waitUntil } from '../helpers/demo'
import { waitFor } from '../helpers/wait'
import { byId } from '../helpers/console'

const require = createRequire(import.meta.url)

const PREFIX = '/data'
const XS_APP = {
  authenticationMethod: 'none',
  routes: [{ source: '^/data/(.*)$', target: '$1', destination: 'srv-api' }],
}
/** The fixture's mocked admin, and a viewer added for this file. */
const ADMIN = basic('admin', 'admin')
const VIEWER = basic('victor', 'victor')
const USERS = { victor: { password: 'victor', roles: ['PipelineViewer'] } }
const PIPELINES = 14
const NEEDS_OPERATOR = 'Needs the PipelineOperator role'
const NEEDS_ADMIN = 'Needs the PipelineAdmin role'

let app: RunningApp | undefined
let router: { url: string; child: ChildProcess; output: () => string } | undefined
let workingDir: string | undefined
let browser: Browser | undefined
const contexts: BrowserContext[] = []

const titles = (page: Page) => page.locator(`${byId('pipelineTable')} tr.sapMLIB .sapMObjectIdentifierTitle`)

/** Starts @sap/approuter in `dir` (its xs-app.json) on a free port; resolves once it listens. */
function startRouter(dir: string, destinations: unknown[]): Promise<NonNullable<typeof router>> {
  const child = spawn(process.execPath, [require.resolve('@sap/approuter/approuter.js')], {
    cwd: dir,
    env: { ...process.env, PORT: '0', destinations: JSON.stringify(destinations) },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let log = ''
  const output = () => log
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`the app router did not start:\n${log}`)) }, 60_000)
    const onData = (chunk: Buffer) => {
      log += chunk.toString()
      const match = /Application router is listening on port: (\d+)/.exec(log)
      if (match) {
        clearTimeout(timer)
        resolve({ url: `http://127.0.0.1:${match[1]}`, child, output })
      }
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', onData)
    child.on('exit', code => { clearTimeout(timer); reject(new Error(`the app router exited with ${code}:\n${log}`)) })
  })
}

async function stopRouter(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise(resolve => child.once('exit', resolve))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000)
  await exited
  clearTimeout(timer)
}

/** A page signed in as `authorization` (Basic on every request, as after a login), recording every request. */
async function signIn(authorization: string) {
  const context = await browser!.newContext({ viewport: { width: 1440, height: 900 }, extraHTTPHeaders: { authorization } })
  contexts.push(context)
  const page = await context.newPage()
  const requests: Array<{ method: string; url: string; status?: number }> = []
  const byRequest = new Map<Request, (typeof requests)[number]>()
  const problems: string[] = []
  page.on('request', request => {
    const entry = { method: request.method(), url: request.url() }
    byRequest.set(request, entry)
    requests.push(entry)
  })
  page.on('response', response => {
    const entry = byRequest.get(response.request())
    if (entry) entry.status = response.status()
  })
  page.on('requestfailed', request => problems.push(`request failed: ${request.method()} ${request.url()} (${request.failure()?.errorText})`))
  page.on('pageerror', error => problems.push(`page error: ${error.message}`))
  return { page, requests, problems }
}

/** A control's state from UI5 itself (as in console-roles.test.ts). */
function control(page: Page, id: string): Promise<{ enabled: boolean; tooltip: string }> {
  return page.evaluate(localId => {
    type UI5Element = { getId(): string; getEnabled?(): boolean; getTooltip_AsString(): string | undefined }
    const Element = (window as unknown as { sap: { ui: { require(name: string): { registry: { filter(test: (e: UI5Element) => boolean): UI5Element[] } } } } }).sap.ui.require('sap/ui/core/Element')
    const [found] = Element.registry.filter(e => e.getId().endsWith(`--${localId}`))
    if (!found) throw new Error(`no control ${localId}`)
    return { enabled: found.getEnabled?.() ?? true, tooltip: found.getTooltip_AsString() ?? '' }
  }, id)
}

async function openPipeline(page: Page, name: string): Promise<void> {
  await page.locator(`${byId('pipelineTable')} tr.sapMLIB`).filter({ has: page.locator('.sapMObjectIdentifierTitle', { hasText: new RegExp(`^${name}$`) }) }).click()
  await page.locator(`${byId('detailPage')} .sapMTitle`, { hasText: new RegExp(`^${name}$`) }).first().waitFor()
}

/** Waits for the list; fails at once (not after the deadline) when the page asked anything outside the prefix. */
async function listed(page: Page, requests: Array<{ url: string }>): Promise<void> {
  await waitUntil(async () => {
    const outside = requests.filter(r => !r.url.startsWith(`${router!.url}${PREFIX}/`))
    if (outside.length) throw new Error(`the console left the prefix ${PREFIX}/: ${outside.map(r => r.url).join(', ')}`)
    return (await titles(page).count()) === PIPELINES
  }, 'the fourteen pipelines in the list')
}

/** Every request went to the app router under the prefix; none to the app's root paths. */
function expectPrefixed(requests: Array<{ url: string }>): void {
  const outside = requests.filter(r => !r.url.startsWith(`${router!.url}${PREFIX}/`))
  expect(outside).toEqual([])
  const paths = requests.map(r => new URL(r.url).pathname)
  expect(paths.filter(p => /^\/pipeline(-console)?\//.test(p))).toEqual([])
}

beforeAll(async () => {
  if (!fs.existsSync(path.join(ROOT, 'dist/console/index.html'))) throw new Error('dist/console is missing: run `npm run build` first')
  browser = await launchBrowser()
  app = await startApp(path.join(FIXTURES, 'console-shell'), { env: { CDS_CONFIG: JSON.stringify({ requires: { auth: { users: USERS } } }) } })
  workingDir = fs.mkdtempSync(path.join(os.tmpdir(), 'pipeline-approuter-'))
  fs.writeFileSync(path.join(workingDir, 'xs-app.json'), JSON.stringify(XS_APP, null, 2))
  router = await startRouter(workingDir, [{ name: 'srv-api', url: app.url }])
  await waitFor(async () => {
    const response = await fetch(`${app!.url}/pipeline/Pipelines?$select=name`, { headers: { authorization: ADMIN } })
    return response.ok && ((await response.json()) as { value: unknown[] }).value.length === PIPELINES
  }, 'the fixture\'s pipelines')
}, 180_000)

afterAll(async () => {
  for (const context of contexts) await context.close().catch(() => undefined)
  await browser?.close()
  if (router) await stopRouter(router.child)
  await app?.stop()
  if (workingDir) fs.rmSync(workingDir, { recursive: true, force: true })
})

describe('the console behind @sap/approuter under a path prefix (/data/…)', () => {
  test('the app router passes the user\'s Authorization header through, and the console\'s redirect keeps the prefix', async () => {
    const as = async (authorization?: string) => {
      const response = await fetch(`${router!.url}${PREFIX}/pipeline/permissions()`, { headers: authorization ? { authorization } : {} })
      return { status: response.status, data: response.ok ? await response.json() : undefined }
    }
    expect(await as(ADMIN)).toMatchObject({ status: 200, data: { user: 'admin', roles: ['PipelineAdmin'], administer: true } })
    expect(await as(VIEWER)).toMatchObject({ status: 200, data: { user: 'victor', roles: ['PipelineViewer'], view: true, operate: false } })
    expect((await as()).status).toBe(401) // the app's own answer: the router adds no identity of its own
    // /data/pipeline-console → /data/pipeline-console/ (an absolute /pipeline-console/ would leave the prefix)
    const redirect = await fetch(`${router!.url}${PREFIX}/pipeline-console?x=1`, { redirect: 'manual' })
    expect(redirect.status).toBe(301)
    expect(new URL(redirect.headers.get('location')!, redirect.url).href).toBe(`${router!.url}${PREFIX}/pipeline-console/?x=1`)
  })

  test('an admin: the console loads at /data/pipeline-console, lists the pipelines, starts a run, and every request stays under /data/', async () => {
    const { page, requests, problems } = await signIn(ADMIN)
    await page.goto(`${router!.url}${PREFIX}/pipeline-console`) // without the slash: the console's redirect
    expect(page.url()).toBe(`${router!.url}${PREFIX}/pipeline-console/`)
    await listed(page, requests)
    await waitUntil(async () => (await page.locator(byId('userInfo')).textContent()) === 'Signed in as admin (PipelineAdmin)', 'the signed-in user')
    // an action (POST) through the router: start ActiveOrders, the list shows its run's outcome
    await openPipeline(page, 'ActiveOrders')
    await page.locator(byId('startButton')).click()
    await page.locator(byId('startDialog')).waitFor()
    await page.locator(byId('startConfirm')).click()
    await waitUntil(async () => {
      const response = await fetch(`${router!.url}${PREFIX}/pipeline/Pipelines('ActiveOrders')?$select=status,lastSync`, { headers: { authorization: ADMIN } })
      const pipeline = await response.json() as { status: string; lastSync: string | null }
      return pipeline.status === 'idle' && pipeline.lastSync
    }, 'the run of ActiveOrders started from the console')
    const api = requests.filter(r => r.url.startsWith(`${router!.url}${PREFIX}/pipeline/`))
    expect(api.some(r => r.url.includes('/$metadata'))).toBe(true)
    expect(api.some(r => r.url.includes('/permissions()'))).toBe(true)
    expect(api.some(r => /\/Pipelines\b/.test(decodeURIComponent(r.url)) && r.status === 200)).toBe(true)
    expect(api.some(r => r.method === 'POST' && /ActiveOrders.*start|start.*ActiveOrders/.test(decodeURIComponent(r.url)) && (r.status ?? 0) < 300)).toBe(true)
    // the console's own files came through the router too (index.html, the bundle, theme, texts)
    expect(requests.filter(r => r.url.startsWith(`${router!.url}${PREFIX}/pipeline-console/resources/`)).length).toBeGreaterThan(0)
    expectPrefixed(requests)
    expect(requests.filter(r => (r.status ?? 0) >= 400)).toEqual([])
    expect(problems).toEqual([])
    console.log(`${requests.length} requests, all under ${PREFIX}/ (${api.length} to ${PREFIX}/pipeline/)`)
  })

  test('the same build at the app\'s own root still calls /pipeline/ (the relative URLs resolve against the console\'s location)', async () => {
    const { page, requests, problems } = await signIn(ADMIN)
    await page.goto(`${app!.url}/pipeline-console/`)
    await waitUntil(async () => (await titles(page).count()) === PIPELINES, 'the fourteen pipelines in the list')
    expect(requests.every(r => r.url.startsWith(`${app!.url}/pipeline-console/`) || r.url.startsWith(`${app!.url}/pipeline/`))).toBe(true)
    expect(requests.some(r => r.url.startsWith(`${app!.url}/pipeline/permissions()`) && r.status === 200)).toBe(true)
    expect(problems).toEqual([])
  })

  test('a PipelineViewer behind the router sees the actions disabled with the role they need, as without a prefix', async () => {
    const { page, requests, problems } = await signIn(VIEWER)
    await page.goto(`${router!.url}${PREFIX}/pipeline-console/`)
    await listed(page, requests)
    await waitUntil(async () => (await page.locator(byId('userInfo')).textContent()) === 'Signed in as victor (PipelineViewer)', 'the signed-in viewer')
    await openPipeline(page, 'ActiveOrders')
    for (const [id, needs] of [['startButton', NEEDS_OPERATOR], ['flushButton', NEEDS_OPERATOR], ['enabledSwitch', NEEDS_OPERATOR], ['setScheduleButton', NEEDS_ADMIN], ['openInspector', NEEDS_ADMIN]]) {
      expect(await control(page, id), id).toEqual({ enabled: false, tooltip: needs })
    }
    expect(requests.filter(r => r.method !== 'GET')).toEqual([])
    expectPrefixed(requests)
    expect(requests.filter(r => (r.status ?? 0) >= 400)).toEqual([])
    expect(problems).toEqual([])
  })
})
