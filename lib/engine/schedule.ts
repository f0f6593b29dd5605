/**
 * Schedules: parsing of the user's input (ms, duration strings, objects) into one spec,
 * human-readable labels, and the in-process `spawn` timer.
 */
import { DEFAULTS, SCHEDULE_ENGINES, type ScheduleEngine } from '../constants.js'
import { invalidConfig } from './errors.js'

export type ScheduleInput = number | string | { every?: number | string; engine?: ScheduleEngine; cron?: string }

export interface ScheduleSpec {
  /** Interval in ms. */
  every: number
  engine: ScheduleEngine
  cron?: string
}

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, min: 60_000, h: 3_600_000, d: 86_400_000 }

/** Parses `250ms`, `30s`, `10m`, `2h`, `1d` (and plain digit strings as ms). */
export function parseDuration(input: string | number, key: string): number {
  if (typeof input === 'number') {
    if (!Number.isInteger(input) || input < 1) throw invalidConfig(key, `must be a positive integer of milliseconds, got ${input}`)
    return input
  }
  const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|min|m|h|d)?\s*$/.exec(String(input))
  if (!match) throw invalidConfig(key, `'${input}' is not a duration; use milliseconds or a string such as 30s, 10m, 2h`)
  const ms = Math.round(Number(match[1]) * UNIT_MS[match[2] ?? 'ms'])
  if (ms < 1) throw invalidConfig(key, `'${input}' must be at least 1 ms`)
  return ms
}

export function parseSchedule(input: ScheduleInput, key = 'schedule'): ScheduleSpec {
  if (typeof input === 'number' || typeof input === 'string') {
    if (typeof input === 'string' && input.trim().split(/\s+/).length === 5)
      throw invalidConfig(key, "cron expressions need the 'queued' engine, which is not available in this release; use { every } with the spawn engine")
    return { every: parseDuration(input, key), engine: 'spawn' }
  }
  if (typeof input !== 'object' || input === null) throw invalidConfig(key, 'must be milliseconds, a duration string or { every, engine }')
  const engine = input.engine ?? 'spawn'
  if (!(SCHEDULE_ENGINES as readonly string[]).includes(engine))
    throw invalidConfig(`${key}.engine`, `'${String(engine)}' is invalid; expected spawn or queued`)
  if (engine === 'queued') throw invalidConfig(`${key}.engine`, "'queued' is not available in this release; use 'spawn'")
  if (input.cron !== undefined) throw invalidConfig(`${key}.cron`, "cron needs the 'queued' engine, which is not available in this release")
  return { every: input.every === undefined ? DEFAULTS.scheduleEvery : parseDuration(input.every, `${key}.every`), engine }
}

/** `every 2 min (spawn)`, `every 30 s (spawn)`, `every 1500 ms (spawn)`. */
export function scheduleLabel(spec: ScheduleSpec | undefined): string | null {
  if (!spec) return null
  const { every, engine } = spec
  const units: Array<[number, string]> = [[86_400_000, 'd'], [3_600_000, 'h'], [60_000, 'min'], [1000, 's']]
  const unit = units.find(([size]) => every % size === 0)
  const text = unit ? `${every / unit[0]} ${unit[1]}` : `${every} ms`
  return `every ${text} (${engine})`
}

/** A repeating in-process timer that never overlaps itself and never keeps the process alive. */
export class SpawnTimer {
  private handle?: NodeJS.Timeout
  constructor(private readonly every: number, private readonly tick: () => Promise<unknown>) {}

  start(): this {
    this.stop()
    const loop = () => {
      this.handle = setTimeout(() => {
        this.tick().catch(() => undefined).finally(() => { if (this.handle) loop() })
      }, this.every)
      this.handle.unref()
    }
    loop()
    return this
  }

  stop(): void {
    if (this.handle) clearTimeout(this.handle)
    this.handle = undefined
  }
}
