/**
 * lib/engine/drift — schema drift: this module checks at run start and keeps the latest result;
 * compare.ts compares the live source with the imported API and the target, column by column;
 * shapes.ts compares CDS types (assignable, lengths, precision).
 *
 * Schema drift (README "Schema drift"): at run start, what the source really delivers (the
 * adapter's `liveShape()`: OData `$metadata`, HCQL `$csn`, the served model, or a REST source's
 * first page) is compared with what the pipeline was built against (the imported API the app
 * compiled with) and with what the target takes (its elements, through the pipeline's mapping).
 *
 * Differences:
 *   - `added`     a source column that neither the imported API nor the mapping knows (informational);
 *   - `removed`   a mapped source column the source no longer delivers;
 *   - `type`      a mapped column whose type changed (e.g. Integer → String), or whose type the target cannot take;
 *   - `length`    a mapped string column whose length changed, or that no longer fits the target;
 *   - `precision` a mapped decimal column whose precision/scale changed, or that no longer fits the target.
 * A difference is `breaking` when the target cannot take what the source now delivers (a removed
 * mapped column, a type or size the target column cannot hold).
 *
 * Policy (`schemaDrift`, per pipeline or app-wide): `warn` (default) records the drift on the run
 * row (`PipelineRuns.drift`) and in `flowMetadata`, logs it, and runs on — without removed
 * columns in `$select`; `fail` fails the run before anything is written when a difference is
 * breaking; `ignore` checks nothing. A removed key or watermark column fails the run under
 * `warn` too: nothing could be read without it.
 */
import { currentRun } from '../../runs/index.js'
import cds from '@sap/cds'
import { LOGGER, RUNS_ENTITY, SERVICE_NAME, EVENTS } from '../../constants.js'
import { PipelineError } from '../../pipeline/errors.js'
import { compareShapes, type DriftChange, type DriftKind, type SchemaDriftReport } from './compare.js'
import { resolveSchemaDrift } from '../config/index.js'
import type { DataRecord, ResolvedPipeline, SchemaDriftSetting } from '../../pipeline/types.js'
import { connect, ql } from '../../model/ql.js'
import { DEFAULT_MAX_AGE, type LiveShape } from '../../adapters/source/live-shape.js'
import type { PreparedPipeline } from '../run/types.js'
import { applicationHooks, replay } from '../run/read-ahead.js'
import { tenantKey } from '../tenancy/index.js'
import { pluginSettings } from '../../cap/settings.js'

export { compareShapes, type DriftChange, type DriftKind, type SchemaDriftReport }

const LOG = cds.log(LOGGER.engine)

/** How long a run waits for the live schema before it runs unchecked (warn) or fails (fail). */
const CHECK_TIMEOUT = 15_000

/** The run fails on drift: code `SCHEMA_DRIFT`, HTTP 502 like other source failures; `drift` holds the report. */
export class SchemaDriftError extends PipelineError {
  readonly drift: SchemaDriftReport

  constructor(message: string, drift: SchemaDriftReport) {
    super('SCHEMA_DRIFT', message, { target: 'schemaDrift' })
    this.drift = drift
  }
}

// ---------------------------------------------------------------------------------------------
// the latest result per pipeline (and tenant), for flowMetadata

const latest = new Map<string, SchemaDriftReport | null>()

/** The drift found by the pipeline's latest checked run in this process (null: none; undefined: not checked). */
export function latestDrift(name: string): SchemaDriftReport | null | undefined {
  return latest.get(tenantKey(name))
}

// ---------------------------------------------------------------------------------------------
// settings

let appSettingProblem = false

/** The pipeline's `schemaDrift`, else the app's `cds.requires['data-pipeline'].schemaDrift`, else `warn`. */
export function driftSetting(pipeline: ResolvedPipeline): SchemaDriftSetting & { maxAge: number } {
  let setting = pipeline.schemaDrift
  if (!setting) {
    const app: unknown = pluginSettings().schemaDrift
    if (app !== undefined && app !== null) {
      try {
        setting = resolveSchemaDrift(app, `cds.requires.${SERVICE_NAME}.schemaDrift`)
      } catch (error) {
        if (!appSettingProblem) LOG.warn(`${(error as Error).message}; using 'warn'`)
        appSettingProblem = true
      }
    }
  }
  const policy = setting?.policy ?? 'warn'
  // `fail` promises that a drifted source writes nothing: it checks a fresh document unless told otherwise
  return { policy, maxAge: setting?.maxAge ?? (policy === 'fail' ? 0 : DEFAULT_MAX_AGE) }
}

/**
 * Whether a delta run may read before the check has run (read-ahead.ts): where the check
 * cannot change what is read — `ignore`, or `warn` that found no drift last time and checks
 * against a cached document. Never under `fail` (a drifted source is not read at all) or
 * `maxAge: 0` (every run looks at a fresh document first).
 */
export function driftAllowsReadAhead(pipeline: ResolvedPipeline): boolean {
  const setting = driftSetting(pipeline)
  if (setting.policy === 'ignore') return true
  return setting.policy === 'warn' && setting.maxAge > 0 && latestDrift(pipeline.name) === null
}

// ---------------------------------------------------------------------------------------------
// the check at run start

/**
 * Checks the source's live schema before anything is written. Returns the stream to read (the
 * same records; for REST the first batch was taken to learn the columns and is replayed). Throws
 * a {@link SchemaDriftError} when the policy says the run must not proceed; records the drift on
 * the run row otherwise.
 */
export async function checkSchemaDrift(prepared: PreparedPipeline, runId: string, stream: AsyncIterable<DataRecord[]>): Promise<AsyncIterable<DataRecord[]>> {
  const { pipeline, source } = prepared
  const setting = driftSetting(pipeline)
  if (setting.policy === 'ignore') {
    latest.delete(tenantKey(pipeline.name))
    return stream
  }
  if (source.shapeFromRecords && hasCustomMapping(pipeline.name)) {
    // the application's own PIPELINE.MAP decides which record fields become which columns
    if (LOG._debug) LOG.debug(`pipeline '${pipeline.name}': schema drift not checked (a custom ${EVENTS.MAP} handler maps the records)`)
    return stream
  }
  const startedAt = Date.now()
  let records = stream
  let firstBatch: DataRecord[] | undefined
  let iterator: AsyncIterator<DataRecord[]> | undefined
  if (source.shapeFromRecords) {
    iterator = stream[Symbol.asyncIterator]()
    const first = await iterator.next()
    firstBatch = first.done ? [] : first.value
    records = replay(first, iterator)
  }

  let live: LiveShape | undefined
  try {
    live = await withTimeout(source.liveShape({ maxAge: setting.maxAge, firstBatch }), CHECK_TIMEOUT)
  } catch (error) {
    const reason = `the live schema could not be read (${(error as Error).message})`
    if (setting.policy === 'fail') {
      await iterator?.return?.()
      throw new PipelineError('SOURCE_FAILED', `Schema drift check of pipeline '${pipeline.name}' failed: ${reason}; policy 'fail' writes nothing unchecked`, { target: 'schemaDrift' })
    }
    LOG.warn(`pipeline '${pipeline.name}': schema drift not checked: ${reason}`)
    return guarded(prepared, runId, records, setting, undefined)
  }
  if (!live) return guarded(prepared, runId, records, setting, undefined)

  const report = compareShapes(prepared, live, runId, setting.policy)
  latest.set(tenantKey(pipeline.name), report ?? null)
  if (!report) return guarded(prepared, runId, records, setting, { cached: Date.parse(live.fetchedAt) < startedAt })
  await recordDrift(runId, report)
  const stop = report.changes.some(c => c.fatal) || (setting.policy === 'fail' && report.breaking)
  if (stop) {
    await iterator?.return?.()
    throw new SchemaDriftError(`${report.message} (policy '${setting.policy}'); the run stopped before writing anything`, report)
  }
  LOG.warn(`pipeline '${pipeline.name}': ${report.message}`)
  return guarded(prepared, runId, records, setting, { cached: Date.parse(live.fetchedAt) < startedAt, removed: report.changes.filter(c => c.change === 'removed').map(c => c.column) })
}

/** Whether the application registered its own PIPELINE.MAP handler (`on`/`before`) for this pipeline. */
function hasCustomMapping(name: string): boolean {
  return applicationHooks(name).some(h => h.event === EVENTS.MAP && h.phase !== 'after')
}

/**
 * The records as read; under `warn`, removed columns are left out of what the source selects for
 * this run. A read that fails drops the cached schema document, and when the check used a cached
 * one, the schema is read again: a drift found then is recorded and explains the failure.
 */
async function* guarded(prepared: PreparedPipeline, runId: string, stream: AsyncIterable<DataRecord[]>, setting: SchemaDriftSetting, checked: { cached: boolean; removed?: string[] } | undefined): AsyncGenerator<DataRecord[]> {
  const { source } = prepared
  const columns = source.columns
  if (columns && checked?.removed?.length) source.columns = columns.filter(column => !checked.removed!.includes(column))
  try {
    yield* stream
  } catch (error) {
    source.forgetLiveShape()
    throw checked?.cached && !source.shapeFromRecords ? await explain(prepared, runId, setting, error) : error
  } finally {
    source.columns = columns
  }
}

async function explain(prepared: PreparedPipeline, runId: string, setting: SchemaDriftSetting, error: unknown): Promise<unknown> {
  try {
    const live = await withTimeout(prepared.source.liveShape({ maxAge: 0 }), CHECK_TIMEOUT)
    const report = live && compareShapes(prepared, live, runId, setting.policy === 'fail' ? 'fail' : 'warn')
    latest.set(tenantKey(prepared.pipeline.name), report ?? null)
    if (!report) return error
    await recordDrift(runId, report)
    return new SchemaDriftError(`${report.message}; the read failed: ${(error as Error).message}`, report)
  } catch {
    return error
  }
}

function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms) })
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer))
}

let missingColumnLogged = false

/** Writes the report to `PipelineRuns.drift` of the run (its own transaction). */
async function recordDrift(runId: string, report: SchemaDriftReport): Promise<void> {
  currentRun()?.event('drift', { phase: 'source', message: report.message, details: { policy: report.policy, breaking: report.breaking, changes: report.changes.length } })
  try {
    const db = await connect('db')
    await db.tx(tx => tx.run(ql.UPDATE.entity(RUNS_ENTITY).set({ drift: JSON.stringify(report) }).where({ ID: runId })))
  } catch (error) {
    if (!missingColumnLogged) LOG.warn(`could not record schema drift on run ${runId} (is the tracker schema deployed with PipelineRuns.drift?): ${(error as Error).message}`)
    missingColumnLogged = true
  }
}
