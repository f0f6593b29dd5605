/**
 * Global setup of the `e2e` project (vitest.config.ts), for what several browser files would each
 * start again, or what takes its time without using the machine:
 * - one headless Chromium for all files, a Playwright browser server on loopback. Each file connects
 *   (test/helpers/browser.ts `launchBrowser()`) and opens contexts of its own, which end with its
 *   connection: no cookie, cache, storage or page outlives its file. A browser that does not start
 *   fails each file with the reason (as a browser of the file's own did), not the run;
 * - the shared demos (test/helpers/demo.ts SHARED_DEMOS): one instance for the files that use the
 *   same demo in the same state, from a registry on loopback (`sharedDemo(name)`). A demo whose files
 *   are to run starts at once, in the background (the run's first file goes on meanwhile); one asked
 *   for otherwise starts when asked;
 * - `npm start` (demo/start.mjs) for test/e2e/demo.test.ts, at once, when that file is to run: its
 *   scheduled runs (every 15 s) happen while other files run, not while it waits.
 * All of them end with the run.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import type { TestProject } from 'vitest/node'
import { ROOT } from './apps'
import { serveBrowser } from './browser'
import { SHARED_DEMOS, spawnNpmStart, startDemo, type Demo, type SharedDemoName } from './demo'

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const teardown: Array<() => Promise<unknown>> = []
  const files = await filesToRun(project)
  const runs = (file: string) => !files || files.has(path.join(ROOT, file))

  try {
    const server = await serveBrowser()
    project.provide('chromium', { endpoint: server.wsEndpoint() })
    teardown.push(() => server.close())
  } catch (error) {
    project.provide('chromium', { error: (error as Error).message })
  }

  const work = mkdtempSync(path.join(tmpdir(), 'pipeline-e2e-'))
  teardown.push(async () => rmSync(work, { recursive: true, force: true }))
  if (runs('test/e2e/demo.test.ts')) {
    const log = path.join(work, 'npm-start.log')
    writeFileSync(log, '')
    const npmStart = spawnNpmStart(log)
    project.provide('npmStart', { log })
    teardown.unshift(() => npmStart.stop())
  }

  const demos = new Map<SharedDemoName, Promise<Demo>>()
  const demo = (name: SharedDemoName) => {
    if (!demos.has(name)) {
      const started = startDemo({ ready: SHARED_DEMOS[name].ready })
      started.catch(() => undefined) // answered to the files that ask for it
      demos.set(name, started)
    }
    return demos.get(name)!
  }
  for (const [name, { files: users }] of Object.entries(SHARED_DEMOS)) if (users.some(runs)) void demo(name as SharedDemoName)
  const registry = http.createServer((req, res) => {
    const name = /^\/demo\/([\w-]+)$/.exec(req.url ?? '')?.[1]
    if (req.method !== 'POST' || !name || !(name in SHARED_DEMOS)) {
      res.writeHead(404).end(`no shared app ${req.method} ${req.url}; known demos: ${Object.keys(SHARED_DEMOS).join(', ')}`)
      return
    }
    demo(name as SharedDemoName).then(
      started => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ provider: started.provider.url, consumer: started.consumer.url })),
      error => res.writeHead(500).end(String((error as Error).stack ?? error)),
    )
  })
  await new Promise<void>(resolve => registry.listen(0, '127.0.0.1', resolve))
  project.provide('sharedApps', `http://127.0.0.1:${(registry.address() as AddressInfo).port}`)
  teardown.unshift(async () => {
    registry.close()
    await Promise.all([...demos.values()].map(started => started.then(running => running.stop(), () => undefined)))
  })

  return async () => {
    for (const step of teardown) await step().catch(error => console.error(`e2e global teardown: ${(error as Error).message}`))
  }
}

/**
 * The test files of this project the run was started for (the command line's file filters), or
 * undefined when that is not known (then every shared app counts as needed).
 */
async function filesToRun(project: TestProject): Promise<Set<string> | undefined> {
  try {
    // (vitest keeps the command line's filters here; not a public API: without it, all files)
    const filters = (project.vitest as unknown as { filenamePattern?: string[] }).filenamePattern
    const { testFiles } = await project.globTestFiles(filters ?? [])
    return new Set(testFiles.map(file => path.resolve(file)))
  } catch {
    return undefined
  }
}
