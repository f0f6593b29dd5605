/**
 * How many page requests a partitioned read keeps in flight (lib/adapters/source/governor.ts):
 * from a quarter of `parallel` up while page times stay flat, back down for the rest of the run
 * once they grow with the level (a saturated provider), saying from where to where and why.
 */
import { Concurrency, type LevelChange } from '../../lib/adapters/source/governor'

/** Feeds `concurrency` page times from `pageMs(level)` until `count` pages were observed. */
function feed(concurrency: Concurrency, count: number, pageMs: (level: number) => number): number[] {
  const levels: number[] = []
  for (let i = 0; i < count; i++) {
    levels.push(concurrency.level)
    concurrency.observe(concurrency.level, pageMs(concurrency.level))
  }
  return levels
}

describe('Concurrency', () => {
  test('starts at a quarter of parallel and doubles up to it while pages take as long as before (a provider far away)', () => {
    const concurrency = new Concurrency(8)
    const levels = feed(concurrency, 40, () => 60)
    expect(levels[0]).toBe(2)
    expect([...new Set(levels)]).toEqual([2, 4, 8])
    expect(concurrency.level).toBe(8)
    expect(concurrency.reduced).toBe(false)
    expect(new Concurrency(6).level).toBe(2)
    expect(new Concurrency(1).level).toBe(1)
  })

  test('a provider that serves one request at a time (page time grows with the level): back to the lower level for the rest of the run, said once', () => {
    const changes: LevelChange[] = []
    const concurrency = new Concurrency(8, change => changes.push(change))
    const levels = feed(concurrency, 60, level => 20 * level) // loopback: every extra request only queues
    expect(changes).toEqual([{ from: 4, to: 2, fromMs: 80, toMs: 40 }])
    expect(concurrency.level).toBe(2)
    expect(concurrency.reduced).toBe(true)
    expect(levels.slice(-20).every(level => level === 2)).toBe(true) // never climbs again
  })

  test('a provider far away that saturates at 4 (50 ms + 20 ms per request queued): stays at 4 of 16', () => {
    const changes: LevelChange[] = []
    const concurrency = new Concurrency(16, change => changes.push(change))
    feed(concurrency, 80, level => 50 + 20 * Math.max(0, level - 4))
    expect(changes.map(({ from, to }) => [from, to])).toEqual([[8, 4]])
    expect(concurrency.level).toBe(4)
  })

  test('up to 1.75 × the time at half the level is still worth it; beyond it is not', () => {
    const ok = new Concurrency(4)
    feed(ok, 30, level => (level === 1 ? 100 : level === 2 ? 175 : 306))
    expect([ok.level, ok.reduced]).toEqual([4, false])
    // a single-threaded provider 50 ms away near its knee: 1.67 × per doubling still gains 20 % (1M rows: 16 s against 38 s)
    const knee = new Concurrency(8)
    feed(knee, 40, level => ({ 2: 86, 4: 144, 8: 240 })[level] ?? 0)
    expect([knee.level, knee.reduced]).toEqual([8, false])
    const not = new Concurrency(4)
    feed(not, 30, level => (level === 1 ? 100 : 176))
    expect([not.level, not.reduced]).toEqual([1, true])
  })

  test('slower answers later in the run (the provider got busy): reduced from the level reached', () => {
    const changes: LevelChange[] = []
    const concurrency = new Concurrency(8, change => changes.push(change))
    feed(concurrency, 30, () => 60)
    expect(concurrency.level).toBe(8)
    feed(concurrency, 16, () => 200)
    expect(changes[0]).toMatchObject({ from: 8, to: 4, toMs: 60 })
    expect(concurrency.level).toBeLessThan(8)
  })

  test('pages sent at another level than the current one are not counted for it', () => {
    const concurrency = new Concurrency(8)
    for (let i = 0; i < 10; i++) concurrency.observe(1, 10)
    expect(concurrency.level).toBe(2)
  })

  test('requests without a page time (a range\'s first page) are no part of a level\'s window', () => {
    const concurrency = new Concurrency(8)
    for (let i = 0; i < 8; i++) concurrency.observe(2)
    expect(concurrency.level).toBe(2)
    for (let i = 0; i < 3; i++) concurrency.observe(2, 40)
    expect(concurrency.level).toBe(2)
    concurrency.observe(2, 40)
    expect(concurrency.level).toBe(4)
  })

  test('one slow page in a window does not step back', () => {
    const concurrency = new Concurrency(8)
    feed(concurrency, 4, () => 60)
    expect(concurrency.level).toBe(4)
    feed(concurrency, 4, () => 60)
    expect(concurrency.level).toBe(8)
    const times = [60, 400, 60, 70, 60, 65, 60, 60]
    for (const ms of times) concurrency.observe(8, ms)
    expect([concurrency.level, concurrency.reduced]).toEqual([8, false])
  })
})
