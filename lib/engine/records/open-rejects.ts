/**
 * The open rejects a replay reads instead of a source: the pipeline's replayable rejects in batches,
 * keyset by ID (rejects the replay run adds are not read again).
 */
import { connect, ql } from '../../model/ql.js'
import { REJECTS_ENTITY, type RejectRow } from './rejects.js'

/** Open, replayable rejects of a pipeline in batches (keyset by ID); rejects added by the replay run itself are not read. */
export async function* openRejects(name: string, replayRunId: string, size: number): AsyncGenerator<RejectRow[]> {
  const db = await connect('db')
  let last: string | undefined
  for (;;) {
    const where: Record<string, unknown> = { pipeline_name: name, status: 'open', truncated: false, run_ID: { '!=': replayRunId } }
    if (last) where.ID = { '>': last }
    const rows = (await db.run(ql.SELECT.from(REJECTS_ENTITY).columns('ID', 'recordKey', 'record', 'mapped').where(where).orderBy('ID').limit(size))) as RejectRow[]
    if (rows.length) yield rows
    if (rows.length < size) return
    last = rows[rows.length - 1].ID
  }
}

