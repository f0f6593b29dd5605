/**
 * The per-page work of a full copy made cheaper (issue 24, "CPU per page"): each helper answers
 * what the slower way answered, and skips the work it exists to skip.
 * - date and timestamp checks by text (lib/engine/records/index.ts): no Date.parse for plain values;
 * - SQLite rows in multi-row statements (lib/adapters/target/sqlite-writer.ts);
 * - a keyset page's keys checked for duplicates without a map (lib/adapters/target/base.ts);
 * - records mapped by name copied in one step (lib/adapters/mapping.ts);
 * - watermark values in plain UTC compared as text (lib/adapters/watermark.ts).
 */
import { RecordValidator, decimalDigits, validDate, validTimestamp } from '../../lib/engine/records/index'
import { SqliteWriter, chunkRows } from '../../lib/adapters/target/sqlite-writer'
import { uniqueByKey } from '../../lib/adapters/target/base'
import { applyMapping, hasExactly } from '../../lib/adapters/mapping'
import type { DeltaPlan } from '../../lib/adapters/watermark'
import { WatermarkTracker } from '../../lib/adapters/watermark-tracker'
import type { SqlService } from '../../lib/adapters/target/prepared-writer'
import type { CsnEntity } from '../../lib/model/csn'

/** The checks as they were: a valid day (Date.UTC), and text Date.parse reads. */
const DATE_TEXT = /^(\d{4})-(\d{2})-(\d{2})(?:$|T)/
function referenceDate(value: unknown): boolean {
  if (value instanceof Date) return !Number.isNaN(value.getTime())
  const match = typeof value === 'string' ? DATE_TEXT.exec(value) : null
  if (!match) return false
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])]
  const date = new Date(Date.UTC(year, month - 1, day))
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day
}
const referenceTimestamp = (value: unknown) => referenceDate(value) && (value instanceof Date || !Number.isNaN(Date.parse(value as string)))

describe('date and timestamp checks by text', () => {
  const pad = (n: number, width = 2) => String(n).padStart(width, '0')
  const texts: string[] = []
  for (const year of [1, 99, 100, 999, 1000, 1970, 2024, 2026, 9999]) for (const month of [0, 1, 2, 9, 10, 12, 13]) for (const day of [0, 1, 9, 10, 28, 29, 30, 31, 32]) {
    const date = `${pad(year, 4)}-${pad(month)}-${pad(day)}`
    texts.push(date, `${date}T`, `${date} `, `${date}x`)
    for (const time of ['00:00:00', '23:59:59', '24:00:00', '12:60:00', '12:00:60', '12:00', '1:00:00'])
      for (const fraction of ['', '.', '.1', '.123', '.123456789', '.1234567890'])
        for (const zone of ['', 'Z', 'z', '+00:00', '-23:59', '+24:00', '+01:60', '+0100', ' '])
          texts.push(`${date}T${time}${fraction}${zone}`)
  }

  test('answer what the full checks answer, for every variant of day, time, fraction and zone', () => {
    const differ = texts.filter(t => validDate(t) !== referenceDate(t) || validTimestamp(t) !== referenceTimestamp(t))
    expect(differ).toEqual([])
    expect(texts.filter(t => validTimestamp(t)).length).toBeGreaterThan(10_000) // the variants include plenty of valid ones
    for (const value of [null, undefined, 5, {}, new Date(0), new Date(Number.NaN)]) {
      expect(validDate(value)).toBe(referenceDate(value))
      expect(validTimestamp(value)).toBe(referenceTimestamp(value))
    }
  })

  test('plain values cost no Date: a page of timestamps checks without Date.parse', () => {
    const validator = new RecordValidator({ name: 'T', elements: { ID: { type: 'cds.Integer', key: true }, day: { type: 'cds.Date' }, at: { type: 'cds.Timestamp' }, on: { type: 'cds.DateTime' } } } as unknown as CsnEntity)
    const parse = vi.spyOn(Date, 'parse')
    const utc = vi.spyOn(Date, 'UTC')
    try {
      const rows = Array.from({ length: 100 }, (_, i) => ({ ID: i, day: '2026-01-28', at: `2026-01-01T00:00:${pad(i % 60)}.123Z`, on: '2026-12-01T23:59:59Z' }))
      expect(() => validator.assertValid(rows, 'p')).not.toThrow()
      expect(parse).not.toHaveBeenCalled()
      expect(utc).not.toHaveBeenCalled()
      // the last days of a month still take the full check, and it still refuses what is no day
      expect(validator.check({ ID: 1, day: '2024-02-29' })).toBeUndefined()
      expect(validator.check({ ID: 1, at: '2023-02-29T00:00:00Z' })?.message).toBe("'at': '2023-02-29T00:00:00Z' is not a Timestamp (ISO 8601)")
      expect(utc).toHaveBeenCalled()
    } finally {
      parse.mockRestore()
      utc.mockRestore()
    }
  })
})

describe('SQLite rows in multi-row statements', () => {
  test('chunkRows: at most 25 rows, at most 999 parameters', () => {
    expect(chunkRows(11)).toBe(25)
    expect(chunkRows(50)).toBe(19)
    expect(chunkRows(999)).toBe(1)
    expect(chunkRows(2000)).toBe(1)
  })

  test('full chunks of 25 rows in one statement each, the rest row by row, every value bound in order', async () => {
    const entity = { name: 'T', elements: { ID: { type: 'cds.Integer', key: true }, title: { type: 'cds.String', length: 10 } } } as unknown as { name: string; elements: Record<string, never> }
    const service = {
      class: { CQN2SQL: class { cqn?: unknown; class = { _convertInput: '' }; quote(n: string) { return `"${n}"` } name(n: string) { return n } managed(columns: Array<{ name: string; sql: string }>) { return columns.map(c => ({ ...c, converter: (s: string) => s })) } } },
    } as unknown as SqlService
    const writer = new SqliteWriter(service, entity)
    const runs: Array<{ sql: string; parameters: unknown[] }> = []
    const prepares: string[] = []
    const dbc = { prepare: (sql: string) => { prepares.push(sql); return { run: (parameters: unknown[]) => runs.push({ sql, parameters: [...parameters] }) } } }
    const rows = Array.from({ length: 57 }, (_, i) => ({ ID: i + 1, title: `t${i + 1}` }))
    await writer.insert({ dbc } as unknown as SqlService, ['ID', 'title'], rows)
    expect(runs.map(r => r.parameters.length)).toEqual([50, 50, 2, 2, 2, 2, 2, 2, 2])
    expect(runs[0].sql).toBe(`INSERT INTO "T" ("ID","title") VALUES ${Array.from({ length: 25 }, () => '(?,?)').join(',')}`)
    expect(runs.flatMap(r => r.parameters)).toEqual(rows.flatMap(r => [r.ID, r.title]))
    await writer.insert({ dbc } as unknown as SqlService, ['ID', 'title'], rows.slice(0, 30))
    expect(prepares).toHaveLength(2) // one statement per size and connection, prepared once
  })
})

describe('uniqueByKey', () => {
  test('an ascending page is returned as it is; anything else keeps the last row of a key', () => {
    const ascending = [{ ID: 'a', v: 1 }, { ID: 'b', v: 2 }, { ID: 'c', v: 3 }]
    expect(uniqueByKey(ascending, ['ID'])).toBe(ascending)
    expect(uniqueByKey([{ ID: 1 }, { ID: 2 }, { ID: 10 }], ['ID'])).toHaveLength(3) // numbers compare as numbers
    expect(uniqueByKey([{ ID: 'a', v: 1 }, { ID: 'b' }, { ID: 'a', v: 2 }], ['ID'])).toEqual([{ ID: 'a', v: 2 }, { ID: 'b' }])
    expect(uniqueByKey([{ ID: 'b', v: 1 }, { ID: 'b', v: 2 }], ['ID'])).toEqual([{ ID: 'b', v: 2 }]) // equal neighbours are no ascent
    expect(uniqueByKey([{ ID: 1 }, { ID: '1' }, { ID: 2 }], ['ID'])).toHaveLength(3) // mixed types: the map decides, as before
    expect(uniqueByKey([{ ID: null }, { ID: undefined }], ['ID'])).toHaveLength(1)
  })

  test('an ascending page builds no map of its keys', () => {
    const maps = vi.spyOn(globalThis, 'Map')
    try {
      uniqueByKey(Array.from({ length: 1000 }, (_, i) => ({ ID: i })), ['ID'])
      expect(maps).not.toHaveBeenCalled()
      uniqueByKey([{ ID: 2 }, { ID: 1 }], ['ID'])
      expect(maps).toHaveBeenCalledTimes(1)
    } finally {
      maps.mockRestore()
    }
  })
})

describe('applyMapping: a record with exactly the mapped fields is copied in one step', () => {
  const mapping = [{ source: 'ID', target: 'ID' }, { source: 'title', target: 'title' }]
  test('the same object as field by field: same fields, same order, a new object', () => {
    const record = { ID: 1, title: 'a' }
    const [copy] = applyMapping([record], mapping)
    expect(copy).toEqual(record)
    expect(copy).not.toBe(record)
    expect(Object.keys(copy)).toEqual(['ID', 'title'])
    // other orders, extra or missing fields, renames and records with a prototype: field by field, as before
    expect(applyMapping([{ title: 'a', ID: 1 }], mapping).map(r => Object.keys(r))).toEqual([['ID', 'title']])
    expect(applyMapping([{ ID: 1, title: 'a', extra: 1 }, { ID: 2 }], mapping)).toEqual([{ ID: 1, title: 'a' }, { ID: 2 }])
    expect(applyMapping([{ ID: 1, name: 'a' }], [{ source: 'ID', target: 'ID' }, { source: 'name', target: 'title' }])).toEqual([{ ID: 1, title: 'a' }])
    const inherited = Object.assign(Object.create({ title: 'from the prototype' }) as Record<string, unknown>, { ID: 1 })
    expect(applyMapping([inherited], mapping)).toEqual([{ ID: 1, title: 'from the prototype' }])
  })

  test('hasExactly: the fields and their order, nothing inherited', () => {
    expect(hasExactly({ a: 1, b: undefined }, ['a', 'b'])).toBe(true)
    expect(hasExactly({ b: 1, a: 1 }, ['a', 'b'])).toBe(false)
    expect(hasExactly({ a: 1 }, ['a', 'b'])).toBe(false)
    expect(hasExactly({ a: 1, b: 1, c: 1 }, ['a', 'b'])).toBe(false)
    expect(hasExactly(Object.assign(Object.create(null) as Record<string, unknown>, { a: 1, b: 1 }), ['a', 'b'])).toBe(false)
  })
})

describe('watermark: plain UTC texts compared as text', () => {
  const plan: DeltaPlan = { mode: 'timestamp', field: 'modifiedAt', ties: { keys: ['ID'], precision: 1, settle: 0 } }
  const START = new Date('2026-06-01T12:00:00.000Z')
  /** What the watermark was before: the highest time (Date.parse of every value), the last row at it. */
  function reference(batches: Array<Array<{ ID: number; modifiedAt: unknown }>>) {
    let max: number | undefined
    let last: { ID: number } | undefined
    for (const row of batches.flat()) {
      const time = typeof row.modifiedAt === 'string' ? Date.parse(row.modifiedAt) : Number.NaN
      if (Number.isNaN(time) || (max !== undefined && time < max)) continue
      max = time
      last = row
    }
    return { lastSync: new Date(max!).toISOString(), after: last!.ID }
  }

  test('the highest value and the last row at it, whatever mix of forms the rows carry', () => {
    const forms = (ms: number) => {
      const iso = new Date(ms).toISOString()
      return [iso, iso.replace('.000Z', 'Z'), iso.replace('Z', '+00:00'), `${iso.slice(0, 19)}.000000Z`]
    }
    const base = Date.parse('2026-01-27T23:59:59.000Z')
    let seed = 7
    const random = () => (seed = (seed * 48271) % 2147483647) / 2147483647
    for (let round = 0; round < 50; round++) {
      const batches = Array.from({ length: 4 }, (_, b) => Array.from({ length: 50 }, (_, i) => {
        const ms = base + Math.floor(random() * 6) * 86_400_000 // the 27th to the 1st: days 29–31 in between
        const pool = [...forms(ms), null, 'not a time', '2026-02-30T00:00:00.000Z']
        return { ID: b * 50 + i, modifiedAt: pool[Math.floor(random() * pool.length)] }
      }))
      const tracker = new WatermarkTracker(plan, { lastSync: null, lastKey: null }, START)
      for (const batch of batches) tracker.observe(batch)
      const expected = reference(batches)
      const { lastSync, lastKey } = tracker.result()
      expect(lastSync).toBe(expected.lastSync)
      expect(JSON.parse(lastKey!)).toMatchObject({ at: expected.lastSync, after: { ID: expected.after } })
    }
  })

  test('rows below the highest plain value are judged without Date.parse', () => {
    const tracker = new WatermarkTracker(plan, { lastSync: null, lastKey: null }, START)
    const rows = Array.from({ length: 1000 }, (_, i) => ({ ID: i, modifiedAt: i === 0 ? '2026-03-01T00:00:00.000Z' : `2026-02-0${1 + (i % 9)}T10:00:00.000Z` }))
    const parse = vi.spyOn(Date, 'parse')
    try {
      tracker.observe(rows)
      expect(parse.mock.calls.length).toBeLessThan(5)
    } finally {
      parse.mockRestore()
    }
    expect(tracker.result().lastSync).toBe('2026-03-01T00:00:00.000Z')
  })
})

describe('Decimal checks of plain text', () => {
  /** The check as it was: count the significant digits of every value. */
  function reference(value: unknown, precision: number, scale: number): boolean {
    const text = typeof value === 'number' ? (Number.isFinite(value) ? String(value) : '') : typeof value === 'string' ? value : ''
    if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text)) return false
    const digits = decimalDigits(text)
    return digits.integer <= precision - scale && digits.fraction <= scale
  }

  test('answer what counting the digits answers', () => {
    const values: unknown[] = ['0', '0.01', '-0.01', '+1.5', '999.99', '1000', '999.999', '007.10', '0000000.1', '.5', '5.', '1e2', '1e-2', '12.345', '-', '', 'x', '1.2.3',
      0, 0.01, 12.5, 999.99, 1000, -999.994, 1e21, 1e-7, 0.1 + 0.2, Number.NaN, Infinity]
    for (const [precision, scale] of [[5, 2], [9, 2], [3, 0], [2, 2], [10, 4]]) {
      const validator = new RecordValidator({ name: 'T', elements: { ID: { type: 'cds.Integer', key: true }, d: { type: 'cds.Decimal', precision, scale } } } as unknown as CsnEntity)
      for (const value of values) expect([precision, scale, value, validator.check({ ID: 1, d: value }) === undefined]).toEqual([precision, scale, value, reference(value, precision, scale)])
    }
  })
})
