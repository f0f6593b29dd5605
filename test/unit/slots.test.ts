/**
 * Request slots of the process (lib/adapters/source/slots.ts): key-list chunks of a delegated read
 * go out at once within `maxParallelReads`; nested under a read that holds a slot they are bounded
 * on their own.
 */
import { inProcessSlot, inProcessSlots, maxParallelReads } from '../../lib/adapters/source/slots'

/** `count` tasks that each wait for a release; how many ran at once at most. */
function counted(count: number) {
  let active = 0
  let peak = 0
  let started = 0
  const gates: Array<() => void> = []
  const tasks = Array.from({ length: count }, (_, i) => async () => {
    active++
    started++
    peak = Math.max(peak, active)
    await new Promise<void>(resolve => gates.push(resolve))
    active--
    return i
  })
  return { tasks, peak: () => peak, started: () => started, releaseAll: () => { while (gates.length) gates.shift()!() } }
}

/** Releases the running tasks until `all` settles (each release lets queued tasks start). */
async function drain<T>(all: Promise<T>, releaseAll: () => void): Promise<T> {
  let done = false
  void all.finally(() => { done = true })
  while (!done) {
    await new Promise(resolve => setImmediate(resolve))
    releaseAll()
  }
  return all
}

test('chunks at the top level: at once, within maxParallelReads, results in order', async () => {
  const { tasks, peak, releaseAll } = counted(40)
  const results = await drain(inProcessSlots(tasks), releaseAll)
  expect(results).toEqual(Array.from({ length: 40 }, (_, i) => i))
  expect(peak()).toBe(maxParallelReads())
})

test('chunks nested in a read holding a slot: at most 4 at once (not the whole key list)', async () => {
  const { tasks, peak, releaseAll } = counted(40)
  const results = await drain(inProcessSlot(() => inProcessSlots(tasks)), releaseAll)
  expect(results).toEqual(Array.from({ length: 40 }, (_, i) => i))
  expect(peak()).toBeGreaterThan(1)
  expect(peak()).toBeLessThanOrEqual(4)
})
