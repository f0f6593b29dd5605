/**
 * Bounded parallelism across tenants: at most `parallel` tenant runs at once in this process
 * (`multitenancy.parallel`). A tenant whose run of a pipeline is waiting or running is not
 * queued again by the next tick, so a slow tenant never piles up work and never holds back
 * the others (they take the free slots).
 */
export class TenantFanOut {
  private active = 0
  private readonly waiting: Array<() => void> = []
  private readonly busy = new Set<string>()

  constructor(private readonly limit: () => number) {}

  /** Whether this pipeline is waiting or running for this tenant in this process. */
  isBusy(pipeline: string, tenant: string): boolean {
    return this.busy.has(`${tenant}\u0000${pipeline}`)
  }

  /**
   * Runs `work` for each tenant, at most `limit()` at once across all fan-outs; a tenant already
   * busy with this pipeline is skipped (`skipped: true`). Never rejects: each tenant's outcome is
   * reported on its own.
   */
  run<T>(pipeline: string, tenants: string[], work: (tenant: string) => Promise<T>): Promise<Array<{ tenant: string; skipped?: boolean; value?: T; error?: unknown }>> {
    return Promise.all(tenants.map(async tenant => {
      const key = `${tenant}\u0000${pipeline}`
      if (this.busy.has(key)) return { tenant, skipped: true }
      this.busy.add(key)
      try {
        await this.acquire()
        try {
          return { tenant, value: await work(tenant) }
        } finally {
          this.release()
        }
      } catch (error) {
        return { tenant, error }
      } finally {
        this.busy.delete(key)
      }
    }))
  }

  private acquire(): Promise<void> {
    if (this.active < this.limit()) {
      this.active++
      return Promise.resolve()
    }
    return new Promise(resolve => this.waiting.push(() => { this.active++; resolve() }))
  }

  private release(): void {
    this.active--
    const next = this.waiting.shift()
    if (next) next()
  }
}
