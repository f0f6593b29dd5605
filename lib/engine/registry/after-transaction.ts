/**
 * Deferring work until the current root transaction has ended: a queue task's (its transaction
 * holds SQLite's only connection until the handler returns) or a subscribe/upgrade request's (the
 * tenant's deployment runs in it). Work that needs its own transaction on that database starts
 * afterwards; a fallback timer makes sure it always starts.
 */
import { currentContext } from '../../cap/index.js'

/** Calls `fn` on the next turn after the current transaction ended, at once when there is none, at the latest after `fallbackMs`. */
export function afterCurrentTransaction(fn: () => void, fallbackMs: number): void {
  let started = false
  const start = () => {
    if (started) return
    started = true
    clearTimeout(fallback)
    fn()
  }
  const fallback = setTimeout(start, fallbackMs)
  fallback.unref()
  const context = currentContext()
  if (context?.tx && typeof context.on === 'function') context.on('done', () => { setImmediate(start) })
  else setImmediate(start)
}
