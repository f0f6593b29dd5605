/**
 * The provider of bench/delta-token.mjs: CAP serves DeltaService.Orders (OData V4) from a file
 * SQLite database; this file adds OData 4.01 change tracking ("Requesting Changes", "Delta
 * Payload") on the same entity set, from the change log the database's triggers fill:
 *
 * - GET /odata/v4/delta/Orders with `Prefer: odata.track-changes`: all rows in key order
 *   (`$select` honoured), paged by `odata.maxpagesize` (default 1000) with `@odata.nextLink`; the
 *   last page carries `@odata.deltaLink` = the change log's sequence when the read began.
 * - GET of a delta link (`$deltatoken=<seq>`): the orders changed after `seq` (up to the sequence
 *   when that delta read began), in key order, once each: the row as it is now, or
 *   `{"@removed": {"reason": "deleted"}, "ID": …}` when it is gone; same paging; the last page
 *   carries the next delta link. A token beyond the log answers 410 Gone.
 * - Any other read of Orders is CAP's own ($filter, $orderby, $top, $count, …).
 *
 * GET /bench/stats counts what was served since POST /bench/stats/reset: requests by kind
 * (metadata, cap, tracked, delta) and rows by kind (rows: entity rows; keys: rows of a key-only
 * `$select`; removed: @removed entries).
 */
const cds = require('@sap/cds')

const BASE = '/odata/v4/delta'
const LOG = 'deltabench_ChangeLog'
const COLUMNS = ['ID', 'customer', 'product', 'status', 'quantity', 'amount', 'note', 'createdAt', 'modifiedAt']
const DEFAULT_PAGE = 1000

const fresh = () => ({ requests: { metadata: 0, cap: 0, tracked: 0, delta: 0 }, rows: 0, keys: 0, removed: 0 })
let stats = fresh()

const fail = (res, status, message) => res.status(status).json({ error: { code: String(status), message } })

/** `$select` as a list of known columns (the key always included), or an error text. */
function columnsOf(text) {
  if (!text) return COLUMNS
  const columns = String(text).split(',').map(c => c.trim()).filter(Boolean)
  const unknown = columns.find(c => !COLUMNS.includes(c))
  if (unknown) return `unknown property '${unknown}' in $select`
  return columns.includes('ID') ? columns : ['ID', ...columns]
}

/** The opaque `$skiptoken` of the next page: the last key read and the log sequence the read is bounded by. */
const skipToken = (after, upTo) => `${after}-${upTo}`
function parseSkipToken(text) {
  const match = /^(-?\d+)-(\d+)$/.exec(String(text))
  return match ? { after: Number(match[1]), upTo: Number(match[2]) } : undefined
}

async function lastSequence() {
  const [row] = await cds.db.run(`SELECT coalesce(max(seq), 0) AS seq FROM ${LOG}`)
  return Number(row.seq)
}

/** Rows of Orders by key, as CAP reads them (the same values CAP's own reads serve). */
async function rowsOf(columns, where, limit) {
  const query = SELECT.from('deltabench.Orders').columns(columns).where(where).orderBy('ID')
  if (limit) query.limit(limit)
  return cds.db.run(query)
}

async function orders(req, res, next) {
  const prefer = req.get('prefer') ?? ''
  const tracked = /(^|[\s,])odata\.track-changes/.test(prefer)
  const { $deltatoken, $skiptoken, $select, ...rest } = req.query
  if (!tracked && $deltatoken === undefined) return next() // CAP's own read
  const other = Object.keys(rest).filter(k => k.startsWith('$') && !['$orderby', '$format'].includes(k))
  if (other.length) return fail(res, 400, `${other.join(', ')} not supported with change tracking`)
  if (rest.$orderby !== undefined && rest.$orderby !== 'ID' && rest.$orderby !== 'ID asc') return fail(res, 400, 'a tracked read is ordered by ID')
  const columns = columnsOf($select)
  if (typeof columns === 'string') return fail(res, 400, columns)
  const pageSize = Math.max(1, Math.min(Number(/odata\.maxpagesize=(\d+)/.exec(prefer)?.[1] ?? DEFAULT_PAGE), 10_000))
  const token = $skiptoken === undefined ? undefined : parseSkipToken($skiptoken)
  if ($skiptoken !== undefined && !token) return fail(res, 400, 'invalid $skiptoken')

  const body = {}
  let value
  let last
  let more
  let upTo
  if ($deltatoken === undefined) {
    stats.requests.tracked++
    // a tracked read: the rows in key order; its delta link starts at the log's sequence when it began
    upTo = token ? token.upTo : await lastSequence()
    const rows = await rowsOf(columns, token ? { ID: { '>': token.after } } : {}, pageSize + 1)
    more = rows.length > pageSize
    value = more ? rows.slice(0, pageSize) : rows
    last = value.at(-1)?.ID
    stats.rows += value.length
    body['@odata.context'] = `$metadata#Orders(${columns.join(',')})`
  } else {
    stats.requests.delta++
    const from = Number($deltatoken)
    if (!Number.isInteger(from) || from < 0) return fail(res, 410, 'The delta token is not valid; initialise anew')
    upTo = token ? token.upTo : await lastSequence()
    if (from > upTo) return fail(res, 410, 'The delta token is beyond the change log; initialise anew')
    // the orders changed in (from, upTo], once each, in key order
    const changed = await cds.db.run(
      `SELECT DISTINCT order_id AS ID FROM ${LOG} WHERE seq > ? AND seq <= ? AND order_id > ? ORDER BY order_id LIMIT ?`,
      [from, upTo, token ? token.after : -1, pageSize + 1])
    more = changed.length > pageSize
    const ids = (more ? changed.slice(0, pageSize) : changed).map(r => Number(r.ID))
    const present = new Map()
    if (ids.length) for (const row of await rowsOf(columns, { ID: { in: ids } })) present.set(row.ID, row)
    value = ids.map(ID => present.get(ID) ?? { '@removed': { reason: 'deleted' }, ID })
    last = ids.at(-1)
    stats.rows += present.size
    stats.removed += ids.length - present.size
    body['@odata.context'] = '$metadata#Orders/$delta'
  }
  body.value = value
  const select = $select ? `$select=${columns.join(',')}&` : ''
  if (more) {
    body['@odata.nextLink'] = `Orders?${select}${$deltatoken === undefined ? '$orderby=ID&' : `$deltatoken=${$deltatoken}&`}$skiptoken=${skipToken(last, upTo)}`
  } else {
    body['@odata.deltaLink'] = `${req.protocol}://${req.get('host')}${BASE}/Orders?${select}$deltatoken=${upTo}`
  }
  res.set('OData-Version', '4.0')
  res.set('Preference-Applied', [tracked ? 'odata.track-changes' : '', `odata.maxpagesize=${pageSize}`].filter(Boolean).join(', '))
  res.json(body)
}

cds.on('bootstrap', app => {
  app.get('/bench/stats', (_req, res) => res.json(stats))
  app.post('/bench/stats/reset', (_req, res) => { stats = fresh(); res.json(stats) })
  app.use(BASE, (req, _res, next) => {
    if (req.method === 'GET' && req.path.startsWith('/$metadata')) stats.requests.metadata++
    next()
  })
  app.get(`${BASE}/Orders`, (req, res, next) => orders(req, res, next).catch(next))
})

cds.on('served', ({ DeltaService }) => {
  // rows of CAP's own reads: full rows, or keys (a $select of the key alone: a deletes sweep)
  DeltaService.after('READ', 'Orders', (result, req) => {
    stats.requests.cap++
    const n = Array.isArray(result) ? result.length : result ? 1 : 0
    const columns = req.query.SELECT.columns
    const keysOnly = Array.isArray(columns) && columns.length === 1 && columns[0].ref?.[0] === 'ID'
    if (keysOnly) stats.keys += n
    else stats.rows += n
  })
})

process.on('SIGTERM', () => process.exit(0))
module.exports = cds.server
