/**
 * Prints the closing line CI reads: `N passed, N failed` (plus skipped when any).
 *
 * Failed is everything that kept the run from passing, not only failed tests:
 * - a test whose suite or module errored before it could run (a throwing beforeAll, a browser that
 *   does not start) is failed, not skipped (vitest reports those as skipped);
 * - a module or suite that errored without any of its tests failing counts once: an import or
 *   syntax error (nothing collected), an afterAll that throws after its tests passed;
 * - a test that never finished (interrupted run) is failed;
 * - every unhandled error counts once (unless `dangerouslyIgnoreUnhandledErrors`).
 * And when vitest ends the run as failed or sets a non-zero exit code, failed is at least 1.
 * Skipped stays what was skipped on purpose: `skip`/`todo`/`skipIf`, `ctx.skip()`, outside `only`.
 *
 * Above the closing line, one `failed: <file> > <test>: <first line of its error>` line per failed
 * test, so the tail of a long log (all CI shows) names what failed.
 *
 * With `VITEST_SUMMARY_FILE` set, the same counts are also written there as JSON
 * (`{ passed, failed, skipped, failures }`, failures: those lines' texts): .ci/run adds up its jobs
 * (cds 10 and cds 9) into one closing line and repeats the failures in its summary.
 */
import { writeFileSync } from 'node:fs'
import type { Reporter, SerializedError, TestCase, TestModule, TestRunEndReason, TestSuite, Vitest } from 'vitest/node'

export interface Summary {
  passed: number
  failed: number
  skipped: number
  /** modules and suites that errored, with how many of their tests did not run because of it */
  broken: Array<{ name: string; error: string; notRun: number }>
  /** each failed or unfinished test: `<file> > <full name>: <first line of its first error>` */
  failures: string[]
}

const errored = (entity: TestModule | TestSuite) => entity.errors().length > 0
const nameOf = (entity: TestModule | TestSuite) => entity.type === 'module' ? entity.relativeModuleId : `${entity.module.relativeModuleId} > ${entity.fullName}`

/** A test that was meant to run but was skipped because a suite or module around it errored. */
function prevented(test: TestCase): boolean {
  if (test.options.mode !== 'run' && test.options.mode !== 'only') return false
  for (let parent: TestCase['parent'] | undefined = test.parent; parent; parent = parent.type === 'module' ? undefined : parent.parent)
    if (errored(parent)) return true
  return false
}

export function summarize(modules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>, reason: TestRunEndReason, countUnhandled = true): Summary {
  let passed = 0
  let skipped = 0
  const failedTests = new Set<TestCase>()
  let failedOther = 0
  const broken: Summary['broken'] = []
  for (const module of modules) {
    for (const test of module.children.allTests()) {
      const state = test.result().state
      if (state === 'passed') passed++
      else if (state === 'skipped' && !prevented(test)) skipped++
      else failedTests.add(test) // failed, prevented by an error around it, or never finished (pending)
    }
    for (const entity of [module, ...module.children.allSuites()]) {
      if (!errored(entity)) continue
      const tests = [...entity.children.allTests()]
      const notRun = tests.filter(test => test.result().state === 'skipped' && prevented(test)).length
      if (!tests.some(test => failedTests.has(test))) failedOther++
      broken.push({ name: nameOf(entity), error: String(entity.errors()[0]?.message ?? '').split('\n')[0], notRun })
    }
  }
  let failed = failedTests.size + failedOther + (countUnhandled ? unhandledErrors.length : 0)
  // whatever else made vitest fail the run (no test files, an error it reported elsewhere): never `0 failed`
  if (!failed && (reason !== 'passed' || Number(process.exitCode ?? 0) !== 0)) failed = 1
  // tests not run because a suite around them errored are named by that suite's `error in` line
  const failures = [...failedTests].filter(test => test.result().state !== 'skipped').map(test => {
    const error = test.result().errors?.[0]?.message?.split('\n')[0]
    return `${test.module.relativeModuleId} > ${test.fullName}: ${error ?? 'did not finish'}`
  })
  return { passed, failed, skipped, broken, failures }
}

export default class SummaryReporter implements Reporter {
  private countUnhandled = true

  onInit(vitest: Vitest): void {
    this.countUnhandled = !vitest.config.dangerouslyIgnoreUnhandledErrors
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<SerializedError>, reason: TestRunEndReason): void {
    const { passed, failed, skipped, broken, failures } = summarize(modules, unhandledErrors, reason, this.countUnhandled)
    const lines = failures.map(failure => `failed: ${failure}`)
    lines.push(...broken.map(b => `error in ${b.name}${b.notRun ? ` (${b.notRun} test${b.notRun === 1 ? '' : 's'} not run, counted as failed)` : ''}: ${b.error}`))
    if (unhandledErrors.length && this.countUnhandled) lines.push(`unhandled errors: ${unhandledErrors.length} (counted as failed)`)
    process.stdout.write(`\n${lines.map(line => `${line}\n`).join('')}${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}\n`)
    const file = process.env.VITEST_SUMMARY_FILE
    if (file) writeFileSync(file, `${JSON.stringify({ passed, failed, skipped, failures })}\n`)
  }
}
