/** The error a failed run stores, and the read-ahead of the next batch (used by run.ts and others). */
import { PipelineError } from '../../pipeline/errors.js'
import { publicError } from '../../security/redact.js'
import { underway } from '../../adapters/source/on-the-wire.js'

/**
 * The error JSON stored on failed runs (and shown by the management API): code, status and a
 * message without credentials or database internals, never request headers. `detail` (the
 * whole message, credentials redacted) and `correlationId` are for the log; only the id is stored.
 */
export function describeError(error: unknown, what?: string): { code?: string; status?: number; message: string; correlationId: string; detail: string } {
  const shown = publicError(error, what)
  const e = error as { code?: unknown; reason?: { response?: { status?: number } }; status?: number }
  const out = error instanceof PipelineError
    ? { code: error.code, status: error.status, message: shown.message, correlationId: shown.correlationId }
    : { code: shown.database ? 'DATABASE_ERROR' : typeof e?.code === 'string' ? e.code : undefined, status: e?.reason?.response?.status ?? (typeof e?.status === 'number' ? e.status : undefined), message: shown.message, correlationId: shown.correlationId }
  // not enumerable: the stored error (JSON) leaves the detail out
  return Object.defineProperty(out, 'detail', { value: shown.detail, enumerable: false }) as typeof out & { detail: string }
}

/**
 * Reads the next batch while the current one is mapped and written, so source latency and
 * target latency overlap instead of adding up.
 */
export async function* prefetch<T>(source: AsyncIterable<T>): AsyncGenerator<T> {
  const iterator = source[Symbol.asyncIterator]()
  let pending = iterator.next()
  let finished = false
  try {
    for (;;) {
      const result = await pending
      if (result.done) {
        finished = true
        return
      }
      pending = iterator.next()
      pending.catch(() => undefined) // surfaced when awaited; avoids an unhandled rejection if we stop early
      await underway(pending)
      yield result.value
    }
  } finally {
    if (!finished) await pending.then(() => iterator.return?.(), () => undefined)
  }
}
