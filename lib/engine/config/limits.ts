/**
 * Input limits (README "Security"): the rules every entry shares — `@federation.replicate`
 * annotations, `addPipeline`, overrides, `setSchedule` — because they all end in
 * `resolvePipeline` and the registry's checks, which call these.
 *
 * - schedule intervals between a minimum (`cds.requires['data-pipeline'].schedules.minInterval`,
 *   default 1 s) and the longest timer Node.js arms (2^31-1 ms; a longer `setTimeout` fires
 *   after 1 ms, and CAP's task queue arms its processing timer the same way);
 * - strings the tracker stores no longer than their column;
 * - field names plain names (never URL or query fragments);
 * - the stored overrides bounded as a whole.
 */
import cds from '@sap/cds'
import { LOGGER, SERVICE_NAME } from '../../constants.js'
import { invalidConfig } from '../../pipeline/errors.js'
import { parseDuration } from './duration.js'

const LOG = cds.log(LOGGER.engine)

/** The longest delay `setTimeout` honours; longer ones fire after 1 ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1
/** The most key ranges one run reads at once (`parallel`): beyond it a provider gains nothing and a run holds too many pages. */
export const MAX_PARALLEL = 32
/** Default of `schedules.minInterval`. */
export const DEFAULT_MIN_INTERVAL = 1000
/** Where the minimum is configured, as messages name it. */
const MIN_INTERVAL_SETTING = `cds.requires['${SERVICE_NAME}'].schedules.minInterval`

/** Lengths of the tracker's columns written from input (db/index.cds); `origin` also fills the `sourced` key column, String(100). */
export const STORED_LENGTHS = { name: 255, description: 1000, origin: 100, schedule: 255 } as const
/** Characters of the overrides of one pipeline as stored (JSON). */
export const MAX_OVERRIDES_LENGTH = 16_384
/** A field name: letters, digits, `_` (and `-`, which REST payloads use); never `&`, `=`, `$`, quotes, blanks or slashes. */
export const FIELD_NAME = /^[A-Za-z_][A-Za-z0-9_-]{0,127}$/

let warned = false

/** The smallest schedule interval (ms) this app allows. */
export function minInterval(): number {
  const schedules = (cds.env.requires as Record<string, { schedules?: unknown } | undefined>)[SERVICE_NAME]?.schedules
  const value = schedules !== null && typeof schedules === 'object' ? (schedules as { minInterval?: unknown }).minInterval : undefined
  if (value === undefined || value === null) return DEFAULT_MIN_INTERVAL
  try {
    if (typeof value !== 'number' && typeof value !== 'string') throw new TypeError('must be milliseconds or a duration')
    const ms = parseDuration(value, MIN_INTERVAL_SETTING)
    if (ms > MAX_TIMER_MS) throw new RangeError(`exceeds ${MAX_TIMER_MS} ms`)
    return ms
  } catch (error) {
    if (!warned) LOG.warn(`${MIN_INTERVAL_SETTING} '${String(value)}' is invalid (${(error as Error).message}): the default ${DEFAULT_MIN_INTERVAL} ms applies`)
    warned = true
    return DEFAULT_MIN_INTERVAL
  }
}

/** Checks a schedule interval (ms) against both bounds; errors name the key. */
export function checkInterval(ms: number, key: string): number {
  const min = minInterval()
  if (ms < min) throw invalidConfig(key, `${ms} ms is below the minimum schedule interval of ${min} ms (${MIN_INTERVAL_SETTING})`)
  if (ms > MAX_TIMER_MS) throw invalidConfig(key, `${ms} ms exceeds the longest schedule interval, ${MAX_TIMER_MS} ms (about 24.8 days, the longest timer Node.js arms); use a cron schedule for rarer runs`)
  return ms
}

/** A cron whose shortest gap between two fire times (ms) is below the minimum is refused. */
export function checkCronGap(gap: number, cron: string, key: string): void {
  const min = minInterval()
  if (gap < min) throw invalidConfig(key, `'${cron}' fires ${gap / 1000} s apart, below the minimum schedule interval of ${min} ms (${MIN_INTERVAL_SETTING})`)
}

/** A string stored in a tracker column of `length` characters. */
export function checkLength(value: unknown, key: string, length: number): void {
  if (typeof value !== 'string') return
  // characters as the database counts them: code points (a surrogate pair is one)
  const characters = value.length - (value.match(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g)?.length ?? 0)
  if (characters > length) throw invalidConfig(key, `is ${characters} characters long; at most ${length} are stored`)
}

/** A config value naming a field of the source. */
export function checkFieldName(value: unknown, key: string): void {
  if (value === undefined) return
  if (typeof value !== 'string' || !FIELD_NAME.test(value))
    throw invalidConfig(key, `${typeof value === 'string' ? `'${value.length > 60 ? `${value.slice(0, 57)}…` : value}'` : String(value)} is not a field name (letters, digits and _, at most 128 characters)`)
}

/** The overrides of one pipeline, as they are stored. */
export function checkOverridesSize(json: string): void {
  if (json.length > MAX_OVERRIDES_LENGTH) throw invalidConfig('overrides', `are ${json.length} characters as JSON; at most ${MAX_OVERRIDES_LENGTH} are stored`)
}
