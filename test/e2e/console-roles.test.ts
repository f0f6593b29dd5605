/**
 * The console per role (issue 20, finding 5), in real headless Chromium against the demo apps
 * (demo/provider, demo/consumer serving the console at /pipeline-console/). Each user of the demo's
 * mocked users signs in with Basic auth: victor (PipelineViewer),
 * olivia (PipelineOperator), alice (PipelineAdmin), nora (no role). The console asks
 * `permissions()` what the role allows and disables everything else with a tooltip naming the role
 * it needs; no user sends a request its role does not allow. Screenshots per role go to test-results/.
 */
import fs from 'node:fs'
import path from 'node:path'
import type { Browser, BrowserContext, Page, Request } from 'playwright-core'
import { ROOT } from '../helpers/apps'
import { launchBrowser } from '../helpers/browser'
import { basic, sharedDemo, waitUntil, type DemoApps } from '../helpers/demo'
import { apiAs, byId } from '../helpers/console'

const RESULTS = path.join(ROOT, 'test-results')
const ADMIN = 'alice'
const NEEDS_OPERATOR = 'Needs the PipelineOperator role'
const NEEDS_ADMIN = 'Needs the PipelineAdmin role'

/** Requests a PipelineViewer may not send: operations of PipelineOperator and PipelineAdmin, and the data they guard. */
const OPERATOR_ONLY = /\/(start|execute|flush|setEnabled|replayRejects)\b|DataPipelineManagementService\.(start|setEnabled|replayRejects)\b/
const ADMIN_ONLY = /setSchedule|clearSchedule|setOverrides|validateOverrides|clearOverrides|inspectData|inspectCapabilities|PipelineRejects/

let demo: DemoApps | undefined
let browser: Browser
let base: string

interface Session {
  context: BrowserContext
  page: Page
  /** Requests the page sent to the management service, and their answers' status. */
  calls: Array<{ method: string; url: string; status?: number }>
  problems: string[]
}
const sessions: Session[] = []

const api = apiAs(() => base, basic(ADMIN))


/**
 * A console page signed in as `user`: Basic auth on every request of the page, as after a login
 * (playwright's httpCredentials would answer only a 401 challenge, which a service without
 * enforced roles never sends).
 */
async function signIn(user: string, password = ''): Promise<Session> {
  const context = await browser.newContext({ viewport: { width: 1680, height: 1050 }, extraHTTPHeaders: { authorization: basic(user, password) } })
  const page = await context.newPage()
  const session: Session = { context, page, calls: [], problems: [] }
  const byRequest = new Map<Request, Session['calls'][number]>()
  page.on('request', request => {
    if (!new URL(request.url()).pathname.startsWith('/pipeline/')) return
    const call = { method: request.method(), url: decodeURIComponent(request.url()) }
    byRequest.set(request, call)
    session.calls.push(call)
  })
  page.on('response', response => {
    const call = byRequest.get(response.request())
    if (call) call.status = response.status()
  })
  page.on('pageerror', error => session.problems.push(`page error: ${error.message}`))
  sessions.push(session)
  await page.goto(`${base}/pipeline-console/`)
  return session
}

/** A control's state from UI5 itself (also for controls not rendered yet) and its tooltip in the page. */
async function control(page: Page, id: string): Promise<{ enabled: boolean; visible: boolean; tooltip: string; title: string | null }> {
  return page.evaluate(localId => {
    type UI5Element = { getId(): string; getEnabled?(): boolean; getVisible?(): boolean; getTooltip_AsString(): string | undefined }
    const Element = (window as unknown as { sap: { ui: { require(name: string): { registry: { filter(test: (e: UI5Element) => boolean): UI5Element[] } } } } }).sap.ui.require('sap/ui/core/Element')
    const [found] = Element.registry.filter(e => e.getId().endsWith(`--${localId}`))
    if (!found) throw new Error(`no control ${localId}`)
    const dom = document.getElementById(found.getId())
    return {
      enabled: found.getEnabled?.() ?? true,
      visible: found.getVisible?.() ?? true,
      tooltip: found.getTooltip_AsString() ?? '',
      title: dom ? dom.getAttribute('title') ?? dom.querySelector('[title]')?.getAttribute('title') ?? null : null,
    }
  }, id)
}

async function openPipeline(page: Page, name: string): Promise<void> {
  await page.waitForFunction(() => document.querySelectorAll('[id$="--pipelineTable"] tr.sapMLIB .sapMObjectIdentifierTitle').length >= 3, undefined, { timeout: 30_000 })
  await page.locator(`${byId('pipelineTable')} tr.sapMLIB`).filter({ has: page.locator('.sapMObjectIdentifierTitle', { hasText: new RegExp(`^${name}$`) }) }).click()
  await page.locator(`${byId('detailPage')} .sapMTitle`, { hasText: name }).first().waitFor()
  // the detail is bound: products has rejected records (statistics_skipped > 0) and a schedule
  await waitUntil(async () => /\d+ skipped/.test((await page.locator(byId('detailSkipped')).textContent()) ?? ''), 'the pipeline detail')
}

async function tab(page: Page, key: string): Promise<void> {
  await page.locator(byId(`tab${key}`)).first().click()
}

/** Every control a role decides on: [id, the level it needs]. */
const CONTROLS: Array<[string, 'operate' | 'administer']> = [
  ['startButton', 'operate'], ['flushButton', 'operate'], ['enabledSwitch', 'operate'], ['replayRejects', 'operate'],
  ['setScheduleButton', 'administer'], ['clearScheduleButton', 'administer'], ['saveSettings', 'administer'],
  ['tabPreview', 'administer'], ['openInspector', 'administer'],
]

/** Enabled where the role allows it; otherwise disabled with the tooltip naming the role needed. */
async function expectControls(page: Page, allowed: { operate: boolean; administer: boolean }): Promise<void> {
  for (const [id, level] of CONTROLS) {
    const state = await control(page, id)
    expect(state.visible, `${id} visible`).toBe(true)
    expect(state.enabled, `${id} enabled`).toBe(allowed[level])
    if (!allowed[level]) {
      const needs = level === 'operate' ? NEEDS_OPERATOR : NEEDS_ADMIN
      expect(state.tooltip, `${id} tooltip`).toBe(needs)
      if (state.title !== null) expect(state.title, `${id} title in the page`).toBe(needs)
    } else {
      expect(state.tooltip, `${id} tooltip`).not.toMatch(/^Needs the/)
    }
  }
}

/** Clicks every control the role disables (forced: as a user clicking a greyed-out button). */
async function clickDisabled(page: Page, level: 'operate' | 'administer'): Promise<void> {
  for (const [id, needs] of CONTROLS) {
    if (needs !== level && !(level === 'operate' && needs === 'administer')) continue
    const locator = page.locator(byId(id)).first()
    if (await locator.isVisible()) await locator.click({ force: true })
  }
}

const shot = (page: Page, file: string) => page.screenshot({ path: path.join(RESULTS, file) })

beforeAll(async () => {
  if (!fs.existsSync(path.join(ROOT, 'dist/console/index.html'))) throw new Error('dist/console is missing: run `npm run build` first')
  fs.mkdirSync(RESULTS, { recursive: true })
  browser = await launchBrowser()
  // products has set its rejected record aside (the demo is shared with console-a11y.test.ts: what a
  // test here changes, it changes back)
  demo = await sharedDemo('products-rejected')
  base = demo.consumer.url
}, 180_000)

afterAll(async () => {
  for (const session of sessions) await session.context.close().catch(() => undefined)
  await browser?.close()
  await demo?.stop()
})

describe('the console shows what the role allows (headless Chromium, demo app)', () => {
  test('permissions() answers the mocked users\' roles as flags (admin ⇒ operate ⇒ view)', async () => {
    const as = async (user: string) => (await api('/pipeline/permissions()', { headers: { authorization: basic(user) } })).data
    expect(await as('alice')).toMatchObject({ user: 'alice', roles: ['PipelineAdmin'], view: true, operate: true, administer: true })
    expect(await as('olivia')).toMatchObject({ user: 'olivia', roles: ['PipelineOperator'], view: true, operate: true, administer: false })
    expect(await as('victor')).toMatchObject({ user: 'victor', roles: ['PipelineViewer'], view: true, operate: false, administer: false })
    expect(await as('nora')).toMatchObject({ user: 'nora', roles: [], view: false, operate: false, administer: false })
  })

  test('PipelineViewer: reads everything, every action disabled with the role it needs, and sends no forbidden request', async () => {
    const { page, calls, problems } = await signIn('victor')
    await openPipeline(page, 'products')
    await expect(page.locator(byId('userInfo')).textContent()).resolves.toBe('Signed in as victor (PipelineViewer)')
    await expectControls(page, { operate: false, administer: false })
    // the runs tab: runs shown, rejected records not loaded (they hold source data)
    await tab(page, 'Runs')
    await page.locator(`${byId('runsTable')} tr.sapMLIB`).first().waitFor()
    await expect(page.locator(byId('rejectsTitle')).textContent()).resolves.toBe('Rejected records')
    await expect(page.locator(byId('rejectsLocked')).innerText()).resolves.toContain('Rejected records hold source data: they need the PipelineAdmin role.')
    const replay = page.locator(`button${byId('replayRejects')}`)
    await expect(replay.getAttribute('title')).resolves.toBe(NEEDS_OPERATOR)
    await shot(page, 'console-role-viewer-runs.png')
    // the configuration is shown read-only
    await tab(page, 'Config')
    await page.locator(`${byId('settingsTable')} tr.sapMLIB`).first().waitFor()
    await expect(page.locator(`${byId('settingsTable')} .sapMInputBase input:not([readonly])`).count()).resolves.toBe(0)
    await expect(page.locator(`${byId('settingsTable')} .sapMSlt:not(.sapMSltDisabled)`).count()).resolves.toBe(0)
    await expect(page.locator(`${byId('settingsTable')} .sapMSwt:not(.sapMSwtDisabled)`).count()).resolves.toBe(0)
    await tab(page, 'Overview')
    await shot(page, 'console-role-viewer.png')
    // a viewer clicking the greyed-out controls (and the preview tab) sends nothing
    const before = calls.length
    await clickDisabled(page, 'operate')
    await page.locator(byId('refreshButton')).click() // a request it may send: the poll
    await waitUntil(async () => calls.slice(before).some(c => c.url.includes('landscapeMetadata') && c.status), 'the refresh')
    expect(await page.locator('.sapMDialog:visible, .sapMMessageBox').count()).toBe(0)
    const forbidden = calls.filter(c => c.method !== 'GET' || OPERATOR_ONLY.test(c.url) || ADMIN_ONLY.test(c.url))
    expect(forbidden).toEqual([])
    expect(calls.filter(c => (c.status ?? 0) >= 400)).toEqual([])
    expect(calls.some(c => c.url.endsWith('/pipeline/permissions()'))).toBe(true)
    expect(problems).toEqual([])
  })

  test('PipelineOperator: run, flush, enable/disable and replay enabled; schedule, configuration, inspector and rejects need PipelineAdmin', async () => {
    const { page, calls, problems } = await signIn('olivia')
    await openPipeline(page, 'products')
    await expect(page.locator(byId('userInfo')).textContent()).resolves.toBe('Signed in as olivia (PipelineOperator)')
    await expectControls(page, { operate: true, administer: false })
    await expect(control(page, 'replayRejects')).resolves.toMatchObject({ tooltip: expect.stringMatching(/^Write the open rejected records again/) })
    await tab(page, 'Runs')
    await expect(page.locator(byId('rejectsLocked')).innerText()).resolves.toContain('Rejected records hold source data: they need the PipelineAdmin role.')
    await tab(page, 'Overview')
    // what the role allows works: pause and resume products through setEnabled
    const toggle = async (enabled: boolean) => {
      await page.locator(byId('enabledSwitch')).click()
      await waitUntil(async () => (await api(`/pipeline/Pipelines('products')`)).data.enabled === enabled, `products enabled = ${enabled}`)
      await waitUntil(async () => (await control(page, 'enabledSwitch')).enabled && (await page.locator(`${byId('enabledText')}`).textContent())?.includes(enabled ? 'enabled' : 'paused'), 'the switch')
    }
    await toggle(false)
    await toggle(true)
    expect(calls.filter(c => c.url.includes('setEnabled') && c.status === 200)).toHaveLength(2)
    await shot(page, 'console-role-operator.png')
    await clickDisabled(page, 'administer')
    expect(await page.locator('.sapMDialog:visible, .sapMMessageBox').count()).toBe(0)
    expect(calls.filter(c => ADMIN_ONLY.test(c.url))).toEqual([])
    expect(calls.filter(c => (c.status ?? 0) >= 400)).toEqual([])
    expect(problems).toEqual([])
  })

  test('PipelineAdmin: everything enabled, rejected records and the data preview load', async () => {
    const { page, calls, problems } = await signIn('alice')
    await openPipeline(page, 'products')
    await expect(page.locator(byId('userInfo')).textContent()).resolves.toBe('Signed in as alice (PipelineAdmin)')
    await expectControls(page, { operate: true, administer: true })
    await tab(page, 'Runs')
    await waitUntil(async () => /Open rejected records of "products" \(1\)/.test((await page.locator(byId('rejectsTitle')).textContent()) ?? ''), 'the open rejects')
    await expect(control(page, 'rejectsLocked')).resolves.toMatchObject({ visible: false })
    await tab(page, 'Preview')
    await page.locator(`${byId('previewTable')} tr.sapMLIB`).first().waitFor()
    await page.locator(byId('openInspector')).click()
    await page.locator(`${byId('inspectorTable')} tr.sapMLIB`).first().waitFor()
    await shot(page, 'console-role-admin.png')
    expect(calls.some(c => c.url.includes('/PipelineRejects'))).toBe(true)
    expect(calls.some(c => c.url.includes('inspectData'))).toBe(true)
    expect(calls.filter(c => (c.status ?? 0) >= 400)).toEqual([])
    expect(problems).toEqual([])
  })

  test('a user without a role sees a clear message instead of errors, and the console asks for nothing else', async () => {
    const { page, calls, problems } = await signIn('nora')
    const strip = page.locator(byId('accessDenied'))
    await strip.waitFor()
    expect(await strip.innerText()).toMatch(/You hold none of the roles of the pipeline console \(PipelineViewer, PipelineOperator, PipelineAdmin\)/)
    // (with the roles enforced, permissions() may answer a user without a role 403: then without the name)
    expect(['Signed in as nora (no pipeline role)', '']).toContain(await page.locator(byId('userInfo')).textContent())
    for (const id of ['pipelineTable', 'landscapePanel', 'pollInfo']) await expect(control(page, id)).resolves.toMatchObject({ visible: false })
    await expect(control(page, 'refreshButton')).resolves.toMatchObject({ enabled: false })
    expect(await page.locator('.sapMMessageBox').count()).toBe(0)
    await shot(page, 'console-role-none.png')
    // only what any console asks at start: what the user may do, and the service's metadata
    expect(calls.filter(c => !/\/pipeline\/(permissions\(\)|\$metadata)/.test(c.url))).toEqual([])
    expect(problems).toEqual([])
  })

  test('an answer 401 shows a readable message, not a raw error', async () => {
    // not signed in: the service's real answers (401 to anonymous), without the Basic challenge header
    // (the browser's own login prompt: headless Chromium from @sparticuz closes on it)
    const context = await browser.newContext({ viewport: { width: 1680, height: 1050 } })
    await context.route('**/pipeline/**', async route => {
      const response = await route.fetch()
      const headers = Object.fromEntries(Object.entries(response.headers()).filter(([name]) => name.toLowerCase() !== 'www-authenticate'))
      await route.fulfill({ response, headers })
    })
    const page = await context.newPage()
    const problems: string[] = []
    page.on('pageerror', error => problems.push(`page error: ${error.message}`))
    sessions.push({ context, page, calls: [], problems })
    await page.goto(`${base}/pipeline-console/`)
    const strip = page.locator(byId('accessDenied'))
    await strip.waitFor()
    expect(await strip.innerText()).toMatch(/You are not signed in, or your session has expired \(HTTP 401\)\. Reload the page to sign in again\./)
    expect(await page.locator('.sapMMessageBox').count()).toBe(0)
    await expect(control(page, 'pipelineTable')).resolves.toMatchObject({ visible: false })
    expect(problems).toEqual([])
  })

  test('an answer 403 to an operation shows a readable message', async () => {
    const { page } = await signIn('olivia')
    await openPipeline(page, 'products')
    // the answer CAP gives a user whose role an operation's @requires does not name (as with sec-roles' enforcement)
    await page.route('**/DataPipelineManagementService.setEnabled', route => route.fulfill({
      status: 403, contentType: 'application/json', body: JSON.stringify({ error: { code: '403', message: 'Forbidden' } }),
    }))
    await page.locator(byId('enabledSwitch')).click()
    const box = page.locator('.sapMMessageBox')
    await box.waitFor()
    expect((await box.innerText()).replace(/\s+/g, ' ')).toMatch(/Your role does not allow this \(HTTP 403\)\. The console needs one of the roles PipelineViewer, PipelineOperator, PipelineAdmin/)
    await shot(page, 'console-role-403.png')
    expect((await api(`/pipeline/Pipelines('products')`)).data.enabled).toBe(true)
  })
})
