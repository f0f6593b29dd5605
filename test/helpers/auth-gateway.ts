/**
 * A real HTTP gateway on loopback that puts authentication in front of an open upstream (the
 * provider fixture), as an API gateway or an authenticating provider would: a request passes only
 * with `Authorization: Basic <user:password>` of its one user or `Authorization: Bearer <token>`
 * with a token its own OAuth2 token endpoint issued; anything else is answered 401 with
 * `WWW-Authenticate`, never forwarded. Passing requests go upstream without the header.
 *
 *   POST /oauth/token   client-credentials grant (`grant_type=client_credentials`, client id and
 *                       secret as HTTP Basic or form fields) → `{ access_token, token_type, expires_in }`;
 *                       a wrong client is answered 401 `invalid_client`.
 *
 * `seen` logs every request (the token endpoint's too): method, path, the Authorization scheme and
 * value as received, and the status answered.
 */
import http from 'node:http'
import { randomUUID } from 'node:crypto'
import { basic } from './auth'

export interface GatewayRequest {
  method: string
  path: string
  /** The Authorization header as received (undefined when absent). */
  authorization?: string
  status: number
}

export interface AuthGateway {
  url: string
  /** The token endpoint (`<url>/oauth/token`). */
  tokenUrl: string
  user: string
  password: string
  clientId: string
  clientSecret: string
  /** Tokens the token endpoint issued (the only bearer tokens accepted). */
  issued: string[]
  seen: GatewayRequest[]
  close(): Promise<void>
}


export async function startAuthGateway(upstream: string): Promise<AuthGateway> {
  const gateway = {
    user: 'pipeline', password: `pw-${randomUUID()}`,
    clientId: 'pipeline-client', clientSecret: `cs-${randomUUID()}`,
    issued: [] as string[], seen: [] as GatewayRequest[],
  } as AuthGateway
  const upstreamHost = new URL(upstream).host

  const answer = (res: http.ServerResponse, entry: GatewayRequest, status: number, body: object, headers: Record<string, string> = {}) => {
    entry.status = status
    res.writeHead(status, { 'content-type': 'application/json', ...headers })
    res.end(JSON.stringify(body))
  }

  const token = (req: http.IncomingMessage, res: http.ServerResponse, entry: GatewayRequest) => {
    let body = ''
    req.setEncoding('utf8')
    req.on('data', chunk => { body += chunk })
    req.on('end', () => {
      const form = new URLSearchParams(body)
      const client = req.headers.authorization === basic(gateway.clientId, gateway.clientSecret)
        || (form.get('client_id') === gateway.clientId && form.get('client_secret') === gateway.clientSecret)
      if (req.method !== 'POST' || form.get('grant_type') !== 'client_credentials') return answer(res, entry, 400, { error: 'unsupported_grant_type' })
      if (!client) return answer(res, entry, 401, { error: 'invalid_client' })
      const accessToken = `at-${randomUUID()}`
      gateway.issued.push(accessToken)
      answer(res, entry, 200, { access_token: accessToken, token_type: 'bearer', expires_in: 3600 })
    })
  }

  const server = http.createServer((req, res) => {
    const entry: GatewayRequest = { method: req.method ?? '', path: decodeURIComponent(req.url ?? ''), authorization: req.headers.authorization, status: 0 }
    gateway.seen.push(entry)
    if (new URL(req.url ?? '/', 'http://gateway').pathname === '/oauth/token') return token(req, res, entry)

    const authorization = req.headers.authorization ?? ''
    const bearer = /^Bearer (.+)$/i.exec(authorization)?.[1]
    const accepted = authorization === basic(gateway.user, gateway.password) || (bearer !== undefined && gateway.issued.includes(bearer))
    if (!accepted) {
      req.resume()
      return answer(res, entry, 401, { error: { code: '401', message: 'Unauthorized' } }, { 'www-authenticate': 'Basic realm="provider", Bearer realm="provider"' })
    }
    const headers = { ...req.headers, host: upstreamHost }
    delete headers.authorization
    const forward = http.request(`${upstream}${req.url}`, { method: req.method, headers }, response => {
      entry.status = response.statusCode ?? 502
      res.writeHead(entry.status, response.headers)
      response.pipe(res)
    })
    forward.on('error', error => { entry.status = 502; res.writeHead(502); res.end(String(error)) })
    req.pipe(forward)
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  gateway.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`
  gateway.tokenUrl = `${gateway.url}/oauth/token`
  gateway.close = () => new Promise<void>(resolve => { server.closeAllConnections(); server.close(() => resolve()) })
  return gateway
}
