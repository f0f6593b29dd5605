/**
 * Schedules: duration strings are never read as milliseconds, integers are milliseconds,
 * objects default to 10 minutes, labels are human-readable, queued/cron are rejected for now.
 */
import { parseDuration, parseSchedule, scheduleLabel, SpawnTimer } from '../../lib/engine/schedule'
import { PipelineError } from '../../lib/engine/errors'

function thrown(fn: () => unknown): PipelineError {
  try {
    fn()
  } catch (error) {
    expect(error).toBeInstanceOf(PipelineError)
    return error as PipelineError
  }
  throw new Error('expected an error')
}

describe('parseDuration', () => {
  test.each([
    ['30s', 30_000],
    ['10m', 600_000],
    ['10min', 600_000],
    ['2h', 7_200_000],
    ['1d', 86_400_000],
    ['250ms', 250],
    ['1.5s', 1500],
    [' 5 m ', 300_000],
    ['1500', 1500],
    [1500, 1500],
  ])('%j → %d ms', (input, ms) => {
    expect(parseDuration(input, 'schedule.every')).toBe(ms)
  })

  test.each([0, -5, 1.5, Number.NaN])('rejects the number %s', input => {
    const error = thrown(() => parseDuration(input, 'schedule.every'))
    expect(error).toMatchObject({ code: 'INVALID_CONFIG', target: 'schedule.every' })
  })

  test.each(['10 minutes', 'soon', '', '-5s', '0s'])('rejects the string %j', input => {
    const error = thrown(() => parseDuration(input, 'schedule.every'))
    expect(error.target).toBe('schedule.every')
    expect(error.message).toContain('schedule.every')
  })
})

describe('parseSchedule', () => {
  test('integer milliseconds', () => {
    expect(parseSchedule(1500)).toEqual({ every: 1500, engine: 'spawn' })
    expect(parseSchedule(300)).toEqual({ every: 300, engine: 'spawn' })
  })

  test('{ every } with a duration string or ms', () => {
    expect(parseSchedule({ every: '10m' })).toEqual({ every: 600_000, engine: 'spawn' })
    expect(parseSchedule({ every: '30s', engine: 'spawn' })).toEqual({ every: 30_000, engine: 'spawn' })
    expect(parseSchedule({ every: 60_000 })).toEqual({ every: 60_000, engine: 'spawn' })
  })

  test('an object without every defaults to 10 minutes', () => {
    expect(parseSchedule({})).toEqual({ every: 600_000, engine: 'spawn' })
    expect(parseSchedule({ engine: 'spawn' }).every).toBe(600_000)
  })

  test('a bare duration string', () => {
    expect(parseSchedule('2h').every).toBe(7_200_000)
  })

  test('the queued engine is rejected with a clear message', () => {
    const error = thrown(() => parseSchedule({ every: '10m', engine: 'queued' }))
    expect(error).toMatchObject({ code: 'INVALID_CONFIG', target: 'schedule.engine' })
    expect(error.message).toMatch(/'queued' is not available.*spawn/)
  })

  test('an unknown engine is rejected', () => {
    const error = thrown(() => parseSchedule({ engine: 'cron' as never }))
    expect(error.target).toBe('schedule.engine')
    expect(error.message).toMatch(/'cron' is invalid/)
  })

  test('5-field cron strings and cron objects are rejected', () => {
    const cron = thrown(() => parseSchedule('*/5 * * * *'))
    expect(cron.target).toBe('schedule')
    expect(cron.message).toMatch(/cron.*queued/)
    const object = thrown(() => parseSchedule({ cron: '0 2 * * *' }))
    expect(object.target).toBe('schedule.cron')
  })

  test('nonsense is rejected naming the key', () => {
    expect(thrown(() => parseSchedule(true as never, 'schedule')).target).toBe('schedule')
    expect(thrown(() => parseSchedule({ every: 'often' })).target).toBe('schedule.every')
  })
})

describe('scheduleLabel', () => {
  test.each([
    [{ every: 120_000, engine: 'spawn' as const }, 'every 2 min (spawn)'],
    [{ every: 600_000, engine: 'spawn' as const }, 'every 10 min (spawn)'],
    [{ every: 60_000, engine: 'spawn' as const }, 'every 1 min (spawn)'],
    [{ every: 30_000, engine: 'spawn' as const }, 'every 30 s (spawn)'],
    [{ every: 7_200_000, engine: 'spawn' as const }, 'every 2 h (spawn)'],
    [{ every: 86_400_000, engine: 'spawn' as const }, 'every 1 d (spawn)'],
    [{ every: 1500, engine: 'spawn' as const }, 'every 1500 ms (spawn)'],
    [{ every: 90_000, engine: 'spawn' as const }, 'every 90 s (spawn)'],
  ])('%j → %s', (spec, label) => {
    expect(scheduleLabel(spec)).toBe(label)
  })

  test('no schedule → null', () => {
    expect(scheduleLabel(undefined)).toBeNull()
  })

  test('labels of parsed inputs', () => {
    expect(scheduleLabel(parseSchedule({ every: '10m' }))).toBe('every 10 min (spawn)')
    expect(scheduleLabel(parseSchedule({}))).toBe('every 10 min (spawn)')
    expect(scheduleLabel(parseSchedule(1500))).toBe('every 1500 ms (spawn)')
  })
})

describe('SpawnTimer', () => {
  beforeEach(() => { vi.useFakeTimers() })
  afterEach(() => { vi.useRealTimers() })

  test('ticks every interval, never overlapping a slow tick, and stops', async () => {
    let active = 0
    let maxActive = 0
    let ticks = 0
    const timer = new SpawnTimer(100, async () => {
      ticks++
      active++
      maxActive = Math.max(maxActive, active)
      await new Promise(resolve => setTimeout(resolve, 250)) // slower than the interval
      active--
    }).start()
    await vi.advanceTimersByTimeAsync(99)
    expect(ticks).toBe(0)
    await vi.advanceTimersByTimeAsync(1)
    expect(ticks).toBe(1)
    await vi.advanceTimersByTimeAsync(1000)
    expect(maxActive).toBe(1)
    // each cycle is 100 ms wait + 250 ms tick
    expect(ticks).toBe(3)
    timer.stop()
    const stopped = ticks
    await vi.advanceTimersByTimeAsync(2000)
    expect(ticks).toBe(stopped)
  })

  test('a failing tick does not stop the timer', async () => {
    let ticks = 0
    const timer = new SpawnTimer(50, async () => { ticks++; throw new Error('boom') }).start()
    await vi.advanceTimersByTimeAsync(260)
    expect(ticks).toBe(5)
    timer.stop()
  })
})
