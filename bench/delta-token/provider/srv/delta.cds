using { deltabench as db } from '../db/schema';

/**
 * Orders over OData V4. CAP serves its reads ($filter, $orderby, $top, $count, $select); a read
 * with `Prefer: odata.track-changes` or a `$deltatoken` is answered by server.js (CAP's OData
 * adapter emits no delta links).
 */
service DeltaService @(path: '/odata/v4/delta') {
  @readonly
  entity Orders as projection on db.Orders;
}
