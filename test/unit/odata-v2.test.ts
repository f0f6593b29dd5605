/**
 * OData V2 wire values → CDS values, and V2 literals per imported property type
 * (the integration test covers the same against a real V2 provider).
 */
import { durationToTime, fromV2Value, jsonDateToMillis, v2LiteralType } from '../../lib/adapters/source/odata-v2'
import { odataLiteral, toODataFilter } from '../../lib/adapters/predicate'

const el = (type: string, annotations: Record<string, unknown> = {}) => ({ type, ...annotations })

describe('OData V2 values', () => {
  test.each([
    ['/Date(1700000000000)/', 1_700_000_000_000],
    ['/Date(1700000000000+0000)/', 1_700_000_000_000],
    // ticks are the clock time at the offset: +01:00 → one hour earlier in UTC
    ['/Date(1700000000000+0060)/', 1_700_000_000_000 - 3_600_000],
    ['/Date(1700000000000-0120)/', 1_700_000_000_000 + 7_200_000],
    ['/Date(-86400000)/', -86_400_000],
    ['2026-01-01T00:00:00Z', undefined],
  ])('%s → %s ms', (text, ms) => {
    expect(jsonDateToMillis(text)).toBe(ms)
  })

  test.each([
    ['PT10H20M30S', '10:20:30'],
    ['PT9H5M', '09:05:00'],
    ['PT0H0M0S', '00:00:00'],
    ['PT23H59M59.999S', '23:59:59'],
    ['P0DT1H', '01:00:00'],
    ['10:20:30', undefined],
  ])('%s → %s', (text, time) => {
    expect(durationToTime(text)).toBe(time)
  })

  test.each([
    ['/Date(1767225600000)/', el('cds.Date'), '2026-01-01'],
    ['2026-01-01T00:00:00', el('cds.Date'), '2026-01-01'],
    ['/Date(1700000000000)/', el('cds.DateTime', { '@odata.Type': 'Edm.DateTime' }), '2023-11-14T22:13:20Z'],
    ['/Date(1700000000123+0060)/', el('cds.DateTime', { '@odata.Type': 'Edm.DateTimeOffset' }), '2023-11-14T21:13:20Z'],
    ['/Date(1700000000123+0000)/', el('cds.Timestamp', { '@odata.Type': 'Edm.DateTimeOffset' }), '2023-11-14T22:13:20.123Z'],
    ['/Date(1700000000123)/', undefined, '2023-11-14T22:13:20.123Z'],
    ['PT08H00M00S', el('cds.Time'), '08:00:00'],
    ['2026-01-01T00:00:00.000Z', el('cds.Timestamp'), '2026-01-01T00:00:00.000Z'],
    ['/Date(1700000000000)/', el('cds.String'), '/Date(1700000000000)/'],
    [12.5, el('cds.Decimal'), 12.5],
    [null, el('cds.Date'), null],
  ])('%s as %o → %s', (value, element, expected) => {
    expect(fromV2Value(value, element)).toBe(expected)
  })
})

describe('OData V2 literals per imported property type', () => {
  // as `cds import` turns V2 $metadata into CDS
  const elements: Record<string, ReturnType<typeof el>> = {
    day: el('cds.Date', { '@sap.display.format': 'Date' }), // Edm.DateTime + sap:display-format="Date"
    at: el('cds.DateTime', { '@odata.Type': 'Edm.DateTime' }), // Edm.DateTime
    tz: el('cds.DateTime', { '@odata.Type': 'Edm.DateTimeOffset' }), // Edm.DateTimeOffset
    stamp: el('cds.Timestamp', { '@odata.Type': 'Edm.DateTimeOffset', '@odata.Precision': 7 }),
    time: el('cds.Time'), // Edm.Time
  }
  const typeOf = (field: string) => v2LiteralType(elements[field])

  test.each([
    ['day', '2026-03-01', "day ge datetime'2026-03-01T00:00:00'"],
    ['at', '2026-03-01T10:20:30.123Z', "at ge datetime'2026-03-01T10:20:30'"],
    ['tz', '2026-03-01T10:20:30Z', "tz ge datetimeoffset'2026-03-01T10:20:30.000Z'"],
    ['stamp', '2026-03-01T10:20:30.123Z', "stamp ge datetimeoffset'2026-03-01T10:20:30.123Z'"],
    ['time', '09:05:00', "time ge time'PT09H05M00S'"],
  ])('%s ge %s → %s', (field, value, filter) => {
    expect(toODataFilter({ field, op: 'ge', value }, typeOf, 'v2')).toBe(filter)
  })

  test('Edm.DateTime in V4 form is an ISO timestamp', () => {
    expect(odataLiteral('2026-03-01T10:20:30.123Z', 'Edm.DateTime', 'v4')).toBe('2026-03-01T10:20:30Z')
  })
})
