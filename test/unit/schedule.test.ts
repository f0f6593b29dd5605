/**
 * Schedules: duration strings are never read as milliseconds, integers are milliseconds,
 * objects default to 10 minutes, 5-field cron implies the queued engine, labels are
 * human-readable and name the engine, live changes of queued schedules depend on the cds major.
 */
import {
  majorVersion, nextCronTime, parseCron, parseDuration, parseSchedule, queuedTaskName, scheduleLabel, scheduleLiveChangeSupported, SpawnTimer,
} from '../../lib/engine/schedule/index'
import { PipelineError } from '../../lib/pipeline/errors'
import cds from '@sap/cds'
import { cronShortestGap } from '../../lib/engine/schedule/index'

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
    expect(parseSchedule(1000)).toEqual({ every: 1000, engine: 'spawn' })
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

  test('the queued engine with every in ms or as a duration string', () => {
    expect(parseSchedule({ every: '10m', engine: 'queued' })).toEqual({ every: 600_000, engine: 'queued' })
    expect(parseSchedule({ every: 3000, engine: 'queued' })).toEqual({ every: 3000, engine: 'queued' })
    expect(parseSchedule({ engine: 'queued' })).toEqual({ every: 600_000, engine: 'queued' })
  })

  test('an unknown engine is rejected', () => {
    const error = thrown(() => parseSchedule({ engine: 'cron' as never }))
    expect(error.target).toBe('schedule.engine')
    expect(error.message).toMatch(/'cron' is invalid/)
  })

  test('a 5-field cron string or { cron } implies the queued engine', () => {
    expect(parseSchedule('*/5 * * * *')).toEqual({ cron: '*/5 * * * *', engine: 'queued' })
    expect(parseSchedule({ cron: '0 2 * * *' })).toEqual({ cron: '0 2 * * *', engine: 'queued' })
    expect(parseSchedule({ cron: '0  2 * *   1-5', engine: 'queued' })).toEqual({ cron: '0 2 * * 1-5', engine: 'queued' })
  })

  test("{ cron, engine: 'spawn' } is rejected with guidance naming schedule.engine", () => {
    const error = thrown(() => parseSchedule({ cron: '*/5 * * * *', engine: 'spawn' }))
    expect(error).toMatchObject({ code: 'INVALID_CONFIG', target: 'schedule.engine' })
    expect(error.message).toMatch(/cron needs engine 'queued'/)
  })

  test('cron and every together are rejected', () => {
    expect(thrown(() => parseSchedule({ cron: '*/5 * * * *', every: '5m' })).target).toBe('schedule.every')
  })

  test.each([
    ['*/5 * * *', /4 fields; expected 5/],
    ['0 */5 * * * *', /6 fields; expected 5/],
    ['61 * * * *', /minute field '61' is out of range 0-59/],
    ['* 24 * * *', /hour field '24' is out of range/],
    ['* * 0 * *', /day of month field '0' is out of range 1-31/],
    ['* * * 13 *', /month field '13' is out of range 1-12/],
    ['* * * * 8', /day of week field '8' is out of range 0-7/],
    ['*/0 * * * *', /step below 1/],
    ['5-1 * * * *', /runs backwards/],
    ['* * * JAN *', /month field 'JAN' is invalid/],
    ['@daily * * * *', /minute field '@daily' is invalid/],
  ])('invalid cron %j is rejected naming schedule.cron', (cron, message) => {
    const error = thrown(() => parseSchedule({ cron }))
    expect(error).toMatchObject({ code: 'INVALID_CONFIG', target: 'schedule.cron' })
    expect(error.message).toMatch(message)
    // a plain cron string names `schedule`
    if (cron.split(' ').length === 5) expect(thrown(() => parseSchedule(cron)).target).toBe('schedule')
  })

  test('parseCron accepts lists, ranges, steps and 7 as Sunday', () => {
    expect(parseCron('0,30 8-18/2 1-15 */3 0,7', 'cron')).toBe('0,30 8-18/2 1-15 */3 0,7')
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
    [{ every: 600_000, engine: 'queued' as const }, 'every 10 min (queued)'],
    [{ cron: '*/5 * * * *', engine: 'queued' as const }, 'cron */5 * * * * (queued)'],
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
    expect(scheduleLabel(parseSchedule({ every: '10m', engine: 'queued' }))).toBe('every 10 min (queued)')
    expect(scheduleLabel(parseSchedule('*/5 * * * *'))).toBe('cron */5 * * * * (queued)')
  })
})

describe('nextCronTime (local time, CAP semantics)', () => {
  const at = (text: string) => new Date(text) // no Z: local time, as CAP's queue evaluates cron

  test.each([
    ['*/5 * * * *', '2026-03-10T10:07:30', '2026-03-10T10:10:00'],
    ['*/5 * * * *', '2026-03-10T10:10:00', '2026-03-10T10:15:00'],
    ['0 2 * * *', '2026-03-10T10:07:00', '2026-03-11T02:00:00'],
    ['30 8 1 * *', '2026-03-10T10:07:00', '2026-04-01T08:30:00'],
    ['0 0 * * 0', '2026-03-10T10:07:00', '2026-03-15T00:00:00'], // next Sunday
    ['0 0 * * 7', '2026-03-10T10:07:00', '2026-03-15T00:00:00'],
    ['0 12 * 2 *', '2026-03-10T10:07:00', '2027-02-01T12:00:00'],
  ])('%s after %s → %s', (cron, from, next) => {
    expect(nextCronTime(cron, at(from)).getTime()).toBe(at(next).getTime())
  })

  test('an expression that never fires is rejected', () => {
    expect(thrown(() => nextCronTime('0 0 31 2 *', at('2026-03-10T10:07:00'))).target).toBe('schedule.cron')
  })
})

describe('live changes (SPEC "Versioning")', () => {
  test('spawn schedules change live on every cds version', () => {
    for (const version of ['9.9.3', '10.1.1', '']) expect(scheduleLiveChangeSupported({ every: 1000, engine: 'spawn' }, version)).toBe(true)
    expect(scheduleLiveChangeSupported(undefined, '9.9.3')).toBe(true)
  })

  test('queued schedules change live on cds ≥ 10 only (injected version)', () => {
    const queued = { every: 1000, engine: 'queued' as const }
    expect(scheduleLiveChangeSupported(queued, '9.9.3')).toBe(false)
    expect(scheduleLiveChangeSupported({ cron: '*/5 * * * *', engine: 'queued' }, '9.0.0')).toBe(false)
    expect(scheduleLiveChangeSupported(queued, '10.0.0')).toBe(true)
    expect(scheduleLiveChangeSupported(queued, '11.2.0')).toBe(true)
    expect(scheduleLiveChangeSupported(queued, 'unknown')).toBe(false)
  })

  test('majorVersion', () => {
    expect(majorVersion('10.1.1')).toBe(10)
    expect(majorVersion('v9.9.0')).toBe(9)
    expect(majorVersion(undefined)).toBeNaN()
  })
})

describe('queued task names', () => {
  test('one task per pipeline, with room for a tenant', () => {
    expect(queuedTaskName('orders')).toBe('data-pipeline/orders')
    expect(queuedTaskName('orders', 't1')).toBe('data-pipeline/t1/orders')
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

describe('schedule bounds (issue 20: 1 ms and 2^31 ms were accepted; Node fires a longer timer after 1 ms)', () => {
  const settings = () => (cds.env.requires as Record<string, { schedules?: unknown } | undefined>)['data-pipeline']!
  let saved: unknown
  beforeEach(() => { saved = settings().schedules })
  afterEach(() => { settings().schedules = saved })

  test.each([
    [1, 'schedule'], [999, 'schedule'], ['500ms', 'schedule'], ['0.5s', 'schedule'],
    [{ every: 1 }, 'schedule.every'], [{ every: '999ms', engine: 'queued' }, 'schedule.every'],
  ] as const)('below the default minimum of 1 s: %j → 400 naming %s', (input, key) => {
    const error = thrown(() => parseSchedule(input as never))
    expect(error).toMatchObject({ code: 'INVALID_CONFIG', status: 400, target: key })
    expect(error.message).toMatch(/below the minimum schedule interval of 1000 ms \(cds\.requires\['data-pipeline'\]\.schedules\.minInterval\)/)
  })

  test.each([
    [99_999_999_999, 'schedule'], [2 ** 31, 'schedule'], ['25d', 'schedule'], [{ every: '30d', engine: 'queued' }, 'schedule.every'],
  ] as const)('above the longest timer (2^31-1 ms): %j → 400 naming %s', (input, key) => {
    const error = thrown(() => parseSchedule(input as never))
    expect(error).toMatchObject({ code: 'INVALID_CONFIG', target: key })
    expect(error.message).toMatch(/exceeds the longest schedule interval, 2147483647 ms/)
  })

  test('the bounds themselves, duration strings and cron are accepted', () => {
    expect(parseSchedule(1000).every).toBe(1000)
    expect(parseSchedule('1s').every).toBe(1000)
    expect(parseSchedule(2 ** 31 - 1).every).toBe(2 ** 31 - 1)
    expect(parseSchedule({ every: '24d', engine: 'queued' }).every).toBe(24 * 86_400_000)
    expect(parseSchedule('* * * * *').cron).toBe('* * * * *')
  })

  test('schedules.minInterval configures the minimum (ms or a duration); a cron firing more often is refused; an invalid setting keeps the default', () => {
    settings().schedules = { minInterval: 100 }
    expect(parseSchedule(100).every).toBe(100)
    expect(thrown(() => parseSchedule(99)).message).toMatch(/minimum schedule interval of 100 ms/)
    settings().schedules = { minInterval: '5m' }
    expect(thrown(() => parseSchedule('2m')).target).toBe('schedule')
    expect(parseSchedule('5m').every).toBe(300_000)
    expect(thrown(() => parseSchedule('*/2 * * * *')).message).toMatch(/'\*\/2 \* \* \* \*' fires 120 s apart, below the minimum schedule interval of 300000 ms/)
    expect(thrown(() => parseSchedule({ cron: '0,1 3 * * *' })).target).toBe('schedule.cron')
    expect(parseSchedule('*/5 * * * *').cron).toBe('*/5 * * * *')
    settings().schedules = { minInterval: 'often' }
    expect(thrown(() => parseSchedule(999)).message).toMatch(/minimum schedule interval of 1000 ms/)
  })

  test('cronShortestGap: within a day and across midnight', () => {
    expect(cronShortestGap('* * * * *')).toBe(60_000)
    expect(cronShortestGap('*/15 * * * *')).toBe(15 * 60_000)
    expect(cronShortestGap('0 2 * * *')).toBe(86_400_000)
    expect(cronShortestGap('0 0,12 * * *')).toBe(12 * 3_600_000)
    expect(cronShortestGap('59 23 * * *')).toBe(86_400_000)
    expect(cronShortestGap('0,59 0,23 * * *')).toBe(60_000)
    expect(cronShortestGap('50 0,1 * * *')).toBe(60 * 60_000)
  })

  test('a cron whose label would not fit the tracker column (String(255)) is refused', () => {
    const list = Array.from({ length: 60 }, (_, i) => i).join(',')
    expect(thrown(() => parseSchedule(`${list} ${Array.from({ length: 24 }, (_, i) => i).join(',')} 1,2,3,4,5,6,7,8,9,10 * *`)).message).toMatch(/at most 255/)
  })
})
