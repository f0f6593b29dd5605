/**
 * How the registry starts work in the background: outside the caller's transaction, and with
 * failures nobody awaited still logged.
 */
import { currentContext, inContext } from '../../cap/index.js'

/** Runs `fn` in a fresh context without a transaction, keeping the caller's user and tenant (or the given one). */
export function detached<T>(fn: () => Promise<T>, tenant?: string): Promise<T> {
  return detachedFromCaller(fn, tenant)()
}

/** `detached` for later: the caller's user and tenant (or the given one) are taken now, the work starts when the returned function is called. */
export function detachedFromCaller<T>(fn: () => Promise<T>, tenant?: string): () => Promise<T> {
  const caller = currentContext()
  const effectiveTenant = tenant ?? caller?.tenant
  const properties = { ...(caller?.user ? { user: caller.user } : {}), ...(effectiveTenant ? { tenant: effectiveTenant } : {}) }
  return () => inContext(properties, fn)
}

/**
 * A promise that logs its rejection when nobody observes it: awaiting or chaining marks it
 * observed. The process never crashes on an unobserved failed run.
 */
export function observable<T>(promise: Promise<T>, onUnobserved: (error: unknown) => void): Promise<T> {
  let observed = false
  const then = promise.then.bind(promise)
  void then(undefined, error => setImmediate(() => { if (!observed) onUnobserved(error) }))
  // the point of this helper: `then` of the returned promise notes that someone observes it
  // oxlint-disable-next-line unicorn/no-thenable
  promise.then = ((onFulfilled, onRejected) => {
    observed = true
    return then(onFulfilled, onRejected)
  }) as typeof promise.then
  return promise
}
