using { plugin.data_pipeline as tracker } from '../db/index';

/**
 * Runtime management of pipelines at /pipeline. The projections are read-only; everything
 * that changes state is an operation. Access: the plugin checks the roles PipelineViewer <
 * PipelineOperator < PipelineAdmin on every request (lib/security/roles.ts; names configurable in
 * cds.requires['data-pipeline'].management.roles, `false` leaves it to the app's annotations).
 * The @requires below names the roles for `cds compile --to xsuaa` / `cds add xsuaa` and lets
 * any authenticated user in (anonymous → 401), so that permissions() tells a user without a
 * role that they have none; the levels are the plugin's check.
 */
@path: '/pipeline'
@requires: ['PipelineViewer', 'PipelineOperator', 'PipelineAdmin', 'authenticated-user']
@impl: 'cap-data-pipeline/dist/srv/management.js'
service DataPipelineManagementService {

  type Statistics {
    created : Integer;
    updated : Integer;
    deleted : Integer;
    unchanged : Integer;
    skipped : Integer;
  }

  /** One tenant's run of a fan-out execute (multitenancy, provider execute without tenant). */
  type TenantRunResult {
    tenant     : String;
    runId      : UUID;
    /** completed | failed | skipped (a run was active) | running (async start) */
    status     : String;
    statistics : Statistics;
    error      : LargeString;
  }

  /**
   * Result of start/execute: the run and, for synchronous runs, its outcome. A fan-out over
   * tenants has no runId: the statistics are summed, `status` is 'failed' when any tenant's run
   * failed, and `tenants` holds each tenant's outcome.
   */
  type RunResult {
    runId      : UUID;
    name       : String;
    status     : String;
    statistics : Statistics;
    tenants    : many TenantRunResult;
  }

  /** One pipeline of one tenant in tenantsOverview(); a tenant that could not be read is one row with `error` and no pipeline. */
  type TenantPipeline {
    tenant        : String;
    pipeline      : String;
    enabled       : Boolean;
    status        : String;
    mode          : String;
    schedule      : String;
    lastSync      : Timestamp;
    lastSuccess   : Timestamp;
    /** fresh | stale | unknown */
    freshness     : String;
    errorCount    : Integer;
    lastError     : LargeString;
    lastRunId     : UUID;
    lastRunStatus : String;
    lastRunStart  : Timestamp;
    lastRunEnd    : Timestamp;
    error         : LargeString;
  }

  @readonly
  @cds.redirection.target
  entity Pipelines as projection on tracker.Pipelines {
    *,
    /** 'fresh' | 'stale' (last successful run older than maxStaleness, or none) | 'unknown' (no maxStaleness); computed on READ. */
    virtual null as freshness    : String(10),
    /** The effective maxStaleness in ms; null when not set. */
    virtual null as maxStaleness : Integer64,
  } excluding { leaseOwner, checkpoint } actions {
    action start(mode : String, trigger : String, async : Boolean) returns RunResult;
    action setSchedule(every : Integer, cron : String, engine : String) returns Pipelines;
    action clearSchedule() returns Pipelines;
    action setOverrides(overrides : LargeString) returns Pipelines;
    action clearOverrides(keys : String) returns Pipelines;
    action setEnabled(enabled : Boolean) returns Pipelines;
    /** The configuration field by field; each overridable field carries its rule (type, values, bounds) as the server checks it. */
    function configView() returns LargeString;
    /** Checks overrides (JSON, as setOverrides takes them) without changing anything: `{ valid, problems: [{ target, message }] }`, every bad setting named. */
    action validateOverrides(overrides : LargeString) returns LargeString;
    function inspectData(side : String, columnsJson : String, filters : String, top : Integer, skip : Integer) returns LargeString;
    function inspectCapabilities() returns LargeString;
    function flowMetadata() returns LargeString;
    /** Writes the open rejects again (stored record through MAP, validation and WRITE) as a run; see docs/concepts/rejects.md. */
    action replayRejects() returns RunResult;
  };

  /** Runs; `PipelineRuns(<ID>)/events` is a run's event log, `failedAt` where a failed run failed. */
  @readonly
  entity PipelineRuns as projection on tracker.PipelineRuns actions {
    /** Starts the pipeline again with the failed run's mode (trigger `manual`); only for failed runs. */
    action retry(async : Boolean) returns RunResult;
  };

  /** The event log of the runs (docs/reference/management-api.md "Run events"): `PipelineRuns(<ID>)/events`. */
  @readonly
  entity PipelineRunEvents as projection on tracker.PipelineRunEvents;

  /** Records set aside by `onError: 'skip'`: `$filter=pipeline_name eq 'x' and status eq 'open'`, or `PipelineRuns(<ID>)/rejects`. */
  @readonly
  entity PipelineRejects as projection on tracker.PipelineRejects;

  /** Event-driven pipelines: received, applied, skipped and lag p50/p95 (last hour), one row per pipeline and minute. */
  @readonly
  entity PipelineEventStats as projection on tracker.PipelineEventStats;

  /** Value help for the `mode` parameter of start. */
  @readonly @cds.persistence.skip
  entity PipelineRunModes {
    key code : String(20);
        name : String(100);
  }

  /** Value help for the `trigger` parameter of start and execute. */
  @readonly @cds.persistence.skip
  entity PipelineRunTriggers {
    key code : String(20);
        name : String(100);
  }

  /** What the calling user may do (any authenticated user): roles held and the three levels. */
  type Permissions {
    user       : String;
    tenant     : String;
    roles      : many String;
    view       : Boolean;
    operate    : Boolean;
    administer : Boolean;
  }
  function permissions() returns Permissions;

  function landscapeMetadata() returns LargeString;
  /** The next `count` (1–20, default 5) fire times of a schedule as an override gives it (ms, duration, cron, or `{ every | cron, engine }` as JSON). */
  function previewSchedule(schedule : String, count : Integer) returns LargeString;
  /** Multitenancy, provider only: every subscribed tenant's pipelines (status, freshness, last run, last error); see docs/guide/multitenancy.md. */
  function tenantsOverview() returns many TenantPipeline;
  action execute(name : String, mode : String, trigger : String, async : Boolean, tenant : String) returns RunResult;
  action flush(name : String) returns Pipelines;
  function status(name : String) returns Pipelines;
}
