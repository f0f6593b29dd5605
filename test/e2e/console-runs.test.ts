/**
 * The runs across pipelines (issue 25, point 4) in real headless Chromium at 1440×900, time zone
 * Europe/Berlin, against the console-shell fixture (fourteen local pipelines; SupplierInvoices' mapping
 * always throws, so its runs fail):
 * - `#/runs` filters by status, trigger, pipeline and time window on the server ($filter on
 *   PipelineRuns, paged), the filters in the URL: reload and back restore them;
 * - a timeline (Gantt): one bar per run of the window with its status class and a text legend, one tab
 *   stop with arrow keys between the bars, a click or Enter opens the run's page;
 * - relative times ("3 minutes ago") with the absolute time and the time zone as tooltip (runs view,
 *   the list's last run, the detail's runs); the detail's run rows link to the run's page.
 * Screenshots go to test-results/.
 */
import fs from 'node:fs'
import path from 'node:path'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { FIXTURES, ROOT, startApp, type RunningApp } from '../helpers/apps'
import { launchBrowser } from '../helpers/browser'
import { basic } from '../helpers/demo'
import { waitFor } from '../helpers/wait'
import { apiAs, byId } from '../helpers/console'

const RESULTS = path.join(ROOT, 'test-results')
const ADMIN = basic('admin', 'admin')
const TIME_ZONE = 'Europe/Berlin'

interface Run { ID: string; pipeline_name: string; status: string; trigger: string; startTime: string; endTime: string | null }

let app: RunningApp | undefined
let browser: Browser
let context: BrowserContext
let page: Page
let base: string
const problems: string[] = []
/** The URLs of the console's requests for PipelineRuns (what the server was asked to filter). */
const runRequests: string[] = []
let runs: Run[] = []

/** The table's run rows (not its no-data row). */
const rows = () => page.locator(`${byId('allRunsTable')} tr.sapMListTblRow:has(.sapMObjStatus)`)
const bars = () => page.locator(`${byId('runsTimeline')} g.pcGanttRun`)
/** The pipeline of each row (its first cell). */
const rowNames = () => rows().evaluateAll(trs => trs.map(tr => tr.querySelector('td.sapMListTblCell')?.textContent?.trim() ?? '').filter(Boolean))

const api = apiAs(() => base, ADMIN)

/** A synchronous run (a failed one answers with an error status: the run list below checks the outcome). */
async function execute(name: string, trigger: string): Promise<void> {
  await api('/pipeline/execute', { method: 'POST', body: JSON.stringify({ name, trigger, async: false }) })
}

/** Opens `#/runs…` and waits until the table shows exactly `expected` rows (sorted names). */
async function showRuns(hash: string, expected: Run[]): Promise<void> {
  await page.goto(`${base}/pipeline-console/${hash}`)
  await expectRows(expected, hash)
}

async function expectRows(expected: Run[], what: string): Promise<void> {
  const names = expected.map(run => run.pipeline_name).sort()
  await waitFor(async () => JSON.stringify((await rowNames()).sort()) === JSON.stringify(names), `${what}: the rows ${names.join(', ') || '(none)'}`)
}

/** Chooses an item of a sap.m.Select by its text. */
async function choose(select: string, text: string): Promise<void> {
  await page.locator(byId(select)).first().click()
  await page.getByRole('option', { name: text, exact: true }).click()
}

beforeAll(async () => {
  if (!fs.existsSync(path.join(ROOT, 'dist/console/index.html'))) throw new Error('dist/console is missing: run `npm run build` first')
  fs.mkdirSync(RESULTS, { recursive: true })
  browser = await launchBrowser()
  app = await startApp(path.join(FIXTURES, 'console-shell'))
  base = app.url
  await waitFor(async () => ((await api('/pipeline/Pipelines?$select=name')).data.value as unknown[] | undefined)?.length === 14, 'the fixture\'s pipelines')
  // failed and completed runs with different triggers
  await execute('SupplierInvoices', 'external')
  await execute('ServiceContracts', 'manual')
  await execute('SalesOrderItems', 'scheduled')
  await execute('CostCenterPlans', 'manual')
  runs = (await api('/pipeline/PipelineRuns?$orderby=startTime desc')).data.value as Run[]
  expect(runs.map(run => `${run.pipeline_name} ${run.status} ${run.trigger}`).sort()).toEqual([
    'CostCenterPlans idle manual', 'SalesOrderItems idle scheduled', 'ServiceContracts idle manual', 'SupplierInvoices failed external'])
  context = await browser.newContext({ viewport: { width: 1440, height: 900 }, timezoneId: TIME_ZONE, extraHTTPHeaders: { authorization: ADMIN } })
  page = await context.newPage()
  page.on('pageerror', error => problems.push(`page error: ${error.message}`))
  page.on('response', response => { if (response.status() >= 400) problems.push(`HTTP ${response.status()} ${response.url()}`) })
  page.on('request', request => { if (request.url().includes('/pipeline/PipelineRuns?')) runRequests.push(decodeURIComponent(request.url()).replace(/\+/g, ' ')) })
}, 180_000)

afterAll(async () => {
  await context?.close().catch(() => undefined)
  await browser?.close()
  await app?.stop()
})

const where = (test: (run: Run) => boolean) => runs.filter(test)

describe('console: runs across pipelines', () => {
  test('filters narrow the rows on the server: status, trigger, pipeline, time window', async () => {
    await showRuns('#/runs', runs)
    runRequests.length = 0
    await choose('filterStatus', 'failed')
    await waitFor(() => decodeURIComponent(page.url()).endsWith('#/runs?status=failed'), 'the status in the URL')
    await expectRows(where(run => run.status === 'failed'), 'status failed')
    // the server filtered (and pages): no list filtered in the browser
    expect(runRequests.some(url => url.includes("status eq 'failed'") && /\$top=\d+/.test(url))).toBe(true)
    await page.locator(byId('filterReset')).first().click()
    await expectRows(runs, 'the filters reset')
    await choose('filterTrigger', 'manual')
    await waitFor(() => decodeURIComponent(page.url()).endsWith('#/runs?trigger=manual'), 'the trigger in the URL')
    await expectRows(where(run => run.trigger === 'manual'), 'trigger manual')
    // the timeline draws the same filter
    const manual = where(run => run.trigger === 'manual').map(run => run.ID).sort()
    await waitFor(async () => JSON.stringify((await bars().evaluateAll(gs => gs.map(g => g.getAttribute('data-run')))).sort()) === JSON.stringify(manual), 'the manual runs in the timeline')
    await page.screenshot({ path: path.join(RESULTS, 'console-runs-filtered.png') })
    await showRuns('#/runs?status=idle&trigger=scheduled', where(run => run.status === 'idle' && run.trigger === 'scheduled'))
    await showRuns('#/runs?pipeline=ServiceContracts', where(run => run.pipeline_name === 'ServiceContracts'))
    await waitFor(async () => (await page.locator('[id$="--filterPipeline-label"]').innerText()).trim() === 'ServiceContracts', 'the pipeline select showing the filter')
    // a window starting after every run: none; one starting before the first: all
    const after = new Date(Math.max(...runs.map(run => new Date(run.endTime ?? run.startTime).getTime())) + 60_000).toISOString()
    await showRuns(`#/runs?since=${encodeURIComponent(after)}`, [])
    expect(runRequests.some(url => url.includes(`startTime ge ${after.slice(0, 16)}`))).toBe(true)
    await showRuns('#/runs?since=1h', runs)
    expect(problems).toEqual([])
  })

  test('a custom window: "Since…" and a local date and time typed (a wrong one marked, not applied)', async () => {
    await showRuns('#/runs', runs)
    await choose('filterWindow', 'Since…')
    const field = page.locator(`${byId('filterSince')} input`).first()
    await field.waitFor()
    await field.fill('tomorrow')
    await field.press('Enter')
    await waitFor(async () => (await page.locator(byId('filterSince')).first().getAttribute('class'))?.includes('sapMInputBaseContentWrapperError')
      || (await field.getAttribute('aria-invalid')) === 'true', 'the wrong start marked')
    expect(decodeURIComponent(page.url())).not.toContain('tomorrow')
    // a minute after the last run (whole seconds), typed as local time (yyyy-mm-dd hh:mm:ss)
    const after = new Date(Math.ceil((Math.max(...runs.map(run => new Date(run.endTime ?? run.startTime).getTime())) + 60_000) / 1000) * 1000)
    const typed = new Intl.DateTimeFormat('sv-SE', { timeZone: TIME_ZONE, dateStyle: 'short', timeStyle: 'medium' }).format(after)
    expect(typed).toMatch(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/)
    await field.fill(typed)
    await field.press('Enter')
    await waitFor(() => decodeURIComponent(page.url()).endsWith(`#/runs?since=${after.toISOString()}`), `the window's start ${after.toISOString()} in the URL`)
    await expectRows([], 'the custom window')
    await page.reload()
    await expectRows([], 'the custom window after the reload')
    expect((await page.locator('[id$="--filterWindow-label"]').innerText()).trim()).toBe('Since…')
    expect(await page.locator(`${byId('filterSince')} input`).first().inputValue()).toBe(typed)
  })

  test('filters survive a reload; back restores the previous filter', async () => {
    await showRuns('#/runs?status=failed', where(run => run.status === 'failed'))
    await page.reload()
    await expectRows(where(run => run.status === 'failed'), 'status failed after the reload')
    expect((await page.locator('[id$="--filterStatus-label"]').innerText()).trim()).toBe('failed')
    await choose('filterStatus', 'idle (completed)')
    await expectRows(where(run => run.status === 'idle'), 'status completed')
    await page.goBack()
    await expectRows(where(run => run.status === 'failed'), 'status failed after back')
    expect(decodeURIComponent(page.url())).toMatch(/#\/runs\?status=failed$/)
  })

  test('the timeline: one bar per run of the window, its status as class, a text legend; a click opens the run', async () => {
    await showRuns('#/runs?since=6h', runs)
    await waitFor(async () => (await bars().count()) === runs.length, `${runs.length} bars`)
    for (const run of runs) {
      const bar = bars().and(page.locator(`[data-run="${run.ID}"]`))
      expect(await bar.getAttribute('class')).toContain(`pcStatus-${run.status}`)
      expect(await bar.getAttribute('data-pipeline')).toBe(run.pipeline_name)
      // the name starts with the lane's visible text and says the status in words
      expect(await bar.getAttribute('aria-label')).toMatch(new RegExp(`^${run.pipeline_name}: ${run.status}, `))
    }
    // one lane per pipeline, named by visible text
    expect((await page.locator(`${byId('runsTimeline')} .pcLaneName`).allTextContents()).sort()).toEqual([...new Set(runs.map(run => run.pipeline_name))].sort())
    const legend = (await page.locator(`${byId('runsTimeline')} .pcTimelineLegend`).innerText()).replace(/\s+/g, ' ')
    for (const status of ['idle (completed)', 'failed', 'running']) expect(legend).toContain(status)
    // the failed bar is red, the completed ones are not
    const fill = (id: string) => bars().and(page.locator(`[data-run="${id}"]`)).locator('rect').evaluate(el => getComputedStyle(el).fill)
    const failed = runs.find(run => run.status === 'failed')!
    const completed = runs.find(run => run.status === 'idle')!
    expect(await fill(failed.ID)).not.toBe(await fill(completed.ID))
    await page.screenshot({ path: path.join(RESULTS, 'console-runs-timeline.png') })
    await bars().and(page.locator(`[data-run="${failed.ID}"]`)).click()
    await waitFor(() => decodeURIComponent(page.url()).endsWith(`#/pipelines/SupplierInvoices/runs/${failed.ID}`), 'the failed run\'s URL')
    await waitFor(async () => (await page.locator(byId('runId')).first().innerText()).trim() === failed.ID, 'the failed run\'s page')
  })

  test('the timeline is one tab stop: arrow keys move between the bars, Enter opens the run', async () => {
    await showRuns('#/runs', runs)
    await waitFor(async () => (await bars().count()) === runs.length, `${runs.length} bars`)
    expect(await page.locator(`${byId('runsTimeline')} g.pcGanttRun[tabindex="0"]`).count()).toBe(1)
    // Tab from the filter bar's last control lands on the timeline's one stop
    await page.locator(byId('filterReset')).first().focus()
    await page.keyboard.press('Tab')
    const focused = () => page.evaluate(() => document.activeElement?.getAttribute('data-run') ?? null)
    expect(await focused()).not.toBeNull()
    // (the stop is the bar used last: Home goes to the first)
    await page.keyboard.press('Home')
    const first = await focused()
    expect(first).toBe(await bars().first().getAttribute('data-run'))
    await page.keyboard.press('ArrowRight')
    const second = await focused()
    expect(second).not.toBeNull()
    expect(second).not.toBe(first)
    expect(await page.locator(`${byId('runsTimeline')} g.pcGanttRun[tabindex="0"]`).getAttribute('data-run')).toBe(second)
    await page.keyboard.press('ArrowLeft')
    expect(await focused()).toBe(first)
    await page.keyboard.press('End')
    const last = await focused()
    const target = runs.find(run => run.ID === last)!
    await page.keyboard.press('Enter')
    await waitFor(() => decodeURIComponent(page.url()).endsWith(`#/pipelines/${target.pipeline_name}/runs/${target.ID}`), 'the run\'s URL after Enter')
    await waitFor(async () => (await page.locator(byId('runId')).first().innerText()).trim() === target.ID, 'the run\'s page after Enter')
  })

  test('relative times with the absolute time and the time zone on hover: runs view, list, detail', async () => {
    await showRuns('#/runs', runs)
    const start = page.locator(`${byId('allRunsTable')} .pcRelative`).first()
    expect((await start.innerText()).trim()).toMatch(/ago$|^now$/)
    expect(await start.getAttribute('title')).toContain(`(${TIME_ZONE})`)
    // the list's last run
    await page.goto(`${base}/pipeline-console/`)
    const row = page.locator(`${byId('pipelineTable')} tr.sapMLIB`).filter({ has: page.locator('.sapMObjectIdentifierTitle', { hasText: /^ServiceContracts$/ }) })
    await waitFor(async () => /ago|now/.test(await row.innerText()), 'the last run relative in the list')
    const lastRun = row.locator('td .sapMText[title*="Last run"]').last()
    expect(await lastRun.getAttribute('title')).toContain(`(${TIME_ZONE})`)
    expect((await lastRun.innerText()).trim()).toMatch(/ago$|^now$/)
    await lastRun.hover()
    await page.screenshot({ path: path.join(RESULTS, 'console-runs-list-relative.png') })
  })

  test('the detail\'s run rows link to the run\'s page', async () => {
    const run = runs.find(r => r.pipeline_name === 'ServiceContracts')!
    await page.goto(`${base}/pipeline-console/#/pipelines/ServiceContracts/runs`)
    const link = page.locator(`${byId('runsTable')} tr.sapMLIB a.pcRunLink`).first()
    await link.waitFor()
    expect(await link.getAttribute('href')).toBe(`#/pipelines/ServiceContracts/runs/${run.ID}`)
    expect((await link.innerText()).trim()).toMatch(/ago$|^now$/)
    expect(await link.getAttribute('title')).toContain(`(${TIME_ZONE})`)
    await link.click()
    await waitFor(() => decodeURIComponent(page.url()).endsWith(`#/pipelines/ServiceContracts/runs/${run.ID}`), 'the run\'s URL')
    await waitFor(async () => (await page.locator(byId('runId')).first().innerText()).trim() === run.ID, 'the run\'s page')
    expect(problems).toEqual([])
  })
})
