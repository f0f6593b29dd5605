/**
 * Setup of the `postgres` vitest project: the engine suite once more, with the app's `db` on a
 * fresh PostgreSQL database per test file (created before, dropped after).
 *
 * The switch is a CAP profile: CDS_CONFIG holds the `db` configuration under `[pg-suite]`, and
 * CDS_ENV activates that profile in this worker only. Child processes started by the tests
 * (providers, crash consumers) get `CDS_ENV=''` from test/helpers/apps.ts, so the provider keeps
 * its own in-memory SQLite; a test that starts a consumer itself asks `suiteDatabase()` and
 * passes `postgresEnv(database)`.
 *
 * The schema is deployed with CAP's own `cds deploy` (schema evolution of @cap-js/postgres) into
 * the app that `cds.test(folder)` chose while the test module loaded (cds.root), before cds.test
 * boots the server in its own beforeAll (hooks of this file are registered first).
 */
import cds from '@sap/cds'
import { ROOT } from './apps'
import { SUITE_PROFILE, createDatabase, dbConfig, deployTo, dropDatabase, randomDatabaseName, setSuiteDatabase } from './postgres'

const database = randomDatabaseName('suite')
setSuiteDatabase(database)
process.env.CDS_ENV = [process.env.CDS_ENV, SUITE_PROFILE].filter(Boolean).join(',')
process.env.CDS_CONFIG = JSON.stringify({ [`[${SUITE_PROFILE}]`]: { requires: { db: dbConfig(database) } } })

let created = false
beforeAll(async () => {
  await createDatabase(database)
  created = true
  // files without cds.test start and deploy their apps themselves (see suiteDatabase())
  if (cds.root !== ROOT) await deployTo(cds.root, database)
})

afterAll(async () => {
  if (created) await dropDatabase(database)
})
