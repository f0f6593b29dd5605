/**
 * Delegated reads under remote latency (issue 24, point 5), a series of bench/federation-delegate.mjs.
 *
 * The provider holds every data request `BENCH_DELEGATE_LATENCY` ms (default 50) before it
 * serves it (test/fixtures/provider/srv/faults.js, per HTTP request: a `$batch` is one request,
 * as it is one round trip), and the first request on a new TCP connection one latency more (the
 * handshake a real network adds; `BENCH_DELEGATE_HANDSHAKE=0`: off). What the delay leaves out:
 * transfer time of the bodies (bandwidth, TCP slow start) and TLS, the same for both sides.
 *
 * Direct vs delegated, alternating, p50 and p95, direct defined as in the loopback cases:
 *   a. single-entity read: the exact provider URL the consumer sends, straight from the client;
 *   c. local → remote `$expand` over 1,000 parents: the consumer's local page without the expand,
 *      then one provider request for the 1,000 books (one after the other);
 *   c'. the same expand from a second consumer whose key list goes out in 10 chunks of 100 keys
 *      (`federation.keyChunkSize: 100`; the shape of 1,000 UUID keys at the default `keyListLength`):
 *      chunks sent one after another would cost 10 latencies, in parallel one. Its floor beside
 *      the target: the local page, then the same 10 provider requests sent straight, all at once
 *      (what the provider alone spends serving 10 requests instead of one).
 * Target per case: delegated ≤ 1.2 × direct + 5 ms at p50 and at p95 (direct is the floor).
 * Beside it: the provider requests of one delegated read, the connections it opened, and the spread
 * of their arrival times (below one latency: they were in flight together).
 */
import { alternate, faults, get, now, round, stat, stats, timed } from './federation-common.mjs'

export const LATENCY = Math.max(0, Number(process.env.BENCH_DELEGATE_LATENCY ?? 50))
const HANDSHAKE = process.env.BENCH_DELEGATE_HANDSHAKE !== '0'
const FACTOR = 1.2
const PLUS_MS = 5
export const LATENCY_TARGET = `delegated ≤ ${FACTOR} × direct + ${PLUS_MS} ms at p50 and p95`
const bound = direct => round(FACTOR * direct + PLUS_MS)

/** Provider requests, new connections and the spread of arrivals of one delegated read (after warm-up). */
async function probe(provider, url, reads = 5) {
  const out = []
  for (let i = 0; i < reads; i++) {
    const before = await stats(provider.url)
    await get(url)
    const after = await stats(provider.url)
    const requests = after.requests - before.requests
    const arrivals = after.times.slice(after.times.length - requests).map(t => t.at)
    out.push({ requests, connections: after.connections - before.connections, metadata: after.metadata - before.metadata, spreadMs: requests ? Math.max(...arrivals) - Math.min(...arrivals) : 0 })
  }
  const max = key => Math.max(...out.map(o => o[key]))
  return { requests: max('requests'), connections: max('connections'), metadata: max('metadata'), spreadMs: max('spreadMs') }
}

function judge(name, directTimes, delegatedTimes, extra) {
  const direct = stat(directTimes)
  const delegated = stat(delegatedTimes)
  const limit = { p50: bound(direct.p50), p95: bound(direct.p95) }
  const ratio = { p50: round(delegated.p50 / direct.p50), p95: round(delegated.p95 / direct.p95) }
  return { name, direct, delegated, ratio, bound: limit, met: delegated.p50 <= limit.p50 && delegated.p95 <= limit.p95, ...extra }
}

/**
 * Runs the series. `single`: delegated and direct URLs (alternated by index); `expand`: the
 * delegated URL, the local page and the direct remote request; `chunked`: the delegated expand URL
 * on the chunking consumer (optional). Returns the results object for the JSON file.
 */
export async function latencySeries({ provider, iterations, single, expand, chunked }) {
  const n = Math.max(20, Math.min(iterations, 100))
  const cases = []
  await faults(provider.url, { delay: LATENCY, handshake: HANDSHAKE })
  try {
    if (single) {
      const [d, g] = await alternate([i => timed(single.direct[i % single.direct.length])(), i => timed(single.delegated[i % single.delegated.length])()], n, 5)
      cases.push(judge('single-entity read', d, g, { iterations: n, provider: await probe(provider, single.delegated[0]) }))
    }
    if (expand) {
      const direct = async () => (await timed(expand.local)()) + (await timed(expand.remote)())
      const variants = [direct, timed(expand.delegated)]
      if (chunked) {
        const allAtOnce = async () => {
          const t0 = now()
          await Promise.all(chunked.direct.map(url => get(url)))
          return now() - t0
        }
        variants.push(timed(chunked.delegated), async () => (await timed(expand.local)()) + (await allAtOnce()))
      }
      const [d, g, c, f] = await alternate(variants, n, 3)
      cases.push(judge('local → remote $expand, 1000 parents', d, g, { iterations: n, provider: await probe(provider, expand.delegated) }))
      if (c) cases.push(judge(`  the same in ${chunked.direct.length} key chunks`, d, c, { iterations: n, provider: await probe(provider, chunked.delegated), chunkFloor: stat(f) }))
    }
  } finally {
    await faults(provider.url)
  }
  return { latencyMs: LATENCY, handshake: HANDSHAKE, target: LATENCY_TARGET, cases }
}

/** The table of the series: beside each figure its floor (direct), the ratio and the bound. */
export function printLatency(series, mark) {
  console.log(`\ndelegated reads at ${series.latencyMs} ms remote latency per round trip${series.handshake ? ' (+1 for a new connection)' : ''}; target ${series.target}`)
  console.log('%s  %s  %s  %s  %s', 'case'.padEnd(38), 'direct = floor p50 / p95'.padEnd(25), 'delegated p50 / p95'.padEnd(20), 'ratio p50 / p95'.padEnd(16), 'bound p50 / p95 ms')
  for (const c of series.cases) {
    console.log('%s  %s  %s  %s  %s  %s', c.name.padEnd(38), `${c.direct.p50} / ${c.direct.p95}`.padEnd(25), `${c.delegated.p50} / ${c.delegated.p95}`.padEnd(20), `${c.ratio.p50}× / ${c.ratio.p95}×`.padEnd(16), `${c.bound.p50} / ${c.bound.p95}`, mark(c.met))
    const p = c.provider
    const overlap = p.requests < 2 ? 'one round trip' : !series.latencyMs ? 'no latency to tell overlap by' : p.spreadMs < series.latencyMs ? 'in flight together' : 'one after another'
    if (c.chunkFloor) console.log('    floor of %d requests: the local page, then the same provider requests sent straight, all at once: %s / %s ms (delegated %s× / %s× that)', p.requests, c.chunkFloor.p50, c.chunkFloor.p95, round(c.delegated.p50 / c.chunkFloor.p50), round(c.delegated.p95 / c.chunkFloor.p95))
    console.log('    one delegated read: %d provider request(s), arrivals within %d ms (%s), %d new connection(s), %d $metadata', p.requests, p.spreadMs, overlap, p.connections, p.metadata)
  }
}
