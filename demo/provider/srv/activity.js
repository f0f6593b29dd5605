// Business goes on in the source system: every few seconds some orders move on (open → shipped →
// delivered, or get cancelled), one new order arrives, one customer changes segment or credit limit,
// the exchange rates move and now and then a price changes. Each change stamps `modifiedAt`, so the
// consumer's delta runs always find something to do. The customer changes through SalesService, as a
// client's PATCH would: its `@federation.emit` announces the change to the consumer.
const cds = require('@sap/cds')
const { order, random, SEGMENTS } = require('./data')

const LOG = cds.log('activity')
const NEXT = { open: 'shipped', shipped: 'delivered' }

module.exports = function startActivity(every) {
  const rnd = random(Date.now())
  const tick = async () => {
    const { Orders, Products, Customers, ExchangeRates } = cds.entities('sales')
    const now = new Date().toISOString()
    const changed = []
    await cds.tx(async () => {
      const candidates = await SELECT.from(Orders).columns('ID', 'status').where({ status: { in: ['open', 'shipped'] } }).orderBy('ID desc').limit(300)
      for (let i = 0; i < 4 && candidates.length; i++) {
        const [picked] = candidates.splice(Math.floor(rnd() * candidates.length), 1)
        const status = rnd() < 0.1 ? 'cancelled' : NEXT[picked.status]
        await UPDATE(Orders, picked.ID).set({ status, modifiedAt: now })
        changed.push(`#${picked.ID} ${picked.status}→${status}`)
      }
      const { max } = await SELECT.one.from(Orders).columns('max(ID) as max')
      const catalog = await SELECT.from(Products).where({ currency: 'EUR' }) // not the legacy product (see data.js)
      const added = order(max + 1, rnd, catalog, Date.now())
      added.modifiedAt = now
      added.status = 'open'
      await INSERT.into(Orders).entries(added)
      changed.push(`new #${added.ID} (${added.customer}, ${added.quantity}× ${added.productName})`)
      const customer = await SELECT.one.from(Customers).where({ ID: 1 + Math.floor(rnd() * 200) })
      if (customer) {
        const segment = rnd() < 0.3 ? SEGMENTS[Math.floor(rnd() * SEGMENTS.length)] : customer.segment
        const creditLimit = Math.max(5000, Math.round(customer.creditLimit * (0.8 + rnd() * 0.4) / 1000) * 1000)
        const sales = await cds.connect.to('SalesService')
        await sales.update(sales.entities.Customers, customer.ID).set({ segment, creditLimit, modifiedAt: now })
        changed.push(`customer ${customer.name} ${customer.segment}/${customer.creditLimit}→${segment}/${creditLimit}`)
      }
      for (const { currency, rate } of await SELECT.from(ExchangeRates).where({ currency: { '!=': 'EUR' } })) {
        await UPDATE(ExchangeRates, currency).set({ rate: Math.round(rate * (0.997 + rnd() * 0.006) * 1e6) / 1e6, modifiedAt: now })
      }
      if (rnd() < 0.3) {
        const product = catalog[Math.floor(rnd() * catalog.length)]
        const price = Math.round(product.price * (0.9 + rnd() * 0.2) * 100) / 100
        await UPDATE(Products, product.ID).set({ price, modifiedAt: now })
        changed.push(`price of ${product.name} ${product.price}→${price}`)
      }
    })
    LOG.info(`changed ${changed.join(', ')}`)
  }
  const timer = setInterval(() => tick().catch(error => LOG.error('could not change orders', error)), every)
  timer.unref()
  cds.once('shutdown', () => clearInterval(timer))
  return timer
}
