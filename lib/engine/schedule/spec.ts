/**
 * The user's schedule input (ms, duration strings, cron, objects) as one spec, its
 * human-readable label, and whether a change of it can take effect live.
 */
import { DEFAULTS, QUEUE, SCHEDULE_ENGINES } from '../../constants.js'
import { invalidConfig } from '../../pipeline/errors.js'
import type { ScheduleInput, ScheduleSpec } from '../../pipeline/types.js'
import { parseDuration } from '../config/duration.js'
import { STORED_LENGTHS, checkCronGap, checkInterval, checkLength, minInterval } from '../config/limits.js'
import { cronShortestGap, parseCron } from './cron.js'

/** A string of whitespace-separated fields that looks like cron rather than a duration. */
function looksLikeCron(input: string): boolean {
  const fields = input.trim().split(/\s+/)
  return fields.length >= 5 || (fields.length > 1 && /[*/,]/.test(input))
}

/** Parses a schedule and checks it against the bounds every entry shares (lib/engine/config/limits.ts). */
export function parseSchedule(input: ScheduleInput, key = 'schedule'): ScheduleSpec {
  const spec = parseScheduleInput(input, key)
  if (spec.cron) {
    if (minInterval() > 60_000) checkCronGap(cronShortestGap(spec.cron), spec.cron, typeof input === 'object' ? `${key}.cron` : key)
    checkLength(scheduleLabel(spec), typeof input === 'object' ? `${key}.cron` : key, STORED_LENGTHS.schedule)
  } else checkInterval(spec.every!, typeof input === 'object' && input?.every !== undefined && input.every !== null ? `${key}.every` : key)
  return spec
}

function parseScheduleInput(input: ScheduleInput, key: string): ScheduleSpec {
  if (typeof input === 'string' && looksLikeCron(input)) return { engine: 'queued', cron: parseCron(input, key) }
  if (typeof input === 'number' || typeof input === 'string') return { every: parseDuration(input, key), engine: 'spawn' }
  if (typeof input !== 'object' || input === null || Array.isArray(input))
    throw invalidConfig(key, "must be milliseconds, a duration string, a 5-field cron string or { every, cron, engine }")
  const engine = input.engine ?? (input.cron !== undefined && input.cron !== null ? 'queued' : 'spawn')
  if (!(SCHEDULE_ENGINES as readonly string[]).includes(engine))
    throw invalidConfig(`${key}.engine`, `'${String(engine)}' is invalid; expected spawn or queued`)
  if (input.cron !== undefined && input.cron !== null) {
    if (engine !== 'queued')
      throw invalidConfig(`${key}.engine`, `'${engine}' cannot run cron schedules; cron needs engine 'queued' (CAP's persistent task queue): omit engine or set it to 'queued', or use { every } with 'spawn'`)
    if (input.every !== undefined && input.every !== null) throw invalidConfig(`${key}.every`, 'cannot be combined with cron; give either every or cron')
    return { engine, cron: parseCron(input.cron, `${key}.cron`) }
  }
  return { every: input.every === undefined || input.every === null ? DEFAULTS.scheduleEvery : parseDuration(input.every, `${key}.every`), engine }
}

/** `every 2 min (spawn)`, `every 10 min (queued)`, `every 1500 ms (spawn)`, `cron 0 2 * * * (queued)` (cron text as given). */
export function scheduleLabel(spec: ScheduleSpec | undefined): string | null {
  if (!spec) return null
  if (spec.cron) return `cron ${spec.cron} (${spec.engine})`
  const every = spec.every ?? DEFAULTS.scheduleEvery
  const units: Array<[number, string]> = [[86_400_000, 'd'], [3_600_000, 'h'], [60_000, 'min'], [1000, 's']]
  const unit = units.find(([size]) => every % size === 0)
  const text = unit ? `${every / unit[0]} ${unit[1]}` : `${every} ms`
  return `every ${text} (${spec.engine})`
}

export function sameSchedule(a: ScheduleSpec | undefined, b: ScheduleSpec | undefined): boolean {
  return (a?.engine ?? null) === (b?.engine ?? null) && (a?.every ?? null) === (b?.every ?? null) && (a?.cron ?? null) === (b?.cron ?? null)
}

/** The major version of a semver-like string (`10.1.1` → 10); NaN when unreadable. */
export function majorVersion(version: string | undefined): number {
  return Number(/^\s*v?(\d+)/.exec(version ?? '')?.[1] ?? Number.NaN)
}

/**
 * SPEC "Versioning": spawn schedules always change live; queued ones on `@sap/cds` ≥ 10 only
 * (on 9 a change is saved and takes effect at the next restart).
 */
export function scheduleLiveChangeSupported(spec: ScheduleSpec | undefined, hostVersion: string | undefined): boolean {
  if (!spec || spec.engine !== 'queued') return true
  return majorVersion(hostVersion) >= QUEUE.liveChangeMajor
}
