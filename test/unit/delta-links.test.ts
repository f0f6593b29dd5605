/**
 * OData delta links (issue 38): the link as stored (relative to the service root, no host or
 * credentials), deleted entries of a delta payload as key records, and the refused-link error.
 */
import { resolvePipeline } from '../../lib/engine/config/index'
import type { PipelineConfig } from '../../lib/pipeline/types'
import { deltaEntry, isStoredDeltaLink, keysOfId, refusedDeltaLink, relativeToService, trackingPreference, REMOVED } from '../../lib/adapters/source/delta-links'

describe('delta links', () => {
  test('stored relative to the service root, without host, port or user info', () => {
    const root = 'https://user:secret@s4.example.com:443/sap/opu/odata4/sap/api/srvd/0001'
    expect(relativeToService('https://user:secret@s4.example.com/sap/opu/odata4/sap/api/srvd/0001/Products?$deltatoken=abc', root, 'Products')).toBe('/Products?$deltatoken=abc')
    expect(relativeToService('Products?$deltatoken=7', root, 'Products')).toBe('/Products?$deltatoken=7')
    expect(relativeToService('/sap/opu/odata4/sap/api/srvd/0001/Products?!deltatoken=x', root, 'Products')).toBe('/Products?!deltatoken=x')
    // another root (a destination): cut at the entity set
    expect(relativeToService('http://proxy/other/Products?$deltatoken=1', undefined, 'Products')).toBe('/Products?$deltatoken=1')
    expect(isStoredDeltaLink('/Products?$deltatoken=1')).toBe(true)
    expect(isStoredDeltaLink('{"at":"2026-01-01"}')).toBe(false)
    expect(isStoredDeltaLink(null)).toBe(false)
  })

  test('every tracked request prefers change tracking and the page size', () => {
    expect(trackingPreference(500)).toBe('odata.track-changes, odata.maxpagesize=500')
  })

  test('deleted entries become key records: by key fields, by @id, by the 4.0 $deletedEntity form', () => {
    expect(deltaEntry({ ID: 1, name: 'a' }, ['ID'])).toEqual({ ID: 1, name: 'a' })
    expect(deltaEntry({ [REMOVED]: { reason: 'deleted' }, ID: 4 }, ['ID'])).toEqual({ [REMOVED]: { reason: 'deleted' }, ID: 4 })
    expect(deltaEntry({ [REMOVED]: { reason: 'changed' }, '@id': 'Products(4)' }, ['ID'])).toEqual({ [REMOVED]: { reason: 'changed' }, ID: 4 })
    expect(deltaEntry({ $context: '$metadata#Products/$deletedEntity', id: "https://h/s/Orders(ID=2,Item='a''b,c')", reason: 'deleted' }, ['ID', 'Item']))
      .toEqual({ [REMOVED]: { reason: 'deleted' }, ID: 2, Item: "a'b,c" })
    expect(() => deltaEntry({ [REMOVED]: { reason: 'deleted' } }, ['ID'])).toThrow(/no value for key 'ID'/)
    expect(keysOfId("Products('X%2F1')", ['ID'])).toEqual({ ID: 'X/1' })
  })

  test('a refused link names the reason and the action, never the link', () => {
    const error = refusedDeltaLink('S4', 'Products', 410, new Error('Error during request to remote service: token expired'))
    expect(error.message).toContain('410 Gone')
    expect(error.message).toContain("run mode 'full' to re-initialise")
    expect(error.message).toContain('token expired')
    expect(error.message).not.toContain('deltatoken')
  })
})

describe("delta.mode 'odata-delta' at registration", () => {
  const config = (extra: object = {}): PipelineConfig => ({ name: 'p', source: { service: 'S', entity: 'Products' }, target: { entity: 'my.Products' }, delta: { mode: 'odata-delta' }, ...extra } as PipelineConfig)
  test.each(['odata', 'odata-v4', 'odata-v2'])('accepted for a source of kind %s', kind => {
    expect(resolvePipeline(config(), { serviceKind: () => kind }).delta).toMatchObject({ mode: 'odata-delta' })
    expect(resolvePipeline(config({ source: { service: 'S', entity: 'Products', kind } }), {}).delta).toMatchObject({ mode: 'odata-delta' })
  })
  test.each([
    ['an HCQL source', config(), 'hcql'],
    ['a CQN source', config(), 'cqn'],
    ['a source of unknown kind', config(), undefined],
    ['delta.field beside it', config({ delta: { mode: 'odata-delta', field: 'modifiedAt' } }), 'odata'],
  ])('rejected for %s with INVALID_CONFIG naming delta.mode', (_label, value, kind) => {
    expect(() => resolvePipeline(value, { serviceKind: () => kind })).toThrow(expect.objectContaining({ code: 'INVALID_CONFIG', target: 'delta.mode', message: expect.stringContaining("delta.mode 'odata-delta'") }))
  })
})
