// `npm test` after lint and build: the whole suite as two vitest runs side by side, one closing line.
//
// Why two runs: vitest runs every project limited to one worker (the browser tests, one at a time:
// each keeps both cores busy with Chromium and its demo apps) in a group of its own after all other
// projects, so `vitest run` waited ≈ 5 min for the browser files after the engine files had ended.
// Two processes overlap them: the engine files (unit, integration, postgres on three workers) and the
// browser files (one at a time) run at once (quiet, 2 cores: ≈ 8 instead of ≈ 11.5 min).
//
// Output: the engine run's lines as they come; the browser run's lines prefixed with `e2e │ `.
// The closing line `N passed, N failed` adds up both runs from the counts test/helpers/summary-reporter.ts
// writes (a run that ends without counts, or fails with `0 failed`, counts as 1 failed), and above it
// each failed test by name; with VITEST_SUMMARY_FILE set, the sum and the names are written there too
// (.ci/run reads it).
//
// With arguments (`npm test -- test/unit/foo.test.ts`, `--project e2e`), one plain `vitest run` with them.
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import os, { tmpdir } from 'node:os'
import path from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)))
const vitest = path.join(root, 'node_modules/vitest/vitest.mjs')
const args = process.argv.slice(2)

if (args.length) {
  const single = spawn(process.execPath, [vitest, 'run', ...args], { cwd: root, stdio: 'inherit' })
  single.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)))
} else {
  await runBoth()
}

async function runBoth() {
  const counts = mkdtempSync(path.join(tmpdir(), 'pipeline-test-'))
  const runs = [
    { name: 'engine', projects: ['unit', 'integration', 'postgres'], prefix: '' },
    // a lower CPU priority (nice 5; its Chromium and apps inherit it): both runs need the cores, the engine
    // run is the longer one; the browser files (waits for polls and runs) then take what it leaves. Quiet,
    // 2 cores: 4 min 32 s instead of 4 min 43–55 s, both runs ending within 10 s of each other
    { name: 'e2e', projects: ['e2e'], prefix: 'e2e │ ', priority: 5 },
  ]
  const children = []
  const ended = runs.map(run => new Promise(resolve => {
    const summary = path.join(counts, `${run.name}.json`)
    const child = spawn(process.execPath, [vitest, 'run', ...run.projects.flatMap(project => ['--project', project])], {
      cwd: root,
      // no FORCE_COLOR: the tests' own apps and CLIs would inherit it (cds reads any value, even `0`, as on)
      env: { ...process.env, VITEST_SUMMARY_FILE: summary },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    children.push(child)
    if (run.priority) {
      try { os.setPriority(child.pid, run.priority) } catch { /* not permitted: the same priority as the engine run */ }
    }
    for (const stream of [child.stdout, child.stderr]) {
      const target = stream === child.stdout ? process.stdout : process.stderr
      createInterface({ input: stream }).on('line', line => target.write(`${run.prefix}${line}\n`))
    }
    child.on('exit', (code, signal) => resolve({ run, code: code ?? 1, signal, summary }))
  }))
  for (const signal of ['SIGINT', 'SIGTERM']) {
    process.on(signal, () => {
      for (const child of children) if (child.exitCode === null) child.kill(signal)
    })
  }

  const results = await Promise.all(ended)
  const total = { passed: 0, failed: 0, skipped: 0 }
  const failures = []
  const lines = []
  for (const { run, code, signal, summary } of results) {
    let own = { passed: 0, failed: 0, skipped: 0 }
    try { own = { ...own, ...JSON.parse(readFileSync(summary, 'utf8')) } } catch { own.failed = 1 } // ended without counts
    if (code !== 0 && own.failed === 0) own.failed = 1
    for (const key of Object.keys(total)) total[key] += own[key]
    for (const failure of own.failures ?? []) failures.push(`${run.name}: ${failure}`)
    lines.push(`${run.name} (${run.projects.join(', ')}): ${signal ?? `exit ${code}`}, ${own.passed} passed, ${own.failed} failed${own.skipped ? `, ${own.skipped} skipped` : ''}`)
  }
  rmSync(counts, { recursive: true, force: true })
  const closing = `${total.passed} passed, ${total.failed} failed${total.skipped ? `, ${total.skipped} skipped` : ''}`
  // the failed tests again at the end: the runs' own lists are far up in the interleaved output
  const named = failures.map(failure => `failed: ${failure}\n`).join('')
  process.stdout.write(`\n${named}${lines.join('\n')}\n${closing}\n`)
  if (process.env.VITEST_SUMMARY_FILE) writeFileSync(process.env.VITEST_SUMMARY_FILE, `${JSON.stringify({ ...total, failures })}\n`)
  process.exitCode = total.failed || results.some(result => result.code !== 0) ? 1 : 0
}
