/**
 * onError settings and the check of mapped records against the target's CDS types
 * (lib/engine/records/index.ts): what each type accepts and the message naming the element.
 */
import { RecordValidator, decimalDigits, resolveOnError } from '../../lib/engine/records/index'
import type { CsnEntity } from '../../lib/model/csn'

describe('resolveOnError', () => {
  test('shapes', () => {
    expect(resolveOnError(undefined)).toEqual({ mode: 'fail' })
    expect(resolveOnError('skip')).toEqual({ mode: 'skip' })
    expect(resolveOnError({ mode: 'skip', maxSkipped: 100 })).toEqual({ mode: 'skip', maxCount: 100, label: '100' })
    expect(resolveOnError({ maxSkipped: 0 })).toEqual({ mode: 'skip', maxCount: 0, label: '0' })
    expect(resolveOnError({ mode: 'skip', maxSkipped: 0.05 })).toEqual({ mode: 'skip', maxShare: 0.05, label: '0.05' })
    expect(resolveOnError({ mode: 'skip', maxSkipped: ' 5% ' })).toEqual({ mode: 'skip', maxShare: 0.05, label: '5%' })
  })

  test.each([
    ['ignore', 'onError'], [5, 'onError'], [{ mode: 'x' }, 'onError.mode'], [{ maxSkipped: 1.5 }, 'onError.maxSkipped'],
    [{ maxSkipped: '100%' }, 'onError.maxSkipped'], [{ maxSkipped: 'many' }, 'onError.maxSkipped'], [{ mode: 'fail', maxSkipped: 1 }, 'onError.maxSkipped'],
    [{ skip: true }, 'onError.skip'],
  ])('%j is rejected naming %s', (value, key) => {
    expect(() => resolveOnError(value)).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG', target: key }))
  })
})

describe('RecordValidator', () => {
  const entity = {
    name: 'T',
    elements: {
      ID: { type: 'cds.Integer', key: true },
      code: { type: 'cds.String', length: 3 },
      note: { type: 'cds.LargeString' },
      big: { type: 'cds.Int64' },
      tiny: { type: 'cds.UInt8' },
      amount: { type: 'cds.Decimal', precision: 5, scale: 2 },
      ratio: { type: 'cds.Double' },
      flag: { type: 'cds.Boolean' },
      day: { type: 'cds.Date' },
      time: { type: 'cds.Time' },
      at: { type: 'cds.Timestamp' },
      uuid: { type: 'cds.UUID' },
      required: { type: 'cds.String', length: 10, notNull: true },
      defaulted: { type: 'cds.String', length: 10, notNull: true, default: { val: 'x' } },
      status: { type: 'cds.String', length: 10, enum: { open: {}, closed: { val: 'C' } } },
      level: { type: 'cds.Integer', enum: { low: { val: 1 }, high: { val: 2 } } },
      parent: { type: 'cds.Association', target: 'P', isAssociation: true },
    },
  } as unknown as CsnEntity
  const validator = new RecordValidator(entity)
  const check = (record: Record<string, unknown>) => validator.check({ ID: 1, required: 'r', ...record })?.message

  test('fitting values pass', () => {
    expect(check({
      code: 'abc', note: 'x'.repeat(10_000), big: '9223372036854775807', tiny: 255, amount: '999.99', ratio: '1e-3', flag: false,
      day: '2024-02-29', time: '23:59:59', at: '2026-01-01T00:00:00.000Z', uuid: '0f8fad5b-d9cb-469f-a165-70867728950e', defaulted: null, parent: { x: 1 },
    })).toBeUndefined()
    expect(check({ code: '😀😀😀' })).toBeUndefined() // three characters (code points), as the database counts them
    expect(check({ amount: -999.99, flag: 1, at: new Date() })).toBeUndefined()
    expect(check({ amount: '-0.050', status: 'open', level: '2' })).toBeUndefined() // trailing zeros are no decimal places; enum values as text
    expect(check({ amount: 12.5, status: 'C', level: 1 })).toBeUndefined()
  })

  test.each([
    [{ ID: undefined }, "key element 'ID' is missing"],
    [{ required: null }, "'required' is null but declared not null"],
    [{ code: 'abcd' }, "'code': 4 characters exceed String(3)"],
    [{ code: { a: 1 } }, `'code': {"a":1} is not a string`],
    [{ ID: 1.5 }, "'ID': 1.5 is not an integer (Integer)"],
    [{ ID: 2 ** 31 }, "'ID': 2147483648 is out of range for Integer"],
    [{ big: '9223372036854775808' }, "'big': '9223372036854775808' is out of range for Int64"],
    [{ tiny: -1 }, "'tiny': -1 is out of range for UInt8"],
    [{ amount: '1000' }, "'amount': '1000' exceeds Decimal(5, 2) (3 integer digits)"],
    [{ amount: 'abc' }, "'amount': 'abc' is not a decimal number"],
    [{ amount: -999.994 }, "'amount': -999.994 has 3 decimal places, Decimal(5, 2) allows 2"],
    [{ amount: 1e21 }, "'amount': 1e+21 exceeds Decimal(5, 2) (3 integer digits)"],
    [{ status: 'closed' }, "'status': 'closed' is not one of the enum values 'open', 'C'"],
    [{ level: 3 }, "'level': 3 is not one of the enum values '1', '2'"],
    [{ ratio: Number.NaN }, "'ratio': NaN is not a number"],
    [{ flag: 'yes' }, "'flag': 'yes' is not a Boolean"],
    [{ day: '2023-02-29' }, "'day': '2023-02-29' is not a Date (YYYY-MM-DD)"],
    [{ time: '24:00:00' }, "'time': '24:00:00' is not a Time (hh:mm:ss)"],
    [{ at: 'yesterday' }, "'at': 'yesterday' is not a Timestamp (ISO 8601)"],
    [{ uuid: 'x'.repeat(37) }, `'uuid': '${'x'.repeat(37)}' is not a UUID`],
  ])('%j → %s', (record, message) => {
    expect(check(record)).toBe(message)
  })
})

describe('decimalDigits', () => {
  test.each([
    ['0', 0, 0], ['123.45', 3, 2], ['-0.050', 0, 2], ['007.100', 1, 1], ['1e21', 22, 0], ['1.5e-7', 0, 8], ['12.34e1', 3, 1], ['.5', 0, 1],
  ])('%s → %i integer, %i decimal places', (text, integer, fraction) => {
    expect(decimalDigits(text)).toEqual({ integer, fraction })
  })
})

describe("RecordValidator.assertValid (onError 'fail')", () => {
  test('throws at the first misfit, naming the key and the element', () => {
    const validator = new RecordValidator({ name: 'my.T', elements: { ID: { type: 'cds.Integer', key: true }, code: { type: 'cds.String', length: 3 } } } as unknown as CsnEntity)
    expect(() => validator.assertValid([{ ID: 1, code: 'abc' }], 'p')).not.toThrow()
    expect(() => validator.assertValid([{ ID: 1, code: 'abc' }, { ID: 2, code: 'abcd' }], 'p')).toThrow(expect.objectContaining({
      code: 'TARGET_FAILED', target: 'code', message: expect.stringContaining(`Pipeline 'p': record {"ID":2} does not fit target 'my.T': 'code': 4 characters exceed String(3)`),
    }))
  })
})
