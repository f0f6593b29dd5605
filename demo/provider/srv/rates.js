// The rate desk: on its first request it goes into maintenance for DEMO_RATES_OUTAGE ms (default
// 10 s) and answers 503 until then, as a source system does during a deployment. The consumer's
// first `exchange-rates` run fails on it (after its retry), a scheduled run recovers by itself.
const cds = require('@sap/cds')

const LOG = cds.log('activity')

module.exports = function rateDesk(srv, outage) {
  let backAt
  srv.before('READ', 'ExchangeRates', req => {
    if (backAt === undefined) {
      backAt = Date.now() + outage
      if (outage > 0) LOG.info(`rate desk: maintenance for ${Math.round(outage / 1000)} s (HTTP 503 until then)`)
    }
    const left = backAt - Date.now()
    if (left > 0) return req.reject(503, `The rate desk is in maintenance, back in ${Math.ceil(left / 1000)} s`)
  })
}
