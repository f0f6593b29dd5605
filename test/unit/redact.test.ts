/**
 * lib/security/redact.ts: every form a credential may take in a text is masked; texts without
 * credentials stay as they are; database errors are recognized.
 */
import cds from '@sap/cds'
import { isDatabaseError, publicError, redactText, withCorrelation } from '../../lib/security/redact'

describe('redactText', () => {
  test.each([
    ['URL user info', 'GET http://user:S3cret-pw@host:4004/odata/v4/x failed', 'S3cret-pw'],
    ['URL user info, https and a path', 'cannot reach https://tech%40corp:S3cret-pw@api.example.com/a?b=1', 'S3cret-pw'],
    ['key-like query parameters', 'GET /Books?sap-client=100&apikey=K3y-123&x=1', 'K3y-123'],
    ['token and secret parameters', '/x?access_token=T0k3n-abc&client_secret=Cl13nt-s', 'T0k3n-abc'],
    ['Authorization headers', "headers: { Authorization: 'Basic dXNlcjpwYXNzd29yZA==' }", 'dXNlcjpwYXNzd29yZA=='],
    ['bearer tokens in text', 'sent with Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.sig', 'eyJhbGciOiJIUzI1NiJ9'],
    ['JSON passwords', '{"username":"u","password":"Pw-in-json"}', 'Pw-in-json'],
    ['x-api-key headers', "{ 'x-api-key': 'Hdr-key-42' }", 'Hdr-key-42'],
  ])('%s', (_name, text, secret) => {
    const out = redactText(text, [])
    expect(out).not.toContain(secret)
    expect(out).toContain('***')
  })

  test('secret values of the service bindings are masked in any form (cds.requires credentials)', () => {
    const requires = cds.env.requires as unknown as Record<string, unknown>
    requires.RedactProbe = { kind: 'odata', credentials: { url: 'http://h', password: 'Binding-pw-1', headers: { 'x-custom': 'Hdr-value-2' }, clientsecret: 'Client-secret-3' } }
    try {
      const out = redactText(`a Binding-pw-1 b ${encodeURIComponent('Hdr-value-2')} c Client-secret-3 d ${Buffer.from('Binding-pw-1').toString('base64')}`)
      expect(out).not.toMatch(/Binding-pw-1|Hdr-value-2|Client-secret-3|QmluZGluZy1wdy0x/)
    } finally {
      delete requires.RedactProbe
    }
  })

  test('texts without credentials stay as they are', () => {
    for (const text of ['pipeline \'books\': 3 created, author: Author 1', 'GET /Books?$filter=ID eq 1&$top=10', 'design=x; authentication: BasicAuthentication']) {
      expect(redactText(text, [])).toBe(text)
    }
  })
})

describe('database errors', () => {
  test('SQLite and PostgreSQL errors are recognized; others are not', () => {
    expect(isDatabaseError(Object.assign(new Error('no such table: main.x_Y'), { code: 'ERR_SQLITE_ERROR' }))).toBe(true)
    expect(isDatabaseError(Object.assign(new Error('relation "x_y" does not exist'), { code: '42P01', severity: 'ERROR' }))).toBe(true)
    expect(isDatabaseError(new Error('SELECT a FROM b WHERE c'))).toBe(true)
    expect(isDatabaseError(new Error('Error during request to remote service: 404'))).toBe(false)
  })

  test('the public message names the missing table and the correlation id, not the SQL; the detail keeps it', () => {
    const shown = publicError(new Error('no such table: sec_Copy in:\nDELETE FROM sec_Copy'), "pipeline 'copy'")
    expect(shown.message).toMatch(/pipeline 'copy' \(sec_Copy\) is not deployed: run cds deploy/)
    expect(shown.message).toContain(shown.correlationId)
    expect(shown.message).not.toMatch(/DELETE|no such table/)
    expect(shown.detail).toContain('DELETE FROM sec_Copy')
    expect(withCorrelation(shown.message, 'other')).toBe(shown.message)
  })
})
