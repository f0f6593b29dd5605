/**
 * The cds 9 job (.ci/cds9/run): copied to the root of a copy of the repo whose node_modules is the
 * cds 9 dependency set of .ci/cds9/package.json. Runs the engine, management, federation and queued
 * tests and the version check; the rest of the suite (console, browser, packaging, new-user, imports,
 * REST/HCQL/V2 adapters, multitenancy) runs on cds 10 only.
 */
import { defineConfig } from 'vitest/config'

export const CDS9_TESTS = [
  // engine
  'guard-and-retry', 'delta-semantics', 'full-refresh-writes', 'odata-delta', 'events-and-cqn', 'crash-recovery', 'targets-and-fanin', 'fast-write', 'read-ahead',
  // management
  'management-api', 'management-restart', 'management-security',
  // federation
  'federation-replicate', 'federation-delegate', 'federation-rules', 'federation-cache', 'federated',
  // change data capture: OData V4 delta links, SAP Gateway delta tokens and ODP over OData V2
  'odata-delta-links', 'odata-delta-odp',
  // queued schedules and what differs between cds 9 and 10
  'queued-schedule', 'cds-version',
  // what ships: cds build --production served as in production (cds-dk 9's cds add and build)
  'production-build',
  // event-driven replication over CAP's redis-messaging (the real Redis)
  'events', 'events-crash',
  // security: roles, hidden fields, the inspector's authorization, inputs, caches per user, redaction, delegate wheres
  'security-roles', 'security-hidden', 'security-inspector', 'security-inputs', 'security-cache', 'security-redact', 'security-delegate-where',
]

export default defineConfig({
  cacheDir: 'node_modules/.vite-cds9',
  test: {
    name: 'cds9',
    include: CDS9_TESTS.map(name => `test/integration/${name}.test.ts`),
    pool: 'forks',
    globals: true,
    testTimeout: 60_000,
    hookTimeout: 90_000,
    fileParallelism: true,
    maxWorkers: 2,
    reporters: ['default', './test/helpers/summary-reporter.ts'],
  },
})
