/** Polling helpers for tests that wait on asynchronous effects. */

export const sleep = (ms: number) => new Promise(resolve => setTimeout(resolve, ms))

/** Resolves with the probe's first truthy value; fails naming `what` after `timeout` ms. */
export async function waitFor<T>(probe: () => Promise<T | undefined | false> | T | undefined | false, what = 'the condition', timeout = 10_000): Promise<T> {
  const until = Date.now() + timeout
  for (;;) {
    const value = await probe()
    if (value) return value
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`)
    await sleep(25)
  }
}
