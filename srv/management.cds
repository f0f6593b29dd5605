using { plugin.data_pipeline as tracker } from '../db/index';

/**
 * Runtime management of pipelines at /pipeline. The projections are read-only; everything
 * that changes state is an operation. Secure it in the host app, e.g.
 *   annotate DataPipelineManagementService with @(requires: 'PipelineAdmin');
 */
@path: '/pipeline'
@impl: 'cap-data-pipeline/dist/srv/management.js'
service DataPipelineManagementService {

  type Statistics {
    created : Integer;
    updated : Integer;
    deleted : Integer;
    skipped : Integer;
  }

  /** Result of start/execute: the run and, for synchronous runs, its outcome. */
  type RunResult {
    runId      : UUID;
    name       : String;
    status     : String;
    statistics : Statistics;
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
    function configView() returns LargeString;
    function inspectData(side : String, columnsJson : String, filters : String, top : Integer, skip : Integer) returns LargeString;
    function inspectCapabilities() returns LargeString;
    function flowMetadata() returns LargeString;
    /** Writes the open rejects again (stored record through MAP, validation and WRITE) as a run; see README "Rejected records". */
    action replayRejects() returns RunResult;
  };

  @readonly
  entity PipelineRuns as projection on tracker.PipelineRuns;

  /** Records set aside by `onError: 'skip'`: `$filter=pipeline_name eq 'x' and status eq 'open'`, or `PipelineRuns(<ID>)/rejects`. */
  @readonly
  entity PipelineRejects as projection on tracker.PipelineRejects;

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

  function landscapeMetadata() returns LargeString;
  action execute(name : String, mode : String, trigger : String, async : Boolean, tenant : String) returns RunResult;
  action flush(name : String) returns Pipelines;
  function status(name : String) returns Pipelines;

  /** What the calling user may do here (the console disables what the role does not allow). */
  type Permissions {
    user       : String;
    tenant     : String;
    roles      : many String;
    view       : Boolean;
    operate    : Boolean;
    administer : Boolean;
  }
  function permissions() returns Permissions;
}
