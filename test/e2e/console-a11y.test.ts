/**
 * Accessibility of the pipeline console (issue 25, point 7), in real headless Chromium against the
 * demo apps: axe-core (the npm package, injected into the page) runs in every view — the list with
 * the landscape, the detail tabs (overview with drift, runs, configuration, data flow, preview),
 * the data inspector (three columns, the list's columns popped in), the start and schedule dialogs
 * and a rejected record — and finds no critical and no serious violation. The Tab presses from
 * load to the Start button are counted (one tab stop for the landscape). Counts per view are
 * logged (`axe <view>: …`); screenshots go to test-results/.
 */
import fs from 'node:fs'
import path from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { ROOT } from '../helpers/apps'
import { launchBrowser } from '../helpers/browser'
import { sharedDemo, type DemoApps } from '../helpers/demo'
import { waitFor } from '../helpers/wait'
import { byId } from '../helpers/console'

const RESULTS = path.join(ROOT, 'test-results')
const AXE = path.join(ROOT, 'node_modules/axe-core/axe.min.js')
/** The demo's mocked PipelineAdmin (no password). */
const ADMIN = { username: 'alice', password: '' }

let demo: DemoApps | undefined
let browser: Browser
let page: Page
const counts: Record<string, { critical: number; serious: number; moderate: number; minor: number }> = {}

const row = (name: string) => page.locator(`${byId('pipelineTable')} tr.sapMLIB`).filter({ has: page.locator('.sapMObjectIdentifierTitle', { hasText: new RegExp(`^${name}$`) }) })

interface AxeViolation { id: string; impact: string; help: string; count: number; nodes: Array<{ target: string[]; failureSummary?: string }> }

/** Runs axe-core over the whole document; records the counts per impact and returns the violations. */
async function axe(view: string): Promise<AxeViolation[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.addScriptTag({ path: AXE })
  // UI5 re-renders asynchronously: let it settle (no pending rendering) before the check
  await page.evaluate(() => new Promise(resolve => requestAnimationFrame(() => requestAnimationFrame(resolve))))
  const violations = await page.evaluate(async () => {
    const result = await (window as unknown as { axe: { run(context: Document, options: object): Promise<{ violations: AxeViolation[] }> } })
      .axe.run(document, { resultTypes: ['violations'] })
    return result.violations.map(v => ({ id: v.id, impact: v.impact, help: v.help, count: v.nodes.length, nodes: v.nodes.slice(0, 3).map(n => ({ target: n.target, failureSummary: n.failureSummary })) }))
  })
  const count = (impact: string) => violations.filter(v => v.impact === impact).reduce((sum, v) => sum + v.count, 0)
  counts[view] = { critical: count('critical'), serious: count('serious'), moderate: count('moderate'), minor: count('minor') }
  console.log(`axe ${view}: ${JSON.stringify(counts[view])}${violations.length ? `\n  ${violations.map(v => `${v.impact} ${v.id} ×${v.count} (${v.help}): ${v.nodes.map(n => `${n.target.join(' ')} — ${(n.failureSummary ?? '').replace(/\s+/g, ' ')}`).join(' | ')}`).join('\n  ')}` : ''}`)
  await page.screenshot({ path: path.join(RESULTS, `console-a11y-${view}.png`) })
  return violations
}

/** No critical and no serious violation (the message lists them). */
async function expectClean(view: string): Promise<void> {
  // the column layout labels its separators (aria-valuenow) once its columns have finished resizing
  await page.waitForFunction(() => [...document.querySelectorAll('[role="separator"]')]
    .every(separator => (separator as HTMLElement).offsetParent === null || separator.hasAttribute('aria-valuenow')), undefined, { timeout: 15_000 })
  const bad = (await axe(view)).filter(v => v.impact === 'critical' || v.impact === 'serious')
  expect(bad.map(v => `${v.impact} ${v.id}: ${v.nodes.map(n => `${n.target.join(' ')} — ${n.failureSummary ?? ''}`).join(' | ')}`), view).toEqual([])
}

async function select(name: string): Promise<void> {
  const title = page.locator(`${byId('detailPage')} .sapMTitle`, { hasText: name }).first()
  // a click on a row the list is re-rendering just then (its 5 s watch) can go nowhere: click again
  await waitFor(async () => {
    await row(name).click()
    return title.waitFor({ timeout: 10_000 }).then(() => true, () => false)
  }, `the detail of ${name}`, 60_000)
}

/** Selects a detail tab through the IconTabBar (in three columns some tabs are in its overflow menu). */
async function tab(key: string): Promise<void> {
  await page.evaluate(selected => {
    const Element = (window as unknown as { sap: { ui: { require(name: string): { getElementById(id: string): { setSelectedKey(key: string): void; fireSelect(p: object): void } } } } }).sap.ui.require('sap/ui/core/Element')
    const bar = Element.getElementById(document.querySelector('[data-sap-ui$="--detailTabs"]')!.id)
    bar.setSelectedKey(selected)
    bar.fireSelect({ key: selected, selectedKey: selected })
  }, key)
}

beforeAll(async () => {
  if (!fs.existsSync(path.join(ROOT, 'dist/console/index.html'))) throw new Error('dist/console is missing: run `npm run build` first')
  fs.mkdirSync(RESULTS, { recursive: true })
  browser = await launchBrowser()
  // products has set its rejected record aside and reported schema drift (the demo is shared with
  // console-roles.test.ts: nothing here changes it)
  demo = await sharedDemo('products-rejected')
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, httpCredentials: { ...ADMIN, send: 'always' } })
  page = await context.newPage()
  await page.goto(`${demo.consumer.url}/pipeline-console/`)
  await page.waitForFunction(() => document.querySelectorAll('[id$="--pipelineTable"] tr.sapMLIB .sapMObjectIdentifierTitle').length >= 3
    && document.querySelectorAll('[id$="--landscapeGraph"] g.pcNode').length > 0, undefined, { timeout: 60_000 })
}, 240_000)

afterAll(async () => {
  console.log(`axe counts per view: ${JSON.stringify(counts)}`)
  await browser?.close()
  await demo?.stop()
})

describe('console accessibility (axe-core, every view)', () => {
  test('Tab presses from load to the Start button: the landscape is one tab stop', async () => {
    await select('orders')
    // a click into the page's top corner: the sequential focus navigation starts at the top, as after a load
    await page.evaluate(() => { (document.activeElement as HTMLElement | null)?.blur(); window.scrollTo(0, 0) })
    await page.mouse.click(2, 2)
    let presses = 0
    let inLandscape = 0
    const where = () => page.evaluate(() => ({
      start: !!document.activeElement?.closest('[data-sap-ui$="--startButton"]'),
      landscape: !!document.activeElement?.closest('[data-sap-ui$="--landscapeGraph"]'),
    }))
    for (let at = await where(); !at.start && presses < 200; at = await where()) {
      await page.keyboard.press('Tab')
      presses++
      if ((await where()).landscape) inLandscape++
    }
    console.log(`Tab presses from load to the Start button: ${presses} (${inLandscape} in the landscape)`)
    expect((await where()).start).toBe(true)
    expect(await page.locator(`${byId('landscapeGraph')} g.pcNode`).count()).toBeGreaterThan(3)
    expect(inLandscape, 'tab stops in the landscape').toBe(1)
  })

  test('list and landscape (two columns)', async () => {
    await expectClean('list-landscape')
  })

  test('pipeline detail: overview with schema drift', async () => {
    await select('products')
    await tab('overview')
    await page.locator(byId('driftStrip')).waitFor({ timeout: 30_000 })
    await expectClean('detail-overview')
  })

  test('pipeline detail: runs (history chart, runs, rejected records)', async () => {
    await select('products')
    await tab('runs')
    await page.locator(`${byId('runsTable')} tr.sapMLIB`).first().waitFor()
    await expectClean('detail-runs')
  })

  test('pipeline detail: configuration', async () => {
    await select('products')
    await tab('config')
    await page.locator(`${byId('settingsTable')} tr.sapMLIB`).first().waitFor()
    await expectClean('detail-config')
  })

  test('pipeline detail: data flow', async () => {
    await select('products')
    await tab('flow')
    await page.locator(`${byId('flowGraph')} g.pcNode`).first().waitFor()
    await expectClean('detail-flow')
  })

  test('pipeline detail: preview', async () => {
    await select('products')
    await tab('preview')
    await page.locator(`${byId('previewTable')} tr.sapMLIB`).first().waitFor()
    await expectClean('detail-preview')
  })

  test('data inspector (three columns: the list\'s columns pop in)', async () => {
    await select('products')
    await tab('preview')
    await page.locator(byId('openInspector')).click()
    await page.locator(`${byId('inspectorTable')} tr.sapMLIB`).first().waitFor({ timeout: 30_000 })
    await page.locator(byId('addFilter')).click()
    await page.locator(`${byId('filterRows')} .sapMInput`).first().waitFor()
    await expectClean('inspector')
    await page.locator(byId('closeInspector')).click()
    await page.locator(byId('inspectorPage')).waitFor({ state: 'hidden' })
  })

  test('event-driven pipeline: the events section', async () => {
    const { data } = await demo!.api('/pipeline/Pipelines?$select=name,baseConfig')
    const driven = (data.value as Array<{ name: string; baseConfig: string | null }>).find(p => /"events"/.test(p.baseConfig ?? ''))
    if (!driven) throw new Error('the demo has no event-driven pipeline')
    await select(driven.name)
    await tab('overview')
    await expectClean('detail-events')
  })

  test('dialog: start a run', async () => {
    await select('products')
    await tab('overview')
    await page.locator(byId('startButton')).click()
    await page.locator(byId('startDialog')).waitFor()
    try {
      await expectClean('dialog-start')
    } finally {
      await page.keyboard.press('Escape')
      await page.locator(byId('startDialog')).waitFor({ state: 'hidden' })
    }
  })

  test('dialog: schedule', async () => {
    await select('products')
    await tab('overview')
    await page.locator(byId('setScheduleButton')).click()
    await page.locator(byId('scheduleDialog')).waitFor()
    try {
      await expectClean('dialog-schedule')
    } finally {
      await page.keyboard.press('Escape')
      await page.locator(byId('scheduleDialog')).waitFor({ state: 'hidden' })
    }
  })

  test('dialog: a rejected record', async () => {
    await select('products')
    await tab('runs')
    const show = page.locator(`${byId('rejectsTable')} a.sapMLnk`, { hasText: 'Show record' })
    await waitFor(async () => (await show.count()) > 0, 'a rejected record of products', 30_000)
    await show.first().click()
    await page.locator(byId('recordDialog')).waitFor()
    try {
      await expectClean('dialog-record')
    } finally {
      await page.keyboard.press('Escape')
    }
  })

  test('runs across pipelines (#/runs: filters, timeline, table)', async () => {
    await page.goto(`${demo!.consumer.url}/pipeline-console/#/runs?since=7d`)
    await page.locator(`${byId('runsTimeline')} .pcGanttRun`).first().waitFor({ timeout: 60_000 })
    await expectClean('runs-overview')
  })
})
