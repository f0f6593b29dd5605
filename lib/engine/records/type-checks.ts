/**
 * What a value of a CDS type may be, as every supported database would enforce it: integer ranges,
 * Decimal(p,s) digits, String(n) length in characters, enum values, dates and times, UUIDs,
 * booleans — compiled once per element into a check (index.ts runs them over records, the event
 * subscription over keys).
 */
import cds from '@sap/cds'
import { currentModel, type CsnElement } from '../../model/csn.js'

export interface TypeFacts {
  type?: string
  length?: number
  precision?: number
  scale?: number
  enum?: Record<string, { val?: unknown } | undefined>
}

/** Why a value does not fit, or undefined; compiled once per element (no work for what the type does not restrict). */
export type Check = (value: unknown) => string | undefined

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

/** Type, length, precision, scale and enum of an element, following derived types. */
export function typeFacts(element: CsnElement): TypeFacts {
  const facts: TypeFacts = {}
  const definitions = currentModel()?.definitions as Record<string, TypeFacts | undefined> | undefined
  let current: TypeFacts | undefined = element as TypeFacts
  for (let depth = 0; current && depth < 10; depth++) {
    facts.length ??= current.length
    facts.precision ??= current.precision
    facts.scale ??= current.scale
    facts.enum ??= current.enum
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
  const cdsc: { defaultStringLength?: number } | undefined = cds.env.cdsc
  return cdsc?.defaultStringLength ?? 5000
}

export function describe(value: unknown): string {
  const text = typeof value === 'string' ? `'${value}'` : typeof value === 'object' ? JSON.stringify(value) : String(value)
  return text.length > 60 ? `${text.slice(0, 57)}…` : text
}

/** The check of a type: the type's own, then its enum values. */
export function compile(facts: TypeFacts): Check {
  const base = compileType(facts)
  if (!facts.enum) return base
  // `enum { open; closed }` stores the names, `enum { low = 1 }` the values; compared as text ('1' is 1)
  const allowed = new Set(Object.entries(facts.enum).map(([name, entry]) => String(entry?.val ?? name)))
  const list = [...allowed].map(v => `'${v}'`).join(', ')
  return value => base(value) ?? (allowed.has(String(value)) ? undefined : `${describe(value)} is not one of the enum values ${list}`)
}

function compileType({ type, length, precision, scale }: TypeFacts): Check {
  switch (type) {
    case 'cds.String':
    case 'cds.LargeString':
      return value => {
        if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') return `${describe(value)} is not a string`
        if (type !== 'cds.String' || length === undefined) return undefined
        const text = typeof value === 'string' ? value : String(value)
        if (text.length <= length) return undefined // UTF-16 units never undercount code points
        const characters = codePoints(text)
        return characters > length ? `${characters} characters exceed String(${length})` : undefined
      }
    case 'cds.UUID':
      return value => typeof value === 'string' && value.length <= 36 ? undefined : `${describe(value)} is not a UUID`
    case 'cds.Boolean':
      return value => typeof value === 'boolean' || value === 0 || value === 1 || value === 'true' || value === 'false' ? undefined : `${describe(value)} is not a Boolean`
    case 'cds.Double':
      return value => (typeof value === 'number' && Number.isFinite(value)) || (typeof value === 'string' && NUMBER_TEXT.test(value)) ? undefined : `${describe(value)} is not a number`
    case 'cds.Decimal':
    case 'cds.DecimalFloat':
      return decimalCheck(precision, scale)
    case 'cds.Date':
      return value => validDate(value) ? undefined : `${describe(value)} is not a Date (YYYY-MM-DD)`
    case 'cds.Time':
      return value => {
        const match = typeof value === 'string' ? TIME_TEXT.exec(value) : null
        return match && Number(match[1]) <= 23 && Number(match[2]) <= 59 && Number(match[3] ?? 0) <= 59 ? undefined : `${describe(value)} is not a Time (hh:mm:ss)`
      }
    case 'cds.DateTime':
    case 'cds.Timestamp':
      return value => validTimestamp(value) ? undefined : `${describe(value)} is not a ${type.slice(4)} (ISO 8601)`
    default: {
      const range = type ? INTEGER_RANGE[type] : undefined
      if (!range || !type) return () => undefined
      const name = type.slice(4)
      const [low, high] = [Number(range[0]), Number(range[1])]
      return value => {
        // the common case without BigInt: a safe integer well inside the range
        if (typeof value === 'number' && Number.isSafeInteger(value) && value >= low && value <= high) return undefined
        const integer = typeof value === 'number' && Number.isInteger(value) ? BigInt(value)
          : typeof value === 'string' && INTEGER_TEXT.test(value) ? BigInt(value)
            : typeof value === 'bigint' ? value : undefined
        if (integer === undefined) return `${describe(value)} is not an integer (${name})`
        return integer < range[0] || integer > range[1] ? `${describe(value)} is out of range for ${name}` : undefined
      }
    }
  }
}

/**
 * Decimal(p, s): at most p − s integer digits and s decimal places. PostgreSQL and HANA round
 * surplus decimal places while SQLite keeps them; refusing them makes every database store the same.
 */
function decimalCheck(precision: number | undefined, scale: number | undefined): Check {
  const places = scale ?? 0
  const integerDigits = precision === undefined ? undefined : precision - places
  const bound = integerDigits === undefined ? Infinity : 10 ** integerDigits
  // plain text with no more digits than allowed fits, whatever they are: no count of significant digits
  const plain = integerDigits !== undefined && integerDigits >= 1 ? new RegExp(`^[+-]?\\d{1,${integerDigits}}${places > 0 ? `(?:\\.\\d{1,${places}})?` : ''}$`) : undefined
  return value => {
    let text: string
    if (typeof value === 'number') {
      if (!Number.isFinite(value)) return `${describe(value)} is not a decimal number`
      if (precision === undefined) return undefined
      if (Number.isInteger(value) && Math.abs(value) < bound) return undefined
      text = String(value)
      if (plain?.test(text)) return undefined
    } else if (typeof value === 'string' && plain?.test(value)) return undefined
    else if (typeof value !== 'string' || !NUMBER_TEXT.test(value)) return `${describe(value)} is not a decimal number`
    else if (precision === undefined) return undefined
    else text = value
    const digits = decimalDigits(text)
    if (digits.integer > integerDigits!) return `${describe(value)} exceeds Decimal(${precision}, ${places}) (${integerDigits} integer digits)`
    if (digits.fraction > places) return `${describe(value)} has ${digits.fraction} decimal places, Decimal(${precision}, ${places}) allows ${places}`
    return undefined
  }
}

/** Significant integer and fractional digits of decimal text (`'-0.050'` → 0, 2; `'1e21'` → 22, 0). */
export function decimalDigits(text: string): { integer: number; fraction: number } {
  const match = /^[+-]?(\d*)\.?(\d*)(?:[eE]([+-]?\d+))?$/.exec(text)
  if (!match) return { integer: 0, fraction: 0 }
  let digits = match[1] + match[2]
  let point = match[1].length + Number(match[3] ?? 0)
  let start = 0
  while (start < digits.length && digits[start] === '0') start++
  point -= start
  let end = digits.length
  while (end > start && digits[end - 1] === '0') end--
  digits = digits.slice(start, end)
  if (!digits) return { integer: 0, fraction: 0 }
  return { integer: Math.max(0, point), fraction: Math.max(0, digits.length - point) }
}

/** Characters as PostgreSQL and HANA count them in a VARCHAR(n): code points (a surrogate pair is one). */
function codePoints(text: string): number {
  return text.length - (text.match(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g)?.length ?? 0)
}

/**
 * Dates and timestamps every check below accepts, told by their text alone (no Date built, no
 * Date.parse: the bulk of a page's checks): years 1000–9999, days 01–28 (every month has them),
 * hours 00–23, an optional fraction and zone. Anything else takes the full check.
 */
const PLAIN_DATE = /^[1-9]\d{3}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1\d|2[0-8])$/
const PLAIN_TIMESTAMP = /^[1-9]\d{3}-(?:0[1-9]|1[0-2])-(?:0[1-9]|1\d|2[0-8])T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d{1,9})?(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)?$/

/** A DateTime or Timestamp: a valid day, and text Date.parse reads (or a valid Date). */
export function validTimestamp(value: unknown): boolean {
  if (typeof value === 'string' && PLAIN_TIMESTAMP.test(value)) return true
  return validDate(value) && (value instanceof Date || !Number.isNaN(Date.parse(value as string)))
}

export function validDate(value: unknown): boolean {
  if (value instanceof Date) return !Number.isNaN(value.getTime())
  if (typeof value === 'string' && PLAIN_DATE.test(value)) return true
  const match = typeof value === 'string' ? DATE_TEXT.exec(value) : null
  if (!match) return false
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])]
  const date = new Date(Date.UTC(year, month - 1, day))
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day
}

const UUID_TEXT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i

/**
 * Why a value cannot be the key `element` of a row, or undefined: the type's checks with its sizes
 * (an integer within the type's range, String(n) length, a valid Date, …) and a UUID in its form.
 * Event replication refuses such a key when its message arrives (no source or target could hold it).
 */
export function keyProblem(element: CsnElement, value: unknown): string | undefined {
  const facts = typeFacts(element)
  if (facts.type === 'cds.UUID') return typeof value === 'string' && UUID_TEXT.test(value) ? undefined : `${describe(value)} is not a UUID`
  return compile(facts)(value)
}

/**
 * Why a value cannot be compared with an element (the data inspector's filters), or undefined.
 * The type's checks without sizes (a longer string merely matches nothing); a UUID in its form.
 */
export function comparisonProblem(element: CsnElement, value: unknown): string | undefined {
  const facts = typeFacts(element)
  if (facts.type === 'cds.UUID') return typeof value === 'string' && UUID_TEXT.test(value) ? undefined : `${describe(value)} is not a UUID`
  if (facts.type === 'cds.Boolean') return typeof value === 'boolean' || value === 'true' || value === 'false' ? undefined : `${describe(value)} is not a Boolean (true or false)`
  return compileType({ type: facts.type })(value)
}
