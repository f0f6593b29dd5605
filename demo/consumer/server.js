// Demo consumer: registers four pipelines once the app is served, runs them once, and logs
// every finished run. Schedules keep `orders` (30 s), `exchange-rates` (15 s) and `products`
// (5 min) up to date. Two more entities need no code (db/schema.cds): `demo.Customers` is
// `@federated` (a replica, pipeline of that name, every minute), `demo.OpenOrders` a delegate.
const cds = require('@sap/cds')
require('../localhost')

const LOG = cds.log('demo')

cds.on('served', async () => {
  const engine = await cds.connect.to('data-pipeline')

  // 1. Delta replication from the provider's OData V4 service into the consumption view demo.Orders:
  //    each run reads only orders whose modifiedAt is at or after the stored watermark.
  await engine.addPipeline({
    name: 'orders',
    description: 'Sales orders from the provider, delta by modifiedAt',
    source: { service: 'SalesService', entity: 'Orders', batchSize: 500 },
    target: { entity: 'demo.Orders' },
    delta: { mode: 'timestamp', field: 'modifiedAt' },
    // deletes: the provider removes orders for real, so the first delta run and then one run per hour
    // compare the provider's keys with the local ones and delete what is gone (Pipelines.lastSweep)
    deletes: { sweep: { every: '1h' }, maxShare: 0.2 },
    schedule: { every: '30s' },
    // freshness: stale (a warning in the console) when no run succeeded for 10 minutes
    maxStaleness: '10m',
  })

  // 2. Full copy of the (small) product catalog: every run replaces the table atomically.
  await engine.addPipeline({
    name: 'products',
    description: 'Product catalog, full refresh',
    source: { service: 'SalesService', entity: 'Products' },
    target: { entity: 'demo.Products' },
    mode: 'full',
    // a product the target cannot store (currency 'EURO' in a String(3)) is set aside in PipelineRejects
    // instead of failing the run; the provider's API version 2 adds `ean`, reported as schema drift
    onError: { mode: 'skip', maxSkipped: 10 },
    schemaDrift: 'warn',
    schedule: { every: '5m' },
    maxStaleness: '30m',
  })

  // 3. Query shape: a derived snapshot aggregated from the replicated orders (local database).
  await engine.addPipeline({
    name: 'revenue-by-country',
    description: 'Orders and revenue per country, rebuilt from demo.Orders',
    source: {
      query: () => SELECT.from('demo.Orders')
        .columns('country', 'count(1) as orders', "sum(case when status = 'open' then 1 else 0 end) as open",
          "sum(case when status = 'cancelled' then 0 else amount end) as revenue", 'currency')
        .groupBy('country', 'currency'),
    },
    target: { entity: 'demo.RevenueByCountry' },
    mode: 'full',
  })

  // 4. Exchange rates, full copy every 15 s. The provider's rate desk is in maintenance for 10 s after
  //    its first request (HTTP 503): the first run fails after one retry, and the next scheduled run
  //    recovers by itself — the console shows the red run, then green ones.
  await engine.addPipeline({
    name: 'exchange-rates',
    description: 'Exchange rates to EUR, full refresh; the source is down at first and comes back',
    source: { service: 'SalesService', entity: 'ExchangeRates' },
    target: { entity: 'demo.ExchangeRates' },
    mode: 'full',
    retry: { maxRetries: 1, baseDelay: 500 },
    schedule: { every: '15s' },
    maxStaleness: '2m',
  })

  // Log every finished run, and rebuild the revenue snapshot whenever orders changed.
  engine.after('PIPELINE.DONE', '*', (_, req) => {
    const { status, mode, trigger, statistics: s, error } = req.data
    const name = req.path?.replace(/^data-pipeline\./, '')
    if (status === 'failed') return LOG.warn(`${name}: ${mode} run (${trigger}) failed: ${error?.message}`)
    LOG.info(`${name}: ${mode} run (${trigger}) → ${s.created} created, ${s.updated} updated, ${s.deleted} deleted${s.skipped ? `, ${s.skipped} skipped` : ''}`)
  })
  engine.after('PIPELINE.DONE', 'orders', (_, req) => {
    const { status, statistics: s } = req.data
    if (status !== 'completed' || !(s.created + s.updated + s.deleted)) return
    engine.execute('revenue-by-country', { trigger: 'event', async: true })
      .then(({ done }) => done)
      .catch(error => LOG.warn(`revenue-by-country: ${error.message}`))
  })

  // Initial runs right away (the schedules tick only after their first interval).
  for (const name of ['products', 'orders', 'exchange-rates']) {
    engine.execute(name, { trigger: 'manual', async: true })
      .then(({ done }) => done)
      .catch(error => LOG.error(`initial ${name} run failed: ${error.message}`))
  }
})

module.exports = cds.server
