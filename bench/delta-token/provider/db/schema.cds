namespace deltabench;

/**
 * The source table. bench/delta-token.mjs adds, after seeding, an index on (modifiedAt, ID) for
 * timestamp deltas and the change log `deltabench_ChangeLog` (seq, order_id) with triggers on
 * insert, update and delete: the change tracking a $deltatoken reads (server.js).
 */
entity Orders {
  key ID         : Integer;
      customer   : String(40);
      product    : String(40);
      status     : String(20);
      quantity   : Integer;
      amount     : Decimal(12, 2);
      note       : String(100);
      createdAt  : Timestamp;
      modifiedAt : Timestamp;
}
