/**
 * Bounded event statistics per pipeline (README "Event-driven replication"): messages received,
 * keys applied and skipped, the lag from the message's time to the replica write (p50/p95 over
 * the last hour) and the last event, as one `PipelineEventStats` row per pipeline and minute.
 * Counts add up in memory and reach the row at most once a second, so a burst of messages costs
 * a few statements, not one per message; rows older than a day are removed.
 */
import cds from '@sap/cds'
import { TRACKER_NAMESPACE } from '../constants.js'
import { connect, ql } from '../model/ql.js'

export const EVENT_STATS_ENTITY = `${TRACKER_NAMESPACE}.PipelineEventStats` as const
const LOG = cds.log('data-pipeline|events')
const HOUR = 3_600_000
const KEEP = 24 * HOUR
/** Lag samples kept per pipeline (the newest; enough for stable percentiles). */
const SAMPLES = 2000
const FLUSH_EVERY = 1000

interface Pending { received: number; applied: number; skipped: number; lastEvent?: string }

export class EventStats {
  private readonly pending = new Map<string, Pending>()
  /** Per pipeline: [when written, lag ms], oldest first. */
  private readonly lags = new Map<string, Array<[number, number]>>()
  private timer?: NodeJS.Timeout
  private writing: Promise<void> = Promise.resolve()
  private stopped = false

  received(pipeline: string, count: number, eventTime: string): void {
    const slot = this.slot(pipeline)
    slot.received += count
    if (!slot.lastEvent || eventTime > slot.lastEvent) slot.lastEvent = eventTime
    this.schedule()
  }

  /** A micro-batch was written: its keys, those set aside, and the lag of each applied key. */
  applied(pipeline: string, applied: number, skipped: number, lags: number[]): void {
    const slot = this.slot(pipeline)
    slot.applied += applied
    slot.skipped += skipped
    const now = Date.now()
    const samples = this.lags.get(pipeline) ?? []
    for (const lag of lags) samples.push([now, Math.max(0, Math.round(lag))])
    while (samples.length > SAMPLES || (samples.length && samples[0][0] < now - HOUR)) samples.shift()
    this.lags.set(pipeline, samples)
    this.schedule()
  }

  /** p50 and p95 of the lags of the last hour (ms), undefined without samples. */
  percentiles(pipeline: string): { p50: number; p95: number } | undefined {
    const since = Date.now() - HOUR
    const values = (this.lags.get(pipeline) ?? []).filter(([at]) => at >= since).map(([, lag]) => lag).sort((a, b) => a - b)
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

  private slot(pipeline: string): Pending {
    let slot = this.pending.get(pipeline)
    if (!slot) this.pending.set(pipeline, slot = { received: 0, applied: 0, skipped: 0 })
    return slot
  }

  private schedule(): void {
    if (this.timer || this.stopped) return
    this.timer = setTimeout(() => void this.flush(), FLUSH_EVERY)
    this.timer.unref()
  }

  private async write(): Promise<void> {
    const entries = [...this.pending.entries()]
    this.pending.clear()
    if (!entries.length) return
    const minute = new Date(Math.floor(Date.now() / 60_000) * 60_000).toISOString()
    const db = await connect('db')
    for (const [pipeline, counts] of entries) {
      const lag = this.percentiles(pipeline)
      const set = {
        received: { '+=': counts.received }, applied: { '+=': counts.applied }, skipped: { '+=': counts.skipped },
        ...(lag ? { lagP50: lag.p50, lagP95: lag.p95 } : {}), ...(counts.lastEvent ? { lastEvent: counts.lastEvent } : {}),
      }
      const update = () => db.tx(async tx => Number(await tx.run(ql.UPDATE.entity(EVENT_STATS_ENTITY).set(set).where({ pipeline, minute }))) > 0)
      if (await update()) continue
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
}
