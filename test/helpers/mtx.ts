/**
 * The `mtx` fixture (test/fixtures/mtx/app: real @sap/cds-mtxs tenants, a SQLite database per
 * tenant) as the multitenancy tests start it, and the tenant lifecycle they drive through MTX's
 * deployment service.
 */
import path from 'node:path'
import { DatabaseSync } from 'node:sqlite'
import { FIXTURES, startApp, type RunningApp } from './apps'
import type { UserClient } from './users'

export const MTX_APP = path.join(FIXTURES, 'mtx/app')

export interface MtxOptions {
  /** More `cds.requires` settings (e.g. `'data-pipeline': { … }`). */
  requires?: Record<string, unknown>
  /** The fixture's switches (`MTX_TICK`, `MTX_QUEUED`, `MTX_FAIL_TENANTS`, …). */
  env?: Record<string, string>
}

/** The mtx app with its databases and entity cache in `dir`, its `Provider` bound to the provider at `providerUrl`. */
export function startMtxApp(dir: string, providerUrl: string, options: MtxOptions = {}): Promise<RunningApp> {
  return startApp(MTX_APP, {
    timeout: 60_000,
    env: {
      CDS_CONFIG: JSON.stringify({
        requires: {
          db: { credentials: { url: path.join(dir, 'db.sqlite') } },
          Provider: { credentials: { url: `${providerUrl}/odata/v4/catalog` } },
          'data-federation-cache': { kind: 'sqlite', entityCache: { baseDir: dir } },
          ...options.requires,
        },
      }),
      // MTX_DEBUG=queue,data-pipeline: the app's debug log, to see what a failing test saw
      ...(process.env.MTX_DEBUG ? { DEBUG: process.env.MTX_DEBUG } : {}),
      ...options.env,
    },
  })
}

/** Subscribe, upgrade or unsubscribe a tenant as the provider's operator (`ops`); resolves with the ms it took, throws on an error answer. */
export function tenantLifecycle(call: UserClient['call']) {
  return async (action: 'subscribe' | 'upgrade' | 'unsubscribe', tenant: string): Promise<number> => {
    const started = Date.now()
    const { status, body } = await call('ops', 'POST', `/-/cds/deployment/${action}`, { tenant })
    if (status >= 300) throw new Error(`${action} ${tenant}: ${status} ${JSON.stringify(body)}`)
    return Date.now() - started
  }
}

/**
 * The mtx app's SQLite databases in `dir` (as `startMtxApp` places them): a tenant's file ('' for the
 * provider's own) and the rows of a query on it, read straight from the file.
 */
export function tenantDatabases(dir: string) {
  const dbFile = (tenant: string) => path.join(dir, tenant ? `db-${tenant}.sqlite` : 'db.sqlite')
  const sql = <T>(tenant: string, query: string, ...params: string[]): T[] => {
    const db = new DatabaseSync(dbFile(tenant), { readOnly: true })
    try {
      return db.prepare(query).all(...params) as T[]
    } finally {
      db.close()
    }
  }
  return { dbFile, sql }
}
