namespace bench;

using { DeltaProvider as ext } from '../srv/external/DeltaProvider';
using from 'cap-data-pipeline/db';

/** Replica of pipeline `orders-token` (delta.mode 'odata-delta'). */
@cds.persistence.table
entity OrdersToken as projection on ext.Orders;

/** Replica of pipeline `orders-stamp` (delta.mode 'timestamp' on modifiedAt; with a deletes sweep; full copies). */
@cds.persistence.table
entity OrdersStamp as projection on ext.Orders;
