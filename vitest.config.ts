import { configDefaults, defineConfig } from 'vitest/config'
import LongestFirst from './test/helpers/longest-first'

/**
 * The `postgres` project (`npm run test:postgres`; part of `npm test`):
 * - the engine suite once more with the app's `db` on PostgreSQL (@cap-js/postgres): a fresh
 *   database per file, created and deployed by test/helpers/postgres-setup.ts, dropped afterwards.
 *   Guard and lease, delta, full refresh, retries, events, CQN sources, flush, schedules, the
 *   management API, inspector audit, fan-in/OData targets, federation replicate, kill -9 recovery,
 *   rejected records (savepoints: a failed statement aborts a PostgreSQL transaction), partitioned full reads;
 * - the scale-out tests: three app processes on one PostgreSQL database (their own databases).
 */
const ON_POSTGRES = [
  'guard-and-retry', 'delta-semantics', 'full-refresh-writes', 'odata-delta', 'events-and-cqn',
  'management-api', 'inspect-audit', 'progress', 'crash-recovery', 'federation-replicate', 'targets-and-fanin',
  'rejects', 'fast-write', 'delta-ties', 'read-ahead', 'data-contract', 'run-counts', 'events', 'events-burst',
  'partitioned-read', 'crash-partitioned', 'run-events', 'run-retention',
].map(name => `test/integration/${name}.test.ts`)
const SCALE_OUT = 'test/integration/scale-out.test.ts'
/** Two app processes on one PostgreSQL database subscribed to one Redis (event-driven replication). */
const EVENTS_SCALE_OUT = 'test/integration/events-scale-out.test.ts'

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
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'], maxWorkers: 3 } },
      { extends: true, test: { name: 'integration', include: ['test/integration/**/*.test.ts'], exclude: [...configDefaults.exclude, SCALE_OUT, EVENTS_SCALE_OUT], fileParallelism: true, maxWorkers: 3 } },
      { extends: true, test: { name: 'postgres', include: [...ON_POSTGRES, SCALE_OUT, EVENTS_SCALE_OUT], setupFiles: ['test/helpers/postgres-setup.ts'], fileParallelism: true, maxWorkers: 3 } },
      // the console in headless Chromium (from @sparticuz/chromium) against the demo apps (needs `npm run build`);
      // every file its own browser and apps on free ports, in-memory databases, own message boxes and Redis prefixes
      { extends: true, test: { name: 'e2e', include: ['test/e2e/**/*.test.ts'], fileParallelism: false, testTimeout: 240_000, hookTimeout: 240_000 } },
    ],
  },
})
