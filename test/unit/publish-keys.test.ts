/**
 * `@federation.emit`'s key handling (lib/publish): which annotation values name which messaging
 * service, which elements a message carries, and when a change names its row without a query.
 */
import { directKeys, emittedKeyNames, keysOfCondition, whereKeys } from '../../lib/publish/keys'
import { emitService } from '../../lib/publish/index'
import type { CsnEntity } from '../../lib/model/csn'

const entity = (annotations: Record<string, unknown> = {}): CsnEntity => ({
  name: 'ProviderService.Orders',
  elements: {
    ID: { key: true, type: 'cds.Integer' },
    IsActiveEntity: { key: true, type: 'cds.Boolean' },
    customer: { key: true, type: 'cds.Association', target: 'Customers' },
    customer_ID: { key: true, type: 'cds.Integer' },
    secret: { type: 'cds.String', '@HideFromDataInspector': true },
  },
  ...annotations,
})
const ref = (name: string) => ({ ref: [name] })
const val = (value: unknown) => ({ val: value })

describe('@federation.emit keys', () => {
  test('the annotation names the messaging service: true → messaging, a string → that one, false/absent → none', () => {
    expect(emitService(entity({ '@federation.emit': true }))).toBe('messaging')
    expect(emitService(entity({ '@federation.emit': 'otherMessaging' }))).toBe('otherMessaging')
    expect(emitService(entity({ '@federation.emit': false }))).toBeUndefined()
    expect(emitService(entity())).toBeUndefined()
    expect(() => emitService(entity({ '@federation.emit': 42 }))).toThrow(/must be true or the name of a messaging service/)
  })

  test('a message carries the key elements only: no association, no draft IsActiveEntity, no other field', () => {
    expect(emittedKeyNames(entity())).toEqual(['ID', 'customer_ID'])
  })

  test('a condition naming every key once with = gives the keys; anything else does not', () => {
    const names = ['ID', 'customer_ID']
    expect(keysOfCondition([ref('ID'), '=', val(1), 'and', val(7), '=', ref('customer_ID')], names)).toEqual({ ID: 1, customer_ID: 7 })
    expect(keysOfCondition([ref('ID'), '=', val(1)], names)).toBeUndefined() // a key missing: a bulk change
    expect(keysOfCondition([ref('ID'), '>', val(1), 'and', ref('customer_ID'), '=', val(7)], names)).toBeUndefined()
    expect(keysOfCondition([ref('ID'), '=', val(1), 'or', ref('customer_ID'), '=', val(7)], names)).toBeUndefined()
    expect(keysOfCondition([ref('ID'), '=', val(1), 'and', ref('ID'), '=', val(2)], ['ID'])).toBeUndefined()
    expect(keysOfCondition([ref('status'), '=', val('open')], ['ID'])).toBeUndefined()
  })

  test('a change on one row named by its keys needs no query; navigations and other conditions do', () => {
    const single = { event: 'UPDATE', query: { UPDATE: { entity: { ref: [{ id: 'ProviderService.Orders', where: [ref('ID'), '=', val(42)] }] } } } }
    expect(directKeys(single, ['ID'])).toEqual([{ ID: 42 }])
    const byWhere = { event: 'DELETE', query: { DELETE: { from: { ref: ['ProviderService.Orders'] }, where: [ref('ID'), '=', val(5)] } } }
    expect(directKeys(byWhere, ['ID'])).toEqual([{ ID: 5 }])
    const bulk = { event: 'UPDATE', query: { UPDATE: { entity: { ref: ['ProviderService.Orders'] }, where: [ref('status'), '=', val('open')] } } }
    expect(directKeys(bulk, ['ID'])).toBeUndefined()
    const path = { event: 'UPDATE', params: [{ ID: 1 }, { pos: 2 }], query: { UPDATE: { entity: { ref: [{ id: 'S.Orders', where: [ref('ID'), '=', val(1)] }, { id: 'items', where: [ref('pos'), '=', val(2)] }] } } } }
    expect(directKeys(path, ['up__ID', 'pos'])).toBeUndefined()
  })

  test('a key list becomes an in-list, compound keys an or of ands', () => {
    expect(whereKeys(['ID'], [{ ID: 1 }, { ID: 2 }])).toEqual([ref('ID'), 'in', { list: [val(1), val(2)] }])
    expect(whereKeys(['a', 'b'], [{ a: 1, b: 2 }, { a: 3, b: 4 }])).toEqual([
      { xpr: [ref('a'), '=', val(1), 'and', ref('b'), '=', val(2)] }, 'or', { xpr: [ref('a'), '=', val(3), 'and', ref('b'), '=', val(4)] },
    ])
  })
})
