/* `cds import` of the provider's $metadata (bench/delta-token/provider), service renamed DeltaProvider */
@cds.external : true
service DeltaProvider {
  @cds.external : true
  @cds.persistence.skip : true
  @Capabilities.DeleteRestrictions.Deletable : false
  @Capabilities.InsertRestrictions.Insertable : false
  @Capabilities.UpdateRestrictions.Updatable : false
  entity Orders {
    key ID : Integer not null;
    customer : String(40);
    product : String(40);
    status : String(20);
    quantity : Integer;
    amount : Decimal(12, 2);
    note : String(100);
    @odata.Precision : 7
    @odata.Type : 'Edm.DateTimeOffset'
    createdAt : Timestamp;
    @odata.Precision : 7
    @odata.Type : 'Edm.DateTimeOffset'
    modifiedAt : Timestamp;
  };
};

