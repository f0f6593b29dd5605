// Demo provider: seeds the catalog on start (in-memory SQLite, so every start is the same story)
// and keeps changing a few orders so the consumer's delta pipeline has work.
const cds = require('@sap/cds')
const { products, orders } = require('./srv/data')
const startActivity = require('./srv/activity')

cds.on('served', async () => {
  const { Orders, Products } = cds.entities('sales')
  const { count } = await SELECT.one.from(Orders).columns('count(*) as count')
  if (!count) {
    const catalog = products()
    await INSERT.into(Products).entries(catalog)
    const rows = orders(catalog, Number(process.env.DEMO_ORDERS ?? 2000))
    await INSERT.into(Orders).entries(rows)
    cds.log('activity').info(`seeded ${catalog.length} products and ${rows.length} orders`)
  }
  const every = Number(process.env.DEMO_CHANGE_EVERY ?? 20_000)
  if (every > 0) startActivity(every)
})

module.exports = cds.server
