/**
 * The console's landscape (issue 25, point 6), in real headless Chromium: the landscape fixture
 * replicates the provider's Books by an annotation (`@federation.replicate`, source `Books` of
 * `Provider`) and by a coded pipeline naming it `Provider.Books` — one source node for both; its
 * other pipelines are failed, stale and customized — three colours, each explained by the legend;
 * the graph is one tab stop with the arrow keys inside, each node's accessible name its visible
 * text; axe-core finds nothing critical or serious in it. Screenshot to test-results/.
 */
import fs from 'node:fs'
import path from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { FIXTURES, ROOT, startApp, startProvider, type ProviderControl, type RunningApp } from '../helpers/apps'
import { launchBrowser } from '../helpers/browser'
import { basic } from '../helpers/demo'
import { waitFor } from '../helpers/wait'
import { apiAs, byId } from '../helpers/console'

const RESULTS = path.join(ROOT, 'test-results')
const ADMIN = basic('admin', 'admin')

let provider: (RunningApp & { control: ProviderControl }) | undefined
let app: RunningApp | undefined
let browser: Browser
let page: Page

const graph = () => page.locator(byId('landscapeGraph'))
const node = (key: string) => graph().locator(`g.pcNode[data-key="${key}"]`)

const api = apiAs(() => app!.url, ADMIN)
const landscape = async () => JSON.parse((await api('/pipeline/landscapeMetadata()')).data.value) as { nodes: Array<{ key: string; kind: string; state?: string }>; lines: Array<{ from: string; to: string }> }
const focusedKey = () => page.evaluate(() => document.activeElement?.getAttribute('data-key') ?? null)

beforeAll(async () => {
  if (!fs.existsSync(path.join(ROOT, 'dist/console/index.html'))) throw new Error('dist/console is missing: run `npm run build` first')
  fs.mkdirSync(RESULTS, { recursive: true })
  browser = await launchBrowser()
  provider = await startProvider()
  await provider.control.seed({ from: 1, count: 3 })
  app = await startApp(path.join(FIXTURES, 'landscape'), {
    env: { CDS_CONFIG: JSON.stringify({ requires: { Provider: { credentials: { url: `${provider.url}/odata/v4/catalog` } } } }) },
  })
  await waitFor(async () => ((await api('/pipeline/Pipelines?$select=name')).data?.value?.length ?? 0) === 5, 'the five pipelines of the fixture')
  // broken-authors fails (its READ hook throws); the others run once (stale-authors never does)
  await api(`/pipeline/Pipelines('broken-authors')/DataPipelineManagementService.start`, { method: 'POST', body: JSON.stringify({ async: false }) })
  await waitFor(async () => (await api(`/pipeline/Pipelines('broken-authors')`)).data?.status === 'failed', 'broken-authors failed')
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 }, extraHTTPHeaders: { authorization: ADMIN } })
  page = await context.newPage()
  await page.goto(`${app.url}/pipeline-console/`)
  await page.waitForFunction(() => document.querySelectorAll('[id$="--landscapeGraph"] g.pcNode').length >= 8, undefined, { timeout: 60_000 })
}, 240_000)

afterAll(async () => {
  await browser?.close()
  await app?.stop()
  await provider?.stop()
})

describe('console landscape', () => {
  test('one node per remote entity: the annotation\'s and the coded pipeline\'s Books are one source', async () => {
    const metadata = await landscape()
    const books = metadata.nodes.filter(n => n.kind === 'source' && /Books/.test(n.key))
    expect(books.map(n => n.key)).toEqual(['source:Provider/Books'])
    expect(metadata.lines.filter(l => l.from === 'source:Provider/Books').map(l => l.to).sort()).toEqual(['pipeline:book-copies', 'pipeline:landscape.Books'])
    // in the page: one node, two lines out of it
    await expect(graph().locator('g.pcNode[data-kind="source"]').filter({ hasText: 'Books' }).count()).resolves.toBe(1)
    await expect(graph().locator('path.pcLine[data-from="source:Provider/Books"]').count()).resolves.toBe(2)
    await expect(graph().locator('g.pcNode').count()).resolves.toBe(metadata.nodes.length)
  })

  test('failed, stale and customized have distinct colours and words, each explained by the legend', async () => {
    const states = { 'broken-authors': 'failed', 'stale-authors': 'stale', 'custom-authors': 'customized' } as const
    const strokes: string[] = []
    for (const [name, state] of Object.entries(states)) {
      const box = node(`pipeline:${name}`)
      await waitFor(async () => (await box.getAttribute('data-state')) === state, `${name} marked ${state}`)
      await expect(box.locator('.pcNodeMark').textContent()).resolves.toBe(state)
      const stroke = await box.locator('rect').evaluate(el => getComputedStyle(el).stroke)
      // the legend's swatch for the state has the node's colour
      const item = page.locator(`${byId('landscapeLegend')} li[data-state="${state}"]`)
      await expect(item.count()).resolves.toBe(1)
      expect(await item.locator('.pcSwatch').evaluate(el => getComputedStyle(el).borderTopColor), `legend colour of ${state}`).toBe(stroke)
      expect((await item.innerText()).toLowerCase()).toContain(state)
      strokes.push(stroke)
    }
    expect(new Set(strokes).size, `colours ${strokes.join(', ')}`).toBe(3)
    const legend = await page.locator(`${byId('landscapeLegend')} li`).evaluateAll(items => items.map(li => ({
      state: li.getAttribute('data-state'), colour: getComputedStyle(li.querySelector('.pcSwatch')!).borderTopColor, text: (li.textContent ?? '').trim(),
    })))
    expect(legend.map(l => l.state)).toEqual(expect.arrayContaining(['failed', 'stale', 'customized']))
    expect(new Set(legend.map(l => l.colour)).size).toBe(legend.length)
    for (const entry of legend) expect(entry.text).not.toBe('')
    await page.locator(byId('landscapePanel')).screenshot({ path: path.join(RESULTS, 'console-landscape-legend.png') })
  })

  test('each node\'s accessible name is its visible text', async () => {
    const names = await graph().locator('g.pcNode').evaluateAll(nodes => nodes.map(g => {
      const ids = (g.getAttribute('aria-labelledby') ?? '').split(/\s+/).filter(Boolean)
      const tidy = (text: string) => text.replace(/\s+/g, ' ').trim()
      // the name: the labelling texts joined by spaces; the visible text: the node's texts as they are
      const name = tidy(ids.map(id => document.getElementById(id)?.textContent ?? '').join(' '))
      const visible = tidy([...g.querySelectorAll('text')].map(t => t.textContent ?? '').join(''))
      return { key: g.getAttribute('data-key'), name, visible, label: g.getAttribute('aria-label') }
    }))
    expect(names.length).toBeGreaterThanOrEqual(8)
    for (const entry of names) {
      expect(entry.label, `${entry.key}: no aria-label apart from the visible text`).toBeNull()
      expect(entry.name, `${entry.key}`).toBe(entry.visible)
      expect(entry.name).not.toBe('')
    }
  })

  test('one tab stop: Tab enters the graph once, the arrow keys move inside, Enter opens a pipeline, Tab leaves', async () => {
    await expect(graph().locator('[tabindex="0"]').count()).resolves.toBe(1)
    expect(await graph().getAttribute('tabindex')).toBeNull()
    // Tab from the control before the graph (the legend is not focusable) lands on the graph's tab stop
    await page.locator(`${byId('pipelineTable')} tr.sapMLIB`).last().focus()
    let presses = 0
    while (!(await focusedKey()) && presses < 20) { await page.keyboard.press('Tab'); presses++ }
    const first = await focusedKey()
    expect(first).toBeTruthy()
    await page.keyboard.press('ArrowDown')
    const second = await focusedKey()
    expect(second).toBeTruthy()
    expect(second).not.toBe(first)
    await expect(graph().locator('[tabindex="0"]').getAttribute('data-key')).resolves.toBe(second)
    await page.keyboard.press('ArrowUp')
    expect(await focusedKey()).toBe(first)
    // right: from a source to a pipeline (the next column)
    await node('source:Provider/Books').focus()
    await page.keyboard.press('ArrowRight')
    expect(await focusedKey()).toMatch(/^pipeline:/)
    await page.keyboard.press('End')
    expect(await focusedKey()).toMatch(/^target:/)
    await page.keyboard.press('Home')
    expect(await focusedKey()).toMatch(/^source:/)
    // Tab leaves the graph at once (not the next node)
    await page.keyboard.press('Tab')
    expect(await page.evaluate(() => !!document.activeElement?.closest('[data-sap-ui$="--landscapeGraph"]'))).toBe(false)
    // Shift+Tab comes back to the node that had the focus
    await page.keyboard.press('Shift+Tab')
    expect(await focusedKey()).toMatch(/^source:/)
    // Enter on a pipeline opens it; the focus stays on its node across the re-render
    await node('pipeline:stale-authors').focus()
    await page.keyboard.press('Enter')
    await page.locator(`${byId('detailPage')} .sapMTitle`, { hasText: 'stale-authors' }).first().waitFor()
    expect(await focusedKey()).toBe('pipeline:stale-authors')
    await expect(graph().locator('[tabindex="0"]').count()).resolves.toBe(1)
  })

  test('Tab presses from load to the Start button', async () => {
    // a click into the page's top corner: the sequential focus navigation starts at the top, as after a load
    await page.evaluate(() => { (document.activeElement as HTMLElement | null)?.blur(); window.scrollTo(0, 0) })
    await page.mouse.click(2, 2)
    let presses = 0
    let inGraph = 0
    const at = () => page.evaluate(() => ({
      start: !!document.activeElement?.closest('[data-sap-ui$="--startButton"]'),
      graph: !!document.activeElement?.closest('[data-sap-ui$="--landscapeGraph"]'),
    }))
    for (let where = await at(); !where.start && presses < 200; where = await at()) {
      await page.keyboard.press('Tab')
      presses++
      if ((await at()).graph) inGraph++
    }
    console.log(`landscape fixture: Tab presses from load to the Start button: ${presses} (${inGraph} in the landscape of ${await graph().locator('g.pcNode').count()} nodes)`)
    expect((await at()).start).toBe(true)
    expect(inGraph).toBe(1)
  })
})
