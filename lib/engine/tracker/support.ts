/**
 * What the tracker's statements share: the single-connection check, busy retries, the cumulative
 * statistics increments, and the error that names a missing tracker table.
 */
import { PIPELINES_TABLE } from '../../constants.js'
import { PipelineError } from '../../pipeline/errors.js'
import type { WriteStatistics } from '../../adapters/types.js'
import { currentContext, primaryDatabase } from '../../cap/index.js'

const MISSING_TABLE = /no such table|does not exist|invalid table name|not found/i

/**
 * With a single-connection database (SQLite: pool max 1) a caller whose own transaction already
 * holds the connection would wait forever for the tracker's transaction. Fail fast instead.
 */
export function assertConnectionAvailable(operation: string): void {
  const db = primaryDatabase()
  if (!db || db.options?.pool?.max !== 1) return
  if (currentContext()?.transactions?.get(db)?.dbc)
    throw new PipelineError('NOT_SUPPORTED',
      `${operation}() was called inside a transaction that holds the database's only connection (SQLite); ` +
      'the run needs its own transactions. Call it outside that transaction, e.g. with cds.spawn(() => …) or after the transaction ends.',
      { status: 500 })
}

export const BUSY_ATTEMPTS = 8
/** Runs without read-ahead after a stale guess. */
export const GUESS_PAUSE = 8

export function isBusy(error: unknown): boolean {
  const e = error as { code?: unknown; message?: unknown }
  return e?.code === 'SQLITE_BUSY' || /database is locked|SQLITE_BUSY/i.test(String(e?.message ?? ''))
}

/** Increments of the cumulative statistics columns (`skipped` only for runs that count it). */
export function cumulative(statistics: WriteStatistics): Record<string, { '+=': number }> {
  return {
    statistics_created: { '+=': statistics.created },
    statistics_updated: { '+=': statistics.updated },
    statistics_deleted: { '+=': statistics.deleted },
    ...(statistics.unchanged ? { statistics_unchanged: { '+=': statistics.unchanged } } : {}),
    ...(statistics.skipped ? { statistics_skipped: { '+=': statistics.skipped } } : {}),
  }
}

/** The run's skipped count, written only by runs of `onError: 'skip'` pipelines (and replays). */
export function skipped(statistics: WriteStatistics): Record<string, number> {
  return statistics.skipped === undefined ? {} : { statistics_skipped: statistics.skipped }
}

/** A missing tracker table becomes TRACKER_MISSING naming the table to deploy. */
export function asTrackerError(error: unknown): unknown {
  const message = (error as Error)?.message ?? ''
  if (MISSING_TABLE.test(message) && /plugin_data_pipeline|plugin\.data_pipeline/i.test(message)) {
    return new PipelineError('TRACKER_MISSING',
      `The tracker table ${PIPELINES_TABLE} is missing: deploy the plugin's model (add "using from 'cap-data-pipeline/db';" or set management.reuse.api, then run cds deploy)`,
      { cause: error }) // the database's own message stays in the cause (logged), out of answers
  }
  return error
}

