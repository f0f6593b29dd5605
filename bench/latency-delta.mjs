/**
 * The delta cells of the latency benchmark (bench/latency.mjs, issue 24 points 3 and 6): after
 * a partitioned (or sequential) full copy, the same consumer process (pipeline `latency`, delta
 * mode `timestamp` on the provider's `modifiedAt`, the default the consumer fixture gets for
 * BenchItems, with the copy's `parallel`) runs, through the same latency proxy:
 *
 *   delta     after 5 % of the provider's rows got a newer `modifiedAt` (ControlService.touchBench,
 *             spread over the key range): a delta run, partitioned where `parallel` > 1 (the copy
 *             stored the watermark, so this is not the pipeline's first delta run);
 *   no change a delta run with nothing new: exactly one provider request (asserted);
 *   sweep     after 1 % of the rows were deleted at the provider (ControlService.removeBench): a delta
 *             run with `deletes: { sweep: 'always' }` (an override), whose key sweep lists the source's
 *             keys in `parallel` key ranges; the rows are restored (seedBench) afterwards.
 *
 * Each beside its floor, measured in the same round through the same proxy: the plain sequential
 * keyset read of what the cell must read — the changed rows in (modifiedAt, ID) order with the
 * pipeline's columns; the key-only pages (`$select=ID`) in key order; the no-change run's one
 * request — read with fetch at 0 ms (the provider's own serving time), plus pages × latency.
 * Such a read asks for `$count` on its first page and stops once it has all rows, as the product
 * does. Also printed: the round-trip bound of a partitioned read (first page with the count, the
 * boundary samples, then ⌈remaining pages ÷ ranges⌉ pages per range), i.e. the least any
 * partitioned read of that many pages takes at that latency, whatever the CPU.
 */
import os from 'node:os'
import { control, processCpuMs, sequentialRead } from './helpers.mjs'

const SEED = '2026-01-01T00:00:00.000Z'
export const CELL_TARGETS = { delta: 0.3, sweep: 0.25 }
const now = () => performance.now()
const fixed = (x, d = 0) => (x === null || x === undefined || Number.isNaN(x) ? '—' : x.toFixed(d))
// touch stamps: increasing, and older than `delta.settle` (1 min), so a later run trusts the tie cursor
let stamps = Date.now() - 3_600_000

/** The `$filter` of a request URL the proxy saw (a GET; undefined for a `$batch` or none). */
function filterOf(url) {
  return url ? new URL(url, 'http://proxy').searchParams.get('$filter') ?? undefined : undefined
}

/** The least a partitioned read of `pages` pages takes in round trips: first page + samples + the ranges' pages. */
function roundTrips(pages, parallel) {
  if (parallel <= 1 || pages < 2) return pages
  const ranges = Math.min(parallel, pages)
  return 2 + Math.ceil((pages - 1) / ranges)
}

/**
 * The three cells of one consumer `session` (startWorker of latency.mjs, after its copy) at
 * `latency` with `parallel`; the proxy's latency is set back after each floor read.
 */
export async function measureCells({ session, proxy, provider, n, latency, parallel, columns, quiet }) {
  const cell = async (body, before) => {
    if (before) await before()
    await quiet()
    proxy.reset()
    const cpu0 = processCpuMs(provider.child.pid)
    const run = await session.request(body)
    if (run.status !== 'completed') throw new Error(`${body.sweep ? 'sweep' : 'delta'} run ${run.status}: ${run.error ?? ''}`)
    const { requests, maxInFlight, kinds, urls, timeline } = proxy.state
    // BENCH_TIMELINE=1: each request of the cell (kind, sent → forwarded after the latency → answered, ms since the run began)
    if (process.env.BENCH_TIMELINE === '1') console.log(`    ${body.sweep ? 'sweep' : 'delta'} run ${fixed(run.ms)} ms: ${timeline.map(e => `${e.kind} ${fixed(e.at)}→${fixed(e.forwarded)}→${fixed(e.ended)} (${e.bytes} B)`).join(', ')}`)
    return { ...run, requests, maxInFlight, kinds: { ...kinds }, urls: [...urls], cpu: { provider: processCpuMs(provider.child.pid) - cpu0, consumer: run.cpuMs } }
  }
  const atZero = async read => {
    proxy.state.ms = 0
    try { return await read() } finally { proxy.state.ms = latency }
  }
  const floorOf = (serve, pages) => ({ serveMs: serve.ms, pages, floorMs: pages * latency + serve.ms, roundTripMs: roundTrips(pages, parallel) * latency })

  // 5 % of the rows changed: the delta reads them (and only them: the same rows each time, so
  // none is left at the previous stamp the copy stored as its watermark)
  const stamp = new Date((stamps += 1000)).toISOString()
  const delta = await cell({}, () => control(provider.url, 'touchBench', { share: 0.05, modifiedAt: stamp }))
  const changed = Math.round(n * 0.05)
  if (delta.statistics.updated + delta.statistics.created !== changed) throw new Error(`5 % delta wrote ${JSON.stringify(delta.statistics)}, expected ${changed} rows`)
  // the floor reads with the product's own filter (its watermark: after the copy's last row at the copy's
  // stamp, which all rows share, so SQLite walks that tie on every page), as a plain sequential read
  const deltaServe = await atZero(() => sequentialRead(`${proxy.url}/odata/v4/catalog/BenchItems`, { select: columns, order: ['modifiedAt', 'ID'], filter: filterOf(delta.urls[0]) ?? `modifiedAt ge ${stamp}` }))
  if (deltaServe.rows !== changed) throw new Error(`delta floor read ${deltaServe.rows} rows of ${changed}`)
  delta.floor = floorOf(deltaServe, deltaServe.pages)

  const noChange = await cell({})
  if (noChange.requests !== 1) console.error(`✗ N=${n} ${latency} ms parallel ${parallel}: a no-change delta made ${noChange.requests} provider requests, not one: ${noChange.urls.join(' ')}`)
  const one = noChange.urls[0]
  const serveOne = await atZero(async () => { const t0 = now(); await (await fetch(`${proxy.url}${one}`)).json(); return { ms: now() - t0 } })
  noChange.floor = floorOf(serveOne, 1)

  // 1 % gone at the source: the sweep deletes exactly those rows; restored for the next copy
  const gone = Math.floor(n / 100)
  let sweep
  try {
    sweep = await cell({ sweep: true }, () => control(provider.url, 'removeBench', { from: 1, count: gone }))
    if (sweep.statistics.deleted !== gone || sweep.lastSweep?.status !== 'completed') throw new Error(`sweep deleted ${sweep.statistics.deleted} of ${gone}: ${JSON.stringify(sweep.lastSweep)}`)
    const keyServe = await atZero(() => sequentialRead(`${proxy.url}/odata/v4/catalog/BenchItems`, { select: ['ID'], order: ['ID'] }))
    if (keyServe.rows !== n - gone) throw new Error(`key floor read ${keyServe.rows} keys of ${n - gone}`)
    sweep.floor = floorOf(keyServe, keyServe.pages)
  } finally {
    await control(provider.url, 'seedBench', { from: 1, count: gone, modifiedAt: SEED })
  }
  // the sweep's own time against its floor (the run adds its no-change delta request before it)
  sweep.cellMs = sweep.lastSweep.durationMs
  delta.cellMs = delta.ms
  noChange.cellMs = noChange.ms
  return { delta, noChange, sweep }
}

/** The worker's side: one delta run of pipeline `name` per request, the sweep switched on by an override once asked for. */
export function cellRunner(cds, engine, name) {
  let sweeping = false
  return async ({ sweep }) => {
    if (sweep && !sweeping) {
      await engine.registry.applyOverrides(name, { deletes: { sweep: 'always' } })
      sweeping = true
    }
    const cpu0 = process.cpuUsage()
    const t0 = now()
    const { done } = await engine.execute(name, { mode: 'delta' })
    const outcome = await done
    const ms = now() - t0
    const cpu = process.cpuUsage(cpu0)
    const row = await cds.ql.SELECT.one.from('plugin.data_pipeline.Pipelines').columns('lastSweep').where({ name })
    return { ms, cpuMs: (cpu.user + cpu.system) / 1000, status: outcome.status, error: outcome.error && String(outcome.error), statistics: outcome.statistics, lastSweep: sweep && row?.lastSweep ? JSON.parse(row.lastSweep) : undefined }
  }
}

/** One line per cell: its time, floor, ratios, round-trip bound, requests and CPU. */
export function cellLine(n, latency, parallel, round, name, c) {
  const k = c.kinds
  return `  N=${n} ${latency} ms round ${round} parallel ${parallel} ${name}: ${fixed(c.cellMs)} ms${name === 'sweep' ? ` (run ${fixed(c.ms)} ms)` : ''} (floor ${fixed(c.floor.floorMs)} ms = ${c.floor.pages} pages × ${latency} + serving ${fixed(c.floor.serveMs)}: ×${fixed(c.cellMs / c.floor.floorMs, 2)}; ${parallel > 1 ? 'round trips of a partitioned read' : 'its round trips'} ≥ ${fixed(c.floor.roundTripMs)} ms: ×${fixed(c.floor.roundTripMs / c.floor.floorMs, 2)}), ${c.requests} requests (${k.count} count + ${k.sample} samples + ${k.page} pages${k.metadata ? ` + ${k.metadata} $metadata` : ''}, ${k.empty} empty), ≤ ${c.maxInFlight} in flight, CPU provider ${fixed(c.cpu.provider)} / consumer ${fixed(c.cpu.consumer)} ms, ${JSON.stringify(c.statistics)}`
}

/**
 * The least a cell can take on this machine whatever the latency: the provider's CPU time (one
 * Node process), the consumer's (its writes included), and all of it over the cores (the proxy's
 * share of a cell is not measured, so this bound is a little low).
 */
function cpuBound(cpu) {
  return Math.max(cpu.provider, cpu.consumer, (cpu.provider + cpu.consumer) / os.cpus().length)
}

const CELLS = [['delta', '5 % delta'], ['sweep', 'key sweep (1 % gone)'], ['noChange', 'no-change delta']]

/** Per size, latency and `parallel`: the cells' medians, their floors and the best round against its own floor. */
export function summarize(runs) {
  const median = values => { const s = [...values].sort((a, b) => a - b); const m = Math.floor(s.length / 2); return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2 }
  const out = {}
  for (const [key] of CELLS) {
    const all = runs.map(r => r[key])
    const best = all.reduce((a, b) => (b.cellMs / b.floor.floorMs < a.cellMs / a.floor.floorMs ? b : a))
    out[key] = {
      ms: median(all.map(c => c.cellMs)), runMs: median(all.map(c => c.ms)), floorMs: median(all.map(c => c.floor.floorMs)), pages: all[0].floor.pages,
      roundTripMs: all[0].floor.roundTripMs, best: { ms: best.cellMs, floorMs: best.floor.floorMs, ratio: best.cellMs / best.floor.floorMs },
      requests: Math.max(...all.map(c => c.requests)), kinds: all.at(-1).kinds, maxInFlight: Math.max(...all.map(c => c.maxInFlight)),
      cpu: { provider: median(all.map(c => c.cpu.provider)), consumer: median(all.map(c => c.cpu.consumer)) },
    }
  }
  return out
}

/** The table of the cells and their checks (✓/✗) against issue 24's targets. */
export function cellReport(results, parallels) {
  const header = ['N', 'latency', 'parallel', 'cell', 'ms (median)', 'floor ms (pages)', '÷ floor', 'best round ÷ its floor', 'round-trip bound ÷ floor', 'CPU bound ÷ floor', 'requests: count + samples + pages (empty)', 'in flight ≤', 'CPU ms provider / consumer']
  const lines = [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`]
  const checks = []
  for (const row of results) {
    for (const p of parallels) {
      const cells = row.runs[p]?.cells
      if (!cells) continue
      for (const [key, label] of CELLS) {
        const c = cells[key]
        const k = c.kinds
        lines.push(`| ${[row.n, row.latency, p, label, fixed(c.ms), `${fixed(c.floorMs)} (${c.pages})`, fixed(c.ms / c.floorMs, 2), fixed(c.best.ratio, 2), fixed(c.roundTripMs / c.floorMs, 2), fixed(cpuBound(c.cpu) / c.floorMs, 2), `${k.count} + ${k.sample} + ${k.page} (${k.empty})${k.metadata ? ` + ${k.metadata} $metadata` : ''}`, c.maxInFlight, `${fixed(c.cpu.provider)} / ${fixed(c.cpu.consumer)}`].join(' | ')} |`)
      }
      const at = `N=${row.n} ${row.latency} ms parallel ${p}`
      checks.push([`${at}: no-change delta requests`, cells.noChange.requests, '= 1', cells.noChange.requests === 1])
      if (row.latency === 50 && p > 1) {
        checks.push([`${at}: 5 % delta / floor (best round; round trips alone allow ${fixed(cells.delta.roundTripMs / cells.delta.floorMs, 2)}, this machine's CPU ${fixed(cpuBound(cells.delta.cpu) / cells.delta.floorMs, 2)})`, cells.delta.best.ratio, `≤ ${CELL_TARGETS.delta}`, cells.delta.best.ratio <= CELL_TARGETS.delta])
        checks.push([`${at}: key sweep / floor (best round; round trips alone allow ${fixed(cells.sweep.roundTripMs / cells.sweep.floorMs, 2)}, this machine's CPU ${fixed(cpuBound(cells.sweep.cpu) / cells.sweep.floorMs, 2)})`, cells.sweep.best.ratio, `≤ ${CELL_TARGETS.sweep}`, cells.sweep.best.ratio <= CELL_TARGETS.sweep])
      }
    }
  }
  return { table: lines.join('\n'), checks, cpus: os.cpus().length }
}
