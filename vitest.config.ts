import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    pool: 'forks',
    globals: true,
    testTimeout: 60_000,
    hookTimeout: 90_000,
    reporters: ['default', './test/helpers/summary-reporter.ts'],
    projects: [
      { extends: true, test: { name: 'unit', include: ['test/unit/**/*.test.ts'] } },
      { extends: true, test: { name: 'integration', include: ['test/integration/**/*.test.ts'], fileParallelism: true, maxWorkers: 2 } },
      // the console in headless Chromium (from @sparticuz/chromium) against the demo apps (needs `npm run build`)
      { extends: true, test: { name: 'e2e', include: ['test/e2e/**/*.test.ts'], fileParallelism: false, testTimeout: 120_000, hookTimeout: 180_000 } },
    ],
  },
})
