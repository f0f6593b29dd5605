/** Running code in a tenant's context: CAP then uses that tenant's database (and model). */
import cds from '@sap/cds'

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
export function inTenant<T>(tenant: string, fn: () => Promise<T>): Promise<T> {
  const facade = cds as unknown as Facade
  return facade._with(new facade.EventContext({ tenant, user: facade.User.privileged }), fn)
}
