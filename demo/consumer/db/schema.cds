namespace demo;

using { SalesService as sales } from '../srv/external/SalesService';
using from 'cap-data-pipeline/db'; // the tracker tables Pipelines and PipelineRuns

/**
 * Consumption view → a local table (@cds.persistence.table) filled by the `orders` pipeline.
 * The projection is the mapping: `productName` arrives as `product`, `netAmount` as `amount`,
 * and `internalNote` is never requested from the provider ($select lists only these columns).
 */
@cds.persistence.table
entity Orders as projection on sales.Orders {
  key ID, customer, country, productName as product, quantity, netAmount as amount, currency, status, orderedAt, modifiedAt
};

/** The product catalog, copied in full by the `products` pipeline. */
@cds.persistence.table
entity Products as projection on sales.Products {
  key ID, name, category, price, currency
};

/** A derived snapshot: the `revenue-by-country` pipeline (source.query) rebuilds it from local Orders. */
entity RevenueByCountry {
  key country   : String(2);
      orders    : Integer;
      open      : Integer;
      revenue   : Decimal(15, 2);
      currency  : String(3);
}
