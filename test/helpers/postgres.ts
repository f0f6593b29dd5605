/**
 * PostgreSQL for tests: a fresh database per test run (random name, dropped afterwards) on the
 * server of this machine kind (127.0.0.1:5432, trust auth, user postgres; PGHOST/PGPORT/PGUSER/
 * PGPASSWORD override), CAP's `db` configuration pointing at it, and CAP's own deploy into it.
 *
 * Fixture apps do not list `@cap-js/postgres` (it is a devDependency of this repository), so the
 * `db` configuration carries the plugin's `kinds.postgres` settings (impl, dialect, pool, schema
 * evolution) itself, read from the installed `@cap-js/postgres/package.json`.
 */
import cds from '@sap/cds'
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { createRequire } from 'node:module'
import { promisify } from 'node:util'

const require = createRequire(import.meta.url)

export const PG = {
  host: process.env.PGHOST ?? '127.0.0.1',
  port: Number(process.env.PGPORT ?? 5432),
  user: process.env.PGUSER ?? 'postgres',
  password: process.env.PGPASSWORD ?? '',
}

/** The profile under which the `postgres` vitest project switches in-process apps to PostgreSQL. */
export const SUITE_PROFILE = 'pg-suite'
/** Set by test/helpers/postgres-setup.ts: the database of the current test file in the `postgres` project. */
const SUITE_VARIABLE = 'CDP_TEST_POSTGRES_DATABASE'

/** The database of this test file when it runs in the `postgres` project, else undefined (SQLite). */
export function suiteDatabase(): string | undefined {
  return process.env[SUITE_VARIABLE] || undefined
}

export function setSuiteDatabase(database: string): void {
  process.env[SUITE_VARIABLE] = database
}

interface PgClient {
  connect(): Promise<void>
  query<R = Record<string, unknown>>(sql: string, values?: unknown[]): Promise<{ rows: R[]; rowCount: number | null }>
  end(): Promise<void>
}

function pgClient(database: string): PgClient {
  const { Client } = require('pg') as { Client: new (options: object) => PgClient }
  return new Client({ ...PG, database })
}

/** Runs one statement on `database` with its own connection. */
export async function pgQuery<R = Record<string, unknown>>(database: string, sql: string, values: unknown[] = []): Promise<R[]> {
  const client = pgClient(database)
  await client.connect()
  try {
    return (await client.query<R>(sql, values)).rows
  } finally {
    await client.end()
  }
}

/** `cdp_<label>_<random>`: lower case, a valid unquoted identifier. */
export function randomDatabaseName(label = 'test'): string {
  return `cdp_${label.replace(/[^a-z0-9_]/gi, '_').toLowerCase()}_${randomBytes(5).toString('hex')}`
}

function assertName(database: string): void {
  if (!/^[a-z_][a-z0-9_]*$/.test(database)) throw new Error(`not a database name created by these helpers: '${database}'`)
}

export async function createDatabase(database: string): Promise<string> {
  assertName(database)
  try {
    await pgQuery('postgres', `CREATE DATABASE ${database}`)
  } catch (error) {
    throw new Error(`PostgreSQL at ${PG.host}:${PG.port} (user ${PG.user}) could not create database ${database}: ${(error as Error).message}. ` +
      'The scale-out tests and the `postgres` test project need a PostgreSQL server; set PGHOST/PGPORT/PGUSER/PGPASSWORD to point at one.', { cause: error })
  }
  return database
}

/** Drops the database, closing connections left by killed processes. */
export async function dropDatabase(database: string): Promise<void> {
  assertName(database)
  await pgQuery('postgres', `DROP DATABASE IF EXISTS ${database} WITH (FORCE)`)
}

/** CAP's `cds.requires.db` for `database`: the `postgres` kind of @cap-js/postgres plus credentials. */
export function dbConfig(database: string): Record<string, unknown> {
  const plugin = require('@cap-js/postgres/package.json') as { cds: { requires: { kinds: { postgres: Record<string, unknown> } } } }
  return {
    ...plugin.cds.requires.kinds.postgres,
    credentials: { host: PG.host, port: PG.port, user: PG.user, password: PG.password, database },
  }
}

/** Environment for a CAP process (server, `cds deploy`) whose `db` is `database`. */
export function postgresEnv(database: string): Record<string, string> {
  return { CDS_CONFIG: JSON.stringify({ requires: { db: dbConfig(database) } }), CDS_ENV: '', NODE_ENV: 'test' }
}

/** CAP's own deploy (`cds deploy`, schema evolution of @cap-js/postgres) of the app in `dir` to `database`. */
export async function deployTo(dir: string, database: string): Promise<void> {
  const cds = require.resolve('@sap/cds-dk/bin/cds.js')
  try {
    await promisify(execFile)(process.execPath, [cds, 'deploy'], { cwd: dir, env: { ...process.env, ...postgresEnv(database) }, timeout: 60_000 })
  } catch (error) {
    const e = error as Error & { stdout?: string; stderr?: string }
    throw new Error(`cds deploy of ${dir} to PostgreSQL database ${database} failed: ${e.message}\n${e.stdout ?? ''}\n${e.stderr ?? ''}`)
  }
}

// ---------------------------------------------------------------------------------------------
// The schema of the in-process app's database, whichever it is (SQLite or PostgreSQL), for tests
// that check what the deployment created.

interface PlainDb { kind: string; run(sql: string, values?: unknown[]): Promise<Array<Record<string, unknown>>> }
const appDb = () => (cds as unknown as { db: PlainDb }).db

/** `table` or `view` (or undefined) for a name in the app's database. */
export async function relationType(name: string): Promise<'table' | 'view' | undefined> {
  const db = appDb()
  if (db.kind === 'postgres') {
    const [row] = await db.run('SELECT table_type FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = $1', [name.toLowerCase()])
    return row ? (row.table_type === 'VIEW' ? 'view' : 'table') : undefined
  }
  return (await db.run('SELECT type FROM sqlite_master WHERE name = ?', [name]))[0]?.type as 'table' | 'view' | undefined
}

/** Column names of a table in the app's database, in order (PostgreSQL folds unquoted names to lower case). */
export async function columnNames(table: string): Promise<string[]> {
  const db = appDb()
  if (db.kind === 'postgres')
    return (await db.run('SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position', [table.toLowerCase()]))
      .map(c => String(c.column_name))
  return (await db.run(`PRAGMA table_info('${table.replace(/'/g, "''")}')`)).map(c => String(c.name))
}

/** A database name as the app's database spells it: PostgreSQL folds unquoted identifiers to lower case. */
export function dbName(name: string): string {
  return appDb().kind === 'postgres' ? name.toLowerCase() : name
}
