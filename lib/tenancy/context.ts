/** Running code in a tenant's context: CAP then uses that tenant's database (and model). */
import cds from '@sap/cds'
import { assertTenantId } from '../security/tenant-id.js'

interface Facade {
  EventContext: new (data: object) => object
  User: { privileged: unknown }
  _with<T>(context: object, fn: () => Promise<T>): Promise<T>
}

/**
 * Runs `fn` in a fresh context of `tenant` (no transaction; a privileged technical user), the
 * way CAP's own queue runs a tenant's tasks. Queries inside open their own transactions on the
 * tenant's database.
 */
export async function inTenant<T>(tenant: string, fn: () => Promise<T>): Promise<T> {
  // the tenant names a database: an unsafe id never reaches CAP's database service
  assertTenantId(tenant)
  const facade = cds as unknown as Facade
  return await facade._with(new facade.EventContext({ tenant, user: facade.User.privileged }), fn)
}
