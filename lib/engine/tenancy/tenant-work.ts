/**
 * Work underway in a tenant's context in this process (runs from their guard to their end, code
 * run through `inTenant`). An unsubscribe waits for it before MTX deletes the tenant's database:
 * a run still underway would otherwise open that database again with its next query, and SQLite
 * would create an empty file where the deleted database was (seen on a loaded machine, where a
 * tenant's run spans the unsubscribe far more often).
 */
const underway = new Map<string, Set<Promise<unknown>>>()

/** Counts `work` as underway in `tenant` until it settles; returns `work`. */
export function trackTenantWork<T>(tenant: string | undefined, work: Promise<T>): Promise<T> {
  if (!tenant) return work
  let set = underway.get(tenant)
  if (!set) underway.set(tenant, set = new Set())
  const entry: Promise<unknown> = work.then(() => undefined, () => undefined).finally(() => {
    set.delete(entry)
    if (!set.size && underway.get(tenant) === set) underway.delete(tenant)
  })
  set.add(entry)
  return work
}

/** Resolves true once no work is underway in `tenant`, false when some is still underway after `timeout` ms. */
export async function tenantWorkEnded(tenant: string, timeout: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  const expired = new Promise<false>(resolve => { timer = setTimeout(() => resolve(false), timeout) })
  try {
    // work that started while we waited counts too
    for (let set = underway.get(tenant); set?.size; set = underway.get(tenant))
      if ((await Promise.race([Promise.all(set).then(() => true as const), expired])) === false) return false
    return true
  } finally {
    clearTimeout(timer)
  }
}

/** How many pieces of work are underway in `tenant` (logs). */
export function tenantWorkCount(tenant: string): number {
  return underway.get(tenant)?.size ?? 0
}
