/**
 * Typed configuration in the console (issue 25, point 3), in real headless Chromium: the
 * management fixture (in-memory SQLite, the OData provider fixture as source) serves the console
 * at /pipeline-console/. A PipelineAdmin edits the Configuration tab: each setting has the control
 * of its type (select, number input with its range, switch, text, schedule editor), a bad value is
 * marked as it is typed (the served rule), a failed save keeps every edit and marks the field the
 * server named, "reset to coded" clears an override, a diff is shown before anything is saved, and
 * the schedule editor previews the next run times from the server. Screenshots to test-results/.
 */
import fs from 'node:fs'
import path from 'node:path'
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core'
import { FIXTURES, ROOT, startApp, startProvider, type ProviderControl, type RunningApp } from '../helpers/apps'
import { launchBrowser } from '../helpers/browser'
import { basic } from '../helpers/demo'
import { waitFor } from '../helpers/wait'
import { apiAs, byId } from '../helpers/console'

const RESULTS = path.join(ROOT, 'test-results')
/** The fixture's mocked PipelineAdmin. */
const ADMIN = basic('admin', 'admin')

let provider: (RunningApp & { control: ProviderControl }) | undefined
let app: RunningApp | undefined
let browser: Browser
let context: BrowserContext
let page: Page
const problems: string[] = []
/** Management requests the page sent (method and decoded URL). */
const calls: string[] = []

const bound = (name: string, op: string) => `/pipeline/Pipelines('${name}')/DataPipelineManagementService.${op}`

const request = apiAs(() => app!.url, ADMIN)
const api = (url: string, body?: object) => request(url, body ? { method: 'POST', body: JSON.stringify(body) } : {})
const overridesOf = async (name: string) => JSON.parse((await api(`${bound(name, 'configView')}()`)).data.value).overrides as Record<string, unknown>

/** The editor row of a setting. */
const setting = (path: string): Locator => page.locator(`${byId('settingsTable')} tr.sapMLIB`)
  .filter({ has: page.locator('.pcSettingPath', { hasText: new RegExp(`^${path.replace(/\./g, '\\.')}$`) }) })

async function openConfig(name: string): Promise<void> {
  await page.goto(`${app!.url}/pipeline-console/`)
  const row = page.locator(`${byId('pipelineTable')} tr.sapMLIB`).filter({ has: page.locator('.sapMObjectIdentifierTitle', { hasText: new RegExp(`^${name}$`) }) })
  await row.waitFor({ timeout: 30_000 })
  await row.click()
  await page.locator(`${byId('detailPage')} .sapMTitle`, { hasText: name }).first().waitFor()
  await page.locator(byId('tabConfig')).first().click()
  await setting('source.batchSize').waitFor({ timeout: 20_000 })
}

/**
 * Picks an entry of a sap.m.Select (its list opens in a popover), until the select shows it: on a
 * busy machine a click can land while the popover is still opening, and the select ignores it.
 */
async function choose(select: Locator, text: string): Promise<void> {
  await waitFor(async () => {
    if (!(await page.locator('.sapMSelectList:visible').count())) await select.click()
    await page.locator('.sapMSelectList:visible li', { hasText: new RegExp(`^${text.replace(/[*.]/g, '\\$&')}$`) }).first().click({ timeout: 10_000 }).catch(() => undefined)
    return (await selected(select)) === text
  }, `"${text}" chosen`, 60_000, 500)
}

const selected = async (select: Locator) => ((await select.locator('.sapMSelectListItemText, .sapMSltLabel').first().innerText()) ?? '').trim()
const invalid = async (row: Locator) => (await row.locator('input[aria-invalid="true"], .sapMSltState.sapMSltError, .sapMSltError').count()) > 0
const shot = (file: string) => page.locator(byId('detailPage')).first().screenshot({ path: path.join(RESULTS, file) })

beforeAll(async () => {
  if (!fs.existsSync(path.join(ROOT, 'dist/console/index.html'))) throw new Error('dist/console is missing: run `npm run build` first')
  fs.mkdirSync(RESULTS, { recursive: true })
  browser = await launchBrowser()
  provider = await startProvider()
  await provider.control.seed({ count: 3 })
  app = await startApp(path.join(FIXTURES, 'management'), {
    env: {
      CDS_CONFIG: JSON.stringify({
        requires: {
          Provider: { credentials: { url: `${provider.url}/odata/v4/catalog` } },
          'data-pipeline': { management: { reuse: { api: true, console: true } } },
        },
      }),
    },
  })
  context = await browser.newContext({ viewport: { width: 1680, height: 1050 }, extraHTTPHeaders: { authorization: ADMIN } })
  page = await context.newPage()
  page.on('pageerror', error => problems.push(`page error: ${error.message}`))
  page.on('request', request => { if (new URL(request.url()).pathname.startsWith('/pipeline/')) calls.push(`${request.method()} ${decodeURIComponent(request.url())}`) })
  // (400 answers of the validate-only and preview calls are expected; anything else is a problem)
  page.on('response', response => { if (response.status() >= 500) problems.push(`HTTP ${response.status()} ${response.url()}`) })
}, 180_000)

afterAll(async () => {
  await context?.close().catch(() => undefined)
  await browser?.close()
  await app?.stop()
  await provider?.stop()
})

describe('typed configuration editor (headless Chromium)', () => {
  test('each setting gets the control of its type', async () => {
    await openConfig('books')
    await expect(setting('mode').locator('.pcSettingSelect').count()).resolves.toBe(1)
    await expect(setting('transaction').locator('.pcSettingSelect').count()).resolves.toBe(1)
    await expect(setting('source.batchSize').locator('.pcSettingNumber input[type="number"]').count()).resolves.toBe(1)
    await expect(setting('source.batchSize').locator('.pcSettingNumber input').getAttribute('placeholder')).resolves.toBe('1 – 100000')
    await expect(setting('retry.maxRetries').locator('.pcSettingNumber input').getAttribute('placeholder')).resolves.toBe('≥ 0')
    await expect(setting('retry.baseDelay').locator('.pcSettingNumber input').getAttribute('placeholder')).resolves.toBe('0 – 2147483647 ms')
    await expect(setting('enabled').locator('.sapMSwt').count()).resolves.toBe(1)
    await expect(setting('deletes.force').locator('.sapMSwt').count()).resolves.toBe(1)
    await expect(setting('description').locator('.pcSettingText input').count()).resolves.toBe(1)
    await expect(setting('schedule').locator('.pcScheduleKind').count()).resolves.toBe(1)
    // no raw JSON box for typed settings
    await expect(setting('mode').locator('.pcSettingText').count()).resolves.toBe(0)
    // the select offers the served values beside the coded one
    await setting('mode').locator('.pcSettingSelect').click()
    const entries = await page.locator('.sapMSelectList:visible li').allInnerTexts()
    expect(entries.map(e => e.trim())).toEqual(['default: delta', 'delta', 'full'])
    await page.keyboard.press('Escape')
    await shot('console-config-typed.png')
  })

  test('-5 for the batch size is marked as it is typed, and a save keeps the other edits and sends nothing', async () => {
    await openConfig('books')
    await choose(setting('mode').locator('.pcSettingSelect'), 'full')
    const batch = setting('source.batchSize')
    await batch.locator('input').pressSequentially('-5')
    await waitFor(async () => invalid(batch), 'the batch size marked while typing', 5000)
    await batch.locator('input').focus()
    await expect(page.locator('.sapMValueStateMessage:visible').first().innerText()).resolves.toContain('between 1 and 100000')
    const before = calls.length
    await page.locator(byId('saveSettings')).first().click()
    await waitFor(async () => (await page.locator('.sapMMessageToast').count()) > 0, 'the toast naming the bad setting', 5000)
    expect(await page.locator('.sapMMessageToast').first().innerText()).toContain('source.batchSize')
    // no modal, nothing sent, every edit as typed
    expect(await page.locator('.sapMDialog:visible').count()).toBe(0)
    expect(calls.slice(before).filter(c => /setOverrides|validateOverrides/.test(c))).toEqual([])
    expect(await selected(setting('mode').locator('.pcSettingSelect'))).toBe('full')
    expect(await batch.locator('input').inputValue()).toBe('-5')
    expect(await overridesOf('books')).toEqual({})
    await shot('console-config-inline-error.png')
    // corrected, the mark goes away as it is typed
    await batch.locator('input').fill('250')
    await waitFor(async () => !(await invalid(batch)), 'the mark gone', 5000)
  })

  test('a save the server refuses keeps every edit and marks the field it named', async () => {
    // delta passes the select's rule but not the query-shape pipeline: only the server knows
    await openConfig('author-stats')
    await setting('source.batchSize').locator('input').fill('300')
    await choose(setting('mode').locator('.pcSettingSelect'), 'delta')
    await page.locator(byId('saveSettings')).first().click()
    await waitFor(async () => invalid(setting('mode')), 'the mode marked by the server', 10_000)
    expect(calls.some(c => /validateOverrides/.test(c))).toBe(true)
    expect(await page.locator('.sapMDialog:visible').count()).toBe(0)
    expect(await setting('source.batchSize').locator('input').inputValue()).toBe('300')
    expect(await selected(setting('mode').locator('.pcSettingSelect'))).toBe('delta')
    expect(await overridesOf('author-stats')).toEqual({})
    await shot('console-config-server-error.png')
  })

  test('a diff is shown before saving; reset to coded clears an override', async () => {
    await openConfig('books')
    await choose(setting('mode').locator('.pcSettingSelect'), 'full')
    await setting('source.batchSize').locator('input').fill('250')
    await page.locator(byId('saveSettings')).first().click()
    const dialog = page.locator(`${byId('diffDialog')}`).first()
    await dialog.waitFor({ state: 'visible', timeout: 10_000 })
    const rows = await dialog.locator('tr.sapMLIB').allInnerTexts()
    expect(rows.map(r => r.replace(/\s+/g, ' ').trim())).toEqual(['mode delta full', 'source.batchSize 1000 250'])
    // nothing is saved before the diff is confirmed
    expect(await overridesOf('books')).toEqual({})
    await shot('console-config-diff.png')
    await page.locator(byId('diffSave')).first().click()
    await waitFor(async () => JSON.stringify(await overridesOf('books')) === JSON.stringify({ mode: 'full', 'source.batchSize': 250 }), 'the overrides saved')
    const batch = setting('source.batchSize')
    await waitFor(async () => (await batch.locator('.sapMObjStatusWarning').count()) > 0, 'the override shown as such')

    // reset to coded: the field goes back to no override, saved through the diff
    await batch.locator('.pcSettingReset').click()
    expect(await batch.locator('input').inputValue()).toBe('')
    await page.locator(byId('saveSettings')).first().click()
    await dialog.waitFor({ state: 'visible' })
    const reset = await dialog.locator('tr.sapMLIB').allInnerTexts()
    expect(reset.map(r => r.replace(/\s+/g, ' ').trim())).toEqual(['source.batchSize 250 – (coded)'])
    await page.locator(byId('diffSave')).first().click()
    await waitFor(async () => JSON.stringify(await overridesOf('books')) === JSON.stringify({ mode: 'full' }), 'the batch size override cleared')
    await api(bound('books', 'clearOverrides'), { keys: 'mode' })
  })

  test('the schedule editor previews the next run times from the server', async () => {
    await openConfig('books')
    const schedule = setting('schedule')
    await choose(schedule.locator('.pcScheduleKind'), 'cron')
    await schedule.locator('.pcScheduleCron input').fill('*/15 * * * *')
    const preview = schedule.locator('.pcSchedulePreview')
    await waitFor(async () => (await preview.count()) > 0 && /^Next runs: /.test(await preview.innerText()), 'the cron preview', 10_000)
    const times = (await preview.innerText()).replace('Next runs: ', '').split(' · ')
    expect(times).toHaveLength(3)
    expect(calls.some(c => /previewSchedule\(schedule='\{"cron":"\*\/15 \* \* \* \*"/.test(c))).toBe(true)
    await shot('console-config-schedule.png')
    // a cron the server's parser refuses is marked with its message, and the preview goes
    await schedule.locator('.pcScheduleCron input').fill('61 * * * *')
    await waitFor(async () => invalid(schedule), 'the bad cron marked', 10_000)
    await waitFor(async () => (await preview.count()) === 0 || !(await preview.isVisible()), 'no preview for a bad cron', 5000)
    // every 10 minutes
    await choose(schedule.locator('.pcScheduleKind'), 'every')
    await schedule.locator('.pcScheduleEvery input').fill('10m')
    await waitFor(async () => (await preview.count()) > 0 && /^Next runs: /.test(await preview.innerText()), 'the every preview', 10_000)
    expect(problems).toEqual([])
  })
})
