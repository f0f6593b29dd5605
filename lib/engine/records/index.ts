/**
 * lib/engine/records — records that do not fit: this module checks mapped records against the
 * target's CDS types with the checks of type-checks.ts (which also check event keys against the
 * source's key types); rejects.ts sets failing records aside (`onError: 'skip'`); replay.ts writes
 * them again as a run.
 *
 * Poison records, part 1: the `onError` setting and the check of mapped records against the
 * target entity's CDS types before they are written (README "Rejected records").
 *
 * The check is what every supported database would enforce anyway, made uniform: SQLite
 * stores a 9-character title in a `String(5)` column, PostgreSQL rejects it, HANA truncates
 * nothing either. Checked before writing, under both modes, such a record is set aside
 * (`skip`) or stops the run naming its key and field (`fail`) with the same message on every
 * database, instead of failing (or silently passing) the write.
 */
import { PipelineError, invalidConfig } from '../../pipeline/errors.js'
import { keyNames, type CsnEntity } from '../../model/csn.js'
import type { ResolvedOnError } from '../../pipeline/types.js'
import { compile, typeFacts, type Check } from './type-checks.js'

export { comparisonProblem, decimalDigits, keyProblem, validDate, validTimestamp } from './type-checks.js'

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

interface ElementCheck {
  name: string
  key: boolean
  /** Null is refused: declared not null without a default. */
  refusesNull: boolean
  uuid: boolean
  check: Check
}

/**
 * Checks mapped records against an entity's elements: keys present, not-null elements without
 * default not null, values of the element's CDS type (integer ranges, Decimal(p,s) integer and
 * fractional digits, String(n) length in characters, enum values, dates and times, UUID length,
 * booleans). Fields the entity does not have, associations and structured elements are left to
 * the database. The one check of both `onError` modes: `skip` sets a failing record aside,
 * `fail` stops the run with {@link RecordValidator.assertValid}.
 */
export class RecordValidator {
  private readonly checks: ElementCheck[]
  private readonly keys: string[]
  private readonly entity: string

  constructor(entity: CsnEntity) {
    this.entity = entity.name
    this.checks = Object.entries(entity.elements)
      .filter(([, element]) => !element.virtual && !element.isAssociation && !element.target && !element.elements && element.value === undefined)
      .map(([name, element]) => {
        const facts = typeFacts(element)
        return {
          name, key: Boolean(element.key), uuid: facts.type === 'cds.UUID', check: compile(facts),
          refusesNull: Boolean(element.notNull) && (element as { default?: unknown }).default === undefined,
        }
      })
    this.keys = keyNames(entity)
  }

  /** The first problem of a record, or undefined when it fits. */
  check(record: Record<string, unknown>): RecordProblem | undefined {
    for (const { name, key, refusesNull, uuid, check } of this.checks) {
      const value = record[name]
      if (value === undefined || value === null) {
        if (key && !uuid) return { element: name, message: `key element '${name}' is missing` }
        if (value === null && refusesNull) return { element: name, message: `'${name}' is null but declared not null` }
        continue
      }
      const problem = check(value)
      if (problem) return { element: name, message: `'${name}': ${problem}` }
    }
    return undefined
  }

  /**
   * `onError: 'fail'`: throws at the first record that does not fit, naming the record's key and
   * the element, before anything of the batch is written (the run's transaction then rolls back).
   */
  assertValid(records: Array<Record<string, unknown>>, pipeline: string): void {
    for (const record of records) {
      const problem = this.check(record)
      if (!problem) continue
      const key = this.keys.length ? JSON.stringify(Object.fromEntries(this.keys.map(k => [k, plainKey(record[k])]))) : '(no key)'
      throw new PipelineError('TARGET_FAILED',
        `Pipeline '${pipeline}': record ${key} does not fit target '${this.entity}': ${problem.message} (onError 'fail': the run stops; use onError 'skip' to set such records aside)`,
        { target: problem.element })
    }
  }
}

const validators = new WeakMap<CsnEntity, RecordValidator>()

/** The validator of an entity, compiled once per entity definition (a tenant's extended model has its own). */
export function validatorOf(entity: CsnEntity): RecordValidator {
  let validator = validators.get(entity)
  if (!validator) validators.set(entity, validator = new RecordValidator(entity))
  return validator
}

function plainKey(value: unknown): unknown {
  return typeof value === 'bigint' ? String(value) : value ?? null
}

