/**
 * Poison records, part 1: the `onError` setting and the check of mapped records against the
 * target entity's CDS types before they are written (README "Rejected records").
 *
 * The check is what every supported database would enforce anyway, made uniform: SQLite
 * stores a 9-character title in a `String(5)` column, PostgreSQL rejects it, HANA truncates
 * nothing either. Checked before writing, such a record is set aside with a clear message on
 * every database instead of failing (or silently passing) the write.
 */
import cds from '@sap/cds'
import { invalidConfig } from '../pipeline/errors.js'
import { currentModel, type CsnElement, type CsnEntity } from '../model/csn.js'
import type { ResolvedOnError } from '../pipeline/types.js'

const PERCENT = /^\s*(\d+(?:\.\d+)?)\s*%\s*$/

/** Validates `onError`; errors name the key (`onError`, `onError.mode`, `onError.maxSkipped`). */
export function resolveOnError(value: unknown): ResolvedOnError {
  if (value === undefined || value === null || value === 'fail') return { mode: 'fail' }
  if (value === 'skip') return { mode: 'skip' }
  if (typeof value === 'string') throw invalidConfig('onError', `'${value}' is invalid; expected 'fail', 'skip' or { mode: 'skip', maxSkipped }`)
  if (typeof value !== 'object' || Array.isArray(value)) throw invalidConfig('onError', "must be 'fail', 'skip' or an object { mode, maxSkipped }")
  const { mode = 'skip', maxSkipped, ...rest } = value as { mode?: unknown; maxSkipped?: unknown }
  const unknown = Object.keys(rest)[0]
  if (unknown) throw invalidConfig(`onError.${unknown}`, 'is unknown; onError has mode and maxSkipped')
  if (mode !== 'fail' && mode !== 'skip') throw invalidConfig('onError.mode', `'${String(mode)}' is invalid; expected fail or skip`)
  if (maxSkipped === undefined || maxSkipped === null) return { mode }
  if (mode === 'fail') throw invalidConfig('onError.maxSkipped', "applies to mode 'skip' only")
  const limit = parseLimit(maxSkipped)
  if (!limit) throw invalidConfig('onError.maxSkipped', `'${String(maxSkipped)}' is invalid; expected a count (integer >= 0, e.g. 100) or a share of the records read (0 < share < 1, e.g. 0.05, or '5%')`)
  return { mode, ...limit, label: typeof maxSkipped === 'string' ? maxSkipped.trim() : String(maxSkipped) }
}

function parseLimit(value: unknown): Pick<ResolvedOnError, 'maxCount' | 'maxShare'> | undefined {
  if (typeof value === 'number') {
    if (Number.isInteger(value) && value >= 0) return { maxCount: value }
    if (value > 0 && value < 1) return { maxShare: value }
    return undefined
  }
  const percent = typeof value === 'string' ? PERCENT.exec(value) : null
  if (!percent) return undefined
  const share = Number(percent[1]) / 100
  return share > 0 && share < 1 ? { maxShare: share } : undefined
}

/** One problem of a record, naming the element. */
export interface RecordProblem {
  element: string
  message: string
}

interface TypeFacts {
  type?: string
  length?: number
  precision?: number
  scale?: number
}

const INTEGER_RANGE: Record<string, [bigint, bigint]> = {
  'cds.UInt8': [0n, 255n],
  'cds.Int16': [-(2n ** 15n), 2n ** 15n - 1n],
  'cds.Int32': [-(2n ** 31n), 2n ** 31n - 1n],
  'cds.Integer': [-(2n ** 31n), 2n ** 31n - 1n],
  'cds.Int64': [-(2n ** 63n), 2n ** 63n - 1n],
  'cds.Integer64': [-(2n ** 63n), 2n ** 63n - 1n],
}
/** An integer as text; decimal text ('12.00') is no integer: PostgreSQL rejects it for an integer column. */
const INTEGER_TEXT = /^[+-]?\d+$/
const NUMBER_TEXT = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/
const DATE_TEXT = /^(\d{4})-(\d{2})-(\d{2})(?:$|T)/
const TIME_TEXT = /^(\d{2}):(\d{2})(?::(\d{2})(?:\.\d+)?)?$/

/**
 * Checks mapped records against an entity's elements: keys present, not-null elements without
 * default not null, values of the element's CDS type (integer ranges, Decimal(p,s) integer
 * digits, String(n) length in characters, dates and times, UUID length, booleans). Fields the
 * entity does not have, associations and structured elements are left to the database.
 */
export class RecordValidator {
  private readonly checks: Array<{ name: string; element: CsnElement; facts: TypeFacts }>

  constructor(entity: CsnEntity) {
    this.checks = Object.entries(entity.elements)
      .filter(([, element]) => !element.virtual && !element.isAssociation && !element.target && !element.elements && element.value === undefined)
      .map(([name, element]) => ({ name, element, facts: typeFacts(element) }))
  }

  /** The first problem of a record, or undefined when it fits. */
  check(record: Record<string, unknown>): RecordProblem | undefined {
    for (const { name, element, facts } of this.checks) {
      const value = record[name]
      if (value === undefined || value === null) {
        if (element.key && facts.type !== 'cds.UUID') return { element: name, message: `key element '${name}' is missing` }
        if (value === null && element.notNull && (element as { default?: unknown }).default === undefined)
          return { element: name, message: `'${name}' is null but declared not null` }
        continue
      }
      const problem = checkValue(value, facts)
      if (problem) return { element: name, message: `'${name}': ${problem}` }
    }
    return undefined
  }
}

/** Type, length, precision and scale of an element, following derived types. */
function typeFacts(element: CsnElement): TypeFacts {
  const facts: TypeFacts = {}
  const definitions = currentModel()?.definitions as Record<string, TypeFacts | undefined> | undefined
  let current: TypeFacts | undefined = element as TypeFacts
  for (let depth = 0; current && depth < 10; depth++) {
    facts.length ??= current.length
    facts.precision ??= current.precision
    facts.scale ??= current.scale
    const type: string | undefined = current.type
    if (!type || type.startsWith('cds.')) {
      facts.type = type
      break
    }
    current = definitions?.[type]
  }
  if (facts.type === 'cds.String' && facts.length === undefined) facts.length = defaultStringLength()
  return facts
}

function defaultStringLength(): number {
  const cdsc = (cds.env as unknown as { cdsc?: { defaultStringLength?: number } }).cdsc
  return cdsc?.defaultStringLength ?? 5000
}

function describe(value: unknown): string {
  const text = typeof value === 'string' ? `'${value}'` : typeof value === 'object' ? JSON.stringify(value) : String(value)
  return text.length > 60 ? `${text.slice(0, 57)}…` : text
}

/** Why a value does not fit the type, or undefined. */
function checkValue(value: unknown, { type, length, precision, scale }: TypeFacts): string | undefined {
  switch (type) {
    case 'cds.String':
    case 'cds.LargeString': {
      if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') return `${describe(value)} is not a string`
      const characters = codePoints(String(value))
      if (type === 'cds.String' && length !== undefined && characters > length) return `${characters} characters exceed String(${length})`
      return undefined
    }
    case 'cds.UUID':
      return typeof value === 'string' && value.length <= 36 ? undefined : `${describe(value)} is not a UUID`
    case 'cds.Boolean':
      return typeof value === 'boolean' || value === 0 || value === 1 || value === 'true' || value === 'false' ? undefined : `${describe(value)} is not a Boolean`
    case 'cds.Double':
      return (typeof value === 'number' && Number.isFinite(value)) || (typeof value === 'string' && NUMBER_TEXT.test(value)) ? undefined : `${describe(value)} is not a number`
    case 'cds.Decimal':
    case 'cds.DecimalFloat': {
      const number = typeof value === 'number' ? value : typeof value === 'string' && NUMBER_TEXT.test(value) ? Number(value) : Number.NaN
      if (!Number.isFinite(number)) return `${describe(value)} is not a decimal number`
      if (precision === undefined) return undefined
      const digits = Math.abs(number) < 1 ? 0 : String(Math.trunc(Math.abs(number))).replace(/e.*$/, '').length
      const allowed = precision - (scale ?? 0)
      return digits > allowed ? `${describe(value)} exceeds Decimal(${precision}, ${scale ?? 0}) (${allowed} integer digits)` : undefined
    }
    case 'cds.Date':
      return validDate(value) ? undefined : `${describe(value)} is not a Date (YYYY-MM-DD)`
    case 'cds.Time': {
      const match = typeof value === 'string' ? TIME_TEXT.exec(value) : null
      return match && Number(match[1]) <= 23 && Number(match[2]) <= 59 && Number(match[3] ?? 0) <= 59 ? undefined : `${describe(value)} is not a Time (hh:mm:ss)`
    }
    case 'cds.DateTime':
    case 'cds.Timestamp':
      return validDate(value) && (value instanceof Date || !Number.isNaN(Date.parse(value as string))) ? undefined : `${describe(value)} is not a ${type.slice(4)} (ISO 8601)`
    default: {
      const range = type ? INTEGER_RANGE[type] : undefined
      if (!range || !type) return undefined
      const integer = typeof value === 'number' && Number.isInteger(value) ? BigInt(value)
        : typeof value === 'string' && INTEGER_TEXT.test(value) ? BigInt(value)
          : typeof value === 'bigint' ? value : undefined
      if (integer === undefined) return `${describe(value)} is not an integer (${type.slice(4)})`
      return integer < range[0] || integer > range[1] ? `${describe(value)} is out of range for ${type.slice(4)}` : undefined
    }
  }
}

/** Characters as PostgreSQL and HANA count them in a VARCHAR(n): code points (a surrogate pair is one). */
function codePoints(text: string): number {
  return text.length - (text.match(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g)?.length ?? 0)
}

function validDate(value: unknown): boolean {
  if (value instanceof Date) return !Number.isNaN(value.getTime())
  const match = typeof value === 'string' ? DATE_TEXT.exec(value) : null
  if (!match) return false
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])]
  const date = new Date(Date.UTC(year, month - 1, day))
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day
}

const UUID_TEXT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/**
 * Why a value cannot be compared with an element (the data inspector's filters), or undefined.
 * The type's checks without sizes (a longer string merely matches nothing); a UUID in its form.
 */
export function comparisonProblem(element: CsnElement, value: unknown): string | undefined {
  const facts = typeFacts(element)
  if (facts.type === 'cds.UUID') return typeof value === 'string' && UUID_TEXT.test(value) ? undefined : `${describe(value)} is not a UUID`
  if (facts.type === 'cds.Boolean') return typeof value === 'boolean' || value === 'true' || value === 'false' ? undefined : `${describe(value)} is not a Boolean (true or false)`
  return checkValue(value, { type: facts.type })
}
