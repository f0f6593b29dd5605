/**
 * The where of a delegated view (lib/federation/delegate/where.ts): translated along the
 * projection chain to the remote's element names (also unprojected ones), `$user`/`$tenant`
 * resolved per request, and a delegate refused when its where cannot be sent safely.
 */
import cds from '@sap/cds'
import { delegateInfo } from '../../lib/federation/delegate/proxy'
import { registry } from '../../lib/federation/delegate/model'
import { resolveViewWhere, ViewWhereError, type ViewWhere } from '../../lib/federation/delegate/where'

const REMOTE = `
  @cds.external service R { entity Notes { key ID : Integer; owner : String; text : String; n : Integer; } }
`
const c = cds as unknown as { model: unknown; linked(csn: unknown): unknown; compile(cdl: string): unknown; env: { requires: Record<string, unknown> }; context: unknown }

function load(views: string, kind = 'odata'): void {
  c.model = c.linked(c.compile(`${REMOTE}\nservice S {\n${views}\n}`))
  c.env.requires.R = { kind, credentials: { url: 'http://127.0.0.1:1/r' } }
  registry.clear()
}

afterAll(() => {
  delete c.env.requires.R
  registry.clear()
})

describe('the where of a delegated view', () => {
  test('is translated through renames to the remote names, also for elements the view does not project', () => {
    load(`
      @federation.delegate entity V as projection on R.Notes { key ID, text as body, n } where owner = $user and n > 1;
      entity W as projection on V { key ID, body as label } where body like 'x%' or n in (1, 2);
      @federation.delegate entity X as projection on V { key ID, body as label } where n in (1, 2) and body is not null;
    `)
    expect(delegateInfo('S.V')!.where).toMatchObject({ callerDependent: true, tokens: [{ ref: ['owner'] }, '=', { ref: ['$user', 'id'] }, 'and', { ref: ['n'] }, '>', { val: 1 }] })
    const x = delegateInfo('S.X')!.where!
    expect(JSON.stringify(x.tokens)).toContain('{"ref":["text"]},"!=",{"val":null}')
    expect(JSON.stringify(x.tokens)).toContain('{"ref":["owner"]}')
  })

  test('a where that cannot be sent refuses the delegate, naming the entity and the where', () => {
    load(`@federation.delegate entity P as projection on R.Notes where exists (select from R.Notes as o where o.ID = Notes.ID);`)
    expect(() => delegateInfo('S.P')).toThrow(ViewWhereError)
    expect(() => { registry.clear(); delegateInfo('S.P') }).toThrow(/'S\.P' is refused: its where \(exists .*\)/)
    load(`@federation.delegate entity T as projection on R.Notes where $now > '2020-01-01';`)
    expect(() => delegateInfo('S.T')).toThrow(/'S\.T' is refused: .*\$now/)
    load(`@federation.delegate entity K as projection on R.Notes { key ID, owner } where owner = 'a';`, 'rest')
    expect(() => delegateInfo('S.K')).toThrow(/'S\.K' is refused: its where \(owner = 'a'\) cannot be sent to a remote of kind 'rest'/)
  })

  test('entities without a where, and non-delegated views with any where, are left alone', () => {
    load(`
      @federation.delegate entity A as projection on R.Notes;
      entity L as projection on R.Notes where exists (select from R.Notes as o where o.ID = Notes.ID);
    `)
    expect(delegateInfo('S.A')!.where).toBeUndefined()
    expect(delegateInfo('S.L')).toBeUndefined()
  })
})

describe('resolveViewWhere', () => {
  const where = (tokens: unknown[]): ViewWhere => ({ tokens, text: '', callerDependent: true })
  const asUser = <T>(user: object | undefined, tenant: string | undefined, fn: () => T): T => {
    const saved = c.context
    c.context = { user, tenant }
    try { return fn() } finally { c.context = saved }
  }

  test('$user, $user.<attr> and $tenant become the request\'s values', () => {
    const tokens = [{ ref: ['owner'] }, '=', { ref: ['$user', 'id'] }, 'and', { ref: ['dept'] }, '=', { ref: ['$user', 'dept'] }, 'and', { ref: ['t'] }, '=', { ref: ['$tenant'] }]
    expect(asUser({ id: 'bob', attr: { dept: 'D1' } }, 't1', () => resolveViewWhere(where(tokens))))
      .toEqual([{ ref: ['owner'] }, '=', { val: 'bob' }, 'and', { ref: ['dept'] }, '=', { val: 'D1' }, 'and', { ref: ['t'] }, '=', { val: 't1' }])
  })

  test('a variable without a value matches nothing (never `= null`); a multi-valued attribute compared with = is any of its values', () => {
    const tokens = [{ ref: ['dept'] }, '=', { ref: ['$user', 'dept'] }]
    expect(asUser({ id: 'bob' }, undefined, () => resolveViewWhere(where(tokens)))).toEqual([{ val: 1 }, '=', { val: 0 }])
    expect(asUser({ id: 'bob', attr: { dept: [] } }, undefined, () => resolveViewWhere(where(tokens)))).toEqual([{ val: 1 }, '=', { val: 0 }])
    expect(asUser({ id: 'bob', attr: { dept: ['a', 'b'] } }, undefined, () => resolveViewWhere(where(tokens)))).toEqual([{ ref: ['dept'] }, 'in', { list: [{ val: 'a' }, { val: 'b' }] }])
  })
})
