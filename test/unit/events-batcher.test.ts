/**
 * The coalescing drain's cadence under a steady stream: keys arriving while a micro-batch is
 * applied start their window when they arrive, so the next micro-batch follows after
 * max(window, drain) rather than window + drain (at a thousand changes per second every
 * micro-batch used to add a whole window to the lag). The window still holds for keys that have
 * waited less. The host is a stand-in (no database): what is tested is when `applyBatch` runs.
 */
import { vi } from 'vitest'
import type { PendingKey } from '../../lib/events/store'

const held: Array<() => void> = []
vi.mock('../../lib/events/apply', () => ({
  applyBatch: vi.fn((_prepared: unknown, rows: PendingKey[]) => new Promise(resolve => {
    held.push(() => resolve({ statistics: { created: 0, updated: rows.length, deleted: 0 }, applied: rows.length, skipped: 0, fetched: 1 }))
  })),
}))

const { applyBatch } = await import('../../lib/events/apply')
const { EventBatcher } = await import('../../lib/events/batcher')

const WINDOW = 1000
const row = (id: number): PendingKey => ({ pipeline: 'p', recordKey: JSON.stringify({ ID: id }), action: 'upsert', payload: null, eventTime: new Date().toISOString(), version: `v${id}` })

function host(waiting: PendingKey[]) {
  return {
    prepare: async () => ({ pipeline: { leaseDuration: 60_000 } }),
    tracker: { read: async () => ({ enabled: true, status: 'idle' }), acquire: async () => undefined, release: async () => undefined },
    dispatch: async () => ({}),
    keys: {
      hasWaiting: async () => waiting.length > 0,
      take: async (_name: string, limit: number) => waiting.slice(0, limit),
      remove: async () => undefined,
    },
    stats: { applied: () => undefined },
  }
}

beforeEach(() => {
  vi.useFakeTimers()
  held.length = 0
  vi.mocked(applyBatch).mockClear()
})
afterEach(() => vi.useRealTimers())

test('a key arriving during a micro-batch waits out its own window, not the window after the batch', async () => {
  const waiting: PendingKey[] = [row(1)]
  const batcher = new EventBatcher('p', { service: 'messaging', window: WINDOW, maxBatch: 100 }, host(waiting) as never)
  batcher.notify()
  await vi.advanceTimersByTimeAsync(WINDOW)
  expect(applyBatch).toHaveBeenCalledTimes(1)

  // the first micro-batch is slow; a second key arrives during it and waits 800 ms for it to end
  await vi.advanceTimersByTimeAsync(200)
  waiting.push(row(2))
  batcher.notify()
  await vi.advanceTimersByTimeAsync(800)
  waiting.shift() // the first batch's key leaves with its write
  held.shift()!()
  await vi.advanceTimersByTimeAsync(0)

  // its window has 200 ms to go: not yet …
  await vi.advanceTimersByTimeAsync(150)
  expect(applyBatch).toHaveBeenCalledTimes(1)
  // … then the micro-batch (a whole window after the first batch ended would be 850 ms later)
  await vi.advanceTimersByTimeAsync(100)
  expect(applyBatch).toHaveBeenCalledTimes(2)
  expect(vi.mocked(applyBatch).mock.calls[1][1]).toEqual([expect.objectContaining({ version: 'v2' })])
  held.shift()!()
  waiting.length = 0
  await vi.advanceTimersByTimeAsync(0)
  batcher.stop()
})

test('a key arriving when no micro-batch runs waits the whole window', async () => {
  const waiting: PendingKey[] = [row(1)]
  const batcher = new EventBatcher('p', { service: 'messaging', window: WINDOW, maxBatch: 100 }, host(waiting) as never)
  batcher.notify()
  await vi.advanceTimersByTimeAsync(WINDOW - 1)
  expect(applyBatch).not.toHaveBeenCalled()
  await vi.advanceTimersByTimeAsync(1)
  expect(applyBatch).toHaveBeenCalledTimes(1)
  waiting.length = 0
  held.shift()!()
  await vi.advanceTimersByTimeAsync(0)
  batcher.stop()
})

test('the keys of a micro-batch are taken while it holds the guard: never keys another instance applied meanwhile', async () => {
  const waiting: PendingKey[] = [row(1)]
  const steps: string[] = []
  const base = host(waiting)
  const traced = {
    ...base,
    tracker: { ...base.tracker, acquire: async () => { steps.push('acquire') }, release: async () => { steps.push('release') } },
    keys: { ...base.keys, take: async (name: string, limit: number) => { steps.push('take'); return base.keys.take(name, limit) } },
  }
  const batcher = new EventBatcher('p', { service: 'messaging', window: WINDOW, maxBatch: 100 }, traced as never)
  batcher.notify()
  await vi.advanceTimersByTimeAsync(WINDOW)
  expect(applyBatch).toHaveBeenCalledTimes(1)
  waiting.shift()
  held.shift()!()
  await vi.advanceTimersByTimeAsync(0)
  expect(steps).toEqual(['acquire', 'take', 'release'])
})
