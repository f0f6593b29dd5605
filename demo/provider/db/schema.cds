namespace sales;

/** Products of the catalog; `modifiedAt` is what delta replication watches. */
entity Products {
  key ID         : Integer;
      name       : String(100);
      category   : String(40);
      price      : Decimal(9, 2);
      currency   : String(3);
      modifiedAt : Timestamp;
}

/** Sales orders: seeded with ~2,000 rows, a few change every 20 s (see srv/activity.js). */
entity Orders {
  key ID           : Integer;
      customer     : String(100);
      country      : String(2);
      product_ID   : Integer;
      productName  : String(100);
      quantity     : Integer;
      netAmount    : Decimal(11, 2);
      currency     : String(3);
      status       : String(12) enum { open; shipped; delivered; cancelled; };
      orderedAt    : Date;
      internalNote : String(200); // not replicated: the consumer's view leaves it out
      modifiedAt   : Timestamp;
}

/** Customers: seeded with one per company and country; now and then one changes segment or credit limit. */
entity Customers {
  key ID          : Integer;
      name        : String(100);
      country     : String(2);
      segment     : String(12) enum { small; medium; large; };
      creditLimit : Decimal(11, 2);
      modifiedAt  : Timestamp;
}

/**
 * Exchange rates to EUR. The rate desk goes into maintenance for a few seconds on its first request
 * (srv/rates.js): HTTP 503 until it is back, so the consumer's first `exchange-rates` run fails and a
 * later one recovers by itself.
 */
entity ExchangeRates {
  key currency   : String(3);
      rate       : Decimal(12, 6);
      modifiedAt : Timestamp;
}
