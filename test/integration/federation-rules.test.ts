/**
 * SPEC "Read behaviour on federated entities", rules 1–8, one test each (plus the cases they
 * imply), against two real providers: A over OData V4, B over OData V2. Provider requests are
 * counted to prove how many remote calls a read makes.
 */
import cds from '@sap/cds'
import { createRequire } from 'node:module'
import { ql } from '../helpers/consumer'
import { useFederation } from '../helpers/federation'

const S = '/odata/v4/federation'
const REVIEWS = 250

const ctx = useFederation({
  seed: async () => {
    const reviews = Array.from({ length: REVIEWS }, (_, i) => {
      const ID = i + 1
      return { ID, rating: (ID % 5) + 1, text: `Review ${ID}`, book_ID: ID, title_ID: ID, work_author_ID: (ID % 30) + 1, work_number: (ID % 3) + 1, edition_ID: ((ID - 1) % 40) + 1 }
    })
    await ql.INSERT.into('fed.Reviews').entries(reviews)
    const notes = []
    for (let author = 1; author <= 30; author++)
      for (let priority = 1; priority <= 5; priority++) notes.push({ ID: author * 10 + priority, author_ID: author, priority, text: `Note ${author}.${priority}` })
    await ql.INSERT.into('fed.AuthorNotes').entries(notes)
  },
})

/** Settings under cds.requires['data-pipeline'].federation, restored after `fn`. */
async function withSettings(settings: Record<string, number>, fn: () => Promise<void>): Promise<void> {
  const conf = (cds.env.requires as any)['data-pipeline']
  const before = conf.federation
  conf.federation = { ...before, ...settings }
  try {
    await fn()
  } finally {
    conf.federation = before
  }
}

/** The IDs inside one remote `$filter`: `ID in (1,2,…)` (OData V4 remotes) or `ID eq 1 or ID eq 2 …`. */
const idsIn = (url: string) => [
  ...[...url.matchAll(/ID eq (\d+)/g)].map(m => Number(m[1])),
  ...[...url.matchAll(/ID in \(([\d,]+)\)/g)].flatMap(m => m[1].split(',').map(Number)),
]

describe('rule 1: delegated expand on one provider', () => {
  test('is forwarded whole, with renames translated inside the expand', async () => {
    await ctx.requests()
    const res = await ctx.http.GET(`${S}/Authors?$filter=ID le 2&$select=fullName&$expand=works($select=label;$orderby=number desc)`)
    expect(res.status).toBe(200)
    expect(res.data.value).toEqual([
      { ID: 1, fullName: 'Author 1', works: [{ author_ID: 1, number: 3, label: 'Work 1.3' }, { author_ID: 1, number: 2, label: 'Work 1.2' }, { author_ID: 1, number: 1, label: 'Work 1.1' }] },
      { ID: 2, fullName: 'Author 2', works: [{ author_ID: 2, number: 3, label: 'Work 2.3' }, { author_ID: 2, number: 2, label: 'Work 2.2' }, { author_ID: 2, number: 1, label: 'Work 2.1' }] },
    ])
    const { a } = await ctx.requests()
    expect(a).toHaveLength(1)
    expect(a[0]).toMatch(/\$expand=works\(\$select=title[^;]*;\$orderby=number desc\)/)
    expect(a[0]).toMatch(/^\/odata\/v4\/catalog\/Authors\?\$select=name,ID&/)

    const works = await ctx.http.GET(`${S}/Works(author_ID=3,number=2)?$expand=author($select=fullName,country)`)
    expect(works.data).toMatchObject({ label: 'Work 3.2', author: { ID: 3, fullName: 'Author 3', country: 'DE' } })
    expect((await ctx.requests()).a).toHaveLength(1)
  })
})

describe('rule 2: expand local → remote', () => {
  test('one remote call per chunk of distinct keys for a whole page of parents, never per row', async () => {
    await ctx.requests()
    const res = await ctx.http.GET(`${S}/Reviews?$select=ID,rating&$orderby=ID&$expand=book`)
    expect(res.status).toBe(200)
    expect(res.data.value).toHaveLength(REVIEWS)
    expect(res.data.value[6]).toEqual({ ID: 7, rating: 3, book: { ID: 7, name: 'Book 7', authorName: 'Author 7', stock: 7, modifiedAt: expect.any(String) } })
    expect(res.data.value.every((r: any) => r.book?.ID === r.ID && !('book_ID' in r))).toBe(true)
    const { a, b } = await ctx.requests()
    expect(b).toEqual([])
    // a single key into an OData V4 remote: one `ID in (…)` list bounded by characters (keyListLength), not 3 calls of 100 keys
    expect(a).toHaveLength(1)
    expect(a[0]).toMatch(/^\/odata\/v4\/catalog\/Books\?\$select=ID,title,author,stock,modifiedAt&\$filter=ID in \(1,2,3,[\d,]+\)&\$top=250$/)
    expect(idsIn(a[0])).toEqual(Array.from({ length: REVIEWS }, (_, i) => i + 1))

    await withSettings({ keyChunkSize: 500 }, async () => {
      await ctx.http.GET(`${S}/Reviews?$select=ID&$expand=book($select=name)`)
      expect((await ctx.requests()).a).toHaveLength(1)
    })
    await withSettings({ keyChunkSize: 20 }, async () => {
      await ctx.http.GET(`${S}/Reviews?$filter=ID le 100&$select=ID&$expand=book`)
      const { a: urls } = await ctx.requests()
      expect(urls).toHaveLength(5)
      for (const url of urls) {
        expect(idsIn(url).length).toBe(20)
        expect(url).toContain('$select=ID,title,author,stock,modifiedAt') // excluded `price` is never asked for
      }
      expect(urls.flatMap(idsIn).sort((x, y) => x - y)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1))
    })
  })

  test('each chunk is followed through server-driven paging', async () => {
    await ctx.a.control.pageLimit(8)
    try {
      await withSettings({ keyChunkSize: 20 }, async () => {
        await ctx.requests()
        const res = await ctx.http.GET(`${S}/Reviews?$filter=ID le 40&$expand=book($select=name)`)
        expect(res.data.value).toHaveLength(40)
        expect(res.data.value.every((r: any) => r.book?.name === `Book ${r.ID}`)).toBe(true)
        const { a } = await ctx.requests()
        expect(a).toHaveLength(6) // two chunks of 20 keys, each served in pages of 8 + 8 + 4
        expect(a.filter(u => u.includes('$skiptoken='))).toHaveLength(4)
      })
    } finally {
      await ctx.a.control.pageLimit(0)
    }
  })

  test('composite keys become an OR of ANDs', async () => {
    await ctx.requests()
    const res = await ctx.http.GET(`${S}/Reviews?$filter=ID le 4&$select=ID&$expand=work($select=label)`)
    expect(res.data.value).toEqual([
      { ID: 1, work: { author_ID: 2, number: 2, label: 'Work 2.2' } },
      { ID: 2, work: { author_ID: 3, number: 3, label: 'Work 3.3' } },
      { ID: 3, work: { author_ID: 4, number: 1, label: 'Work 4.1' } },
      { ID: 4, work: { author_ID: 5, number: 2, label: 'Work 5.2' } },
    ])
    const { a } = await ctx.requests()
    expect(a).toHaveLength(1)
    expect(a[0]).toContain('/Works?')
    expect(a[0]).toContain('(author_ID eq 2 and number eq 2) or (author_ID eq 3 and number eq 3)')
  })

  test('cross-provider expands make one call per provider', async () => {
    await ctx.requests()
    const res = await ctx.http.GET(`${S}/Reviews?$filter=ID le 50&$select=ID&$expand=book($select=name),edition($select=editionTitle)`)
    expect(res.data.value).toHaveLength(50)
    expect(res.data.value[44]).toEqual({ ID: 45, book: { ID: 45, name: 'Book 45' }, edition: { ID: 5, editionTitle: 'Book 5' } })
    const { a, b } = await ctx.requests()
    expect(a).toHaveLength(1)
    expect(b).toHaveLength(1)
    expect(b[0]).toMatch(/^\/odata\/v2\/catalog\/Books\?\$select=(title,ID|ID,title)&/)
  })
})

describe('rule 3: expand remote → local', () => {
  test('local expand items are read from the table by foreign key, with $filter/$orderby/$top per parent in the database', async () => {
    const seen: number[] = []
    const db = cds.db as any
    // async and registered with the entity's definition: @sap/cds 9 prefixes a string path with the
    // service name (also on the database service) and wraps sync after handlers (losing `count`)
    const count = async (rows: any) => { if (Array.isArray(rows)) seen.push(rows.length) }
    db.after('READ', cds.model!.definitions['FederationService.AuthorNotes'], count)
    try {
      await ctx.requests()
      const res = await ctx.http.GET(`${S}/Authors?$filter=ID le 3&$select=fullName&$expand=notes($select=text,priority;$filter=priority gt 1;$orderby=priority desc;$top=2)`)
      expect(res.status).toBe(200)
      expect(res.data.value).toEqual([1, 2, 3].map(a => ({
        ID: a,
        fullName: `Author ${a}`,
        notes: [{ ID: a * 10 + 5, text: `Note ${a}.5`, priority: 5 }, { ID: a * 10 + 4, text: `Note ${a}.4`, priority: 4 }],
      })))
      const { a } = await ctx.requests()
      expect(a).toHaveLength(1)
      expect(a[0]).not.toContain('notes') // the local expand never reaches the provider
      expect(Math.max(...seen)).toBe(6) // 3 parents × $top 2 came from the database, not 12 matching notes
    } finally {
      const list = db.handlers.after
      list.splice(list.findIndex((h: any) => h.handler === count), 1)
    }
  })

  test('without $top all matching children are attached in order, per parent', async () => {
    const res = await ctx.http.GET(`${S}/Authors?$filter=ID eq 4 or ID eq 5&$expand=notes($select=priority;$filter=priority le 2 or priority eq 5;$orderby=priority)`)
    expect(res.data.value.map((a: any) => [a.ID, a.notes.map((n: any) => n.priority)])).toEqual([[4, [1, 2, 5]], [5, [1, 2, 5]]])
  })
})

describe('rule 4: navigation', () => {
  test('local → remote: the local key is read and the remote target queried by key, with $select', async () => {
    await ctx.requests()
    const book = await ctx.http.GET(`${S}/Reviews(5)/book?$select=name`)
    expect(book.status).toBe(200)
    expect(book.data).toMatchObject({ ID: 5, name: 'Book 5' })
    const work = await ctx.http.GET(`${S}/Reviews(7)/work`)
    expect(work.data).toMatchObject({ author_ID: 8, number: 2, label: 'Work 8.2' })
    const { a } = await ctx.requests()
    expect(a).toHaveLength(2)
    expect(a[0]).toContain('ID eq 5')
    expect(a[1]).toContain('author_ID eq 8 and number eq 2')
  })

  test('remote → local: the remote entry is resolved, the local table queried by foreign key with $filter/$select', async () => {
    await ctx.requests()
    const res = await ctx.http.GET(`${S}/Authors(2)/notes?$filter=priority ge 4&$select=text&$orderby=priority`)
    expect(res.status).toBe(200)
    expect(res.data.value).toEqual([{ ID: 24, text: 'Note 2.4' }, { ID: 25, text: 'Note 2.5' }])
    expect((await ctx.requests()).a).toHaveLength(1)
    // the client's `or` stays inside its parentheses: only author 2's notes
    const or = await ctx.http.GET(`${S}/Authors(2)/notes?$filter=priority eq 1 or priority eq 5&$select=ID`)
    expect(or.data.value.map((n: any) => n.ID).sort()).toEqual([21, 25])
    // an entry that does not exist on the remote side
    expect((await ctx.http.GET(`${S}/Authors(999)/notes`)).status).toBe(404)
  })
})

describe('rule 5: $filter through an association into the other side', () => {
  test('is answered on the other side first and rewritten to a key list; an `or` never widens', async () => {
    await ctx.requests()
    const res = await ctx.http.GET(`${S}/Reviews?$filter=book/name eq 'Book 7' or ID eq 9&$select=ID&$orderby=ID`)
    expect(res.data.value).toEqual([{ ID: 7 }, { ID: 9 }])
    const { a } = await ctx.requests()
    expect(a).toHaveLength(1)
    expect(a[0]).toContain("title eq 'Book 7'")

    const and = await ctx.http.GET(`${S}/Reviews?$filter=(book/stock lt 5 or book/stock gt 98) and rating eq 3&$select=ID&$orderby=ID`)
    // stock = ID % 100; rating = ID % 5 + 1 → rating 3 when ID % 5 = 2 (stock > 98: 99, 199 have rating 5)
    expect(and.data.value.map((r: any) => r.ID)).toEqual([2, 102, 202])

    // remote → local: the filter goes to the local table first
    const remote = await ctx.http.GET(`${S}/AuthorNotes?$filter=author/country eq 'DE' and priority eq 1&$select=ID&$orderby=ID`)
    expect(remote.data.value.map((n: any) => n.ID)).toEqual([31, 61, 91, 121, 151, 181, 211, 241, 271, 301])
  })

  test('lambda filters (any/all) over to-many associations are rewritten the same way', async () => {
    await ctx.requests()
    const any = await ctx.http.GET(`${S}/Authors?$filter=notes/any(n:n/text eq 'Note 12.3' or n/text eq 'Note 14.1')&$select=fullName`)
    expect(any.data.value).toEqual([{ ID: 12, fullName: 'Author 12' }, { ID: 14, fullName: 'Author 14' }])
    const [url] = (await ctx.requests()).a
    expect(idsIn(url).sort((x, y) => x - y)).toEqual([12, 14])
    const all = await ctx.http.GET(`${S}/Authors?$filter=ID le 3 and notes/all(n:n/priority le 5)&$select=ID`)
    expect(all.data.value.map((a: any) => a.ID)).toEqual([1, 2, 3])
  })

  test('a key list beyond the limit fails with a clear 400, never an unbounded URL', async () => {
    await withSettings({ maxFilterKeys: 50 }, async () => {
      await ctx.requests()
      const res = await ctx.http.GET(`${S}/Reviews?$filter=book/stock ge 0`)
      expect(res.status).toBe(400)
      expect(res.data.error.message).toMatch(/filter through 'book' .* matches more than 50 rows/)
      const { a } = await ctx.requests()
      expect(a).toHaveLength(1) // the first page of keys with $count decided it
      expect(a[0]).toContain('$count=true')
      expect(a[0]).toContain('$top=51')
    })
  })
})

describe('rule 6: nested $expand/$select inside expands', () => {
  test('are translated recursively, across both boundaries', async () => {
    await ctx.requests()
    const res = await ctx.http.GET(`${S}/Reviews?$filter=ID le 2&$select=ID&$expand=work($select=label;$expand=author($select=fullName;$expand=notes($select=text;$orderby=priority desc;$top=1)))`)
    expect(res.status).toBe(200)
    expect(res.data.value).toEqual([
      { ID: 1, work: { author_ID: 2, number: 2, label: 'Work 2.2', author: { ID: 2, fullName: 'Author 2', notes: [{ ID: 25, text: 'Note 2.5' }] } } },
      { ID: 2, work: { author_ID: 3, number: 3, label: 'Work 3.3', author: { ID: 3, fullName: 'Author 3', notes: [{ ID: 35, text: 'Note 3.5' }] } } },
    ])
    const { a } = await ctx.requests()
    expect(a).toHaveLength(1)
    expect(a[0]).toMatch(/\$expand=author\(\$select=(name,ID|ID,name)\)/)
    expect(a[0]).not.toContain('notes')
  })
})

describe('rule 7: writing a foreign key through an association', () => {
  test('writes only the local foreign key; nothing is created remotely', async () => {
    await ctx.requests()
    expect((await ctx.http.POST(`${S}/Reviews`, { ID: 900, rating: 4, book_ID: 12 })).status).toBe(201)
    expect((await ctx.http.POST(`${S}/Reviews`, { ID: 901, rating: 4, book: { ID: 13 } })).status).toBe(201)
    expect((await ctx.http.PATCH(`${S}/Reviews(900)`, { book_ID: 14 })).status).toBe(200)
    expect((await ctx.requests()).a).toEqual([])
    expect(await ql.SELECT.from('fed.Reviews').columns('ID', 'book_ID').where({ ID: { in: [900, 901] } }).orderBy('ID')).toEqual([{ ID: 900, book_ID: 14 }, { ID: 901, book_ID: 13 }])
    const read = await ctx.http.GET(`${S}/Reviews(900)?$select=ID&$expand=book($select=name)`)
    expect(read.data).toMatchObject({ ID: 900, book: { ID: 14, name: 'Book 14' } })
    expect(read.data).not.toHaveProperty('book_ID')
  })

  test('deleting a remote row does not cascade to local rows', async () => {
    expect((await ctx.http.DELETE(`${S}/Books(250)`)).status).toBe(204)
    const review = await ctx.http.GET(`${S}/Reviews(250)?$select=ID,book_ID&$expand=book`)
    expect(review.data).toMatchObject({ ID: 250, book_ID: 250, book: null })
  })
})

describe('rule 8: several consumer entities projecting one remote source', () => {
  test('lookups by full entity name stay distinct and are preferred over the by-source registry', async () => {
    const res = await ctx.http.GET(`${S}/Reviews?$filter=ID le 2&$select=ID&$expand=book($select=name),title($select=label)`)
    expect(res.data.value).toEqual([
      { ID: 1, book: { ID: 1, name: 'Book 1' }, title: { ID: 1, label: 'Book 1' } },
      { ID: 2, book: { ID: 2, name: 'Book 2' }, title: { ID: 2, label: 'Book 2' } },
    ])
    // rows of following pages are renamed through the registry: each view keeps its names
    await ctx.a.control.pageLimit(25)
    try {
      const titles = await ctx.http.GET(`${S}/BookTitles?$orderby=ID&$top=60`)
      const books = await ctx.http.GET(`${S}/Books?$select=ID,name&$orderby=ID&$top=60`)
      expect(titles.data.value[59]).toEqual({ ID: 60, label: 'Book 60' })
      expect(books.data.value[59]).toEqual({ ID: 60, name: 'Book 60' })
    } finally {
      await ctx.a.control.pageLimit(0)
    }
    const { delegateRegistry } = createRequire(__filename)('cap-data-pipeline/dist/lib/federation/delegate/index.js')
    const bySource = delegateRegistry.bySourceName('FedA.Books')
    expect(bySource.remoteEntity).toBe('FedA.Books') // the last registration for the source …
    expect(delegateRegistry.lookup('FederationService.BookTitles').inverse.get('title')).toBe('label') // … never replaces full-name entries
    expect(delegateRegistry.lookup('FederationService.Books').inverse.get('title')).toBe('name')
    expect(delegateRegistry.lookup('FederationService.BooksReadOnly').inverse.get('title')).toBe('title')
  })
})
