/* checksum : 70c01365d710aad86e4fa4e6ec7ac37e */
@cds.external : true
service SalesService {
  @cds.external : true
  @cds.persistence.skip : true
  entity Products {
    key ID : Integer not null;
    name : String(100);
    category : String(40);
    price : Decimal(9, 2);
    currency : String(3);
    @odata.Precision : 7
    @odata.Type : 'Edm.DateTimeOffset'
    modifiedAt : Timestamp;
  };

  @cds.external : true
  @cds.persistence.skip : true
  entity Orders {
    key ID : Integer not null;
    customer : String(100);
    country : String(2);
    product_ID : Integer;
    productName : String(100);
    quantity : Integer;
    netAmount : Decimal(11, 2);
    currency : String(3);
    @Validation.AllowedValues : [
      {
        $Type: 'Validation.AllowedValue',
        @Core.SymbolicName: 'open',
        Value: 'open'
      },
      {
        $Type: 'Validation.AllowedValue',
        @Core.SymbolicName: 'shipped',
        Value: 'shipped'
      },
      {
        $Type: 'Validation.AllowedValue',
        @Core.SymbolicName: 'delivered',
        Value: 'delivered'
      },
      {
        $Type: 'Validation.AllowedValue',
        @Core.SymbolicName: 'cancelled',
        Value: 'cancelled'
      }
    ]
    status : String(12);
    orderedAt : Date;
    internalNote : String(200);
    @odata.Precision : 7
    @odata.Type : 'Edm.DateTimeOffset'
    modifiedAt : Timestamp;
  };

  @cds.external : true
  @cds.persistence.skip : true
  entity Customers {
    key ID : Integer not null;
    name : String(100);
    country : String(2);
    @Validation.AllowedValues : [
      {
        $Type: 'Validation.AllowedValue',
        @Core.SymbolicName: 'small',
        Value: 'small'
      },
      {
        $Type: 'Validation.AllowedValue',
        @Core.SymbolicName: 'medium',
        Value: 'medium'
      },
      {
        $Type: 'Validation.AllowedValue',
        @Core.SymbolicName: 'large',
        Value: 'large'
      }
    ]
    segment : String(12);
    creditLimit : Decimal(11, 2);
    @odata.Precision : 7
    @odata.Type : 'Edm.DateTimeOffset'
    modifiedAt : Timestamp;
  };

  @cds.external : true
  @cds.persistence.skip : true
  entity ExchangeRates {
    key currency : String(3) not null;
    rate : Decimal(12, 6);
    @odata.Precision : 7
    @odata.Type : 'Edm.DateTimeOffset'
    modifiedAt : Timestamp;
  };
};

