import { configDefaults, defineConfig } from 'vitest/config'
import LongestFirst from './test/helpers/longest-first'

/**
 * The `postgres` project (`npm run test:postgres`; part of `npm test`):
 * - the engine files where the database decides the outcome, once more with the app's `db` on
 *   PostgreSQL (@cap-js/postgres): a fresh database per file, created and deployed by
 *   test/helpers/postgres-setup.ts, dropped afterwards. The run guard and leases (a pool of
 *   connections, not SQLite's one), kill -9 recovery, rejected records (savepoints: a failed
 *   statement aborts a PostgreSQL transaction), the prepared write paths, ties of timestamps
 *   (PostgreSQL keeps microseconds), the data contract (PostgreSQL refuses what SQLite stores) and
 *   event replication (concurrent micro-batches, aggregates);
 * - the scale-out tests: three (two) app processes on one PostgreSQL database (their own databases).
 * ON_POSTGRES_CI: files whose SQL differs by dialect over paths the files above already take on
 * PostgreSQL (the counts of a full refresh and of runs, CQN sources: NULL order and comparisons of
 * timestamps, a run inside a request's transaction, progress beside a run's transaction, partitioned
 * crash recovery, delta links, bursts of events); CI's `postgres` job runs them with ON_POSTGRES_FULL
 * (`CDP_POSTGRES=rest`), kept out of `npm test` for its time (issue 34).
 * ON_POSTGRES_FULL: files whose outcome does not depend on the database (HTTP, OData, the
 * management API, the engine's own logic over paths the files above cover).
 * `npm run test:postgres:full` (or CDP_POSTGRES=full) runs all three lists.
 */
const ON_POSTGRES = [
  'guard-and-retry', 'crash-recovery', 'rejects', 'fast-write', 'delta-ties', 'data-contract', 'events',
].map(name => `test/integration/${name}.test.ts`)
const ON_POSTGRES_CI = [
  'full-refresh-writes', 'run-counts', 'events-and-cqn', 'crash-partitioned', 'odata-delta', 'events-burst',
].map(name => `test/integration/${name}.test.ts`)
const ON_POSTGRES_FULL = [
  'delta-semantics', 'management-api', 'inspect-audit', 'progress', 'federation-replicate', 'targets-and-fanin',
  'read-ahead', 'partitioned-read', 'run-events', 'run-retention',
].map(name => `test/integration/${name}.test.ts`)
/** Which files the `postgres` project runs: `npm test` ON_POSTGRES and the scale-out tests; `rest` the other two lists; `full` all. */
const POSTGRES = process.env.npm_lifecycle_event === 'test:postgres:full' ? 'full' : process.env.CDP_POSTGRES ?? 'suite'
const SCALE_OUT = 'test/integration/scale-out.test.ts'
/** Two app processes on one PostgreSQL database subscribed to one Redis (event-driven replication). */
const EVENTS_SCALE_OUT = 'test/integration/events-scale-out.test.ts'
/** Two app processes on one PostgreSQL database following one provider's OData delta links. */
const DELTA_LINKS_SCALE_OUT = 'test/integration/odata-delta-scale-out.test.ts'

function postgresFiles(): string[] {
  const suite = [...ON_POSTGRES, SCALE_OUT, EVENTS_SCALE_OUT, DELTA_LINKS_SCALE_OUT]
  const rest = [...ON_POSTGRES_CI, ...ON_POSTGRES_FULL]
  if (POSTGRES === 'rest') return rest
  if (POSTGRES === 'full') return [...suite, ...rest]
  if (POSTGRES !== 'suite') throw new Error(`CDP_POSTGRES=${POSTGRES}: use rest or full (or leave it unset)`)
  return suite
}

export default defineConfig({
  test: {
    pool: 'forks',
    globals: true,
    // generous: a deadline only bounds how long a failing test takes; `npm test` must also pass on a
    // loaded machine (issue 21, `npm run test:load`), where apps start and runs end several times slower
    testTimeout: 180_000,
    hookTimeout: 180_000,
    // the longest files first (test/helpers/longest-first.ts); unit, integration and postgres share three
    // workers (their files mostly wait for apps, providers and timers). `npm test` (scripts/test.mjs) runs
    // the browser tests, one at a time, in a second vitest run beside them: vitest would start a project
    // limited to one worker only after all the others had ended
    sequence: { sequencer: LongestFirst },
    reporters: ['default', './test/helpers/summary-reporter.ts'],
    // one `npm pack` per run (test/helpers/packed.ts); root level: once per `vitest run`
    globalSetup: ['./test/helpers/pack-global-setup.ts'],
    projects: [
      // unit files start no app: they share a worker's module graph (isolate: false), half their CPU time (a fresh
      // one per file cost ≈ 10 CPU-s of the run); they pass in any order (checked with --sequence.shuffle.files)
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'], maxWorkers: 3, isolate: false } },
      { extends: true, test: { name: 'integration', include: ['test/integration/**/*.test.ts'], exclude: [...configDefaults.exclude, SCALE_OUT, EVENTS_SCALE_OUT, DELTA_LINKS_SCALE_OUT], fileParallelism: true, maxWorkers: 3 } },
      { extends: true, test: { name: 'postgres', include: postgresFiles(), setupFiles: ['test/helpers/postgres-setup.ts'], fileParallelism: true, maxWorkers: 3 } },
      // the console in headless Chromium (from @sparticuz/chromium) against the demo apps (needs `npm run build`);
      // one Chromium for the project (test/helpers/e2e-global-setup.ts: each file its own contexts), demo apps shared
      // where files only read them; otherwise every file its own apps on free ports, in-memory databases, own Redis prefixes
      { extends: true, test: { name: 'e2e', include: ['test/e2e/**/*.test.ts'], globalSetup: ['test/helpers/e2e-global-setup.ts'], fileParallelism: false, testTimeout: 240_000, hookTimeout: 240_000 } }, // one Chromium, the shared demos and `npm start` for all files: test/helpers/e2e-global-setup.ts
    ],
  },
})
