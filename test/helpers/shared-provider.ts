/**
 * One provider app (test/fixtures/provider) per vitest worker instead of one per test file: the
 * files of a worker run one after another, and each takes the provider over as a fresh one (its
 * control API's `fresh`: no rows, no faults, no page limit, counters at zero), so what a file sees
 * is what a provider it started itself would show — without another app start per file.
 *
 * The worker is vitest's VITEST_POOL_ID (unique among the files running at once) within one vitest
 * run (the process that started the worker, `process.ppid`); the provider is a detached child that
 * ends with that run (PROVIDER_EXIT_WITH), its URL kept in a file in the temp folder. Outside vitest
 * (no VITEST_POOL_ID) a provider of its own, as `startProvider()`. Files that start the provider with
 * other settings or stop it on purpose start their own with `startProvider()`; files that read from
 * two providers take a second one (`sharedProvider(1)`).
 */
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'
import { FIXTURES, providerControl, startProvider, type ProviderControl, type RunningApp } from './apps'
import { waitFor } from './wait'

const require = createRequire(import.meta.url)
const DIR = path.join(os.tmpdir(), 'cdp-shared-provider')

interface Shared { url: string; pid: number; log: string }

/** Whether a process of that pid is still there. */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

async function answers(url: string): Promise<boolean> {
  try {
    return (await fetch(`${url}/odata/v4/control/stats()`, { signal: AbortSignal.timeout(5000) })).ok
  } catch {
    return false
  }
}

/** The provider this vitest run keeps for worker `poolId` (its `index`th), started if it has none (yet, or any more). */
async function acquire(owner: number, poolId: string, index: number): Promise<Shared> {
  fs.mkdirSync(DIR, { recursive: true })
  // files of runs that ended (their providers ended with them)
  for (const name of fs.readdirSync(DIR)) {
    const run = Number(name.split('-')[0])
    if (run && !alive(run)) fs.rmSync(path.join(DIR, name), { force: true })
  }
  const file = path.join(DIR, `${owner}-${poolId}-${index}.json`)
  try {
    const kept = JSON.parse(fs.readFileSync(file, 'utf8')) as Shared
    if (alive(kept.pid) && (await answers(kept.url))) return kept
    if (alive(kept.pid)) process.kill(kept.pid, 'SIGKILL')
  } catch { /* none yet */ }

  const log = path.join(DIR, `${owner}-${poolId}-${index}.log`)
  const out = fs.openSync(log, 'w')
  const child = spawn(process.execPath, [require.resolve('@sap/cds/bin/serve.js'), '--port', '0'], {
    cwd: path.join(FIXTURES, 'provider'),
    env: { ...process.env, NODE_ENV: 'test', CDS_ENV: '', PROVIDER_EXIT_WITH: String(owner) },
    stdio: ['ignore', out, out],
    detached: true,
  })
  fs.closeSync(out)
  child.unref()
  const url = await waitFor(() => {
    if (child.exitCode !== null) throw new Error(`the shared provider exited with ${child.exitCode}:\n${fs.readFileSync(log, 'utf8')}`)
    return /server listening on \{ url: '([^']+)'/.exec(fs.readFileSync(log, 'utf8'))?.[1].replace('localhost', '127.0.0.1')
  }, 'the shared provider to listen', 60_000, 50)
  const shared = { url, pid: child.pid!, log }
  fs.writeFileSync(file, JSON.stringify(shared))
  return shared
}

/**
 * The provider of this worker, fresh (as just started); `index` picks another one for a file that
 * reads from two providers (federation: `a` and `b`). `stop()` leaves it running for the next file
 * (it only clears faults), `kill()` is not offered: a file that ends a provider starts its own.
 */
export async function sharedProvider(index = 0): Promise<RunningApp & { control: ProviderControl }> {
  const poolId = process.env.VITEST_POOL_ID
  if (!poolId) return startProvider()
  const shared = await acquire(process.ppid, poolId, index)
  const control = providerControl(shared.url)
  const fresh = await fetch(`${shared.url}/odata/v4/control/fresh`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })
  if (!fresh.ok) throw new Error(`fresh: ${fresh.status} ${await fresh.text()}`)
  const from = fs.statSync(shared.log).size
  return {
    url: shared.url,
    control,
    // the provider's output since this file took it over
    output: () => fs.readFileSync(shared.log, 'utf8').slice(from),
    // not a child of this test file: a file that needs the process starts its own with startProvider()
    child: undefined as unknown as RunningApp['child'],
    async stop() { await control.faults({}).catch(() => undefined) },
    async kill() { throw new Error('the shared provider is not killed by a test file: start one with startProvider()') },
  }
}
