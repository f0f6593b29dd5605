/**
 * When the proxy's own remote reads may leave CAP's Cloud SDK client for its native-fetch one:
 * only for a binding both serve alike (a plain http(s) URL, no or basic authentication, no proxy).
 */
import { plainBinding } from '../../lib/federation/delegate/client'

describe('plainBinding', () => {
  const url = 'http://127.0.0.1:4004/odata/v4/catalog'
  const proxies = ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy']
  const saved = Object.fromEntries(proxies.map(name => [name, process.env[name]]))
  beforeEach(() => { for (const name of proxies) delete process.env[name] })
  afterAll(() => { for (const name of proxies) if (saved[name] === undefined) delete process.env[name]; else process.env[name] = saved[name] })

  test('a URL, with basic authentication, headers and query parameters, is plain', () => {
    expect(plainBinding({ name: 'FedA', url })).toBe(true)
    expect(plainBinding({ name: 'FedA', url: 'https://example.com/x', username: 'u', password: 'p', authentication: 'BasicAuthentication', headers: { a: '1' }, queries: { b: '2' }, requestTimeout: 5000 })).toBe(true)
  })

  test('a destination name, another authentication, certificates or unknown properties need the Cloud SDK', () => {
    expect(plainBinding('my-destination')).toBe(false)
    expect(plainBinding(undefined)).toBe(false)
    expect(plainBinding({ name: 'FedA' })).toBe(false)
    expect(plainBinding({ url: 'ftp://example.com' })).toBe(false)
    expect(plainBinding({ url, authentication: 'OAuth2ClientCredentials', clientId: 'c', clientSecret: 's' })).toBe(false)
    expect(plainBinding({ url, authentication: 'ClientCertificateAuthentication' })).toBe(false)
    expect(plainBinding({ url, certificates: [] })).toBe(false)
    expect(plainBinding({ url, proxyConfiguration: { host: 'proxy', port: 8080 } })).toBe(false)
  })

  test('a proxy in the environment needs the Cloud SDK (Node\'s fetch ignores it)', () => {
    process.env.HTTPS_PROXY = 'http://proxy:8080'
    expect(plainBinding({ url })).toBe(false)
  })
})
