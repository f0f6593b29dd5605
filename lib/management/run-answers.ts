/**
 * What the management service answers about pipelines and runs beyond the stored rows: tracker
 * rows without their internal columns, the code lists of modes and triggers, the live counters
 * of this process's running runs, and the schema drift of a pipeline's newest run.
 */
import { REPLICATION_MODES, RUNS_ENTITY, RUN_TRIGGERS } from '../constants.js'
import { liveProgress, liveStatistics } from '../engine/run/statistics.js'
import { latestDrift, type SchemaDriftReport } from '../engine/drift/index.js'
import { connect, ql } from '../model/ql.js'
import type { PipelineRow } from '../engine/tracker/index.js'

const MODE_NAMES: Record<string, string> = { delta: 'Delta (changes since the last run)', full: 'Full refresh' }
const TRIGGER_NAMES: Record<string, string> = { manual: 'Manual', scheduled: 'Scheduled', external: 'External scheduler', event: 'Event' }

/** Columns of the tracker row that never leave the service. */
const INTERNAL_COLUMNS = ['leaseOwner', 'checkpoint'] as const

interface CodeRow { code: string; name: string | undefined }
type CodeList = CodeRow[] & { $count?: number }
/** The part of a READ's query a code list answers: `/$count` and `$count=true`. */
interface ListQuery { SELECT?: { count?: boolean; columns?: Array<{ func?: string; as?: string } | string> } }

/** PipelineRunModes: the modes a run may be started in, with their names. */
export function runModes(query?: ListQuery): CodeList | [{ $count: number }] {
  return codeList(REPLICATION_MODES.map(code => ({ code, name: MODE_NAMES[code] })), query)
}

/** PipelineRunTriggers: what may start a run, with their names. */
export function runTriggers(query?: ListQuery): CodeList | [{ $count: number }] {
  return codeList(RUN_TRIGGERS.map(code => ({ code, name: TRIGGER_NAMES[code] })), query)
}

/**
 * A code list as CAP's OData adapter expects it from an `on('READ')` handler: `/$count` reads the
 * count from the first row's `$count`, `$count=true` from the array's (else both answer 0).
 */
function codeList(rows: CodeRow[], query: ListQuery | undefined): CodeList | [{ $count: number }] {
  const select = query?.SELECT
  if (select?.columns?.some(column => typeof column === 'object' && column.as === '$count')) return [{ $count: rows.length }]
  const list: CodeList = rows
  if (select?.count) list.$count = rows.length
  return list
}

/** A tracker row as answered: without the columns only the engine reads. */
export function publicRow(row: PipelineRow): Record<string, unknown> {
  const out: Record<string, unknown> = { ...row }
  for (const column of INTERNAL_COLUMNS) delete out[column]
  return out
}

/** Runs with one transaction show their progress from this process's live counters. */
export function withLiveCounts(rows: unknown): void {
  for (const row of (Array.isArray(rows) ? rows : [rows]) as Array<Record<string, unknown>>) {
    const live = row && typeof row.ID === 'string' ? liveStatistics.get(row.ID) : undefined
    if (live && row.status === 'running') Object.assign(row, { statistics_created: live.created, statistics_updated: live.updated, statistics_unchanged: live.unchanged ?? 0, statistics_deleted: live.deleted, ...(live.skipped === undefined ? {} : { statistics_skipped: live.skipped }) }, 'statistics' in row ? { statistics: { ...live } } : {})
    const progress = row && row.status === 'running' && typeof row.ID === 'string' ? liveProgress.get(row.ID) : undefined
    if (progress) for (const [key, value] of Object.entries(progress)) if (key in row) row[key] = value
  }
}

/**
 * The schema drift of the pipeline's newest run (its `PipelineRuns.drift`; a running run counts once it
 * recorded drift), so every instance and a restarted one show the same. Undefined — flowMetadata then
 * shows what this process's latest check found — without runs, when the runs cannot be read, or when
 * the newest run has none but this process's latest check found drift: a replay of rejects is a run
 * without a check (its `drift` stays null) and must not hide the drift.
 */
export async function latestRunDrift(name: string): Promise<SchemaDriftReport | null | undefined> {
  try {
    const db = await connect('db')
    const runs = (await db.run(ql.SELECT.from(RUNS_ENTITY).columns('status', 'drift').where({ pipeline_name: name }).orderBy('startTime desc').limit(2))) as Array<{ status?: string; drift?: string | null }>
    const run = runs.find(r => r.drift || r.status !== 'running')
    if (!run || (!run.drift && latestDrift(name))) return undefined
    return run.drift ? (JSON.parse(run.drift) as SchemaDriftReport) : null
  } catch {
    return undefined
  }
}
