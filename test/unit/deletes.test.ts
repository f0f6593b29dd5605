/**
 * Deletes in delta mode, the pure parts: `deletes`/`delta.deletedField` validation (errors name
 * the key), the soft-delete value rule and the key order the sweep merges in.
 */
import { resolvePipeline } from '../../lib/engine/config/index'
import type { PipelineConfig } from '../../lib/pipeline/types'
import { isDeletedValue } from '../../lib/engine/deletes/soft-delete'
import { KeyCursor, comparator } from '../../lib/engine/deletes/index'

const base: PipelineConfig = { name: 'p', source: { service: 'S', entity: 'Items' }, target: { entity: 'my.Items' } }
const resolve = (extra: Partial<PipelineConfig>, options = {}) => resolvePipeline({ ...base, ...extra } as PipelineConfig, options)

describe('deletes config', () => {
  test('defaults and the three sweep forms', () => {
    expect(resolve({ deletes: { sweep: 'always' } }).deletes).toEqual({ sweep: { always: true }, maxShare: 0.5, force: false })
    expect(resolve({ deletes: { sweep: { every: 10 }, maxShare: 0.2 } }).deletes).toEqual({ sweep: { runs: 10 }, maxShare: 0.2, force: false })
    expect(resolve({ deletes: { sweep: { every: '6h' }, force: true } }).deletes).toEqual({ sweep: { interval: 6 * 3_600_000 }, maxShare: 0.5, force: true })
    expect(resolve({}).deletes).toBeUndefined()
  })

  test.each([
    [{ deletes: 'always' }, 'deletes'],
    [{ deletes: { sweep: 'sometimes' } }, 'deletes.sweep'],
    [{ deletes: {} }, 'deletes.sweep'],
    [{ deletes: { sweep: { every: 0 } } }, 'deletes.sweep.every'],
    [{ deletes: { sweep: { every: 'soon' } } }, 'deletes.sweep.every'],
    [{ deletes: { sweep: 'always', maxShare: 0 } }, 'deletes.maxShare'],
    [{ deletes: { sweep: 'always', maxShare: 1.5 } }, 'deletes.maxShare'],
    [{ deletes: { sweep: 'always', force: 'yes' } }, 'deletes.force'],
    [{ deletes: { sweep: 'always', maxshare: 0.3 } }, 'deletes.maxshare'],
    [{ delta: { deletedField: 7 } }, 'delta.deletedField'],
    [{ delta: { deletedAction: 'flag' } }, 'delta.deletedAction'],
    [{ delta: { deletedField: 'isDeleted', deletedAction: 'archive' } }, 'delta.deletedAction'],
  ])('%j is rejected naming %s', (extra, key) => {
    expect(() => resolve(extra as Partial<PipelineConfig>)).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG', target: key }))
  })

  test('query-shape, remote targets and REST sources without a key listing are rejected', () => {
    expect(() => resolvePipeline({ name: 'q', source: { query: () => ({}) }, target: { entity: 'my.Stats' }, deletes: { sweep: 'always' } } as PipelineConfig))
      .toThrow(expect.objectContaining({ target: 'deletes' }))
    expect(() => resolve({ target: { service: 'Remote', entity: 'Items' }, deletes: { sweep: 'always' } }, { serviceKind: () => 'odata' }))
      .toThrow(expect.objectContaining({ target: 'deletes' }))
    const rest = { source: { service: 'Rest' }, rest: { path: '/items', pagination: { type: 'offset' as const, pageSize: 10 } } }
    expect(() => resolve({ ...rest, deletes: { sweep: 'always' } })).toThrow(expect.objectContaining({ target: 'rest.keys' }))
    expect(() => resolve({ ...rest, rest: { ...rest.rest, keys: {} as never }, deletes: { sweep: 'always' } })).toThrow(expect.objectContaining({ target: 'rest.keys.path' }))
    expect(resolve({ ...rest, rest: { ...rest.rest, keys: { path: '/keys' } }, deletes: { sweep: 'always' } }).deletes).toBeDefined()
  })
})

describe('soft-delete values', () => {
  test.each([[true, true], [1, true], ['true', true], ['2026-01-01T00:00:00Z', true], [false, false], [0, false], [null, false], [undefined, false], ['', false], ['false', false], ['0', false]])(
    '%j → %s', (value, deleted) => expect(isDeletedValue(value)).toBe(deleted))
})

describe('sweep key order', () => {
  const entity = { name: 'E', elements: { ID: { type: 'cds.Int64' }, code: { type: 'cds.String' } } } as never
  test('numeric keys compare as numbers (also beyond 2^53 and sent as text), strings by code points', () => {
    const compare = comparator(['ID', 'code'], entity)
    expect(compare([9, 'a'], [10, 'a'])).toBe(-1)
    expect(compare(['9007199254740993', 'a'], ['9007199254740992', 'a'])).toBe(1)
    expect(compare([1, 'B'], [1, 'a'])).toBe(-1)
    expect(compare([1, 'a'], ['1', 'a'])).toBe(0)
    expect(compare([1, null], [1, 'a'])).toBe(-1)
  })
  test('a string key orders "10" before "9"', () => {
    expect(comparator(['code'], entity)(['10'], ['9'])).toBe(-1)
  })
})

describe('KeyCursor of a partitioned sweep (a key range)', () => {
  const compare = comparator(['ID'], undefined)
  async function* pages(...keys: string[]) { yield keys.map(ID => ({ ID })) }
  const cursor = (bounds: { from?: unknown[]; to?: unknown[] }, ...keys: string[]) => new KeyCursor(pages(...keys)[Symbol.asyncIterator](), ['ID'], compare, 'target', bounds)

  test('keys inside [from, to) pass', async () => {
    const keys = cursor({ from: ['B'], to: ['a'] }, 'B', 'C', 'Z')
    const seen: unknown[] = []
    for (let key = await keys.current(); key; key = await keys.current()) { seen.push(key[0]); keys.advance() }
    expect(seen).toEqual(['B', 'C', 'Z'])
  })

  test('a key its database put into the range but which our order puts outside (collations differ) stops the sweep; nothing deleted', async () => {
    // a database in a locale collation lists 'b' below the boundary 'a' (case-insensitive); by code points it is above
    const keys = cursor({ to: ['a'] }, 'A', 'b')
    expect(await keys.current()).toEqual(['A'])
    keys.advance()
    await expect(keys.current()).rejects.toThrow(/outside its key range \[start, \(a\)\).*order keys differently.*nothing was deleted/)
    await expect(cursor({ from: ['a'] }, 'B').current()).rejects.toThrow(/outside its key range \[\(a\), end\)/)
  })
})
