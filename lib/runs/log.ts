/**
 * The bounded event log of one run (README "Run events"), kept in memory while the run goes and
 * written with the run's final tracker update in one statement (store.ts): the engine pays an
 * object per event, never a database round trip. At most `max` events: the first error and the
 * end always find room; detail events beyond the rest are rolled up by kind into one event.
 */
export type RunPhase = 'guard' | 'source' | 'mapping' | 'target'
export const RUN_EVENT_KINDS = ['start', 'page', 'retry', 'batch', 'sweep', 'drift', 'rejects', 'lease', 'partitions', 'error', 'rollup', 'end'] as const
export type RunEventKind = (typeof RUN_EVENT_KINDS)[number]

export interface RunEventFields {
  phase?: RunPhase
  httpStatus?: number
  rows?: number
  bytes?: number
  durationMs?: number
  attempt?: number
  waitMs?: number
  message?: string
  details?: Record<string, unknown>
}

export interface RunEvent extends Omit<RunEventFields, 'details'> {
  seq: number
  time: string
  kind: RunEventKind
  details?: string
}

/** Events that always find room: the first error, the roll-up and the end. */
const RESERVED = 3
const MESSAGE_LENGTH = 1000
const DETAILS_LENGTH = 2000

interface Rolled { count: number; rows: number; bytes: number; durationMs: number }

export class RunEventLog {
  private readonly events: RunEvent[] = []
  private readonly rolled = new Map<RunEventKind, Rolled>()
  private hasError = false
  private ended = false

  constructor(readonly max: number) {}

  /** The events as stored (roll-up included once the run ended). */
  list(): readonly RunEvent[] {
    return this.events
  }

  add(kind: RunEventKind, fields: RunEventFields = {}): void {
    if (this.ended) return
    const firstError = kind === 'error' && !this.hasError
    if (firstError) this.hasError = true
    if (!firstError && this.events.length >= this.max - RESERVED) {
      const sum = this.rolled.get(kind) ?? { count: 0, rows: 0, bytes: 0, durationMs: 0 }
      sum.count++
      sum.rows += fields.rows ?? 0
      sum.bytes += fields.bytes ?? 0
      sum.durationMs += fields.durationMs ?? 0
      this.rolled.set(kind, sum)
      return
    }
    this.push(kind, fields)
  }

  /** The last events: the roll-up of what found no room, then `end`; nothing is added after it. */
  end(fields: RunEventFields): void {
    if (this.ended) return
    if (this.rolled.size) {
      const kinds = [...this.rolled]
      const total = kinds.reduce((sum, [, r]) => sum + r.count, 0)
      const sum = (key: keyof Rolled) => kinds.reduce((s, [, r]) => s + r[key], 0)
      const bytes = sum('bytes')
      this.push('rollup', {
        rows: sum('rows'), bytes: bytes || undefined, durationMs: sum('durationMs'),
        message: `${total} more events: ${kinds.map(([kind, r]) => describeRolled(kind, r)).join('; ')}`,
        details: Object.fromEntries(kinds),
      })
    }
    this.push('end', fields)
    this.ended = true
  }

  private push(kind: RunEventKind, fields: RunEventFields): void {
    const { details, message: text, ...rest } = fields
    const event: RunEvent = { seq: this.events.length + 1, time: new Date().toISOString(), kind }
    for (const [key, value] of Object.entries(rest)) if (value !== undefined && value !== null) Object.assign(event, { [key]: value })
    const message = text && maskUrls(text)
    if (message) event.message = message.length > MESSAGE_LENGTH ? `${message.slice(0, MESSAGE_LENGTH - 1)}…` : message
    if (details) {
      const text = JSON.stringify(details)
      event.details = text.length > DETAILS_LENGTH ? `${text.slice(0, DETAILS_LENGTH - 1)}…` : text
    }
    this.events.push(event)
  }
}

const NOUNS: Partial<Record<RunEventKind, string>> = { page: 'page reads', batch: 'write batches', retry: 'retries', error: 'errors', lease: 'lease events' }

function describeRolled(kind: RunEventKind, r: Rolled): string {
  const parts = [`${r.rows} rows`, ...(r.bytes ? [`${r.bytes} bytes`] : []), `${r.durationMs} ms`]
  return `${r.count} ${NOUNS[kind] ?? `${kind} events`} (${parts.join(', ')})`
}

/** URLs in a message keep their path: user info and query parameters (keys, filters, tokens) are masked. */
export function maskUrls(text: string): string {
  return text
    .replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@'"]+@/gi, '$1***@')
    .replace(/((?:[a-z][a-z0-9+.-]*:\/\/[^\s/'"]+)?\/[^\s?'"]*)\?[^\s'")]+/gi, '$1?…')
}
