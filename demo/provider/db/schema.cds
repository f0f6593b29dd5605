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
