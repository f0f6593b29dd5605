using { sales } from '../db/schema';

/**
 * The API the consumer replicates from: GET /odata/v4/sales/Orders, /Products, /Customers, /ExchangeRates, /$metadata.
 * Customers may also be changed (PATCH) and announce every change on the messaging service
 * (`@federation.emit`: SalesService.Customers.Created/Updated/Deleted with the key): the consumer's
 * replica follows within a second instead of waiting for its next delta run.
 */
@readonly
service SalesService {
  entity Products      as projection on sales.Products;
  entity Orders        as projection on sales.Orders;
  @readonly: false @federation.emit
  entity Customers     as projection on sales.Customers;
  entity ExchangeRates as projection on sales.ExchangeRates;
}
