/**
 * Watching a run's progress (docs/concepts/counts.md "Progress", "Freshness"): its PipelineRuns row sampled while
 * it runs, and what samples of an advancing run look like. progress.test.ts, and the full refresh in
 * one transaction of full-refresh-writes.test.ts (a file of the `postgres` project: PostgreSQL shows
 * the progress beside the run's transaction, SQLite's one connection only at the end).
 */
import { ql } from './consumer'
import { sleep } from './wait'

export const RUNS = 'plugin.data_pipeline.PipelineRuns'
export const T0 = '2026-01-01T00:00:00.000Z'

export interface RunRow {
  status: string
  processed: number | string | null
  expected: number | string | null
  percent: number | string | null
  rowsPerSecond: number | string | null
  remainingMs: number | string | null
  eta: string | null
}

export const num = (value: unknown) => (value === null || value === undefined ? null : Number(value))

/** Samples the run row while the run is running; returns the samples and the final row. */
export async function watch(runId: string, done: Promise<unknown>): Promise<{ samples: RunRow[]; final: RunRow }> {
  const samples: RunRow[] = []
  let finished = false
  void done.finally(() => { finished = true }).catch(() => undefined)
  while (!finished) {
    const row = (await ql.SELECT.one.from(RUNS).where({ ID: runId })) as RunRow | undefined
    if (row?.status === 'running') samples.push(row)
    await sleep(40)
  }
  await done
  return { samples, final: (await ql.SELECT.one.from(RUNS).where({ ID: runId })) as RunRow }
}

/** Samples that show progress within the run: processed advancing, expected known, percent and ETA plausible. */
export function expectAdvancing(samples: RunRow[], expected: number) {
  const moving = samples.filter(s => num(s.processed)! > 0)
  expect(moving.length).toBeGreaterThanOrEqual(2)
  const processed = moving.map(s => num(s.processed)!)
  expect(processed).toEqual([...processed].sort((a, b) => a - b))
  expect(new Set(processed).size).toBeGreaterThanOrEqual(2)
  for (const sample of moving) {
    expect(num(sample.expected)).toBe(expected)
    expect(num(sample.percent)).toBeCloseTo(Math.min(100, (num(sample.processed)! * 100) / expected), 1)
    expect(num(sample.rowsPerSecond)).toBeGreaterThan(0)
    expect(num(sample.remainingMs)).toBeGreaterThanOrEqual(0)
    expect(Date.parse(sample.eta!)).toBeGreaterThan(Date.parse(T0))
  }
  // distinct progress steps: the time left shrinks as records come in
  const steps = moving.filter((s, i) => i === 0 || num(s.processed) !== num(moving[i - 1].processed))
  const remaining = steps.map(s => num(s.remainingMs)!)
  expect(remaining[remaining.length - 1]).toBeLessThan(remaining[0])
}
