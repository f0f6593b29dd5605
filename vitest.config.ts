import { defineConfig } from 'vitest/config'

/**
 * The engine suite, run once more with the app's `db` on PostgreSQL (@cap-js/postgres): a fresh
 * database per file, created and deployed by test/helpers/postgres-setup.ts, dropped afterwards.
 * Guard and lease, delta, full refresh, retries, events, CQN sources, flush, schedules, the
 * management API, fan-in/OData targets, federation replicate and kill -9 recovery.
 */
const ON_POSTGRES = [
  'guard-and-retry', 'delta-semantics', 'full-refresh-writes', 'odata-delta', 'events-and-cqn',
  'management-api', 'inspect-audit', 'crash-recovery', 'federation-replicate', 'targets-and-fanin',
].map(name => `test/integration/${name}.test.ts`)

export default defineConfig({
  test: {
    pool: 'forks',
    globals: true,
    testTimeout: 60_000,
    hookTimeout: 90_000,
    reporters: ['default', './test/helpers/summary-reporter.ts'],
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      // includes scale-out.test.ts: several app processes on one PostgreSQL database
      { extends: true, test: { name: 'integration', include: ['test/integration/**/*.test.ts'], fileParallelism: true, maxWorkers: 2 } },
      { extends: true, test: { name: 'postgres', include: ON_POSTGRES, setupFiles: ['test/helpers/postgres-setup.ts'], fileParallelism: true, maxWorkers: 2 } },
      // the console in headless Chromium (from @sparticuz/chromium) against the demo apps (needs `npm run build`)
      { extends: true, test: { name: 'e2e', include: ['test/e2e/**/*.test.ts'], fileParallelism: false, testTimeout: 120_000, hookTimeout: 180_000 } },
    ],
  },
})
