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

/**
 * CAP's `@federated`: a consumption view the plugin keeps as a local replica — no code. Pipeline
 * `demo.Customers`, delta by `modifiedAt`, every minute (cds.requires['data-pipeline'].federation).
 */
@federated
entity Customers as projection on sales.Customers {
  key ID, name, country, segment, creditLimit, modifiedAt
};

/**
 * A delegate: no local table, every read goes to the provider at request time (live, never behind).
 * Only open orders, renamed as in demo.Orders; read-only (a write answers 405).
 */
@federation.delegate: { readonly: true }
entity OpenOrders as projection on sales.Orders {
  key ID, customer, country, productName as product, quantity, netAmount as amount, currency, orderedAt, modifiedAt
} where status = 'open';

/** Exchange rates, copied in full by the `exchange-rates` pipeline (its source fails at first, see demo/README.md). */
@cds.persistence.table
entity ExchangeRates as projection on sales.ExchangeRates {
  key currency, rate, modifiedAt
};
