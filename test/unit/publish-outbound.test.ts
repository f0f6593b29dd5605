/**
 * `@federation.emit`'s messages per transaction (lib/publish/outbound.ts): the keys of a run of one
 * topic split into messages of at most `emit.keysPerMessage` keys, and the setting checked.
 */
import cds from '@sap/cds'
import { keysPerMessage, messagesOf } from '../../lib/publish/outbound'

const requires = cds.env.requires as unknown as Record<string, unknown>
const original = requires['data-pipeline']
afterEach(() => { requires['data-pipeline'] = original })
const setting = (emit: unknown) => { requires['data-pipeline'] = { ...(original as object), emit } }

describe('messagesOf', () => {
  const keys = [1, 2, 3, 4, 5].map(ID => ({ ID }))
  test('at most keysPerMessage keys per message, the array of them as data; a lone key as the keys themselves', () => {
    expect(messagesOf('E.Updated', keys, 't', 2).map(m => m.data)).toEqual([[{ ID: 1 }, { ID: 2 }], [{ ID: 3 }, { ID: 4 }], { ID: 5 }])
    expect(messagesOf('E.Updated', keys, 't', 500)).toEqual([{ event: 'E.Updated', data: keys, headers: { id: expect.any(String), time: 't' } }])
    expect(messagesOf('E.Created', [{ ID: 7 }], 't', 500)).toEqual([{ event: 'E.Created', data: { ID: 7 }, headers: { id: expect.any(String), time: 't' } }])
  })
  test('every message has an id of its own (consumers collapse fan-out copies by it)', () => {
    const ids = messagesOf('E.Updated', keys, 't', 2).map(m => m.headers.id)
    expect(new Set(ids).size).toBe(3)
  })
  test('keysPerMessage 1: one message per key, as a plain S/4-style consumer expects', () => {
    expect(messagesOf('E.Updated', keys, 't', 1).map(m => m.data)).toEqual(keys)
  })
})

describe('emit.keysPerMessage', () => {
  test('500 unless set; an integer between 1 and 10000', () => {
    expect(keysPerMessage()).toBe(500)
    setting({ keysPerMessage: 1 })
    expect(keysPerMessage()).toBe(1)
  })
  test('a wrong value or an unknown key is refused, naming it', () => {
    setting({ keysPerMessage: 0 })
    expect(() => keysPerMessage()).toThrow(/emit\.keysPerMessage must be an integer between 1 and 10000/)
    setting({ keysPerMessage: '10' })
    expect(() => keysPerMessage()).toThrow(/emit\.keysPerMessage/)
    setting({ perMessage: 10 })
    expect(() => keysPerMessage()).toThrow(/emit\.perMessage is unknown/)
    setting(true)
    expect(() => keysPerMessage()).toThrow(/emit must be an object/)
  })
})
