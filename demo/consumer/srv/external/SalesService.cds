/* The provider's API as `cds import` produces it from http://localhost:4005/odata/v4/sales/$metadata. */
@cds.external
service SalesService {
  entity Products {
    key ID         : Integer;
        name       : String(100);
        category   : String(40);
        price      : Decimal(9, 2);
        currency   : String(3);
        modifiedAt : Timestamp;
  }

  entity Orders {
    key ID           : Integer;
        customer     : String(100);
        country      : String(2);
        product_ID   : Integer;
        productName  : String(100);
        quantity     : Integer;
        netAmount    : Decimal(11, 2);
        currency     : String(3);
        status       : String(12);
        orderedAt    : Date;
        internalNote : String(200);
        modifiedAt   : Timestamp;
  }
}
