/**
 * Real CAP apps in child processes on free loopback ports (providers, and consumers for
 * crash tests), plus the provider's control API.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { createRequire } from 'node:module'
import path from 'node:path'

const require = createRequire(import.meta.url)
export const ROOT = path.resolve(__dirname, '../..')
export const FIXTURES = path.join(ROOT, 'test/fixtures')

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
  let log = ''
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`app in ${dir} did not start:\n${log}`)), options.timeout ?? 30_000)
    const onData = (chunk: Buffer) => {
      log += chunk.toString()
      const match = /server listening on \{ url: '([^']+)'/.exec(log)
      if (match) {
        clearTimeout(timer)
        resolve(match[1].replace('localhost', '127.0.0.1'))
      }
    }
    child.stdout!.on('data', onData)
    child.stderr!.on('data', onData)
    child.on('exit', code => { clearTimeout(timer); reject(new Error(`app in ${dir} exited with ${code}:\n${log}`)) })
  })
  const exited = new Promise<void>(resolve => child.on('exit', () => resolve()))
  return {
    url,
    child,
    output: () => log,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM')
      await exited
    },
    async kill() {
      child.kill('SIGKILL')
      await exited
    },
  }
}

export async function startProvider(env?: Record<string, string>): Promise<RunningApp & { control: ProviderControl }> {
  const app = await startApp(path.join(FIXTURES, 'provider'), { env })
  return Object.assign(app, { control: providerControl(app.url) })
}

export interface ProviderControl {
  seed(data: { from?: number; count: number; modifiedAt?: string; author?: string }): Promise<void>
  touch(data: { from: number; count?: number; modifiedAt?: string; title?: string }): Promise<void>
  reset(): Promise<void>
  faults(data: { status?: number; count?: number; after?: number; retryAfter?: number; delay?: number }): Promise<void>
  stats(): Promise<{ requests: number; urls: string[] }>
  /** Caps the provider's page size (0 = off); it then pages server-side with next links. */
  pageLimit(max: number): Promise<void>
  books(query?: string): Promise<Array<Record<string, unknown>>>
}

export function providerControl(base: string): ProviderControl {
  const post = async (action: string, data: object) => {
    const response = await fetch(`${base}/odata/v4/control/${action}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(data) })
    if (!response.ok) throw new Error(`${action}: ${response.status} ${await response.text()}`)
  }
  return {
    seed: data => post('seed', data),
    touch: data => post('touch', data),
    reset: () => post('reset', {}),
    pageLimit: max => post('pageLimit', { max }),
    faults: data => post('faults', { status: 0, count: 0, after: 0, retryAfter: 0, delay: 0, ...data }),
    async stats() {
      const response = await fetch(`${base}/odata/v4/control/stats()`)
      return (await response.json()) as { requests: number; urls: string[] }
    },
    async books(query = '') {
      const response = await fetch(`${base}/odata/v4/catalog/Books${query}`)
      return ((await response.json()) as { value: Array<Record<string, unknown>> }).value
    },
  }
}
