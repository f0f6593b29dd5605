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
/** When the instance received each key: a key is received when its row is made. */
const received = new Map<string, number>()
const row = (id: number): PendingKey => {
  received.set(JSON.stringify({ ID: id }), Date.now())
  return { pipeline: 'p', recordKey: JSON.stringify({ ID: id }), action: 'upsert', payload: null, eventTime: new Date().toISOString(), version: `v${id}` }
}
/** As the key store answers: when the key was received, else when first asked (seen waiting). */
const receivedAt = (_name: string, recordKey: string) => {
  if (!received.has(recordKey)) received.set(recordKey, Date.now())
  return received.get(recordKey)!
}

function host(waiting: PendingKey[]) {
  return {
    prepare: async () => ({ pipeline: { leaseDuration: 60_000 } }),
    tracker: { read: async () => ({ enabled: true, status: 'idle' }), acquire: async () => undefined, release: async () => undefined },
    dispatch: async () => ({}),
    keys: {
      oldest: async (_name: string, except = new Set<string>()) => waiting.find(row => !except.has(row.recordKey)),
      receivedAt,
      take: async (_name: string, limit: number, except = new Set<string>()) => waiting.filter(row => !except.has(row.recordKey)).slice(0, limit),
      takeKeys: async (_name: string, recordKeys: string[]) => waiting.filter(row => recordKeys.includes(row.recordKey)),
      remove: async () => undefined,
    },
    stats: { applied: () => undefined },
  }
}

beforeEach(() => {
  vi.useFakeTimers()
  received.clear()
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

/**
 * Instances on one database: the waiting keys and the guard shared; a micro-batch takes `apply` ms.
 * The first instance receives each message at once, the i-th `i · skew` ms later (a busy machine).
 */
function sharedHosts(instances: number, apply: number, skew = 0) {
  const waiting: PendingKey[] = []
  let holder: number | undefined
  vi.mocked(applyBatch).mockImplementation(async (_prepared: unknown, rows: PendingKey[]) => {
    await new Promise(resolve => setTimeout(resolve, apply))
    for (const row of rows) waiting.splice(waiting.indexOf(row), 1)
    return { statistics: { created: 0, updated: rows.length, deleted: 0 }, applied: rows.length, skipped: 0, fetched: 1 }
  })
  const receipts = Array.from({ length: instances }, () => new Map<string, number>())
  const hosts = Array.from({ length: instances }, (_, i) => ({
    ...host(waiting),
    keys: {
      ...host(waiting).keys,
      receivedAt: (_name: string, recordKey: string) => {
        if (!receipts[i].has(recordKey)) receipts[i].set(recordKey, Date.now())
        return receipts[i].get(recordKey)!
      },
    },
    tracker: {
      read: async () => ({ enabled: true, status: 'idle' }),
      acquire: async () => {
        if (holder !== undefined) throw Object.assign(new Error('busy'), { code: 'PIPELINE_RUNNING' })
        holder = i
      },
      release: async () => { holder = undefined },
    },
  }))
  const batchers = hosts.map(h => new EventBatcher('p', { service: 'messaging', window: 200, maxBatch: 1000 }, h as never))
  return {
    /** A message of key `id` reaches every instance (broker fan-out). */
    arrive(id: number) {
      // the change's time: a second before its message arrives (a provider that lags)
      const key = { ...row(id), eventTime: new Date(Date.now() - 1000).toISOString() }
      waiting.push(key)
      batchers.forEach((batcher, i) => {
        const receive = () => {
          receipts[i].set(key.recordKey, Date.now())
          batcher.notify()
        }
        if (i && skew) setTimeout(receive, i * skew)
        else receive()
      })
    },
    waiting,
    stop: () => batchers.forEach(b => b.stop()),
  }
}

/** Micro-batches for a steady stream (a key every 10 ms for 3 s) with `instances` instances. */
async function batchesFor(instances: number, apply: number, skew = 0): Promise<number> {
  vi.mocked(applyBatch).mockClear()
  const shared = sharedHosts(instances, apply, skew)
  for (let i = 0; i < 300; i++) {
    shared.arrive(i)
    await vi.advanceTimersByTimeAsync(10)
  }
  await vi.advanceTimersByTimeAsync(2000)
  expect(shared.waiting).toEqual([])
  shared.stop()
  return vi.mocked(applyBatch).mock.calls.length
}

test.each([[30, 0], [120, 0], [400, 0], [30, 150], [400, 300]])('three instances form the micro-batches one instance would (a micro-batch takes %i ms; the instances receive a message %i ms apart)', async (apply, skew) => {
  const one = await batchesFor(1, apply)
  const three = await batchesFor(3, apply, skew)
  // the instance that loses the guard finds the next oldest key younger than the window and waits for it
  expect(three).toBeLessThanOrEqual(Math.ceil(one * 1.2))
  expect(one).toBeGreaterThan(3)
})

describe('a key that fails while the others of its batch apply', () => {
  /** A source failing for the key IDs in `poison`: a batch holding one of them fails, whole. */
  function failingFor(waiting: PendingKey[], poison: Set<number>, calls: number[][]) {
    vi.mocked(applyBatch).mockImplementation(async (_prepared: unknown, rows: PendingKey[]) => {
      const IDs = rows.map(r => JSON.parse(r.recordKey).ID as number)
      calls.push(IDs)
      if (IDs.some(ID => poison.has(ID))) throw Object.assign(new Error(`the provider failed for ${IDs.filter(ID => poison.has(ID))}`), { status: 500 })
      for (const row of rows) waiting.splice(waiting.indexOf(row), 1)
      return { statistics: { created: 0, updated: rows.length, deleted: 0 }, applied: rows.length, skipped: 0, fetched: 1 }
    })
  }

  test('the others apply at once; it is retried on its own at a growing pause, then dropped and counted as skipped', async () => {
    const waiting = Array.from({ length: 40 }, (_, i) => row(i + 1))
    const calls: number[][] = []
    failingFor(waiting, new Set([17]), calls)
    const skipped: number[] = []
    const removed: PendingKey[] = []
    const base = host(waiting)
    const batcher = new EventBatcher('p', { service: 'messaging', window: 200, maxBatch: 100 }, {
      ...base,
      keys: { ...base.keys, remove: async (_name: string, rows: PendingKey[]) => { removed.push(...rows); for (const r of rows) waiting.splice(waiting.indexOf(r), 1) } },
      stats: { applied: (_name: string, _applied: number, skip: number) => skipped.push(skip) },
    } as never)
    batcher.notify()
    await vi.advanceTimersByTimeAsync(200)
    // at once, in the same drain: every key but the failing one
    expect(waiting.map(r => r.recordKey)).toEqual([JSON.stringify({ ID: 17 })])
    expect(calls.length).toBeLessThanOrEqual(2 + 2 * Math.ceil(Math.log2(40)) + 1)
    const tried = calls.length
    // a key arriving meanwhile does not wait for the failing one's pause
    waiting.push(row(99))
    batcher.notify()
    await vi.advanceTimersByTimeAsync(200)
    expect(waiting.map(r => r.recordKey)).toEqual([JSON.stringify({ ID: 17 })])
    expect(calls.slice(tried)).toEqual([[99]])
    // its retries: alone, 1, 2, 4, 8, 16, 30, 30 s after each other; the eighth attempt drops it
    calls.length = 0
    await vi.advanceTimersByTimeAsync(1000 - 200 + 2000 + 4000 + 8000 + 16_000 + 30_000 + 30_000)
    expect(calls).toEqual(Array.from({ length: 7 }, () => [17]))
    expect(waiting).toEqual([])
    expect(removed.map(r => r.recordKey)).toEqual([JSON.stringify({ ID: 17 })])
    expect(skipped.reduce((a, b) => a + b, 0)).toBe(1)
    batcher.stop()
  })

  test('a key that applies on a retry leaves the retries', async () => {
    const waiting = Array.from({ length: 5 }, (_, i) => row(i + 1))
    const calls: number[][] = []
    const poison = new Set([3])
    failingFor(waiting, poison, calls)
    const batcher = new EventBatcher('p', { service: 'messaging', window: WINDOW, maxBatch: 100 }, host(waiting) as never)
    batcher.notify()
    await vi.advanceTimersByTimeAsync(WINDOW)
    expect(waiting).toHaveLength(1)
    poison.clear()
    await vi.advanceTimersByTimeAsync(1000)
    expect(waiting).toEqual([])
    calls.length = 0
    await vi.advanceTimersByTimeAsync(60_000)
    expect(calls).toEqual([])
    await batcher.idle()
    batcher.stop()
  })

  test('a batch failing whole (the source is down) is not taken apart: two single keys tried, then the batch waits', async () => {
    const waiting = Array.from({ length: 40 }, (_, i) => row(i + 1))
    const calls: number[][] = []
    const down = new Set(Array.from({ length: 40 }, (_, i) => i + 1))
    failingFor(waiting, down, calls)
    const batcher = new EventBatcher('p', { service: 'messaging', window: WINDOW, maxBatch: 100 }, host(waiting) as never)
    batcher.notify()
    await vi.advanceTimersByTimeAsync(WINDOW)
    expect(calls.map(c => c.length)).toEqual([40, 1, 1])
    down.clear()
    await vi.advanceTimersByTimeAsync(1000)
    expect(calls.map(c => c.length)).toEqual([40, 1, 1, 40])
    expect(waiting).toEqual([])
    batcher.stop()
  })
})
