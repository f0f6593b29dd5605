/**
 * Which databases take the fast write path (lib/adapters/target/write-path.ts): SQLite and
 * PostgreSQL, told by CAP's service class — never by the configured kind alone. SAP HANA and
 * any other database service (or a custom `impl` that calls itself `sqlite`) write through
 * CAP's path. The database services here are real CAP services (in-memory SQLite).
 */
import cds from '@sap/cds'
import { chooseWritePath, provenDialect } from '../../lib/adapters/target/write-path'

type DatabaseService = { kind: string; model: unknown; isDatabaseService?: boolean; disconnect?(): Promise<void> }
const { DatabaseService } = cds as unknown as { DatabaseService: new (name: string, model: unknown, options: object) => DatabaseService }

const model = cds.linked(cds.compile.for.nodejs(cds.parse.cdl('namespace t; entity Plain { key ID : Integer; title : String(12); }')))

async function sqlite(kind: string): Promise<DatabaseService> {
  return (await cds.connect.to(`wp-${kind}`, { kind, impl: '@cap-js/sqlite', model, credentials: { url: ':memory:' } } as never)) as unknown as DatabaseService
}

/** A database service of another implementation (what @cap-js/hana's HANAService is to CAP). */
class HANAService extends DatabaseService {
  // its driver pool; never used here
  get factory(): object {
    return {}
  }
}

describe('fast write path: proven databases only', () => {
  test('SQLite takes it, also under the kind `sql` (SQLite in development)', async () => {
    for (const kind of ['sqlite', 'sql']) {
      const db = await sqlite(kind)
      expect(provenDialect(db)?.dialect).toBe('sqlite')
      expect(chooseWritePath(db, 't.Plain')).toMatchObject({ kind: 'prepared', reason: 'plain table on sqlite' })
    }
  })

  test('HANA and any other database service take CAP\'s path, whatever kind it is configured with', () => {
    for (const kind of ['hana', 'sqlite', 'postgres', 'better-sqlite']) {
      const db = new HANAService(`other-${kind}`, model, { kind })
      Object.defineProperty(db, 'kind', { value: kind })
      expect(db.isDatabaseService).toBe(true)
      expect(provenDialect(db)).toBeUndefined()
      const path = chooseWritePath(db, 't.Plain')
      expect(path.kind).toBe('cap')
      expect(path.reason).toBe(`no prepared writer for database kind '${kind}' (HANAService): the fast path is proven on SQLite and PostgreSQL only`)
    }
  })
})
