#!/usr/bin/env node
/**
 * Deletes sweep benchmark (never part of `npm test`): the key reconciliation sweep of a delta run
 * (`deletes: { sweep: 'always' }`) on a replica of N rows, in a consumer with a file-backed SQLite
 * database, against the real provider (test/fixtures/provider, entity Items) over OData V4 and HCQL.
 *
 * Per size: the provider is seeded with N items; a fresh consumer worker (this file with `--worker`,
 * app test/fixtures/deletes, SQLite file in the OS temp folder) copies them (delta key mode,
 * batchSize 1000), then measures
 *   - `clean`:  a delta run whose sweep finds nothing to delete (the common case),
 *   - `1% gone`: after every 100th item was deleted at the provider: the sweep deletes N/100 rows;
 * each with wall time, the sweep's own duration (tracker `lastSweep.durationMs`), provider requests
 * (OData only: the provider counts OData requests; HCQL pages = keys / batch), and the worker's
 * peak RSS above its RSS before the run (sampled every 5 ms).
 *
 * Environment: BENCH_SWEEP_ROWS=10000,100000 (sizes), BENCH_SWEEP_PROTOCOLS=odata,hcql, BENCH_VERBOSE=1.
 * Results: bench/results/sweep.json.
 */
import { createRequire } from 'node:module'
import { mkdir, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { control, runWorker as forkWorker, startProvider } from './helpers.mjs'

const HERE = path.dirname(fileURLToPath(import.meta.url))
const APP = path.resolve(HERE, '../test/fixtures/deletes')
const RESULTS = path.join(HERE, 'results', 'sweep.json')
const BATCH = 1000
const MB = 1024 * 1024
const round = (x, d = 0) => (x === undefined || x === null || Number.isNaN(x) ? null : Number(x.toFixed(d)))

if (process.argv[2] === '--worker') await worker()
else await main()

async function main() {
  const sizes = (process.env.BENCH_SWEEP_ROWS ?? '10000,100000').split(',').map(Number).filter(n => n > 0)
  const protocols = (process.env.BENCH_SWEEP_PROTOCOLS ?? 'odata,hcql').split(',')
  console.log(`\ncap-data-pipeline deletes sweep bench — node ${process.version}, ${os.cpus().length} CPUs, sizes ${sizes.join(', ')}, ${protocols.join(' + ')}, batch ${BATCH}, file-backed SQLite`)
  const provider = await startProvider()
  const results = []
  try {
    for (const n of sizes) {
      for (const protocol of protocols) {
        await control(provider.url, 'reset', {})
        await control(provider.url, 'seedItems', { from: 1, count: n, modifiedAt: '2026-01-01T00:00:00.000Z' })
        console.log(`${protocol} ${n.toLocaleString('en')} rows`)
        results.push(await runWorker({ n, protocol, url: provider.url }))
      }
    }
  } finally {
    await provider.stop()
  }
  console.log('\n| protocol | rows | phase | deleted | run ms | sweep ms | provider requests | key pages | peak RSS over baseline (MB) |')
  console.log('|---|---|---|---|---|---|---|---|---|')
  for (const r of results) for (const p of r.phases)
    console.log(`| ${r.protocol} | ${r.n.toLocaleString('en')} | ${p.phase} | ${p.deleted} | ${p.runMs} | ${p.sweepMs} | ${p.requests ?? 'n/a'} | ${p.keyPages} | ${p.peakRssMB} |`)
  await mkdir(path.dirname(RESULTS), { recursive: true })
  await writeFile(RESULTS, JSON.stringify({ date: new Date().toISOString(), node: process.version, cpus: os.cpus().length, batch: BATCH, results }, null, 2))
  console.log(`\nresults: ${path.relative(process.cwd(), RESULTS)}`)
}

function runWorker(options) {
  return forkWorker(fileURLToPath(import.meta.url), options, { cwd: APP })
}

async function worker() {
  const { n, protocol, url } = JSON.parse(process.env.BENCH_OPTIONS)
  const progress = text => process.send?.({ type: 'progress', text })
  const cds = createRequire(path.join(APP, 'package.json'))('@sap/cds')
  cds.root = APP
  const file = path.join(os.tmpdir(), `cap-data-pipeline-sweep-${process.pid}.sqlite`)
  await rm(file, { force: true })
  const requires = cds.env.requires
  requires.db.credentials = { url: file }
  requires.Provider.credentials = { url: `${url}/odata/v4/catalog` }
  requires.CatalogAPI.credentials = { url: `${url}/hcql/catalog` }
  await cds.deploy('*').to(`sqlite:${file}`) // the tables first: a file database is not deployed by serving
  const { server } = await cds.exec('--port', '0')
  const engine = await cds.connect.to('data-pipeline')
  const stats = async () => (await (await fetch(`${url}/odata/v4/control/stats()`)).json()).requests
  const name = `sweep-${protocol}`
  const target = protocol === 'hcql' ? 'deletes.SweepHcql' : 'deletes.SweepV4'
  const service = protocol === 'hcql' ? 'CatalogAPI' : 'Provider'
  await engine.addPipeline({ name, source: { service, entity: 'Items', batchSize: BATCH }, target: { entity: target }, delta: { mode: 'key' }, deletes: { sweep: 'always' } })

  const run = async phase => {
    global.gc?.()
    const baseline = process.memoryUsage().rss
    let peak = baseline
    const sampler = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss) }, 5)
    const requests0 = await stats()
    const t0 = performance.now()
    const { done } = await engine.execute(name)
    const outcome = await done
    const runMs = performance.now() - t0
    clearInterval(sampler)
    const requests = (await stats()) - requests0
    const sweep = JSON.parse((await cds.ql.SELECT.one.from('plugin.data_pipeline.Pipelines').where({ name })).lastSweep)
    const result = {
      phase, deleted: outcome.statistics.deleted, created: outcome.statistics.created, runMs: round(runMs), sweepMs: sweep.durationMs,
      sourceKeys: sweep.sourceKeys, targetKeys: sweep.targetKeys,
      requests: protocol === 'odata' ? requests : null, keyPages: Math.ceil(sweep.sourceKeys / BATCH),
      peakRssMB: round((peak - baseline) / MB, 1), rssMB: round(peak / MB),
    }
    progress(`${phase}: ${JSON.stringify(result)}`)
    return result
  }
  const phases = []
  phases.push(await run('initial copy'))
  phases.push(await run('clean'))
  // every 100th item gone at the provider
  const ids = Array.from({ length: Math.floor(n / 100) }, (_, i) => (i + 1) * 100)
  for (const ID of ids) await fetch(`${url}/odata/v4/control/removeItems`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ from: ID, count: 1 }) })
  phases.push(await run('1% gone'))
  process.send?.({ type: 'result', result: { n, protocol, phases } })
  server.close()
  await rm(file, { force: true })
  process.exit(0)
}
