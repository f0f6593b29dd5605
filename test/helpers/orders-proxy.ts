/**
 * A real HTTP proxy between the demo consumer and the demo provider that can fail or slow down the
 * provider's Orders requests (the console's browser tests: failed runs, runs slow enough to watch).
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'

const ORDERS = /\/Orders\b/

export class OrdersProxy {
  /** While set, every Orders request is answered with HTTP 500. */
  fail = false
  /** How long an Orders request waits before it is forwarded (ms; 0: at once). */
  delay = 0
  /** While set, a delayed Orders request also waits for it (a test holds a run's pages until the console showed what it checks). */
  gate?: (url: string) => Promise<unknown>
  private server?: http.Server

  /** `delays(url)`: whether an Orders request waits `delay` (e.g. not the key listings of a sweep). */
  constructor(private readonly delays: (url: string) => boolean = () => true) {}

  /** Starts the proxy in front of `target`; resolves with its URL (fits `startDemo({ salesUrl })`). */
  readonly start = (target: string): Promise<string> => {
    const upstream = new URL(target)
    const server = this.server = http.createServer((req, res) => {
      const url = req.url ?? ''
      const orders = ORDERS.test(url)
      if (this.fail && orders) {
        res.writeHead(500, { 'content-type': 'application/json' })
        res.end(JSON.stringify({ error: { code: '500', message: 'provider down (test)' } }))
        return
      }
      const forward = () => {
        const out = http.request({ host: upstream.hostname, port: upstream.port, path: url, method: req.method, headers: { ...req.headers, host: upstream.host } }, answer => {
          res.writeHead(answer.statusCode ?? 502, answer.headers)
          answer.pipe(res)
        })
        out.on('error', error => { res.statusCode = 502; res.end(String(error)) })
        req.pipe(out)
      }
      if (orders && this.delay && this.delays(url)) {
        const gate = this.gate
        setTimeout(() => void (gate ? gate(url).catch(() => undefined) : Promise.resolve()).then(forward), this.delay)
      } else forward()
    })
    return new Promise(resolve => server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)))
  }

  close(): Promise<void> {
    return new Promise(resolve => (this.server ? this.server.close(() => resolve()) : resolve()))
  }
}
