/**
 * Cron expressions: the 5-field subset CAP's task queue evaluates (numbers, *, ranges, lists,
 * steps) — validation, the shortest gap between two fire times, and the next fire time.
 */
import { invalidConfig } from '../../pipeline/errors.js'
import { cronParser } from '../../cap/index.js'

const CRON_FIELDS = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day of month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12 },
  { name: 'day of week', min: 0, max: 7 },
] as const

/** Validates a 5-field cron expression; returns it with normalised spacing. */
export function parseCron(input: unknown, key: string): string {
  if (typeof input !== 'string' || !input.trim()) throw invalidConfig(key, 'must be a 5-field cron string such as */5 * * * *')
  const fields = input.trim().split(/\s+/)
  if (fields.length !== 5)
    throw invalidConfig(key, `'${input}' has ${fields.length} fields; expected 5 (minute hour day-of-month month day-of-week), e.g. */5 * * * *`)
  fields.forEach((field, i) => cronValues(field, CRON_FIELDS[i], key, input))
  const text = fields.join(' ')
  // the queue itself must accept it too (cds ≥ 9.9 validates with cds.utils.cron)
  const accepts = cronParser()
  if (typeof accepts === 'function' && !accepts(text)) throw invalidConfig(key, `'${input}' is not a cron expression CAP's task queue accepts`)
  return text
}

function cronValues(field: string, spec: (typeof CRON_FIELDS)[number], key: string, input: string): Set<number> {
  const values = new Set<number>()
  const bad = (why: string) => invalidConfig(key, `'${input}': ${spec.name} field '${field}' ${why}`)
  for (const part of field.split(',')) {
    const match = /^(\*|\d+(?:-\d+)?)(?:\/(\d+))?$/.exec(part)
    if (!match) throw bad(`is invalid; use numbers, *, ranges a-b, lists a,b and steps /n (${spec.min}-${spec.max})`)
    const step = match[2] === undefined ? 1 : Number(match[2])
    if (step < 1) throw bad('has a step below 1')
    let lo: number, hi: number
    if (match[1] === '*') [lo, hi] = [spec.min, spec.max]
    else if (match[1].includes('-')) [lo, hi] = match[1].split('-').map(Number)
    else [lo, hi] = [Number(match[1]), match[2] === undefined ? Number(match[1]) : spec.max]
    if (lo < spec.min || hi > spec.max) throw bad(`is out of range ${spec.min}-${spec.max}`)
    if (lo > hi) throw bad(`has a range ${lo}-${hi} that runs backwards`)
    for (let v = lo; v <= hi; v += step) values.add(v)
  }
  return values
}

/**
 * The shortest time (ms) between two fire times of a cron, within a day or across midnight
 * (conservative: two days are taken to follow each other).
 */
export function cronShortestGap(cron: string): number {
  const fields = cron.trim().split(/\s+/)
  const minutes = [...cronValues(fields[0], CRON_FIELDS[0], 'cron', cron)].sort((a, b) => a - b)
  const hours = [...cronValues(fields[1], CRON_FIELDS[1], 'cron', cron)].sort((a, b) => a - b)
  const times = hours.flatMap(hour => minutes.map(minute => hour * 60 + minute))
  let gap = 1440 - times[times.length - 1] + times[0]
  for (let i = 1; i < times.length; i++) gap = Math.min(gap, times[i] - times[i - 1])
  return gap * 60_000
}

/**
 * The next time a cron expression fires after `from`, in the server's local time zone, with
 * CAP's semantics (day of month AND day of week must both match) so the engine arms its
 * flush for the moment CAP's queue stored as the task's timestamp.
 */
export function nextCronTime(cron: string, from: Date = new Date()): Date {
  const fields = cron.trim().split(/\s+/)
  const [minutes, hours, days, months, weekdays] = fields.map((f, i) => cronValues(f, CRON_FIELDS[i], 'cron', cron))
  const dow = new Set([...weekdays].map(d => (d === 7 ? 0 : d)))
  const next = new Date(from)
  next.setSeconds(0, 0)
  next.setMinutes(next.getMinutes() + 1)
  const limit = new Date(from)
  limit.setFullYear(limit.getFullYear() + 4)
  while (next <= limit) {
    if (!months.has(next.getMonth() + 1)) { next.setMonth(next.getMonth() + 1, 1); next.setHours(0, 0, 0, 0); continue }
    if (!days.has(next.getDate()) || !dow.has(next.getDay())) { next.setDate(next.getDate() + 1); next.setHours(0, 0, 0, 0); continue }
    if (!hours.has(next.getHours())) { next.setHours(next.getHours() + 1, 0, 0, 0); continue }
    if (!minutes.has(next.getMinutes())) { next.setMinutes(next.getMinutes() + 1, 0, 0); continue }
    return next
  }
  throw invalidConfig('schedule.cron', `'${cron}' never fires (no matching time within 4 years)`)
}
