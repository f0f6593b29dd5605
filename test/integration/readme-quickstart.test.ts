/**
 * The README's quick start (the same steps are on docs/getting-started.md), executed as written: the code blocks marked `<!-- quickstart:N -->`
 * run in the order of N, in a fresh directory, with the real tools (this repository's
 * `@sap/cds-dk` as the `cds` command, npm, curl, bash) against a real provider
 * (test/fixtures/provider). Only these substitutions are made:
 *
 * - `https://provider.example.com` → the running provider's `http://127.0.0.1:<port>`;
 * - `npm add cap-data-pipeline` → `npm add <the packed tarball of this checkout>` (offline-first, from npm's cache);
 * - `http://localhost:4004` → where the served app listens (it is started with `PORT=0`, a free port).
 *
 * A block marked `file=<path>` is written into that file of the project; a shell block that serves
 * (`cds watch`) runs in the background until the end. If the README changes, the test follows it;
 * if a step breaks, its test fails (and the later ones say so). KEEP_QUICKSTART_APP=1 keeps the project.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { ROOT, packPlugin, runCommand, startProvider, startShell, type ProviderControl, type RunningApp } from '../helpers/apps'
import { appsFolder } from '../helpers/packed'
import { commandLines, quickstartBlocks, type QuickstartBlock } from '../helpers/readme'
import { basicAuth } from '../helpers/auth'

const SEEDED = 5
const STAMP = '2026-03-01T10:00:00.000Z'
const PROVIDER_PLACEHOLDER = 'https://provider.example.com'
const APP_PLACEHOLDER = 'http://localhost:4004'
const SERVES = /\bcds (?:watch|serve|run)\b|\bnpm (?:start|run watch)\b/

const blocks = quickstartBlocks()
const describeBlock = (block: QuickstartBlock) =>
  `step ${block.step}: ${block.file ? `write ${block.file}` : commandLines(block).join(' ; ')}`

// every test here starts `cds watch` in a fresh project (several on a busy machine): a deadline of 5 min each
describe('README quick start, run as written', { timeout: 300_000 }, () => {
  const started = Date.now()
  const work = appsFolder('cap-data-pipeline-quickstart-')
  const bin = path.join(work, '.bin')
  const home = path.join(work, '.home')
  const timings: string[] = []
  let cwd = work
  let tarball = ''
  let provider: RunningApp & { control: ProviderControl }
  let server: RunningApp | undefined
  let failedStep: number | undefined

  /** The user's PATH: `cds` is this repository's cds-dk (a global install's stand-in), `node` the project's Node 22. */
  const env = () => ({ PATH: `${bin}:${path.dirname(process.execPath)}:${process.env.PATH}` })
  const substitute = (text: string) => text
    .replaceAll(PROVIDER_PLACEHOLDER, provider.url)
    .replace(/\bnpm add cap-data-pipeline\b/g, `npm add --no-audit --no-fund --prefer-offline ${tarball}`)
    .replaceAll(APP_PLACEHOLDER, server?.url ?? APP_PLACEHOLDER)

  beforeAll(async () => {
    mkdirSync(bin)
    mkdirSync(home)
    writeFileSync(path.join(bin, 'cds'), `#!/bin/sh\nexec "${process.execPath}" "${path.join(ROOT, 'node_modules/@sap/cds-dk/bin/cds.js')}" "$@"\n`)
    chmodSync(path.join(bin, 'cds'), 0o755)
    const providing = async () => {
      provider = await startProvider()
      await provider.control.seed({ count: SEEDED, modifiedAt: STAMP })
    }
    ;[tarball] = await Promise.all([packPlugin(work), providing()])
  }, 180_000)

  afterAll(async () => {
    await server?.stop()
    await provider?.stop()
    if (process.env.KEEP_QUICKSTART_APP) console.log(`readme-quickstart: project kept in ${cwd}`)
    else rmSync(work, { recursive: true, force: true })
    console.log(`readme-quickstart: ${timings.join(', ')}, total ${Date.now() - started} ms`)
  })

  test('the quick start is marked in the README: one path from cds init to replicated rows in at most six command lines', () => {
    // numbered as the README's steps; 0: what comes before step 1 (the $metadata download)
    expect(blocks.map(b => b.step)).toEqual(blocks.map((_, i) => i + blocks[0].step))
    expect(blocks[0].step).toBeLessThanOrEqual(1)
    const text = blocks.map(b => b.text).join('\n')
    expect(text).toContain(PROVIDER_PLACEHOLDER)
    expect(text).toContain(APP_PLACEHOLDER)
    const order = [/\bcds init\b/, /\bcds import\b/, /\bnpm add cap-data-pipeline\b/, /\bcds add data-pipeline\b/, /@federation\.replicate/, /\bcds deploy\b/, SERVES, /\/pipeline\/execute\b/]
    const at = [...order.map(pattern => blocks.findIndex(b => pattern.test(b.text))), blocks.length - 1]
    // the last block reads the rows over OData
    expect(blocks.at(-1)!.text).toMatch(/\/odata\/v4\//)
    expect(at.every(index => index >= 0), `each of ${order.join(' ')} in a block`).toBe(true)
    expect([...at].sort((a, b) => a - b)).toEqual(at)
    const fromInit = blocks.slice(at[0]).flatMap(commandLines)
    expect(fromInit.length, fromInit.join('\n')).toBeLessThanOrEqual(6)
  })

  for (const block of blocks) {
    test(describeBlock(block), async () => {
      if (failedStep !== undefined) throw new Error(`step ${failedStep} failed before`)
      const t0 = Date.now()
      try {
        await runBlock(block)
      } catch (error) {
        failedStep = block.step
        throw error
      } finally {
        timings.push(`step ${block.step} ${Date.now() - t0} ms`)
      }
    }, 240_000)
  }

  async function runBlock(block: QuickstartBlock): Promise<void> {
    if (block.file) {
      mkdirSync(path.dirname(path.join(cwd, block.file)), { recursive: true })
      writeFileSync(path.join(cwd, block.file), block.text)
      return
    }
    const script = substitute(block.text)
    if (SERVES.test(block.text)) {
      server = await startShell(script, cwd, { env: { ...env(), PORT: '0' } })
      return
    }
    const output = await runCommand('bash', ['-e', '-o', 'pipefail', '-c', `${script}\necho "@cwd=$PWD"`], cwd, 200_000, env())
    const at = output.lastIndexOf('@cwd=')
    cwd = output.slice(at + 5).trim()
    check(block, output.slice(0, at))
  }

  describe('when a step fails, step 6 answers what to do next, never SQL (README → docs/getting-started.md "When a step fails")', () => {
    const SQL = /no such table|does not exist|SQLITE_|\bSELECT\b|\bINSERT\b|\bFROM\s+\w+_\w+/i
    const alice = basicAuth('alice')
    const packageJson = () => path.join(cwd, 'package.json')
    let refusing: http.Server | undefined

    beforeAll(() => { if (failedStep !== undefined) throw new Error(`step ${failedStep} failed before`) })
    afterAll(() => new Promise<void>(resolve => (refusing ? refusing.close(() => resolve()) : resolve())))

    /** `cds watch` again (the user's restart), with the binding's URL from the environment where given. */
    async function restart(extra: Record<string, string> = {}) {
      await server?.stop()
      server = undefined
      // a home of its own, its registry emptied: `cds watch` binds services it finds in
      // ~/.cds-services.json, where any other app served on this machine meanwhile (another test's)
      // registers, and where a server stopped while it restarted may have left its entries
      rmSync(path.join(home, '.cds-services.json'), { force: true })
      server = await startShell('cds watch', cwd, { env: { ...env(), HOME: home, PORT: '0', ...extra } })
    }
    /** Step 6's request for `name`: the answer's status and message, the pipeline's lastError and its latest run's error. */
    async function runFails(name: string) {
      // a deadline names the step that hangs (instead of the test's own timeout)
      const response = await fetch(`${server!.url}/pipeline/execute`, { method: 'POST', headers: { ...alice, 'content-type': 'application/json' }, body: JSON.stringify({ name }), signal: AbortSignal.timeout(150_000) })
      const answer = await response.json() as { error?: { message: string } }
      const tracker = await (await fetch(`${server!.url}/pipeline/Pipelines('${name}')`, { headers: alice })).json() as { lastError: string }
      const runs = await (await fetch(`${server!.url}/pipeline/PipelineRuns?$filter=pipeline_name eq '${name}'&$orderby=startTime desc&$top=1`, { headers: alice })).json() as { value: Array<{ error: unknown }> }
      const stored = runs.value[0]?.error
      const runError = typeof stored === 'string' ? (JSON.parse(stored) as { message: string }).message : (stored as { message?: string } | undefined)?.message
      const messages = [answer.error?.message ?? '', tracker.lastError ?? '', runError ?? '']
      for (const message of messages) expect(message).not.toMatch(SQL)
      return { status: response.status, messages }
    }
    const cdsUrl = (url: string) => ({ cds_requires_CatalogService_credentials_url: url })

    test('a replica added without cds deploy: its table is not deployed, run cds deploy and restart — which fixes it', async () => {
      await server?.stop()
      server = undefined
      const file = path.join(cwd, 'srv/replicas.cds')
      writeFileSync(file, readFileSync(file, 'utf8').replace(/\}\s*$/, '  @federation.replicate\n  entity Authors as projection on external.Authors;\n}\n'))
      const seeded = await fetch(`${provider.url}/odata/v4/control/seedAuthors`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ count: 2, works: 1 }) })
      expect(seeded.status).toBe(200)
      await restart()
      const { status, messages } = await runFails('ReplicaService.Authors')
      expect(status).toBe(502)
      for (const message of messages) expect(message).toMatch(/The replica table of pipeline 'ReplicaService\.Authors' \(ReplicaService_Authors\) is not deployed: run cds deploy and restart the app/)

      // cds deploy on SQLite recreates every table, the tracker's too: the app registers its pipelines again when it starts
      await server!.stop()
      server = undefined
      await runCommand('bash', ['-c', 'cds deploy'], cwd, 120_000, env())
      await restart()
      const fixed = await fetch(`${server!.url}/pipeline/execute`, { method: 'POST', headers: { ...alice, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'ReplicaService.Authors' }) })
      expect(await fixed.json()).toMatchObject({ status: 'completed', statistics: { created: 2 } })
    })

    test('no provider URL (step 2 without -c): cds watch mocks the service; the answer says to bind it', async () => {
      // stopped first: a running `cds watch` would restart on the edit, mock CatalogService and register
      // it in the registry; stopped mid-restart, that entry stays, and the next app binds to it
      await server?.stop()
      server = undefined
      const original = readFileSync(packageJson(), 'utf8')
      const pkg = JSON.parse(original)
      delete pkg.cds.requires.CatalogService.credentials
      writeFileSync(packageJson(), JSON.stringify(pkg, null, 2))
      try {
        await restart()
        // the whole output in the message: what bound CatalogService instead, if anything did
        expect(server!.output(), server!.output()).toMatch(/mocking CatalogService/)
        const { status, messages } = await runFails('ReplicaService.Books')
        expect(status).toBe(502)
        expect(server!.output()).toMatch(/pipeline 'ReplicaService\.Books' copies a mock, not a provider/)
        for (const message of messages) expect(message).toMatch(/^(?:Run \S+ of pipeline 'ReplicaService\.Books' failed: )?CatalogService is not bound to a provider: .*mocks it in-process.*cds\.requires\.CatalogService\.credentials\.url/)
      } finally {
        writeFileSync(packageJson(), original)
      }
    })

    test('the provider is not reachable: the answer names the service, its URL and the setting', async () => {
      const closed = http.createServer()
      await new Promise<void>(resolve => closed.listen(0, '127.0.0.1', () => resolve()))
      const port = (closed.address() as AddressInfo).port
      await new Promise(resolve => closed.close(resolve))
      await restart(cdsUrl(`http://127.0.0.1:${port}/odata/v4/catalog`))
      const { status, messages } = await runFails('ReplicaService.Books')
      expect(status).toBe(502)
      for (const message of messages) expect(message).toContain(`Cannot reach CatalogService at http://127.0.0.1:${port}/odata/v4/catalog (connection refused): check cds.requires.CatalogService.credentials.url`)
    })

    test('a wrong binding: 404 on the service path and 401 of a provider that wants credentials name the binding', async () => {
      await restart(cdsUrl(`${provider.url}/odata/v4/no-such-service`))
      const notFound = await runFails('ReplicaService.Books')
      expect(notFound.status).toBe(502)
      for (const message of notFound.messages) expect(message).toMatch(/CatalogService at http:\/\/127\.0\.0\.1:\d+\/odata\/v4\/no-such-service answered 404 \(not found\): check the binding cds\.requires\.CatalogService/)

      refusing = http.createServer((_req, res) => { res.writeHead(401, { 'www-authenticate': 'Basic realm="provider"' }); res.end() })
      await new Promise<void>(resolve => refusing!.listen(0, '127.0.0.1', () => resolve()))
      await restart(cdsUrl(`http://127.0.0.1:${(refusing.address() as AddressInfo).port}/odata/v4/catalog`))
      const unauthorized = await runFails('ReplicaService.Books')
      expect(unauthorized.status).toBe(502)
      for (const message of unauthorized.messages) expect(message).toMatch(/CatalogService at \S+ refused the request with 401 \(not authenticated\): check the binding cds\.requires\.CatalogService/)
    })
  })

  /** What each kind of step must have done, beyond exiting with 0. */
  function check(block: QuickstartBlock, output: string): void {
    if (/\bcds import\b/.test(block.text)) {
      const { cds } = JSON.parse(readFileSync(path.join(cwd, 'package.json'), 'utf8'))
      expect(cds.requires.CatalogService).toMatchObject({ kind: 'odata', credentials: { url: `${provider.url}/odata/v4/catalog` } })
    }
    if (/\/pipeline\/execute\b/.test(block.text)) {
      expect(JSON.parse(output), output).toMatchObject({ status: 'completed', statistics: { created: SEEDED, updated: 0, deleted: 0 } })
    }
    if (block === blocks.at(-1)) {
      const { value } = JSON.parse(output) as { value: Array<{ ID: number; title: string; modifiedAt: string }> }
      expect(value.map(row => row.ID)).toEqual([1, 2, 3, 4, 5])
      expect(value[0]).toMatchObject({ ID: 1, title: 'Book 1', modifiedAt: STAMP })
    }
  }
})
