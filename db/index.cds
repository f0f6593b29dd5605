namespace plugin.data_pipeline;

using { cuid } from '@sap/cds/common';

/** Run mode stored on the tracker and on each run. */
type ReplicationMode : String(20) enum { delta; full; }

/** Lifecycle state of a pipeline and of a single run. */
type RunStatus : String(10) enum { idle; running; failed; }

/** What started a run; unknown values are whitelisted away to `manual`. */
type RunTrigger : String(10) enum { manual; scheduled; external; event; }

type Statistics {
  created : Integer default 0;
  updated : Integer default 0;
  deleted : Integer default 0;
  /** Rows read that were present and identical, so not written (database targets; README "Statistics"). */
  unchanged : Integer default 0;
  /** Records set aside by `onError: 'skip'` (PipelineRejects). */
  skipped : Integer default 0;
}

/** One row per registered pipeline: state, watermark, lease and cumulative statistics. */
entity Pipelines {
  key name        : String(255);
      description : String(1000);
      source      : LargeString;
      target      : LargeString;
      mode        : ReplicationMode;
      enabled     : Boolean default true;
      baseConfig  : LargeString;
      overrides   : LargeString;
      schedule    : String(255);
      origin      : String(255);
      lastSync    : Timestamp;
      lastKey     : String(1000);
      status      : RunStatus default 'idle';
      errorCount  : Integer default 0;
      lastError   : String(5000);
      statistics  : Statistics;
      runs        : Composition of many PipelineRuns on runs.pipeline = $self;
      rejects     : Association to many PipelineRejects on rejects.pipeline = $self;
      // Lease of the active run: who holds it and until when (renewed by a heartbeat).
      leaseOwner  : String(100);
      leaseUntil  : Timestamp;
      currentRun  : UUID;
      // Watermark reached by the committed batches of an unfinished (failed or killed) delta run;
      // the next run resumes from it, so a restart re-reads at most the batch that was in flight.
      checkpoint  : LargeString;
      // Deletes in delta mode: JSON of the last key reconciliation sweep (time, status, deleted,
      // sourceKeys, targetKeys, rows, durationMs, error) and the delta runs since the last completed one.
      lastSweep   : LargeString;
      /** End time of the last successful run (freshness; `lastSync` is the data's watermark). */
      lastSuccess : Timestamp;
}

/** One row per run, successful or failed. */
entity PipelineRuns : cuid {
  pipeline   : Association to Pipelines;
  status     : RunStatus;
  startTime  : Timestamp;
  endTime    : Timestamp;
  trigger    : RunTrigger;
  mode       : ReplicationMode;
  error      : LargeString;
  /** Schema drift found at run start (JSON: source, basis, policy, breaking, changes[], message); null when none or not checked. */
  drift      : LargeString;
  statistics : Statistics;
  // Progress (README "Progress and freshness"), updated after every batch; null: unknown.
  /** Records read so far. */
  processed     : Integer64 default 0;
  /** Records the run expects to read: the source's count of the run's filter; null when the source cannot tell (REST). */
  expected      : Integer64;
  /** processed / expected in percent (0–100). */
  percent       : Decimal(5, 2);
  /** Records read per second since the run started. */
  rowsPerSecond : Decimal(15, 2);
  /** Estimated milliseconds left; 0 once the run ended. */
  remainingMs   : Integer64;
  /** Estimated end of the run. */
  eta           : Timestamp;
  rejects    : Composition of many PipelineRejects on rejects.run = $self;
  /** Where a failed run failed (README "Run events"); null for runs that did not fail. */
  failedAt   : RunPhase;
  /** The run's event log (bounded; deleted with the run). */
  events     : Composition of many PipelineRunEvents on events.run = $self;
}

/** The part of a run an event (or a failure) belongs to. */
type RunPhase : String(10) enum { guard; source; mapping; target; }

/**
 * The structured event log of a run (README "Run events"): start, page reads, retries, write
 * batches, sweep, drift, rejects, guard/lease, partitions, errors, end — at most
 * `runEvents.max` per run, the rest rolled up into one `rollup` event. Counts, sizes and
 * durations only: never URLs with parameters, credentials, SQL or record values.
 */
entity PipelineRunEvents {
  key run        : Association to PipelineRuns;
  /** Order within the run, from 1. */
  key seq        : Integer;
      time       : Timestamp;
      /** start | page | retry | batch | sweep | drift | rejects | lease | partitions | error | rollup | end */
      kind       : String(20);
      phase      : RunPhase;
      /** HTTP status of a page read or of the failure a retry follows. */
      httpStatus : Integer;
      /** Records read (page), written (batch) or counted (rollup). */
      rows       : Integer64;
      /** Bytes received (page reads where the transport tells; null otherwise). */
      bytes      : Integer64;
      durationMs : Integer64;
      /** Retry: the attempt that follows; batch: its index. */
      attempt    : Integer;
      /** Retry: ms waited before it. */
      waitMs     : Integer64;
      /** Short text: error code and public message, a retry's reason, what was rolled up. */
      message    : String(1000);
      /** Further counts as JSON (batch statistics, the kinds of a roll-up). */
      details    : String(2000);
}

/** Where a rejected record failed. */
type RejectPhase : String(10) enum { map; validate; write; }

/** Whether a rejected record still waits: `open`, or `replayed` / `written` (a later run wrote its key) / `superseded` (rejected again later). */
type RejectStatus : String(10) enum { open; replayed; written; superseded; }

/**
 * Dead letters of `onError: 'skip'`: one row per record a run set aside, with its key, the
 * phase and error, and the record itself (capped; never headers or credentials).
 */
entity PipelineRejects : cuid {
  run        : Association to PipelineRuns;
  pipeline   : Association to Pipelines;
  /** The record's target key as JSON, e.g. {"ID":7}. */
  recordKey  : String(1000);
  phase      : RejectPhase;
  error      : String(5000);
  /** The source record as read (JSON), replayed through MAP, validation and WRITE. */
  record     : LargeString;
  /** The mapped target record (JSON) of validate/write rejects whose source record is not known. */
  mapped     : LargeString;
  /** The record exceeded the stored size: `record`/`mapped` hold a prefix and cannot be replayed. */
  truncated  : Boolean default false;
  status     : RejectStatus default 'open';
  createdAt  : Timestamp;
  resolvedAt : Timestamp;
  /** The run that wrote, replayed or rejected the record again. */
  resolvedBy : UUID;
}

/**
 * Mix into a target entity that several pipelines fill from different origins
 * (multi-source fan-in): the `source` key column carries the pipeline's `source.origin`.
 */
aspect sourced {
  key source : String(100) default '';
}

/**
 * Event-driven replication (README "Event-driven replication"): the keys a pipeline's messages
 * named and that wait for their micro-batch, one row per key (a newer message of the same key
 * replaces the row: the last state wins). Rows leave once their batch is written (those of identified
 * messages stay a minute as tombstones, so fan-out copies apply once), so a crash
 * between receipt and write loses nothing, and every instance on one database sees them.
 */
entity PipelineEventKeys {
  key pipeline  : String(255);
  /** The key (source names) as JSON, e.g. {"ID":7}. */
  key recordKey : String(1000);
      action    : String(10);
      /** `payload` action: the message's data (the row itself), JSON. */
      payload   : LargeString;
      /** The message's time (`headers.time`), else when it was received: the start of its lag. */
      eventTime : Timestamp;
      /**
       * Changes with every message of the key: a batch removes only the rows it applied. Derived
       * from the message's identity (CloudEvents `id`) when it has one, so fan-out copies are one row.
       */
      version   : UUID;
      /** Applied (rows of identified messages only): a tombstone that keeps late copies from applying again. */
      appliedAt : Timestamp;
}

/** Bounded event statistics: one row per pipeline and minute with events (lag over the last hour). */
entity PipelineEventStats {
  key pipeline  : String(255);
  key minute    : Timestamp;
      received  : Integer default 0;
      applied   : Integer default 0;
      skipped   : Integer default 0;
      /** Lag (message time → replica write) in ms over the hour up to this minute. */
      lagP50    : Integer;
      lagP95    : Integer;
      lastEvent : Timestamp;
}
