/**
 * Bounded event statistics per pipeline (README "Event-driven replication"): messages received,
 * keys applied and skipped, the lag from the message's time to the replica write (p50/p95 over
 * the last hour) and the last event, as one `PipelineEventStats` row per pipeline and minute.
 * Counts add up in memory and reach the row at most once a second, so a burst of messages costs
 * a few statements, not one per message; rows older than a day are removed. With multitenancy,
 * a tenant's counts are its own and reach its own database (`tenant`); the provider's (or a
 * single-tenant app's) have no tenant.
 */
import cds from '@sap/cds'
import { TRACKER_NAMESPACE } from '../constants.js'
import { connect, ql } from '../model/ql.js'
import { labelOf, slotOf, withinTenant } from './tenant.js'

export const EVENT_STATS_ENTITY = `${TRACKER_NAMESPACE}.PipelineEventStats` as const
const LOG = cds.log('data-pipeline|events')
const HOUR = 3_600_000
const KEEP = 24 * HOUR
/** Lag samples kept per pipeline (the newest; enough for stable percentiles). */
const SAMPLES = 2000
const FLUSH_EVERY = 1000

interface Pending { pipeline: string; tenant?: string; received: number; applied: number; skipped: number; lastEvent?: string }

export class EventStats {
  /** Per pipeline and tenant (tenant.ts slotOf). */
  private readonly pending = new Map<string, Pending>()
  /** Per pipeline and tenant: [when written, lag ms], oldest first. */
  private readonly lags = new Map<string, Array<[number, number]>>()
  private timer?: NodeJS.Timeout
  private writing: Promise<void> = Promise.resolve()
  private stopped = false

  received(pipeline: string, count: number, eventTime: string, tenant?: string): void {
    const slot = this.slot(pipeline, tenant)
    slot.received += count
    if (!slot.lastEvent || eventTime > slot.lastEvent) slot.lastEvent = eventTime
    this.schedule()
  }

  /** A micro-batch was written: its keys, those set aside, and the lag of each applied key. */
  applied(pipeline: string, applied: number, skipped: number, lags: number[], tenant?: string): void {
    const slot = this.slot(pipeline, tenant)
    slot.applied += applied
    slot.skipped += skipped
    const now = Date.now()
    const key = slotOf(pipeline, tenant)
    const samples = this.lags.get(key) ?? []
    for (const lag of lags) samples.push([now, Math.max(0, Math.round(lag))])
    while (samples.length > SAMPLES || (samples.length && samples[0][0] < now - HOUR)) samples.shift()
    this.lags.set(key, samples)
    this.schedule()
  }

  /** p50 and p95 of the lags of the last hour (ms), undefined without samples. */
  percentiles(pipeline: string, tenant?: string): { p50: number; p95: number } | undefined {
    const since = Date.now() - HOUR
    const values = (this.lags.get(slotOf(pipeline, tenant)) ?? []).filter(([at]) => at >= since).map(([, lag]) => lag).sort((a, b) => a - b)
    if (!values.length) return undefined
    const at = (q: number) => values[Math.min(values.length - 1, Math.ceil(q * values.length) - 1)]
    return { p50: at(0.5), p95: at(0.95) }
  }

  /** Writes what is pending now (tests and shutdown). */
  flush(): Promise<void> {
    clearTimeout(this.timer)
    this.timer = undefined
    this.writing = this.writing.then(() => this.write()).catch(error => LOG.warn(`event statistics not written: ${(error as Error).message}`))
    return this.writing
  }

  /** No more writes (the app shuts down; its database may be gone). */
  stop(): void {
    clearTimeout(this.timer)
    this.timer = undefined
    this.stopped = true
  }

  /** The tenant unsubscribed: its counts not yet written and its lags go (its database goes). */
  dropTenant(tenant: string): void {
    for (const [key, slot] of this.pending) if (slot.tenant === tenant) this.pending.delete(key)
    for (const key of this.lags.keys()) if (key.startsWith(`${tenant}\u0000`)) this.lags.delete(key)
  }

  private slot(pipeline: string, tenant: string | undefined): Pending {
    const key = slotOf(pipeline, tenant)
    let slot = this.pending.get(key)
    if (!slot) this.pending.set(key, slot = { pipeline, tenant, received: 0, applied: 0, skipped: 0 })
    return slot
  }

  private schedule(): void {
    if (this.timer || this.stopped) return
    this.timer = setTimeout(() => void this.flush(), FLUSH_EVERY)
    this.timer.unref()
  }

  private async write(): Promise<void> {
    const entries = [...this.pending.values()]
    this.pending.clear()
    if (!entries.length) return
    const minute = new Date(Math.floor(Date.now() / 60_000) * 60_000).toISOString()
    // one tenant's database failing loses its counts of this second only, never another tenant's
    const failed: unknown[] = []
    for (const counts of entries) {
      await withinTenant(counts.tenant, () => this.writeRow(counts, minute)).catch(error => {
        if (counts.tenant === undefined) failed.push(error)
        else LOG.warn(`${labelOf(counts.pipeline, counts.tenant)}: event statistics not written: ${(error as Error).message}`)
      })
    }
    if (failed.length) throw failed[0]
  }

  private async writeRow(counts: Pending, minute: string): Promise<void> {
    const { pipeline } = counts
    const db = await connect('db')
    const lag = this.percentiles(pipeline, counts.tenant)
    const set = {
      received: { '+=': counts.received }, applied: { '+=': counts.applied }, skipped: { '+=': counts.skipped },
      ...(lag ? { lagP50: lag.p50, lagP95: lag.p95 } : {}), ...(counts.lastEvent ? { lastEvent: counts.lastEvent } : {}),
    }
    const update = () => db.tx(async tx => Number(await tx.run(ql.UPDATE.entity(EVENT_STATS_ENTITY).set(set).where({ pipeline, minute }))) > 0)
    if (await update()) return
    try {
      await db.tx(async tx => {
        await tx.run(ql.INSERT.into(EVENT_STATS_ENTITY).entries([{
          pipeline, minute, received: counts.received, applied: counts.applied, skipped: counts.skipped,
          lagP50: lag?.p50 ?? null, lagP95: lag?.p95 ?? null, lastEvent: counts.lastEvent ?? null,
        }]))
        // a new minute: the day-old rows go (the table stays bounded)
        await tx.run(ql.DELETE.from(EVENT_STATS_ENTITY).where({ pipeline, minute: { '<': new Date(Date.now() - KEEP).toISOString() } }))
      })
    } catch (error) {
      // another instance inserted the minute's row first: add to it
      if (!(await update())) throw error
    }
  }
}
