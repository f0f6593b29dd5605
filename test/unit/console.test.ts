/**
 * The console's pieces that need no browser: the static handler (index, ETag, traversal), the
 * optional OpenUI5 location (http(s) only) and the graph's layered layout.
 */
import fs from 'node:fs'
import http from 'node:http'
import os from 'node:os'
import path from 'node:path'
import type { AddressInfo } from 'node:net'
import { consoleMiddleware, indexHtml, ui5Location } from '../../lib/console'
import { layers, layout } from '../../app/pipeline-console/webapp/control/layout'

describe('console serving', () => {
  let dir: string
  let server: http.Server
  let base: string
  const start = (settings = {}) => new Promise<void>(resolve => {
    const handle = consoleMiddleware(dir, settings)
    server = http.createServer((req, res) => handle(req, res, () => { res.statusCode = 418; res.end() }))
    server.listen(0, '127.0.0.1', () => { base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`; resolve() })
  })

  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'console-'))
    fs.mkdirSync(path.join(dir, 'resources'))
    fs.writeFileSync(path.join(dir, 'index.html'), '<script id="sap-ui-bootstrap" src="resources/sap-ui-custom.js"></script>')
    fs.writeFileSync(path.join(dir, 'resources', 'sap-ui-custom.js'), '/* ui5 */')
    fs.writeFileSync(path.join(os.tmpdir(), 'secret.txt'), 'no')
  })
  afterEach(async () => {
    await new Promise(resolve => server ? server.close(resolve) : resolve(undefined))
    fs.rmSync(dir, { recursive: true, force: true })
  })

  test('serves index.html for the folder, files with their type, 404 for unknown files', async () => {
    await start()
    const index = await fetch(`${base}/`)
    expect(index.status).toBe(200)
    expect(index.headers.get('content-type')).toContain('text/html')
    expect(await index.text()).toContain('resources/sap-ui-custom.js')
    const js = await fetch(`${base}/resources/sap-ui-custom.js`)
    expect(js.headers.get('content-type')).toContain('application/javascript')
    const etag = js.headers.get('etag')!
    expect((await fetch(`${base}/resources/sap-ui-custom.js`, { headers: { 'if-none-match': etag } })).status).toBe(304)
    expect((await fetch(`${base}/nope.js`)).status).toBe(404)
    expect((await fetch(`${base}/x`, { method: 'POST' })).status).toBe(418) // not ours
  })

  test('never serves files outside its folder', async () => {
    await start()
    for (const probe of ['/../secret.txt', '/%2e%2e/secret.txt', '/resources/..%2f..%2fsecret.txt']) {
      const response = await fetch(`${base}${probe}`)
      expect([404, 418, 400]).toContain(response.status)
      expect(await response.text()).not.toBe('no')
    }
  })

  test('another OpenUI5 location: http(s) URLs only, bootstrapped from index.html', async () => {
    expect(ui5Location('https://ui5.example.com/1.120.0/')).toBe('https://ui5.example.com/1.120.0')
    expect(ui5Location('http://localhost:8080')).toBe('http://localhost:8080')
    for (const bad of ['javascript:alert(1)', 'file:///etc', 'ftp://x/y', '//cdn', 'not a url', 'https://user:pw@x.example'])
      expect(ui5Location(bad)).toBeUndefined()
    expect(indexHtml('<script src="resources/sap-ui-custom.js">', 'https://ui5.example.com/1.120.0'))
      .toBe('<script src="https://ui5.example.com/1.120.0/resources/sap-ui-core.js">')
    await start({ ui5: 'https://ui5.example.com/x"onload="alert(1)' })
    const html = await (await fetch(`${base}/index.html`)).text()
    expect(html).not.toContain('"onload=')
    expect(html).toContain('https://ui5.example.com/x%22onload=%22alert(1)/resources/sap-ui-core.js')
  })
})

describe('graph layout', () => {
  const landscape = {
    nodes: [
      { key: 's1', title: 'Orders', kind: 'source', group: 'Sales' },
      { key: 's2', title: '[query]', kind: 'source', group: 'db' },
      { key: 'p1', title: 'orders', kind: 'pipeline', group: 'pipelines' },
      { key: 'p2', title: 'revenue', kind: 'pipeline', group: 'pipelines' },
      { key: 't1', title: 'demo.Orders', kind: 'target', group: 'db' },
      { key: 't2', title: 'demo.Revenue', kind: 'target', group: 'db' },
    ],
    lines: [{ from: 's1', to: 'p1' }, { from: 'p1', to: 't1' }, { from: 's2', to: 'p2' }, { from: 'p2', to: 't2', status: 'Warning' }],
    groups: [{ key: 'Sales', title: 'Sales' }, { key: 'db', title: 'Database' }, { key: 'pipelines', title: 'Pipelines' }],
  }

  test('layers by longest path: sources, pipelines, targets', () => {
    expect(Object.fromEntries(layers(landscape))).toEqual({ s1: 0, s2: 0, p1: 1, p2: 1, t1: 2, t2: 2 })
  })

  test('places every node once without overlaps, frames groups and draws every line', () => {
    const result = layout(landscape)
    expect(result.boxes).toHaveLength(6)
    for (const a of result.boxes) for (const b of result.boxes)
      if (a !== b && a.x === b.x) expect(a.y + a.height <= b.y || b.y + b.height <= a.y).toBe(true)
    expect(result.edges.map(e => `${e.from}>${e.to}:${e.status}`)).toEqual(['s1>p1:None', 'p1>t1:None', 's2>p2:None', 'p2>t2:Warning'])
    expect(result.frames.map(f => f.title).sort()).toEqual(['Database', 'Database', 'Pipelines', 'Sales'])
    expect(result.width).toBeGreaterThan(0)
  })

  test('cycles do not hang the layout', () => {
    const result = layout({ nodes: [{ key: 'a', title: 'a', kind: 'event' }, { key: 'b', title: 'b', kind: 'event' }], lines: [{ from: 'a', to: 'b' }, { from: 'b', to: 'a' }] })
    expect(result.boxes).toHaveLength(2)
    expect(result.edges).toHaveLength(2)
  })
})
