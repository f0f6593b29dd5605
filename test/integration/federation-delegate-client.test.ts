/**
 * The HTTP client of the proxy's own remote reads: CAP's native-fetch client when the binding is
 * a plain URL (this project has the SAP Cloud SDK installed, so CAP's default is the Cloud SDK),
 * while the application's own calls on the same remote service keep CAP's choice, and
 * `cds.env.remote.native_fetch: false` keeps the Cloud SDK for everything. Node's fetch is
 * what the native client calls; the Cloud SDK sends through axios and never calls it.
 */
import cds from '@sap/cds'
import { vi } from 'vitest'
import { useFederation } from '../helpers/federation'

const ctx = useFederation()
const S = '/odata/v4/federation'

/** Provider data requests that went out through Node's fetch while `run` ran. */
async function fetchedDuring(run: () => Promise<unknown>): Promise<string[]> {
  const spy = vi.spyOn(globalThis, 'fetch')
  try {
    await run()
    return spy.mock.calls.map(([input]) => String(input instanceof Request ? input.url : input)).filter(url => url.includes('/odata/v4/catalog'))
  } finally {
    spy.mockRestore()
  }
}

type RemoteEnv = { native_fetch?: boolean }
const remoteEnv = () => (cds.env as unknown as { remote: RemoteEnv }).remote

test('a delegated read goes out on the native-fetch client; its result is unchanged', async () => {
  expect(remoteEnv().native_fetch ?? undefined).toBeUndefined()
  let body: unknown
  const urls = await fetchedDuring(async () => {
    const res = await ctx.http.GET(`${S}/Books?$filter=ID le 2&$orderby=ID`)
    expect(res.status).toBe(200)
    body = res.data.value
  })
  expect(body).toEqual([
    { ID: 1, name: 'Book 1', authorName: 'Author 1', stock: 1, modifiedAt: expect.any(String) },
    { ID: 2, name: 'Book 2', authorName: 'Author 2', stock: 2, modifiedAt: expect.any(String) },
  ])
  expect(urls).toHaveLength(1)
  expect(decodeURIComponent(urls[0])).toMatch(/\/odata\/v4\/catalog\/Books\?\$select=ID,title,author,stock,modifiedAt&.*\$filter=ID le 2/)
})

test('a remote 4xx keeps its status on the native-fetch client', async () => {
  const urls = await fetchedDuring(async () => {
    expect((await ctx.http.GET(`${S}/Books(999999)`)).status).toBe(404)
  })
  expect(urls).toHaveLength(1)
})

test('the application\'s own calls on the remote service keep CAP\'s client, also while the proxy reads', async () => {
  const remote = await cds.connect.to('FedA')
  const urls = await fetchedDuring(async () => {
    const [own, proxied] = await Promise.all([
      remote.run(SELECT.from('FedA.Books').columns('ID', 'title').where({ ID: 77 })),
      ctx.http.GET(`${S}/Books?$filter=ID eq 78`),
    ])
    expect(own).toEqual([{ ID: 77, title: 'Book 77' }])
    expect(proxied.data.value).toHaveLength(1)
  })
  expect(urls).toHaveLength(1)
  expect(decodeURIComponent(urls[0])).toContain('ID eq 78')
  expect(urls.some(url => decodeURIComponent(url).includes('ID eq 77'))).toBe(false)
})

test('remote.native_fetch: false keeps the Cloud SDK for the proxy\'s reads too', async () => {
  const env = remoteEnv()
  const before = env.native_fetch
  env.native_fetch = false
  try {
    const urls = await fetchedDuring(async () => {
      expect((await ctx.http.GET(`${S}/Books(5)`)).data).toMatchObject({ ID: 5, name: 'Book 5' })
    })
    expect(urls).toEqual([])
  } finally {
    env.native_fetch = before
  }
  expect(remoteEnv().native_fetch).toBe(before)
})
