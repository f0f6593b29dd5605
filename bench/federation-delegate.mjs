#!/usr/bin/env node
/**
 * Benchmark of `@federation.delegate` (part of `npm run bench`, never of `npm test`).
 *
 * Delegated vs direct, p50 and p95 on loopback (target: delegated ≤ 2 × direct at each):
 *   a. a single-entity read  `Books(<id>)`;
 *   b. a `$filter` page       `Books?$filter=…&$orderby=ID&$top=20&$skip=…` (renamed columns);
 *   c. a local → remote `$expand` over 1,000 parents `Reviews?$top=1000&$expand=book($select=name)`.
 * "Direct" is the same OData request sent straight to the provider by the same client: for a and
 * b the exact URL the consumer sent to the provider (read back from the provider's request log);
 * for c, which no single provider request answers, the two requests a client would otherwise
 * make one after the other: the consumer's local page without the expand, and one provider
 * request for the 1,000 books it references.
 * Direct and delegated requests alternate, so drift on this noisy machine hits both alike.
 * For a and b also the consumer's own local read of the same shape (Reviews: by key; a filtered,
 * ordered page of 20): the provider's answer plus the consumer's own CAP stack is the floor of
 * any proxy, reported as delegated / (direct + local) at p50.
 *
 * Case c also reports what the provider alone spends on the plugin's key list (one
 * `ID in (…)` request of 1,000 keys with `$top`, as the plugin sends it to an OData V4 remote):
 * the floor no consumer-side work can go below; and, for comparison, on CAP's own rendering of
 * the same keys (10 × 100 keys as `ID eq … or …`, one after another; the path of OData 4.0 remotes).
 *
 * Response cache: hit vs miss (a new query shape each time), both 20 rows, p50 and p95
 * (target: hits ≥ 10 × faster at p50), beside the consumer's own local read of 20 rows and two
 * floors of any HTTP answer from the consumer process: its OData service document and a 404 of
 * express for a path nothing serves (a miss over these is the most a hit could gain).
 *
 * Under remote latency (bench/federation-latency.mjs, issue 24): a and c again with the provider
 * holding each request BENCH_DELEGATE_LATENCY ms (default 50), target delegated ≤ 1.2 × direct + 5 ms.
 *
 * Processes: the provider (test/fixtures/provider) and the consumer
 * (test/fixtures/federation-delegate, credentials through CDS_CONFIG) each in its own child; for
 * the latency series a second consumer whose key lists go out in chunks of 100 keys.
 * Environment: BENCH_ITERATIONS=300 (per loopback series; the expand series runs a tenth, the
 * latency series min(100, this)), BENCH_DELEGATE_LATENCY=50, BENCH_DELEGATE_HANDSHAKE=1|0,
 * BENCH_NATIVE_FETCH=1|0 (set `cds.env.remote.native_fetch` in the consumer; default: CAP's
 * choice), BENCH_CONSUMER_CONFIG=<json> (`cds.requires['data-pipeline']` of the consumer),
 * BENCH_CPU_PROF=<dir> (one CPU profile of the consumer per measured series, see
 * federation-profile.cjs), BENCH_ONLY=single,filter,expand,cache,latency (a subset; results not written).
 */
import { existsSync } from 'node:fs'
import { mkdir, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { QUIET, alternate, control, faults, get, mark, now, providerUrls, round, start, stat, stats, timed } from './federation-common.mjs'
import { latencySeries, printLatency } from './federation-latency.mjs'

const HERE = path.dirname(fileURLToPath(import.meta.url))
const ROOT = path.resolve(HERE, '..')
const RESULTS = path.join(HERE, 'results', 'federation-delegate.json')
const ITERATIONS = Math.max(20, Number(process.env.BENCH_ITERATIONS ?? 300))
const ONLY = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',')) : undefined
const runs = name => !ONLY || ONLY.has(name)
const PARENTS = 1000
const S = '/odata/v4/federation'
const RATIO_TARGET = 2
const CACHE_TARGET = 10

/** Local parents in a consumer: one review per remote book. */
async function seedReviews(consumer) {
  for (let from = 1; from <= PARENTS; from += 50) {
    await Promise.all(Array.from({ length: 50 }, (_, i) => fetch(`${consumer.url}${S}/Reviews`, {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ID: from + i, rating: 3, book_ID: from + i }),
    })))
  }
}

function compare(name, directTimes, delegatedTimes, extra = {}) {
  const direct = stat(directTimes)
  const delegated = stat(delegatedTimes)
  const ratio = { p50: round(delegated.p50 / direct.p50), p95: round(delegated.p95 / direct.p95) }
  const met = ratio.p50 <= RATIO_TARGET && ratio.p95 <= RATIO_TARGET
  return { name, direct, delegated, ratio, target: `≤ ${RATIO_TARGET}× at p50 and p95`, met, ...extra }
}

/**
 * The floor of a delegated read: the provider's own answer (direct) plus the consumer's own CAP
 * stack answering the same shape from its database (a local read); no proxy can go below both.
 */
function localFloor(directTimes, delegatedTimes, localTimes) {
  const local = stat(localTimes)
  const floor = round(stat(directTimes).p50 + local.p50)
  return { localRead: local, floorP50: floor, overFloor: round(stat(delegatedTimes).p50 / floor) }
}


async function main() {
  const profDir = process.env.BENCH_CPU_PROF ? path.resolve(process.env.BENCH_CPU_PROF) : undefined
  if (profDir) await mkdir(profDir, { recursive: true })
  const cpuProf = profDir ? ['--require', path.join(HERE, 'federation-profile.cjs')] : []
  const nativeFetch = process.env.BENCH_NATIVE_FETCH === undefined ? undefined : process.env.BENCH_NATIVE_FETCH === '1'
  console.log(`\ncap-data-pipeline federation bench — node ${process.version}, ${os.cpus().length} CPUs, ${ITERATIONS} iterations per series, remote.native_fetch ${nativeFetch ?? 'CAP default'}`)
  const provider = await start(path.join(ROOT, 'test/fixtures/provider'))
  const providerB = await start(path.join(ROOT, 'test/fixtures/provider'))
  const config = { ...QUIET, ...(nativeFetch === undefined ? {} : { remote: { native_fetch: nativeFetch } }), requires: { FedA: { credentials: { url: `${provider.url}/odata/v4/catalog` } }, FedB: { credentials: { url: `${providerB.url}/odata/v2/catalog` } } } }
  if (process.env.BENCH_CONSUMER_CONFIG) config.requires['data-pipeline'] = JSON.parse(process.env.BENCH_CONSUMER_CONFIG)
  const consumer = await start(path.join(ROOT, 'test/fixtures/federation-delegate'), { CDS_CONFIG: JSON.stringify(config), FEDERATION_CPU_PROF: profDir ?? '' }, cpuProf)
  /** Runs `series` inside a CPU profile of the consumer named `label` (when BENCH_CPU_PROF is set). */
  const profiled = async (label, series) => {
    if (!profDir) return series()
    await writeFile(path.join(profDir, 'label'), label)
    await rm(path.join(profDir, `${label}.done`), { force: true })
    consumer.child.kill('SIGUSR2')
    await new Promise(resolve => setTimeout(resolve, 200))
    try {
      return await series()
    } finally {
      consumer.child.kill('SIGUSR2')
      while (!existsSync(path.join(profDir, `${label}.done`))) await new Promise(resolve => setTimeout(resolve, 100))
    }
  }
  const cases = []
  const result = { date: new Date().toISOString(), node: process.version, cpus: os.cpus().length, iterations: ITERATIONS, nativeFetch: nativeFetch ?? null, cases }
  try {
    await control(provider.url, 'seed', { from: 1, count: PARENTS })
    await seedReviews(consumer)
    const VARIANTS = 5
    /** Consumer URLs of one case and, for each, the provider URL it sends. */
    const pairOf = async consumerUrls => {
      const direct = []
      for (const url of consumerUrls) {
        const sent = await providerUrls(provider, url)
        if (sent.length !== 1) throw new Error(`${url}: expected one provider request, got ${sent.length}`)
        direct.push(`${provider.url}${sent[0]}`)
      }
      return direct
    }

    // a. single entity (its URLs also for the latency series)
    const singleUrls = runs('single') || runs('latency') ? Array.from({ length: VARIANTS }, (_, v) => `${consumer.url}${S}/Books(${7 + v * 101})`) : []
    const singleDirect = singleUrls.length ? await pairOf(singleUrls) : []
    if (runs('single')) {
      const delegated = singleUrls
      const direct = singleDirect
      const local = Array.from({ length: VARIANTS }, (_, v) => `${consumer.url}${S}/Reviews(${7 + v * 101})`)
      const [d, g, l] = await profiled('single', () => alternate([i => timed(direct[i % VARIANTS])(), i => timed(delegated[i % VARIANTS])(), i => timed(local[i % VARIANTS])()], ITERATIONS))
      cases.push(compare('single-entity read', d, g, { consumerUrl: delegated[0].slice(consumer.url.length), providerUrl: direct[0].slice(provider.url.length), ...localFloor(d, g, l) }))
    }

    // b. $filter page (renamed columns in filter and result)
    if (runs('filter')) {
      const delegated = Array.from({ length: VARIANTS }, (_, v) => `${consumer.url}${S}/Books?$filter=stock lt 50 and name ne null&$orderby=ID&$top=20&$skip=${v * 20}`)
      const direct = await pairOf(delegated)
      const local = Array.from({ length: VARIANTS }, (_, v) => `${consumer.url}${S}/Reviews?$filter=rating lt 50 and book_ID ne null&$orderby=ID&$top=20&$skip=${v * 20}`)
      const [d, g, l] = await profiled('filter', () => alternate([i => timed(direct[i % VARIANTS])(), i => timed(delegated[i % VARIANTS])(), i => timed(local[i % VARIANTS])()], ITERATIONS))
      cases.push(compare('$filter page (20 rows)', d, g, { consumerUrl: delegated[0].slice(consumer.url.length), providerUrl: direct[0].slice(provider.url.length), ...localFloor(d, g, l) }))
    }

    // c. expand local → remote over 1,000 parents; direct: the local page, then one provider request
    const expandUrls = {
      delegated: `${consumer.url}${S}/Reviews?$top=${PARENTS}&$orderby=ID&$expand=book($select=name)`,
      local: `${consumer.url}${S}/Reviews?$top=${PARENTS}&$orderby=ID`,
      remote: `${provider.url}/odata/v4/catalog/Books?$select=ID,title&$filter=ID ge 1 and ID le ${PARENTS}&$orderby=ID&$top=${PARENTS}`,
    }
    if (runs('expand')) {
      const { delegated, local, remote } = expandUrls
      const before = (await stats(provider.url)).requests
      const first = await get(delegated)
      const providerRequests = (await stats(provider.url)).requests - before
      if (first.body.value.length !== PARENTS || first.body.value.some(r => r.book?.ID !== r.ID || r.book?.name !== `Book ${r.ID}`)) throw new Error('expand result incomplete')
      if ((await get(remote)).body.value.length !== PARENTS) throw new Error('direct expand floor incomplete')
      // what the provider alone spends on the plugin's key chunks (100 keys each, as CAP writes
      // them: an `or` chain of `ID eq …`), sent one after another without $batch
      const chunks = Array.from({ length: PARENTS / 100 }, (_, c) => `${provider.url}/odata/v4/catalog/Books?$select=title,ID&$filter=(${Array.from({ length: 100 }, (_, i) => `ID eq ${c * 100 + i + 1}`).join(' or ')})`)
      const chunkSeries = async () => { let ms = 0; for (const url of chunks) ms += (await get(url)).ms; return ms }
      // the plugin's own request: one `in` list on the key, `$top` = keys
      const inList = `${provider.url}/odata/v4/catalog/Books?$select=title,ID&$filter=ID in (${Array.from({ length: PARENTS }, (_, i) => i + 1).join(',')})&$top=${PARENTS}`
      if ((await get(inList)).body.value.length !== PARENTS) throw new Error('in-list floor incomplete')
      const n = Math.max(20, Math.round(ITERATIONS / 10))
      const [d, g, p, k] = await profiled('expand', () => alternate([async () => (await timed(local)()) + (await timed(remote)()), timed(delegated), chunkSeries, timed(inList)], n, 5))
      cases.push(compare(`local → remote $expand, ${PARENTS} parents`, d, g, { providerRequests, firstMs: round(first.ms, 1), iterations: n, providerKeyList: stat(k), providerKeyChunks: stat(p) }))
    }

    // d. with 20 ms simulated remote latency (filter page; informational)
    if (runs('filter')) {
      await faults(provider.url, { delay: 20 })
      const delegated = `${consumer.url}${S}/Books?$filter=stock lt 50 and name ne null&$orderby=ID&$top=20`
      const [direct] = await pairOf([delegated])
      const n = Math.min(ITERATIONS, 60)
      const [d, g] = await alternate([timed(direct), timed(delegated)], n, 5)
      await faults(provider.url)
      result.withRemoteLatency20ms = { direct: stat(d), delegated: stat(g), ratio: { p50: round(stat(g).p50 / stat(d).p50), p95: round(stat(g).p95 / stat(d).p95) } }
    }

    // e. response cache: misses (a new query shape each time) vs hits (the same one), same 20 rows;
    //    beside them the consumer's own floor: a local read of 20 rows through the same CAP stack
    if (runs('cache')) {
      let shape = 0
      // floors of any answer from the consumer process: its OData service document (CAP's protocol
      // adapter, no service handler, no database), and a path nothing serves (express's 404, no CAP)
      const bare = url => async () => {
        const t0 = now()
        const response = await fetch(url)
        await response.arrayBuffer()
        return now() - t0
      }
      const [miss, hit, local, serviceDocument, notFound] = await profiled('cache', () => alternate([
        () => timed(`${consumer.url}${S}/CachedBooks?$filter=ID le 20 and ID ne ${100_000 + shape++}`)(),
        timed(`${consumer.url}${S}/CachedBooks?$filter=ID le 20 and ID ne 99999`),
        timed(`${consumer.url}${S}/Reviews?$filter=ID le 20`),
        bare(`${consumer.url}${S}/`),
        bare(`${consumer.url}/bench-no-such-path`),
      ], ITERATIONS))
      const m = stat(miss)
      const h = stat(hit)
      const speedup = { p50: round(m.p50 / h.p50), p95: round(m.p95 / h.p95) }
      const floors = { serviceDocument: stat(serviceDocument), notFound: stat(notFound) }
      // the most a hit could gain: a miss against an answer that does no work at all
      const bound = { overServiceDocument: round(m.p50 / floors.serviceDocument.p50), overNotFound: round(m.p50 / floors.notFound.p50) }
      result.responseCache = { miss: m, hit: h, missOverHit: speedup, localRead20: stat(local), floors, missOverFloor: bound, target: `hits ≥ ${CACHE_TARGET}× faster at p50`, met: speedup.p50 >= CACHE_TARGET }
      // the same with 20 ms of remote latency (a provider that is not on loopback)
      await faults(provider.url, { delay: 20 })
      const [slowMiss, slowHit] = await alternate([
        () => timed(`${consumer.url}${S}/CachedBooks?$filter=ID le 20 and ID ne ${200_000 + shape++}`)(),
        timed(`${consumer.url}${S}/CachedBooks?$filter=ID le 20 and ID ne 99999`),
      ], Math.min(ITERATIONS, 60), 5)
      await faults(provider.url)
      result.responseCache.withRemoteLatency20ms = { miss: stat(slowMiss), hit: stat(slowHit), missOverHit: { p50: round(stat(slowMiss).p50 / stat(slowHit).p50), p95: round(stat(slowMiss).p95 / stat(slowHit).p95) } }
    }

    // f. a and c under remote latency (issue 24): a second consumer sends the key list in chunks
    if (runs('latency')) {
      const chunkedConfig = structuredClone(config)
      const pipeline = (chunkedConfig.requires['data-pipeline'] ??= {})
      pipeline.federation = { ...pipeline.federation, keyChunkSize: 100 }
      const chunking = await start(path.join(ROOT, 'test/fixtures/federation-delegate'), { CDS_CONFIG: JSON.stringify(chunkedConfig) })
      try {
        await seedReviews(chunking)
        const chunked = expandUrls.delegated.replace(consumer.url, chunking.url)
        const check = await get(chunked)
        if (check.body.value.length !== PARENTS || check.body.value.some(r => r.book?.name !== `Book ${r.ID}`)) throw new Error('chunked expand result incomplete')
        // the chunks as the provider received them, to send them straight (all at once) for a floor
        const chunkUrls = (await providerUrls(provider, chunked)).map(u => `${provider.url}${u}`)
        result.withRemoteLatency = await profiled('latency', () => latencySeries({ provider, iterations: ITERATIONS, single: { delegated: singleUrls, direct: singleDirect }, expand: expandUrls, chunked: { delegated: chunked, direct: chunkUrls } }))
      } finally {
        await chunking.stop()
      }
    }

    if (cases.length) console.log('\n%s  %s  %s  %s', 'case'.padEnd(38), 'direct p50 / p95 ms'.padEnd(21), 'delegated p50 / p95 ms'.padEnd(24), 'ratio p50 / p95')
    for (const c of cases) {
      console.log('%s  %s  %s  %s× / %s×  %s (≤ %s×)', c.name.padEnd(38), `${c.direct.p50} / ${c.direct.p95}`.padEnd(21), `${c.delegated.p50} / ${c.delegated.p95}`.padEnd(24), c.ratio.p50, c.ratio.p95, mark(c.met), RATIO_TARGET)
    }
    for (const c of cases.filter(c => c.localRead)) {
      console.log('  %s: the consumer\'s own local read of the same shape %s / %s ms; direct + local %s ms at p50, delegated %s× that', c.name, c.localRead.p50, c.localRead.p95, c.floorP50, c.overFloor)
    }
    const expand = cases.find(c => c.providerRequests !== undefined)
    if (expand) {
      console.log('  expand: %d provider request(s) for %d parents, first %s ms (cold)', expand.providerRequests, PARENTS, expand.firstMs)
      console.log('  expand: the provider alone on the plugin\'s key list (one `ID in (…)` of %d keys, sent directly): %s / %s ms', PARENTS, expand.providerKeyList.p50, expand.providerKeyList.p95)
      console.log('  expand: the provider alone on CAP\'s rendering of those keys (10 × 100 keys as `eq … or …`, one after another): %s / %s ms', expand.providerKeyChunks.p50, expand.providerKeyChunks.p95)
    }
    if (result.withRemoteLatency20ms) {
      const w = result.withRemoteLatency20ms
      console.log('  $filter page with 20 ms remote latency: direct %s / %s ms, delegated %s / %s ms → %s× / %s×', w.direct.p50, w.direct.p95, w.delegated.p50, w.delegated.p95, w.ratio.p50, w.ratio.p95)
    }
    if (result.responseCache) {
      const r = result.responseCache
      console.log('response cache (20 rows): miss %s / %s ms, hit %s / %s ms → hits %s× / %s× faster  %s (≥ %s× at p50)', r.miss.p50, r.miss.p95, r.hit.p50, r.hit.p95, r.missOverHit.p50, r.missOverHit.p95, mark(r.met), CACHE_TARGET)
      console.log('  the consumer\'s own local read of 20 rows through CAP: %s / %s ms (a hit skips the database, so it answers below that)', r.localRead20.p50, r.localRead20.p95)
      console.log('  floors of the consumer process: its OData service document %s / %s ms, an unserved path (404, no CAP) %s / %s ms', r.floors.serviceDocument.p50, r.floors.serviceDocument.p95, r.floors.notFound.p50, r.floors.notFound.p95)
      console.log('  a miss is %s× the service document and %s× the 404: the most any hit answered over HTTP could be faster', r.missOverFloor.overServiceDocument, r.missOverFloor.overNotFound)
      const w = r.withRemoteLatency20ms
      console.log('  with 20 ms remote latency: miss %s / %s ms, hit %s / %s ms → hits %s× / %s× faster', w.miss.p50, w.miss.p95, w.hit.p50, w.hit.p95, w.missOverHit.p50, w.missOverHit.p95)
    }
    if (result.withRemoteLatency) printLatency(result.withRemoteLatency, mark)
    if (!ONLY) {
      await mkdir(path.dirname(RESULTS), { recursive: true })
      await writeFile(RESULTS, JSON.stringify(result, null, 2) + '\n')
      console.log(`\nresults: ${path.relative(ROOT, RESULTS)}`)
    }
  } finally {
    await Promise.all([consumer.stop(), provider.stop(), providerB.stop()])
  }
}

await main()
