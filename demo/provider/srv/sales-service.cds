using { sales } from '../db/schema';

/** The API the consumer replicates from: GET /odata/v4/sales/Orders, /Products, /Customers, /ExchangeRates, /$metadata. */
@readonly
service SalesService {
  entity Products      as projection on sales.Products;
  entity Orders        as projection on sales.Orders;
  entity Customers     as projection on sales.Customers;
  entity ExchangeRates as projection on sales.ExchangeRates;
}
