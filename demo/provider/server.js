// Demo provider: seeds the catalog on start (in-memory SQLite, so every start is the same story)
// and keeps changing a few orders so the consumer's delta pipeline has work. With CDS_ENV=api-v2
// (`npm start`) it serves version 2 of its API (api-v2/products.cds: products with an EAN).
// Its exchange rates are in maintenance for the first seconds after their first request (srv/rates.js).
// Customers may be changed over OData (PATCH) and announce each change on the messaging service
// (`@federation.emit` in srv/sales-service.cds; the plugin's emit side): a change stamps `modifiedAt`.
const cds = require('@sap/cds')
require('../localhost')
const { products, orders, legacyProduct, ean, customers, exchangeRates } = require('./srv/data')
const startActivity = require('./srv/activity')
const rateDesk = require('./srv/rates')

cds.on('serving', srv => {
  if (srv.name !== 'SalesService') return
  rateDesk(srv, Number(process.env.DEMO_RATES_OUTAGE ?? 10_000))
  // the delta runs of the consumer's replica watch modifiedAt: every change of a customer stamps it
  srv.before(['CREATE', 'UPDATE', 'UPSERT'], 'Customers', req => { req.data.modifiedAt = new Date().toISOString() })
})

cds.on('served', async () => {
  const { Orders, Products, Customers, ExchangeRates } = cds.entities('sales')
  const { count } = await SELECT.one.from(Orders).columns('count(*) as count')
  if (!count) {
    const catalog = products()
    await INSERT.into(Products).entries(catalog)
    const rows = orders(catalog, Number(process.env.DEMO_ORDERS ?? 2000))
    await INSERT.into(Orders).entries(rows)
    // a product no order refers to, whose currency breaks the API's String(3) (SQLite stores it anyway):
    // the consumer's `products` pipeline (onError: 'skip') sets it aside as a rejected record
    await INSERT.into(Products).entries(legacyProduct(catalog.length + 1))
    // profile api-v2 (api-v2/products.cds): products have an EAN, unknown to the consumer's imported API
    if (Products.elements.ean) for (const { ID } of catalog) await UPDATE(Products, ID).set({ ean: ean(ID) })
    const people = customers()
    await INSERT.into(Customers).entries(people)
    await INSERT.into(ExchangeRates).entries(exchangeRates())
    cds.log('activity').info(`seeded ${catalog.length + 1} products, ${rows.length} orders, ${people.length} customers${Products.elements.ean ? ' (API version 2: products with EAN)' : ''}`)
  }
  const every = Number(process.env.DEMO_CHANGE_EVERY ?? 20_000)
  if (every > 0) startActivity(every)
})

module.exports = cds.server
