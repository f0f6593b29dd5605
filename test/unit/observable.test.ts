/**
 * `observable()` (lib/engine/registry/background.ts): the `done` of a run logs its failure when
 * nobody observes it — and only then. Awaiting it counts (a failed run whose `done` the caller
 * awaited was logged a second time as "nobody awaited its 'done'").
 */
import { observable } from '../../lib/engine/registry/background'

/** After the unobserved check had its chance (it waits one setImmediate). */
const settled = () => new Promise(resolve => setImmediate(() => setImmediate(resolve)))

describe('observable', () => {
  test('awaiting a failed promise observes it', async () => {
    const unobserved = vi.fn()
    const done = observable(Promise.reject(new Error('boom')), unobserved)
    await expect((async () => { await done })()).rejects.toThrow('boom')
    await settled()
    expect(unobserved).not.toHaveBeenCalled()
  })

  test('catch and then observe it; its value passes through', async () => {
    const unobserved = vi.fn()
    await observable(Promise.reject(new Error('boom')), unobserved).catch(() => undefined)
    expect(await observable(Promise.resolve(42), unobserved)).toBe(42)
    await settled()
    expect(unobserved).not.toHaveBeenCalled()
  })

  test('a failure nobody observes is reported once, never as an unhandled rejection', async () => {
    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown) => unhandled.push(reason)
    process.on('unhandledRejection', onUnhandled)
    try {
      const unobserved = vi.fn()
      observable(Promise.reject(new Error('ignored')), unobserved)
      await settled()
      await settled()
      expect(unobserved).toHaveBeenCalledTimes(1)
      expect((unobserved.mock.calls[0][0] as Error).message).toBe('ignored')
      expect(unhandled).toEqual([])
    } finally {
      process.off('unhandledRejection', onUnhandled)
    }
  })
})
