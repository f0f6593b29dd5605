/**
 * The key store's write (lib/events/store.ts storeKeys) when another instance stores the same key
 * between this write's read and its write — fan-out copies of one message on a loaded machine: a
 * row absent when read is not locked, so it may meanwhile have been stored, applied and kept as a
 * tombstone. The write must not make that key wait again (it would be fetched a second time: the
 * events-scale-out test saw 1,320 keys fetched for 600 under load), nor overwrite a newer state; it
 * fails as a conflict instead, and the retry reads the row.
 */
import { derivedVersion, isConflict, storeKeys, type PendingKey } from '../../lib/events/store'

type Row = PendingKey
type Query = { SELECT?: unknown; INSERT?: { entries: Row[] }; UPSERT?: { entries: Row[] } }

/** A table of key rows; `afterRead` runs once, right after the first read answered (the other instance's writes). */
function table(afterRead?: (rows: Map<string, Row>) => void) {
  const rows = new Map<string, Row>()
  let reads = 0
  const runner = {
    async run(query: Query): Promise<unknown> {
      if (query.SELECT) {
        const answer = [...rows.values()].map(({ recordKey, version, eventTime }) => ({ recordKey, version, eventTime }))
        if (reads++ === 0) afterRead?.(rows)
        return answer
      }
      if (query.INSERT) {
        for (const row of query.INSERT.entries) if (rows.has(row.recordKey)) throw Object.assign(new Error('duplicate key value violates unique constraint'), { code: '23505' })
        for (const row of query.INSERT.entries) rows.set(row.recordKey, { ...row })
        return query.INSERT.entries.length
      }
      if (query.UPSERT) {
        for (const row of query.UPSERT.entries) rows.set(row.recordKey, { ...rows.get(row.recordKey), ...row })
        return query.UPSERT.entries.length
      }
      throw new Error(`unexpected query ${JSON.stringify(query)}`)
    },
  }
  return { rows, runner }
}

const key = (ID: number, identity: string, eventTime = '2026-11-26T08:00:00.000Z'): Row => ({
  pipeline: 'P', recordKey: JSON.stringify({ ID }), action: 'upsert', payload: null, eventTime, version: derivedVersion(identity, 0), appliedAt: null,
})

test('a copy whose key another instance stored and applied after the read: a conflict, the tombstone stays; the retry writes nothing', async () => {
  const copy = key(1, 'message-1')
  const { rows, runner } = table(rows => rows.set(copy.recordKey, { ...copy, appliedAt: '2026-11-26T08:00:01.000Z' }))
  const error = await storeKeys(runner, 'P', [copy]).then(() => undefined, (e: unknown) => e)
  expect(isConflict(error)).toBe(true)
  expect(rows.get(copy.recordKey)?.appliedAt).toBe('2026-11-26T08:00:01.000Z')
  await storeKeys(runner, 'P', [copy])
  expect(rows.get(copy.recordKey)?.appliedAt).toBe('2026-11-26T08:00:01.000Z')
})

test('a newer message of a key stored meanwhile is not replaced by an older one read as absent', async () => {
  const older = key(2, 'message-old', '2026-11-26T08:00:00.000Z')
  const newer = key(2, 'message-new', '2026-11-26T08:00:05.000Z')
  const { rows, runner } = table(rows => rows.set(newer.recordKey, { ...newer }))
  await expect(storeKeys(runner, 'P', [older])).rejects.toSatisfy(isConflict)
  await storeKeys(runner, 'P', [older])
  expect(rows.get(older.recordKey)?.version).toBe(newer.version)
})

test('keys absent when read and still absent are stored; a stored newer message replaces a stored older one', async () => {
  const { rows, runner } = table()
  await storeKeys(runner, 'P', [key(3, 'a'), key(4, 'b')])
  expect([...rows.keys()]).toEqual([JSON.stringify({ ID: 3 }), JSON.stringify({ ID: 4 })])
  const newer = key(3, 'c', '2026-11-26T08:00:09.000Z')
  await storeKeys(runner, 'P', [newer])
  expect(rows.get(newer.recordKey)?.version).toBe(newer.version)
})

test('conflicts are told apart from other failures', () => {
  expect(isConflict(Object.assign(new Error('x'), { code: '23505' }))).toBe(true)
  expect(isConflict(Object.assign(new Error('UNIQUE constraint failed: plugin_data_pipeline_PipelineEventKeys.pipeline'), { code: 'SQLITE_CONSTRAINT_PRIMARYKEY' }))).toBe(true)
  expect(isConflict(Object.assign(new Error('deadlock detected'), { code: '40P01' }))).toBe(false)
  expect(isConflict(new Error('connection refused'))).toBe(false)
  expect(isConflict(undefined)).toBe(false)
})
