/**
 * `@federation.delegate` inside a draft-enabled service (issue 22), the shape of SAP's
 * cap-js/incidents-app: `@odata.draft.enabled` Incidents (local) beside delegated Customers
 * (OData V4, provider A) and Products (OData V2, provider B). CAP's draft handling rewrites
 * every query of such a service into a derived query whose options are inherited (prototype)
 * properties; each query option docs/guide/delegate.md says is forwarded must still reach the remote.
 */
import cds from '@sap/cds'
import { useFederation } from '../helpers/federation'
import { basicAuth } from '../helpers/management'

const S = '/odata/v4/incidents'

const ctx = useFederation({
  seed: async () => {
    const entries = [
      { ID: 1, title: 'Broken printer', customer_ID: 3, product_ID: 7 },
      { ID: 2, title: 'Solar panel', customer_ID: 12, product_ID: 21 },
      { ID: 3, title: 'Noisy fan', customer_ID: 3, product_ID: 35 },
      { ID: 4, title: 'No customer', customer_ID: null, product_ID: null },
    ]
    await cds.ql.INSERT.into('fed.incidents.Incidents').entries(entries)
  },
})

interface Source {
  protocol: string
  entity: string
  provider: 'a' | 'b'
  /** The remote names of the consumer's `name` element. */
  remoteName: string
  /** The remote URL's start. */
  url: RegExp
  /** How the source writes a `contains(name,'X')` and `$count=true`. */
  contains: (value: string) => string
  count: string
}

const SOURCES: Source[] = [
  { protocol: 'OData V4', entity: 'Customers', provider: 'a', remoteName: 'name', url: /^\/odata\/v4\/catalog\/Authors\?/, contains: v => `contains(name,'${v}')`, count: '$count=true' },
  { protocol: 'OData V2', entity: 'Products', provider: 'b', remoteName: 'title', url: /^\/odata\/v2\/catalog\/Books\?/, contains: v => `substringof('${v}',title)`, count: '$inlinecount=allpages' },
]
/** Provider A has authors 'Author 1'..'Author 30', provider B books 'Book 1'..'Book 40'. */
const prefix = (source: Source) => (source.provider === 'a' ? 'Author' : 'Book')

/** The one request the provider got for the last read. */
async function sent(source: Source): Promise<string> {
  const urls = (await ctx.requests())[source.provider]
  expect(urls).toHaveLength(1)
  expect(urls[0]).toMatch(source.url)
  return decodeURIComponent(urls[0])
}

describe.each(SOURCES)('delegated reads in a draft-enabled service over $protocol', source => {
  const E = `${S}/${source.entity}`

  test('$filter with contains is forwarded: only the matching rows', async () => {
    await ctx.requests()
    const res = await ctx.http.GET(`${E}?$filter=contains(name,'${prefix(source)} 2')&$select=ID,name&$orderby=ID`)
    expect(res.status).toBe(200)
    expect(res.data.value.map((r: { ID: number }) => r.ID)).toEqual([2, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29])
    expect(await sent(source)).toContain(source.contains(`${prefix(source)} 2`))
  })

  test('$filter with a comparison is forwarded', async () => {
    await ctx.requests()
    const res = await ctx.http.GET(`${E}?$filter=ID le 3&$select=ID&$orderby=ID`)
    expect(res.data.value).toEqual([{ ID: 1 }, { ID: 2 }, { ID: 3 }])
    expect(await sent(source)).toMatch(/\$filter=\(?ID le 3/)
  })

  test('$orderby, $top and $skip are forwarded: the right page, read at the remote', async () => {
    await ctx.requests()
    const res = await ctx.http.GET(`${E}?$select=ID&$orderby=ID desc&$top=3&$skip=2`)
    expect(res.status).toBe(200)
    const last = source.provider === 'a' ? 30 : 40
    expect(res.data.value.map((r: { ID: number }) => r.ID)).toEqual([last - 2, last - 3, last - 4])
    const url = await sent(source)
    expect(url).toContain('$orderby=ID desc')
    expect(url).toContain('$top=3')
    expect(url).toContain('$skip=2')
  })

  test('$count is forwarded and answered with the remote count', async () => {
    await ctx.requests()
    const res = await ctx.http.GET(`${E}?$filter=contains(name,'${prefix(source)} 1')&$select=ID&$top=2&$count=true`)
    expect(res.status).toBe(200)
    expect(res.data['@odata.count']).toBe(11) // 1, 10..19
    expect(res.data.value).toHaveLength(2)
    const url = await sent(source)
    expect(url).toContain(source.count)
    expect(url).toContain('$top=2')
  })

  test('/$count is answered by the remote', async () => {
    const res = await ctx.http.GET(`${E}/$count`)
    expect(res.data).toBe(source.provider === 'a' ? 30 : 40)
  })

  test('$select is forwarded under the remote names', async () => {
    await ctx.requests()
    const res = await ctx.http.GET(`${E}?$select=name&$filter=ID eq 5`)
    expect(res.data.value).toEqual([{ ID: 5, name: `${prefix(source)} 5` }])
    const select = /\$select=([^&]*)/.exec(await sent(source))?.[1]
    expect(select?.split(',').sort()).toEqual(['ID', source.remoteName].sort())
  })

  test('$search is forwarded', async () => {
    await ctx.requests()
    const res = await ctx.http.GET(`${E}?$search=17&$select=ID`)
    expect(res.status).toBe(200)
    expect(res.data.value).toEqual([{ ID: 17 }])
    expect(await sent(source)).toMatch(/[$]?search=17\b/)
  })

  test('$expand local → remote: one request with the key filter of the page', async () => {
    const assoc = source.provider === 'a' ? 'customer' : 'product'
    await ctx.requests()
    const res = await ctx.http.GET(`${S}/Incidents?$filter=IsActiveEntity eq true&$select=ID&$expand=${assoc}($select=ID,name)&$orderby=ID`)
    expect(res.status).toBe(200)
    const ids = source.provider === 'a' ? [3, 12, 3, null] : [7, 21, 35, null]
    expect(res.data.value.map((r: Record<string, { ID: number; name: string } | null>) => r[assoc]?.ID ?? null)).toEqual(ids)
    expect(res.data.value[0][assoc].name).toBe(`${prefix(source)} ${ids[0]}`)
    const url = await sent(source)
    for (const id of new Set(ids.filter(Boolean))) expect(url).toMatch(new RegExp(`ID eq ${id}\\b|ID in \\([^)]*\\b${id}\\b`))
  })

  test('$expand remote → local: the local rows per remote row', async () => {
    await ctx.requests()
    const key = source.provider === 'a' ? 3 : 21
    const res = await ctx.http.GET(`${E}?$filter=ID eq ${key}&$select=ID&$expand=incidents($select=ID,title;$orderby=ID)`)
    expect(res.status).toBe(200)
    const titles = source.provider === 'a' ? ['Broken printer', 'Noisy fan'] : ['Solar panel']
    expect(res.data.value).toHaveLength(1)
    expect(res.data.value[0].incidents.map((i: { title: string }) => i.title)).toEqual(titles)
    expect(await sent(source)).toMatch(new RegExp(`\\$filter=\\(?ID eq ${key}`))
  })

  test('navigation local → remote keeps $select', async () => {
    const assoc = source.provider === 'a' ? 'customer' : 'product'
    await ctx.requests()
    const res = await ctx.http.GET(`${S}/Incidents(ID=1,IsActiveEntity=true)/${assoc}?$select=name`)
    expect(res.status).toBe(200)
    const id = source.provider === 'a' ? 3 : 7
    expect(res.data).toMatchObject({ ID: id, name: `${prefix(source)} ${id}` })
    const select = /\$select=([^&]*)/.exec(await sent(source))?.[1]
    expect(select?.split(',').sort()).toEqual(['ID', source.remoteName].sort())
  })
})

describe('a draft of the local entity expands into the delegated ones', () => {
  test('edit a draft, set a customer, read it with $expand, activate', async () => {
    const edit = await ctx.http.POST(`${S}/Incidents(ID=4,IsActiveEntity=true)/IncidentsService.draftEdit`, { PreserveChanges: true })
    expect(edit.status).toBe(201)
    expect((await ctx.http.PATCH(`${S}/Incidents(ID=4,IsActiveEntity=false)`, { customer_ID: 5, product_ID: 9 }, basicAuth('admin'))).status).toBe(200)
    await ctx.requests()
    const draft = await ctx.http.GET(`${S}/Incidents(ID=4,IsActiveEntity=false)?$expand=customer($select=name),product($select=name)`)
    expect(draft.status).toBe(200)
    expect(draft.data).toMatchObject({ ID: 4, IsActiveEntity: false, customer: { ID: 5, name: 'Author 5' }, product: { ID: 9, name: 'Book 9' } })
    const { a, b } = await ctx.requests()
    expect(a).toHaveLength(1)
    expect(decodeURIComponent(a[0])).toMatch(/ID eq 5\b/)
    expect(b).toHaveLength(1)
    expect(decodeURIComponent(b[0])).toMatch(/ID eq 9\b/)
    const activated = await ctx.http.POST(`${S}/Incidents(ID=4,IsActiveEntity=false)/IncidentsService.draftActivate`, {})
    expect(activated.status).toBe(200)
    const active = await ctx.http.GET(`${S}/Incidents(ID=4,IsActiveEntity=true)?$expand=customer($select=name)`)
    expect(active.data.customer).toEqual({ ID: 5, name: 'Author 5' })
  })
})
