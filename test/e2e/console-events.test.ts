/**
 * The console shows event-driven pipelines with their lag (issue 23, point 4), in real headless
 * Chromium: the events-consumer fixture (in-memory SQLite, redis-messaging on the real Redis,
 * console served at /pipeline-console/) follows `Book.Changed` of the provider fixture. The test
 * emits messages on Redis; a PipelineViewer sees the pipeline marked event-driven in the list and,
 * in its detail, the Events section: received/applied/skipped of the last hour, lag p50/p95 and the
 * last event, refreshed by the console's poll. Screenshot to test-results/.
 */
import fs from 'node:fs'
import path from 'node:path'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { FIXTURES, ROOT, startApp, startProvider, type ProviderControl, type RunningApp } from '../helpers/apps'
import { launchBrowser } from '../helpers/browser'
import { basic } from '../helpers/demo'
import { redisMessaging, type TestMessaging } from '../helpers/events'
import { waitFor } from '../helpers/wait'
import { waitForSubscribers } from '../helpers/emit'
import { byId } from '../helpers/console'

const RESULTS = path.join(ROOT, 'test-results')
const PREFIX = `dp-test/console-events/${process.pid}/${Date.now()}/`
/** The fixture's mocked PipelineViewer (the lowest role reads the event statistics). */
const VIEWER = basic('viewer', 'viewer')

let provider: (RunningApp & { control: ProviderControl }) | undefined
let consumer: RunningApp | undefined
let bus: TestMessaging
let browser: Browser
let context: BrowserContext
let page: Page
const problems: string[] = []

/** The visible text of a control (an ObjectStatus's text without its invisible state text). */
async function textOf(id: string): Promise<string> {
  const root = page.locator(byId(id)).first()
  const status = root.locator('.sapMObjStatusText')
  return ((await ((await status.count()) ? status.first() : root).textContent()) ?? '').replace(/\s+/g, ' ').trim()
}

async function stats(): Promise<{ received: number; applied: number }> {
  const response = await fetch(`${consumer!.url}/pipeline/PipelineEventStats?$filter=pipeline eq 'followed'`, { headers: { authorization: VIEWER } })
  const rows = ((await response.json()) as { value?: Array<{ received: number; applied: number }> }).value ?? []
  return rows.reduce((sum, row) => ({ received: sum.received + row.received, applied: sum.applied + row.applied }), { received: 0, applied: 0 })
}

/** Changes books on the provider and emits their `Book.Changed` messages; waits until the statistics hold them. */
async function change(ids: number[], applied: number): Promise<void> {
  for (const id of ids) {
    await provider!.control.touch({ from: id, title: `changed ${id}` })
    await bus.emit('Book.Changed', { ID: id })
  }
  await waitFor(async () => (await stats()).applied >= applied, `${applied} applied events in PipelineEventStats`, 20_000)
}

beforeAll(async () => {
  if (!fs.existsSync(path.join(ROOT, 'dist/console/index.html'))) throw new Error('dist/console is missing: run `npm run build` first')
  fs.mkdirSync(RESULTS, { recursive: true })
  browser = await launchBrowser()
  provider = await startProvider()
  await provider.control.seed({ from: 1, count: 5 })
  consumer = await startApp(path.join(FIXTURES, 'events-consumer'), {
    env: {
      EVENTS_WINDOW: '50',
      CDS_CONFIG: JSON.stringify({
        requires: {
          db: { kind: 'sqlite', credentials: { url: ':memory:' } },
          Provider: { credentials: { url: `${provider.url}/odata/v4/catalog` } },
          messaging: { publishPrefix: PREFIX, subscribePrefix: PREFIX },
          'data-pipeline': { management: { reuse: { api: true, console: true } } },
        },
      }),
    },
  })
  bus = await redisMessaging('console-events-bus', { publishPrefix: PREFIX, subscribePrefix: PREFIX })
  await waitForSubscribers([`${PREFIX}Book.Changed`], 20_000)
  context = await browser.newContext({ viewport: { width: 1680, height: 1050 }, extraHTTPHeaders: { authorization: VIEWER } })
  page = await context.newPage()
  page.on('pageerror', error => problems.push(`page error: ${error.message}`))
  page.on('response', response => { if (response.status() >= 400) problems.push(`HTTP ${response.status()} ${response.url()}`) })
}, 180_000)

afterAll(async () => {
  await context?.close().catch(() => undefined)
  await browser?.close()
  await consumer?.stop()
  await provider?.stop()
})

describe('the console shows event-driven pipelines with their lag (headless Chromium)', () => {
  test('configView exposes the effective events settings, read-only, to a PipelineViewer', async () => {
    const response = await fetch(`${consumer!.url}/pipeline/Pipelines('followed')/DataPipelineManagementService.configView()`, { headers: { authorization: VIEWER } })
    expect(response.status).toBe(200)
    const view = JSON.parse(((await response.json()) as { value: string }).value)
    expect(view.events).toEqual({ service: 'messaging', topics: [{ topic: 'Book.Changed', action: 'upsert', key: 'ID' }], window: 50, maxBatch: 1000 })
    const fields = Object.fromEntries((view.fields as Array<{ path: string; effective: unknown; overridable: boolean }>).map(f => [f.path, f]))
    expect(fields['events.maxBatch']).toMatchObject({ effective: 1000, overridable: false })
    expect(fields['events.service']).toMatchObject({ effective: 'messaging', overridable: false })
  })

  test('the list marks the pipeline event-driven; its Events section shows applied counts, lag p50/p95 and the last event, refreshed by the poll', async () => {
    await change([1, 2, 3], 3)
    await page.goto(`${consumer!.url}/pipeline-console/`)
    const row = page.locator(`${byId('pipelineTable')} tr.sapMLIB`).filter({ has: page.locator('.sapMObjectIdentifierTitle', { hasText: /^followed$/ }) })
    await row.waitFor({ timeout: 30_000 })

    // the list: an indicator with a text (not an icon alone) and a tooltip naming service and topics
    const indicator = row.locator('.pcEventDriven')
    await indicator.waitFor()
    expect((await indicator.locator('.sapMObjStatusText').innerText()).trim()).toBe('event-driven')
    expect(await indicator.getAttribute('title')).toBe('Event-driven: follows messaging service messaging, topics Book.Changed')

    await row.click()
    await page.locator(`${byId('detailPage')} .sapMTitle`, { hasText: 'followed' }).first().waitFor()
    await waitFor(async () => /3 applied/.test(await textOf('eventsCounts')), 'the Events section with the applied events', 20_000)
      .catch(async error => { await page.screenshot({ path: path.join(RESULTS, 'console-events-failed.png') }); throw error })
    expect(await textOf('eventsCounts')).toBe('3 received · 3 applied · 0 skipped')
    expect(await textOf('eventsLag')).toMatch(/^p50 [\d,]+ ms · p95 [\d,]+ ms$/)
    expect(await textOf('eventsLast')).not.toMatch(/^$|no events yet/)
    expect(await textOf('eventsSubscription')).toBe('messaging service messaging; topics Book.Changed; window 50 ms, micro-batches of at most 1,000 keys')
    // the section is a labelled region of the form (its title), the lag's meaning in its tooltip
    const labelled = await page.locator(byId('eventsForm')).first().evaluate(form => {
      const region = form.matches('[aria-labelledby]') ? form : form.querySelector('[aria-labelledby]')
      return (region?.getAttribute('aria-labelledby') ?? '').split(' ').map(id => document.getElementById(id)?.textContent?.trim())
    })
    expect(labelled).toContain('Events')
    expect(await page.locator(byId('eventsLag')).first().getAttribute('title')).toMatch(/50th and 95th percentile/)
    await page.locator(byId('detailPage')).first().screenshot({ path: path.join(RESULTS, 'console-events.png') })

    // more events: the next poll (the refresh button polls at once) shows them
    await change([4, 5], 5)
    await page.locator(byId('refreshButton')).first().click()
    await waitFor(async () => (await textOf('eventsCounts')) === '5 received · 5 applied · 0 skipped', 'the refreshed counts', 10_000)
    expect(problems).toEqual([])
  })
})
