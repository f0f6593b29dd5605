/**
 * Preloaded (`node --require`) into the provider process of bench/remote-targets.mjs: counts
 * the write requests the provider receives (HCQL POSTs, OData `$batch`, OData GETs) and answers
 * them at GET /bench/stats; deploys the model to the (file) database once the services are
 * served when BENCH_DEPLOY=1; exits cleanly on SIGTERM so `--cpu-prof` writes its profile.
 */
const cds = require('@sap/cds')

const stats = { hcql: 0, statements: {}, batch: 0, batchParts: 0, get: 0 }

cds.on('bootstrap', app => {
  app.get('/bench/stats', (_req, res) => res.json(stats))
  app.use((req, _res, next) => {
    if (req.url.startsWith('/hcql/') && req.method === 'POST') stats.hcql++
    else if (/^\/odata\/v4\/catalog\/\$batch/.test(req.url)) stats.batch++
    else if (/^\/odata\/v4\/catalog\//.test(req.url) && req.method === 'GET') stats.get++
    next()
  })
})

cds.once('served', async () => {
  const hcql = cds.services.CatalogService
  hcql?.before('*', req => {
    const kind = req.query ? Object.keys(req.query)[0] : req.event
    stats.statements[kind] = (stats.statements[kind] ?? 0) + 1
  })
  if (process.env.BENCH_DEPLOY === '1') await cds.deploy('*').to(cds.db)
})

process.on('SIGTERM', () => process.exit(0))
