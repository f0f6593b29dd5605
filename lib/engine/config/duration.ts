/** Durations as users write them: milliseconds, or `250ms`, `30s`, `10m`, `2h`, `1d`. */
import { invalidConfig } from '../../pipeline/errors.js'

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, min: 60_000, h: 3_600_000, d: 86_400_000 }

/** A duration as text (served to the console as the rule of duration settings). */
export const DURATION_PATTERN = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|min|m|h|d)?\s*$/

/** Parses `250ms`, `30s`, `10m`, `2h`, `1d` (and plain digit strings as ms). */
export function parseDuration(input: string | number, key: string): number {
  if (typeof input === 'number') {
    if (!Number.isInteger(input) || input < 1) throw invalidConfig(key, `must be a positive integer of milliseconds, got ${input}`)
    return input
  }
  const match = DURATION_PATTERN.exec(String(input))
  if (!match) throw invalidConfig(key, `'${input}' is not a duration; use milliseconds or a string such as 30s, 10m, 2h`)
  const ms = Math.round(Number(match[1]) * UNIT_MS[match[2] ?? 'ms'])
  if (ms < 1) throw invalidConfig(key, `'${input}' must be at least 1 ms`)
  return ms
}
