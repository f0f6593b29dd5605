/**
 * How a reject is written down: a record as capped JSON, a key value as plain JSON, an error as its
 * message; and when a whole batch failed for one reason (a fault of the handler or the target, not
 * of its records).
 */
import type { DataRecord } from '../../pipeline/types.js'

/** The most characters of a record's JSON a reject keeps (PipelineRejects.record). */
export const MAX_RECORD_CHARS = 16_000

/**
 * Every record of a batch failed, all with one and the same error: a fault of the handler or the
 * target (a missing table, a lost connection, a handler that always throws), not of the records.
 */
export function sameFailure(failures: Array<{ error: string }>, records: number): boolean {
  return failures.length === records && failures.every(failure => failure.error === failures[0].error)
}

export function message(error: unknown): string {
  const text = (error as { message?: unknown })?.message
  return typeof text === 'string' && text ? text : String(error)
}

export function plain(value: unknown): unknown {
  return typeof value === 'bigint' ? String(value) : value ?? null
}

/** JSON of a record, cut at MAX_RECORD_CHARS. */
export function capped(record: DataRecord): { text: string; truncated: boolean } {
  const text = JSON.stringify(record, (_key, value: unknown) =>
    typeof value === 'bigint' ? String(value) : value instanceof Uint8Array ? Buffer.from(value).toString('base64') : value)
  return text.length <= MAX_RECORD_CHARS ? { text, truncated: false } : { text: text.slice(0, MAX_RECORD_CHARS), truncated: true }
}
