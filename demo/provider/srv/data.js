// Deterministic demo data: 120 products and 2,000 sales orders spread over the last 60 days.
const COUNTRIES = ['DE', 'FR', 'US', 'GB', 'IT', 'ES', 'NL', 'JP', 'IN', 'BR']
const CATEGORIES = ['Laptops', 'Monitors', 'Phones', 'Audio', 'Accessories', 'Cameras']
const KINDS = { Laptops: 'Laptop', Monitors: 'Monitor', Phones: 'Phone', Audio: 'Speaker', Accessories: 'Dock', Cameras: 'Camera' }
const BRANDS = ['Nordic', 'Helix', 'Quantum', 'Orbit', 'Summit', 'Vertex', 'Lumen', 'Atlas', 'Pixel', 'Cobalt']
const COMPANIES = ['Acme', 'Globex', 'Initech', 'Umbrella', 'Stark', 'Wayne', 'Hooli', 'Wonka', 'Tyrell', 'Soylent',
  'Cyberdyne', 'Aperture', 'Gringotts', 'Oscorp', 'Vandelay', 'Pied Piper', 'Monarch', 'Nakatomi', 'Dunder', 'Bluth']
const SUFFIX = { DE: 'GmbH', FR: 'SARL', US: 'Inc.', GB: 'Ltd', IT: 'S.p.A.', ES: 'S.L.', NL: 'B.V.', JP: 'K.K.', IN: 'Pvt Ltd', BR: 'Ltda' }

/** A small seeded pseudo-random generator, so every start shows the same data. */
function random(seed) {
  let state = seed >>> 0
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0
    return state / 2 ** 32
  }
}

const DAY = 86_400_000

function products(count = 120) {
  const rnd = random(7)
  const start = Date.now() - 60 * DAY
  return Array.from({ length: count }, (_, i) => {
    const category = CATEGORIES[i % CATEGORIES.length]
    return {
      ID: i + 1,
      name: `${BRANDS[Math.floor(rnd() * BRANDS.length)]} ${KINDS[category]} ${100 + i}`,
      category,
      price: Math.round((20 + rnd() * 1980) * 100) / 100,
      currency: 'EUR',
      modifiedAt: new Date(start + Math.floor(rnd() * 30 * DAY)).toISOString(),
    }
  })
}

/**
 * A product from an old system: its currency 'EURO' is longer than the String(3) the API declares
 * (SQLite does not enforce lengths). The consumer cannot store it; no order refers to it.
 */
function legacyProduct(ID) {
  return { ID, name: 'Legacy Bundle (migrated)', category: 'Accessories', price: 99, currency: 'EURO', modifiedAt: new Date(Date.now() - 90 * DAY).toISOString() }
}

/** A 13-digit EAN with its check digit (API version 2). */
function ean(ID) {
  const digits = `400638${String(ID).padStart(6, '0')}`
  const sum = [...digits].reduce((total, d, i) => total + Number(d) * (i % 2 ? 3 : 1), 0)
  return digits + ((10 - (sum % 10)) % 10)
}

function order(ID, rnd, catalog, at) {
  const product = catalog[Math.floor(rnd() * catalog.length)]
  const country = COUNTRIES[Math.floor(rnd() * COUNTRIES.length)]
  const quantity = 1 + Math.floor(rnd() * 20)
  const age = (Date.now() - at) / DAY
  const status = age > 20 ? 'delivered' : age > 5 ? (rnd() < 0.9 ? 'shipped' : 'cancelled') : 'open'
  return {
    ID,
    customer: `${COMPANIES[Math.floor(rnd() * COMPANIES.length)]} ${SUFFIX[country]}`,
    country,
    product_ID: product.ID,
    productName: product.name,
    quantity,
    netAmount: Math.round(quantity * product.price * 100) / 100,
    currency: 'EUR',
    status,
    orderedAt: new Date(at).toISOString().slice(0, 10),
    internalNote: `credit check ${rnd() < 0.5 ? 'ok' : 'pending'}`,
    modifiedAt: new Date(at + Math.floor(rnd() * DAY)).toISOString(),
  }
}

function orders(catalog, count = 2000) {
  const rnd = random(42)
  const start = Date.now() - 60 * DAY
  // ascending order dates, so newer IDs are newer orders
  return Array.from({ length: count }, (_, i) => order(i + 1, rnd, catalog, start + Math.floor((i / count) * 59 * DAY)))
}

const SEGMENTS = ['small', 'medium', 'large']

/** One customer per company and country (the names orders carry). */
function customers() {
  const rnd = random(11)
  const start = Date.now() - 60 * DAY
  return COUNTRIES.flatMap((country, c) => COMPANIES.map((company, i) => ({
    ID: c * COMPANIES.length + i + 1,
    name: `${company} ${SUFFIX[country]}`,
    country,
    segment: SEGMENTS[Math.floor(rnd() * SEGMENTS.length)],
    creditLimit: Math.round(10 + rnd() * 490) * 1000,
    modifiedAt: new Date(start + Math.floor(rnd() * 30 * DAY)).toISOString(),
  })))
}

/** Rates to EUR of the currencies the shop sees. */
function exchangeRates() {
  const rates = { EUR: 1, USD: 1.08, GBP: 0.85, JPY: 162.4, INR: 90.1, BRL: 5.36, CHF: 0.95, SEK: 11.4 }
  const at = new Date(Date.now() - DAY).toISOString()
  return Object.entries(rates).map(([currency, rate]) => ({ currency, rate, modifiedAt: at }))
}

module.exports = { products, orders, order, random, legacyProduct, ean, customers, exchangeRates, SEGMENTS }
