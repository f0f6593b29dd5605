/**
 * The subscribed tenants, from CAP's tenant registry (`cds.xt.Tenants` in the technical tenant
 * t0), read through `cds.xt.DeploymentService` — never a list of the plugin's own.
 */
import cds from '@sap/cds'
import { technicalTenant } from './settings.js'
import { invalidTenantId, shownTenant } from '../security/tenant-id.js'
import { LOGGER } from '../constants.js'
import { connectTo, privilegedUser, servedServices, type QueryRunner } from '../cap/index.js'

const LOG = cds.log(LOGGER.tenancy)
const warned = new Set<string>()

interface DeploymentService {
  send(event: string, data: object): Promise<unknown>
  tx<T>(context: object, fn: (tx: DeploymentService) => Promise<T>): Promise<T>
}

/** IDs of all subscribed tenants (the technical tenant excluded), as CAP's registry holds them. */
export async function subscribedTenants(): Promise<string[]> {
  const t0 = technicalTenant()
  let ids: unknown
  try {
    const ds = servedServices()['cds.xt.DeploymentService'] as DeploymentService | undefined
    if (ds) ids = await ds.tx({ user: privilegedUser() }, tx => tx.send('getTenants', {}))
    else {
      // MTX served elsewhere (a sidecar): CAP's registry in the technical tenant's database
      const db = await connectTo<QueryRunner>('db')
      ids = await db.tx({ tenant: t0, user: privilegedUser() }, tx => tx.run('SELECT ID FROM cds_xt_Tenants'))
    }
  } catch (error) {
    // the technical tenant is not deployed yet (first start): nobody has subscribed
    if (/no such table|does not exist|invalid table name/i.test((error as Error).message) && /cds_xt_Tenants/i.test((error as Error).message)) return []
    throw error
  }
  return (Array.isArray(ids) ? ids : []).map(id => (typeof id === 'object' && id !== null ? String((id as { ID?: unknown }).ID) : String(id)))
    .filter(id => id && id !== t0 && safe(id))
    .sort()
}

/** A registered tenant whose id is unsafe gets no schedule, no run and no file of the engine. */
function safe(id: string): boolean {
  const reason = invalidTenantId(id)
  if (reason && !warned.has(id)) {
    warned.add(id)
    LOG.error(`tenant ${shownTenant(id)} is subscribed, but its id is not a valid tenant id (${reason}): the engine leaves it out`)
  }
  return !reason
}
