/**
 * A real HTTP proxy on loopback in front of a switchable upstream: a consumer keeps one URL
 * while the provider "deployed" behind it changes (test/integration/schema-drift*). Every
 * request's decoded URL is logged, `$metadata` and `$csn` included.
 */
import http from 'node:http'

export interface SwitchProxy {
  url: string
  /** The upstream base URL requests go to (switch it to "redeploy"). */
  target: string
  log: string[]
  close(): Promise<void>
}

export async function startSwitchProxy(): Promise<SwitchProxy> {
  const proxy = { target: '', log: [] as string[] } as SwitchProxy
  const server = http.createServer((req, res) => {
    proxy.log.push(decodeURIComponent(req.url ?? ''))
    const upstream = http.request(`${proxy.target}${req.url}`, { method: req.method, headers: { ...req.headers, host: new URL(proxy.target).host } }, response => {
      res.writeHead(response.statusCode ?? 502, response.headers)
      response.pipe(res)
    })
    upstream.on('error', error => { res.writeHead(502); res.end(String(error)) })
    req.pipe(upstream)
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  proxy.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`
  proxy.close = () => new Promise<void>(resolve => { server.closeAllConnections(); server.close(() => resolve()) })
  return proxy
}
