/** Polling helpers for tests that wait on asynchronous effects. */

export const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms))

/**
 * How long `waitFor` waits by default. Generous on purpose: a deadline only bounds how long a
 * failing test takes — a passing one returns as soon as its condition holds — and `npm test` must
 * pass on a loaded machine (two CPU-bound processes beside the suite, issue 21).
 */
export const DEFAULT_WAIT = 30_000

/**
 * Resolves with the probe's first truthy value; fails naming `what` after `timeout` ms. Probes every
 * `every` ms (a probe that costs the app work, such as a POST, may want a slower pace).
 */
export async function waitFor<T>(probe: () => Promise<T | undefined | false | null> | T | undefined | false | null, what = 'the condition', timeout = DEFAULT_WAIT, every = 25): Promise<T> {
  const until = Date.now() + timeout
  for (;;) {
    const value = await probe()
    if (value) return value
    if (Date.now() > until) throw new Error(`timed out waiting for ${what} (${timeout} ms)`)
    await sleep(every)
  }
}
