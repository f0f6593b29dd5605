/**
 * The console's run page (issue 25, points 1 and 5) in real headless Chromium against the demo apps
 * (demo/provider, demo/consumer serving the console at /pipeline-console/). A real HTTP proxy sits
 * between them: it slows the provider's Orders pages down (a run to watch while it is active) or
 * answers them with HTTP 500 (a run failing at the source).
 * - `#/pipelines/orders/runs/<ID>`: header, a timeline with one bar per page read and write batch
 *   (one tab stop, arrow keys), the event log with filters; polled while the run is active; the URL
 *   survives a reload;
 * - a full run over rows already replicated: its unchanged rows on the run page, in the runs list and
 *   the pipeline's runs tab, and its batch events counting them as the run does (issue 37);
 * - a failed run: a banner naming where it failed with the first error event's message, "Show
 *   events" filtering the log to the error, Retry (operators only) starting a new run and opening
 *   its page; the pipeline detail shows the same banner with a link to the run page.
 * Screenshots go to test-results/.
 */
import fs from 'node:fs'
import path from 'node:path'
import { OrdersProxy } from '../helpers/orders-proxy'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { ROOT } from '../helpers/apps'
import { launchBrowser } from '../helpers/browser'
import { basic, startDemo, waitUntil, type Demo } from '../helpers/demo'
import { byId } from '../helpers/console'

const RESULTS = path.join(ROOT, 'test-results')
const AXE = path.join(ROOT, 'node_modules/axe-core/axe.min.js')
/** Orders per page (an override): the demo's 2,000 orders are read in 8 pages by a full run. */
const BATCH = 250
const PAGES = 2000 / BATCH

let demo: Demo | undefined
let browser: Browser
const contexts: BrowserContext[] = []
let base: string
/** A real HTTP proxy in front of the provider: `fail` answers Orders requests with HTTP 500, `delay` slows each down. */
const ordersProxy = new OrdersProxy()
const problems: string[] = []

const api = (url: string, init: RequestInit & { user?: string } = {}) => demo!.api(url, init)
const bound = (op: string) => `/pipeline/Pipelines('orders')/DataPipelineManagementService.${op}`

interface Event { seq: number; kind: string; phase: string | null; message: string | null; durationMs: number | string | null }
const eventsOf = async (runId: string): Promise<Event[]> => (await api(`/pipeline/PipelineRuns(${runId})/events?$orderby=seq`)).data.value
const runOf = async (runId: string) => (await api(`/pipeline/PipelineRuns(${runId})`)).data

/** A full run of orders (synchronous unless told); its ID. */
async function runOrders(async = false): Promise<string> {
  const started = await api(bound('start'), { method: 'POST', body: JSON.stringify({ mode: 'full', async }) })
  expect(started.status, JSON.stringify(started.data)).toBeLessThan(300)
  return String(started.data.runId)
}

/** A run of orders while the provider answers 500: its ID once it ended. */
async function failingRun(): Promise<string> {
  ordersProxy.fail = true
  try {
    const runId = await runOrders(true)
    await waitUntil(async () => (await runOf(runId)).status !== 'running', 'the failing run\'s end', 60_000)
    return runId
  } finally {
    ordersProxy.fail = false
  }
}

async function signIn(user: string): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, extraHTTPHeaders: { authorization: basic(user) } })
  contexts.push(context)
  const page = await context.newPage()
  page.on('pageerror', error => problems.push(`${user}: page error: ${error.message}`))
  return page
}

async function openRun(page: Page, runId: string): Promise<void> {
  await page.goto(`${base}/pipeline-console/#/pipelines/orders/runs/${runId}`)
  await waitUntil(async () => (await page.locator(byId('runId')).first().innerText()).trim() === runId, `the run page of ${runId}`)
}

const logRows = (page: Page) => page.locator(`${byId('eventTable')} tr.sapMLIB`)
const bars = (page: Page, lane: string) => page.locator(`${byId('runTimeline')} g.pcSpan[data-lane="${lane}"]`)
const textOf = async (page: Page, id: string) => ((await page.locator(byId(id)).first().innerText()) ?? '').replace(/\s+/g, ' ').trim()

const statusOf = async (page: Page) => ((await page.locator(`${byId('runStatus')} .sapMObjStatusText`).first().innerText().catch(() => '')) ?? '').trim()

interface AxeViolation { id: string; impact: string; count: number; nodes: string[] }

/** axe-core over the whole page: the violations (counts per impact are logged). */
async function axe(page: Page, view: string): Promise<AxeViolation[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.addScriptTag({ path: AXE })
  await page.evaluate(() => new Promise(resolve => requestAnimationFrame(() => requestAnimationFrame(resolve))))
  // the run page only (the list and landscape beside it are checked by their own tests)
  const violations: AxeViolation[] = await page.evaluate(async () => {
    const result = await (window as unknown as { axe: { run(context: Element, options: object): Promise<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: string[]; failureSummary?: string }> }> }> } })
      .axe.run(document.querySelector('[data-sap-ui$="--runPage"]')!, { resultTypes: ['violations'] })
    return result.violations.map(v => ({ id: v.id, impact: v.impact, count: v.nodes.length, nodes: v.nodes.slice(0, 3).map(n => `${n.target.join(' ')} — ${n.failureSummary ?? ''}`) }))
  })
  const count = (impact: string) => violations.filter(v => v.impact === impact).reduce((sum, v) => sum + v.count, 0)
  console.log(`axe ${view}: ${JSON.stringify({ critical: count('critical'), serious: count('serious'), moderate: count('moderate'), minor: count('minor') })}${violations.length ? ` (${violations.map(v => `${v.impact} ${v.id}`).join(', ')})` : ''}`)
  return violations
}

const severe = (violations: AxeViolation[]) => violations.filter(v => v.impact === 'critical' || v.impact === 'serious').map(v => `${v.impact} ${v.id}: ${v.nodes.join(' | ')}`)

/** Picks an entry of a sap.m.Select. */
async function choose(page: Page, id: string, text: string): Promise<void> {
  await page.locator(byId(id)).first().click()
  await page.locator('.sapMSelectList li.sapMSelectListItemBase:visible', { hasText: new RegExp(`^${text}$`) }).first().click()
}

beforeAll(async () => {
  if (!fs.existsSync(path.join(ROOT, 'dist/console/index.html'))) throw new Error('dist/console is missing: run `npm run build` first')
  fs.mkdirSync(RESULTS, { recursive: true })
  browser = await launchBrowser()
  demo = await startDemo({ salesUrl: ordersProxy.start })
  base = demo.consumer.url
  // no scheduled orders run in between; pages of 250 orders; a failure is not retried
  expect((await api(bound('setEnabled'), { method: 'POST', body: JSON.stringify({ enabled: false }) })).status).toBeLessThan(300)
  const overrides = { 'source.batchSize': BATCH, 'retry.maxRetries': 0 }
  const set = await api(bound('setOverrides'), { method: 'POST', body: JSON.stringify({ overrides: JSON.stringify(overrides) }) })
  expect(set.status, JSON.stringify(set.data)).toBeLessThan(300)
  await waitUntil(async () => (await api(`/pipeline/Pipelines('orders')`)).data.status !== 'running', 'orders idle')
}, 240_000)

afterAll(async () => {
  for (const context of contexts) await context.close().catch(() => undefined)
  await browser?.close()
  await demo?.stop()
  await ordersProxy.close()
})

describe('console: the run page', () => {
  let failedRun = ''
  let completedRun = ''

  test('a run of several pages: timeline bars per page read and write batch, a log row per event, polled while active, the URL survives a reload', async () => {
    const page = await signIn('alice')
    ordersProxy.delay = 1200
    let runId: string
    try {
      runId = await runOrders(true)
      completedRun = runId
      await openRun(page, runId)
      // open while the run reads: the page follows it to its end
      await waitUntil(async () => (await statusOf(page)) === 'running', `the run shown running (${JSON.stringify(await runOf(runId))})`)
      await waitUntil(async () => (await runOf(runId)).status !== 'running', 'the run\'s end', 90_000)
      const ended = Date.now()
      await waitUntil(async () => (await statusOf(page)) !== 'running', 'the run\'s end shown by the poll', 30_000)
      console.log(`the run page showed the run's end ${Date.now() - ended} ms after it ended`)
    } finally {
      ordersProxy.delay = 0
    }
    const events = await eventsOf(runId)
    expect(events.at(-1)).toMatchObject({ kind: 'end', message: 'completed' })
    await waitUntil(async () => (await logRows(page).count()) === events.length, 'a log row per event')
    // a bar per event with a duration
    const pages = events.filter(e => e.kind === 'page' && e.durationMs !== null)
    const batches = events.filter(e => e.kind === 'batch' && e.durationMs !== null)
    expect(pages.length).toBeGreaterThanOrEqual(PAGES)
    expect(batches.length).toBeGreaterThanOrEqual(PAGES)
    const stored = await runOf(runId)
    console.log(`run of ${PAGES} pages: ${events.length} events, ${pages.length} page reads, ${batches.length} write batches; run statistics ${JSON.stringify({ created: stored.statistics_created, updated: stored.statistics_updated, unchanged: stored.statistics_unchanged })}, end event ${events.at(-1)?.message}`)
    expect(await bars(page, 'read').count()).toBe(pages.length)
    expect(await bars(page, 'write').count()).toBe(batches.length)
    expect(await textOf(page, 'runTrigger')).toBe('manual')
    expect(await textOf(page, 'runMode')).toBe('full')
    expect(await textOf(page, 'runRecords')).toMatch(/\d/)
    expect(await page.locator(byId('failureBox')).first().isVisible()).toBe(false)

    // one tab stop; arrow keys move it; a bar's name is the caption shown
    const spans = page.locator(`${byId('runTimeline')} g.pcSpan`)
    expect(await page.locator(`${byId('runTimeline')} g.pcSpan[tabindex="0"]`).count()).toBe(1)
    await spans.first().focus()
    const focused = () => page.evaluate(() => document.activeElement?.getAttribute('data-seq'))
    const first = await focused()
    await page.keyboard.press('ArrowRight')
    const second = await focused()
    expect(second).not.toBe(first)
    expect(await page.locator(`${byId('runTimeline')} g.pcSpan[tabindex="0"]`).getAttribute('data-seq')).toBe(second)
    const label = await page.evaluate(() => document.activeElement?.getAttribute('aria-label'))
    expect(await page.locator(`${byId('runTimeline')} .pcTimelineCaption`).innerText()).toBe(label)
    await page.keyboard.press('End')
    expect(await focused()).toBe(await spans.last().getAttribute('data-seq'))
    await page.screenshot({ path: path.join(RESULTS, 'console-run-page.png'), fullPage: true })

    await page.reload()
    await waitUntil(async () => (await page.locator(byId('runId')).first().innerText()).trim() === runId, 'the run page after a reload')
    await waitUntil(async () => (await bars(page, 'read').count()) === pages.length && (await logRows(page).count()) === events.length, 'timeline and log after the reload')
    expect(problems).toEqual([])
  })

  test('filters narrow the log: kind, phase, text', async () => {
    const page = await signIn('alice')
    const runId = await runOrders()
    const events = await eventsOf(runId)
    await openRun(page, runId)
    await waitUntil(async () => (await logRows(page).count()) === events.length, 'every event in the log')
    await choose(page, 'kindFilter', 'batch')
    const batches = events.filter(e => e.kind === 'batch').length
    await waitUntil(async () => (await logRows(page).count()) === batches, 'only the write batches')
    const kinds = await logRows(page).locator('.sapMObjStatusText').allInnerTexts()
    expect(kinds.length).toBe(batches)
    for (const kind of kinds) expect(kind.trim()).toBe('batch')
    await page.locator(byId('clearEventFilter')).first().click()
    await waitUntil(async () => (await logRows(page).count()) === events.length, 'every event again')
    await choose(page, 'phaseFilter', 'source')
    await waitUntil(async () => (await logRows(page).count()) === events.filter(e => e.phase === 'source').length, 'only the source phase')
    await page.locator(byId('clearEventFilter')).first().click()
    await page.locator(`${byId('eventSearch')} input`).first().fill('completed')
    const matching = events.filter(e => /completed/i.test(`${e.message ?? ''}`)).length
    expect(matching).toBeGreaterThanOrEqual(1)
    await waitUntil(async () => (await logRows(page).count()) < events.length && (await logRows(page).count()) >= matching, 'the rows matching the text')
    expect(await textOf(page, 'eventCount')).toMatch(new RegExp(`of ${events.length} events`))
  })

  test('a full run over orders already replicated: the run page and the runs list show its unchanged rows; its batch events add up to them', async () => {
    await runOrders() // every order replicated (an earlier run may have been cut short)
    const runId = await runOrders()
    const run = await runOf(runId)
    // 2,000 orders read again, none of them changed (issue 37: the page said "0 created, 0 updated, 0 deleted")
    expect(run).toMatchObject({ status: 'idle', statistics_created: 0, statistics_updated: 0, statistics_unchanged: 2000, statistics_deleted: 0 })
    // the batches count as the run does: 8 batches of 250 unchanged orders, not "created 250"
    const events = (await api(`/pipeline/PipelineRuns(${runId})/events?$orderby=seq&$select=kind,details`)).data.value as Array<{ kind: string; details: string | null }>
    const batches = events.filter(e => e.kind === 'batch').map(e => JSON.parse(e.details ?? '{}'))
    expect(batches).toEqual(Array.from({ length: PAGES }, () => ({ unchanged: BATCH })))
    expect(events.some(e => e.kind === 'sweep')).toBe(false)

    const page = await signIn('alice')
    await openRun(page, runId)
    // (until the run has loaded the text has the labels without figures)
    await waitUntil(async () => /^0 created/.test(await textOf(page, 'runRecords')), 'the run\'s counts')
    expect(await textOf(page, 'runRecords')).toMatch(/^0 created, 0 updated, 2,?000 unchanged, 0 deleted$/)
    // the runs list
    await page.goto(`${base}/pipeline-console/#/runs?pipeline=orders`)
    const row = page.locator(`${byId('allRunsTable')} tr.sapMLIB`, { hasText: /2,?000 unchanged/ })
    await waitUntil(async () => (await row.count()) > 0, 'the run in the runs list with its unchanged rows')
    expect((await row.first().innerText()).replace(/\s+/g, ' ')).toMatch(/0 created, 0 updated, 2,?000 unchanged, 0 deleted/)
    // the pipeline's runs tab
    await page.goto(`${base}/pipeline-console/#/pipelines/orders/runs`)
    const recent = page.locator(`${byId('runsTable')} tr.sapMLIB`, { hasText: /2,?000 unchanged/ })
    await waitUntil(async () => (await recent.count()) > 0, 'the run in the pipeline\'s runs tab with its unchanged rows')
    expect(problems).toEqual([])
  })

  test('a run failing at the source: banner with the phase and the first error, Show events, Retry opens the new run', async () => {
    failedRun = await failingRun()
    const run = await runOf(failedRun)
    expect(run).toMatchObject({ status: 'failed', failedAt: 'source' })
    const error = (await eventsOf(failedRun)).find(e => e.kind === 'error')!
    expect(error.message).toBeTruthy()

    const page = await signIn('olivia')
    await openRun(page, failedRun)
    await page.locator(byId('failureStrip')).first().waitFor()
    const banner = await textOf(page, 'failureStrip')
    expect(banner).toContain('failed at the source')
    expect(banner).toContain(error.message)
    await page.screenshot({ path: path.join(RESULTS, 'console-run-failed.png'), fullPage: true })
    // Show events: the log filtered to the error, its row focused
    await page.locator(byId('showFailureEvents')).first().click()
    await waitUntil(async () => (await logRows(page).count()) === 1, 'the error row only')
    expect(await logRows(page).first().innerText()).toContain(error.message)
    await waitUntil(() => page.evaluate(() => Boolean(document.activeElement?.closest('[id$="--eventTable"]'))), 'the focus on the error row')

    // Retry: a new run of the same mode, its page opened
    await page.locator(byId('retryButton')).first().click()
    await waitUntil(async () => {
      const match = /#\/pipelines\/orders\/runs\/([^/?]+)$/.exec(decodeURIComponent(page.url()))
      return match && match[1] !== failedRun ? match[1] : null
    }, 'the new run\'s page')
    const retried = /runs\/([^/?]+)$/.exec(page.url())![1]
    await waitUntil(async () => (await page.locator(byId('runId')).first().innerText()).trim() === retried, 'the new run shown')
    await waitUntil(async () => (await runOf(retried)).status !== 'running', 'the retried run ended', 90_000)
    expect(await runOf(retried)).toMatchObject({ trigger: 'manual', mode: 'full' })
    expect((await runOf(retried)).status).not.toBe('failed')
    await waitUntil(async () => !(await page.locator(byId('failureBox')).first().isVisible()) && ['idle', 'failed'].includes(await statusOf(page)), 'the new run\'s page without banner')
  })

  test('a viewer sees the banner without Retry; the pipeline detail links a failed last run to its page', async () => {
    expect(failedRun).not.toBe('')
    const page = await signIn('victor')
    await openRun(page, failedRun)
    await page.locator(byId('failureStrip')).first().waitFor()
    expect(await textOf(page, 'failureStrip')).toContain('failed at the source')
    expect(await page.locator(byId('showFailureEvents')).first().isVisible()).toBe(true)
    // (an invisible control leaves a hidden placeholder of its id)
    expect(await page.locator(`${byId('retryButton')}.sapMBtn`).count()).toBe(0)

    // a failed last run in the pipeline detail
    const again = await failingRun()
    expect((await runOf(again)).status).toBe('failed')
    const detail = await signIn('alice')
    await detail.goto(`${base}/pipeline-console/#/pipelines/orders`)
    await waitUntil(async () => (await detail.locator(byId('lastFailureStrip')).count()) > 0 && /failed at the source/.test(await textOf(detail, 'lastFailureStrip')), 'the banner in the detail')
    await detail.screenshot({ path: path.join(RESULTS, 'console-run-detail-banner.png') })
    await detail.locator(byId('lastFailureLink')).first().click()
    await waitUntil(() => detail.url().endsWith(`#/pipelines/orders/runs/${again}`), 'the failed run\'s URL')
    await waitUntil(async () => (await detail.locator(byId('runId')).first().innerText()).trim() === again, 'the failed run\'s page')
    expect(problems).toEqual([])
  })

  test('no critical and no serious axe-core violation on the run page (completed and failed run)', async () => {
    expect(completedRun).not.toBe('')
    const page = await signIn('alice')
    await openRun(page, completedRun)
    await waitUntil(async () => (await logRows(page).count()) > 0 && (await bars(page, 'read').count()) > 0, 'timeline and log')
    expect(severe(await axe(page, 'run page'))).toEqual([])
    await openRun(page, failedRun)
    await page.locator(byId('failureStrip')).first().waitFor()
    await waitUntil(async () => page.locator(`${byId('retryButton')}.sapMBtn`).isVisible(), 'the Retry button')
    expect(severe(await axe(page, 'failed run page'))).toEqual([])
  })
})
