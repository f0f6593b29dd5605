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
 * A promise that notes when someone chains it. `await` reaches a promise through its `then` only
 * when the promise is of a class of its own: a plain Promise it adopts directly, so a `then`
 * patched onto one never hears of an `await`.
 */
class ChainedPromise<T> extends Promise<T> {
  onChained?: () => void

  // the point of this class: `then` (which await, catch and finally call) notes that someone observes it
  // oxlint-disable-next-line unicorn/no-thenable
  override then<R1 = T, R2 = never>(onFulfilled?: ((value: T) => R1 | PromiseLike<R1>) | null, onRejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null): Promise<R1 | R2> {
    this.onChained?.()
    return super.then(onFulfilled, onRejected)
  }
}

/**
 * A promise that logs its rejection when nobody observes it: awaiting or chaining it (`then`,
 * `catch`, `finally`) marks it observed. The process never crashes on an unobserved failed run.
 */
export function observable<T>(promise: Promise<T>, onUnobserved: (error: unknown) => void): Promise<T> {
  let observed = false
  const result = new ChainedPromise<T>((resolve, reject) => { promise.then(resolve, reject) })
  result.onChained = () => { observed = true }
  // (Promise's own `then`: this handler does not count as someone observing it, and keeps its rejection from being unhandled)
  void Promise.prototype.then.call(result, undefined, (error: unknown) => setImmediate(() => { if (!observed) onUnobserved(error) }))
  return result
}
