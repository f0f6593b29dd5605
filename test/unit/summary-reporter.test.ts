/**
 * The closing line `N passed, N failed` (test/helpers/summary-reporter.ts) that CI reads counts
 * what failed to run as failed: a separate vitest run over test/fixtures/reporter (its own config;
 * the `.spec-fixture.ts` files are outside the include globs of the real suite).
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { ROOT } from '../helpers/apps'

const CONFIG = path.join(ROOT, 'test/fixtures/reporter/vitest.config.mts')
const VITEST = path.join(ROOT, 'node_modules/vitest/vitest.mjs')

/** Runs the fixtures (those whose file name contains `filter`); the exit code and printed lines. */
function runFixtures(filter?: string, extraEnv: Record<string, string> = {}): Promise<{ code: number | null; lines: string[]; output: string }> {
  const env: Record<string, string> = { NO_COLOR: '1' }
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined && !/^(VITEST|TEST$|NODE_ENV$|FORCE_COLOR$)/.test(key)) env[key] = value
  Object.assign(env, extraEnv)
  const child = spawn(process.execPath, [VITEST, 'run', '--config', CONFIG, ...filter ? [filter] : []], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
  // the closing line is the last line of stdout; vitest's own stderr may arrive after it
  let output = ''
  let stdout = ''
  child.stdout.on('data', chunk => { output += chunk; stdout += chunk })
  child.stderr.on('data', chunk => { output += chunk })
  return new Promise((resolve, reject) => {
    child.on('error', reject)
    child.on('close', code => resolve({ code, output, lines: stdout.split('\n').map(line => line.trim()).filter(Boolean) }))
  })
}

// each test its own vitest run of the fixtures: they run side by side
describe('summary reporter: the closing line', { concurrent: true }, () => {
  test('counts tests a throwing beforeAll kept from running, import and syntax errors, hook errors and unhandled errors as failed', async () => {
    const { code, lines, output } = await runFixtures()
    expect(code, output).toBe(1)
    // passed: 2 (passes) + 1 (next to the throwing beforeAll) + 1 (before the throwing afterAll) + 1 (unhandled-error) + 1 (fails)
    // failed: 3 + 2 (not run: beforeAll threw) + 1 (import) + 1 (syntax) + 1 (afterAll) + 1 (unhandled) + 1 (fails)
    // skipped: skip and todo in passes, skip in module-before-all-throws
    expect(lines.at(-1), output).toBe('6 passed, 10 failed, 3 skipped')
    expect(lines).toContain('error in before-all-throws.spec-fixture.ts > a suite whose beforeAll throws (3 tests not run, counted as failed): the browser did not start')
    expect(lines).toContain('error in module-before-all-throws.spec-fixture.ts (2 tests not run, counted as failed): the demo app did not start')
    expect(lines).toContain('error in after-all-throws.spec-fixture.ts > a suite whose afterAll throws: cleanup failed')
    expect(lines.some(line => line.startsWith('error in import-fails.spec-fixture.ts: ') && line.includes('does-not-exist')), output).toBe(true)
    expect(lines.some(line => line.startsWith('error in syntax-error.spec-fixture.ts: ')), output).toBe(true)
    expect(lines).toContain('unhandled errors: 1 (counted as failed)')
    // each failed test is named above the closing line (a long log's tail is all CI shows)
    expect(lines.find(line => line.startsWith('failed: fails.spec-fixture.ts > fails: ')), output).toMatch(/expected 1 to be 2/)
    expect(lines.filter(line => line.startsWith('failed: before-all-throws')), output).toEqual([])
  }, 60_000)

  test('an unhandled error alone fails the line although every test passed', async () => {
    const { code, lines, output } = await runFixtures('unhandled-error')
    expect(code, output).toBe(1)
    expect(lines.at(-1), output).toBe('1 passed, 1 failed')
  }, 60_000)

  test('a run without test files is not `0 failed`', async () => {
    const { code, lines, output } = await runFixtures('no-such-fixture')
    expect(code, output).toBe(1)
    expect(lines.at(-1), output).toBe('0 passed, 1 failed')
  }, 60_000)

  test('VITEST_SUMMARY_FILE receives the counts of the closing line as JSON (.ci/run adds up its jobs)', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'summary-'))
    try {
      const file = path.join(dir, 'summary.json')
      const { lines, output } = await runFixtures('unhandled-error', { VITEST_SUMMARY_FILE: file })
      expect(lines.at(-1), output).toBe('1 passed, 1 failed')
      expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual({ passed: 1, failed: 1, skipped: 0, failures: [] })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 60_000)

  test('VITEST_SUMMARY_FILE names each failed test with the first line of its error', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'summary-'))
    try {
      const file = path.join(dir, 'summary.json')
      // matches fails.spec-fixture.ts and import-fails.spec-fixture.ts: a module error is not a failed test
      const { lines, output } = await runFixtures('fails.spec', { VITEST_SUMMARY_FILE: file })
      expect(lines.at(-1), output).toBe('1 passed, 2 failed')
      const { failures } = JSON.parse(readFileSync(file, 'utf8'))
      expect(failures, output).toHaveLength(1)
      expect(failures[0]).toMatch(/^fails\.spec-fixture\.ts > fails: .*expected 1 to be 2/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 60_000)

  test('skipped on purpose stays skipped: a passing run says 0 failed and exits 0', async () => {
    const { code, lines, output } = await runFixtures('passes')
    expect(code, output).toBe(0)
    expect(lines.at(-1), output).toBe('2 passed, 0 failed, 2 skipped')
  }, 60_000)
})
