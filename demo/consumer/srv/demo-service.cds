using { demo } from '../db/schema';
using { plugin.data_pipeline as pipeline } from 'cap-data-pipeline/db';

/**
 * Everything the demo shows, at /odata/v4/demo: for any signed-in user (the mocked users of
 * package.json); running a pipeline needs the plugin's PipelineOperator or PipelineAdmin role.
 */
@requires: 'authenticated-user'
service DemoService {
  @readonly entity Orders           as projection on demo.Orders;
  @readonly entity Products         as projection on demo.Products;
  @readonly entity RevenueByCountry as projection on demo.RevenueByCountry;
  /** Replicated by `@federated` (pipeline demo.Customers). */
  @readonly entity Customers        as projection on demo.Customers;
  /** Delegated: read live from the provider on every request. */
  @readonly entity OpenOrders       as projection on demo.OpenOrders;
  @readonly entity ExchangeRates    as projection on demo.ExchangeRates;

  /** The plugin's tracker tables, read-only. */
  @readonly entity Pipelines        as projection on pipeline.Pipelines;
  @readonly entity PipelineRuns     as projection on pipeline.PipelineRuns;

  /** Runs a pipeline now and waits for it: POST /odata/v4/demo/runPipeline {"pipeline":"orders","mode":"full"}. */
  @requires: ['PipelineOperator', 'PipelineAdmin']
  action runPipeline(pipeline : String, mode : String) returns {
    runId    : String;
    status   : String;
    created  : Integer;
    updated  : Integer;
    deleted  : Integer;
  };
}
