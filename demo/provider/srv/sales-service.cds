using { sales } from '../db/schema';

/** The API the consumer replicates from: GET /odata/v4/sales/Orders, /Products, /$metadata. */
@readonly
service SalesService {
  entity Products as projection on sales.Products;
  entity Orders   as projection on sales.Orders;
}
