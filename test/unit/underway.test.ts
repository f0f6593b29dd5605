/**
 * `underway`: how long a run lets a read just started go out before its synchronous database
 * work. It ends once the request's headers are on the socket (Node's fetch reports that), not
 * after a fixed wait; for clients that report nothing it falls back to a few event-loop turns.
 */
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { underway } from '../../lib/adapters/source/on-the-wire'

/** Counts event-loop turns (setImmediate) until stopped. */
function turnCounter(): { turns: () => number; stop: () => void } {
  let turns = 0
  let stopped = false
  const tick = () => {
    if (stopped) return
    turns++
    setImmediate(tick)
  }
  setImmediate(tick)
  return { turns: () => turns, stop: () => { stopped = true } }
}

describe('underway', () => {
  let server: http.Server
  let base: string
  const held: http.ServerResponse[] = []
  const received: string[] = []

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      received.push(req.url ?? '')
      if (req.url === '/warm') res.end('{}')
      else held.push(res) // answered only at the end: the read is still under way
    })
    server.keepAliveTimeout = 60_000
    await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    await (await fetch(`${base}/warm`)).text() // a kept-alive connection, as a run's client has
  })

  afterAll(async () => {
    for (const res of held) res.end('{}')
    server.closeAllConnections()
    await new Promise(resolve => server.close(resolve))
  })

  test('ends once the request is on the wire, long before the fallback wait', async () => {
    const read = fetch(`${base}/held`).then(r => r.text())
    const counter = turnCounter()
    await underway(read)
    const turns = counter.turns()
    counter.stop()
    // the fallback alone takes eight turns and then a timer; the answer never came
    expect(turns).toBeLessThan(8)
    await vi.waitFor(() => expect(received).toContain('/held'))
    held.shift()!.end('{}')
    expect(await read).toBe('{}')
  })

  test('ends when the read settles first (in-process sources)', async () => {
    const counter = turnCounter()
    await underway(Promise.resolve([{ ID: 1 }]))
    expect(counter.turns()).toBe(0)
    counter.stop()
    await underway(Promise.reject(new Error('source failed'))) // never throws: the run surfaces it
  })

  test('falls back to a bounded wait for reads that report nothing', async () => {
    const counter = turnCounter()
    await underway(new Promise(() => undefined))
    expect(counter.turns()).toBeGreaterThanOrEqual(8)
    counter.stop()
  })
})
