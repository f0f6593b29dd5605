/**
 * Delegated reads under remote latency (issue 24): the provider holds each request a while, as a
 * network round trip would. Independent remote reads of one request go out at once — expands into
 * two remote services overlap instead of costing one round trip each — and a 1,000-parent expand is
 * one provider request.
 */
import { ql } from '../helpers/consumer'
import { useFederation, type FederationContext } from '../helpers/federation'
import type { ProviderStats } from '../helpers/apps'

const S = '/odata/v4/federation'
const PARENTS = 1000
/** The provider's round trip: long enough that reads one after another cannot look simultaneous. */
const DELAY = 1000

const ctx = useFederation({
  seed: async c => {
    await c.a.control.seed({ from: 301, count: PARENTS - 300 })
    // provider B (OData V2) has editions 1..40
    const reviews = Array.from({ length: PARENTS }, (_, i) => ({ ID: i + 1, rating: 3, book_ID: i + 1, edition_ID: i < 40 ? i + 1 : null }))
    await ql.INSERT.into('fed.Reviews').entries(reviews)
  },
})

async function withDelay(c: FederationContext, fn: () => Promise<void>): Promise<void> {
  await Promise.all([c.a.control.faults({ delay: DELAY }), c.b.control.faults({ delay: DELAY })])
  try {
    await fn()
  } finally {
    await Promise.all([c.a.control.faults({}), c.b.control.faults({})])
  }
}

const lastArrival = (stats: ProviderStats) => stats.times[stats.times.length - 1].at

describe('delegated reads under latency', () => {
  test('expands into two remote services go out at once', async () => {
    const url = `${S}/Reviews?$filter=ID le 40&$orderby=ID&$expand=book($select=name),edition($select=editionTitle)`
    // first without latency: connections and metadata are in place, as in a running app
    expect((await ctx.http.GET(url)).status).toBe(200)
    await withDelay(ctx, async () => {
      await ctx.requests()
      const res = await ctx.http.GET(url)
      expect(res.status).toBe(200)
      expect(res.data.value).toHaveLength(40)
      for (const row of res.data.value) expect(row).toMatchObject({ book: { name: `Book ${row.ID}` }, edition: { editionTitle: `Book ${row.ID}` } })
      const [a, b] = await Promise.all([ctx.a.control.stats(), ctx.b.control.stats()])
      const sent = await ctx.requests()
      expect(sent.a).toHaveLength(1)
      expect(sent.b).toHaveLength(1)
      // one after the other, the second would arrive a whole round trip after the first
      expect(Math.abs(lastArrival(a) - lastArrival(b))).toBeLessThan(DELAY / 2)
    })
  })

  test('a 1,000-parent expand is one provider request', async () => {
    const url = `${S}/Reviews?$top=${PARENTS}&$orderby=ID&$expand=book($select=name)`
    expect((await ctx.http.GET(url)).status).toBe(200)
    await withDelay(ctx, async () => {
      await ctx.requests()
      const res = await ctx.http.GET(url)
      expect(res.data.value).toHaveLength(PARENTS)
      expect(res.data.value.every((r: { ID: number; book?: { name?: string } }) => r.book?.name === `Book ${r.ID}`)).toBe(true)
      // CAP wraps the long `ID in (…)` list in a $batch: still one round trip
      expect((await ctx.requests()).a).toEqual(['/odata/v4/catalog/$batch'])
    })
  })
})
