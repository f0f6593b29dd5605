/**
 * Replay of rejected records (README "Rejected records"): a run of the pipeline, under its
 * guard and lease and recorded in PipelineRuns (trigger `manual`, mode `delta`), whose records
 * are the pipeline's open rejects instead of a source read. Each stored source record goes
 * through MAP, validation and WRITE again (a mapped-only record through validation and WRITE);
 * written ones are marked `replayed`, failing ones are rejected again by the replay run (the old
 * reject `superseded`). The watermark and a pending checkpoint stay as they are.
 */
import cds from '@sap/cds'
import { PipelineError } from '../pipeline/errors.js'
import { assertConnectionAvailable, type Tracker } from './tracker.js'
import { PipelineRun } from './run.js'
import type { EventDispatcher, PreparedPipeline, RunOutcome } from './run-types.js'

/** What replay needs of the engine service `data-pipeline`. */
export interface ReplayHost {
  name: string
  registry: { prepare(name: string): Promise<PreparedPipeline>; tracker: Tracker }
  dispatch(req: unknown): Promise<unknown>
}

export async function replayRejects(engine: ReplayHost, name: string): Promise<RunOutcome> {
  const prepared = await engine.registry.prepare(name)
  if (!prepared.target.capabilities().keyAddressableUpsert)
    throw new PipelineError('NOT_SUPPORTED', `Pipeline '${name}': replaying rejects needs a target with capability 'keyAddressableUpsert'`, { target: 'name' })
  assertConnectionAvailable('replayRejects')
  const run = new PipelineRun(prepared, { mode: 'delta', trigger: 'manual', replay: true }, engine.registry.tracker, dispatcher(engine))
  // outside the caller's transaction (an HTTP request's): the run commits its own batches
  return detached(async () => {
    await run.begin()
    return run.execute()
  })
}

/** Pipeline events as CAP requests of the engine service, so the application's handlers apply. */
function dispatcher(engine: ReplayHost): EventDispatcher {
  return async (event, pipeline, data) => {
    const req = new cds.Request({ event, data } as unknown as ConstructorParameters<typeof cds.Request>[0])
    ;(req as unknown as { path: string }).path = `${engine.name}.${pipeline}`
    await engine.dispatch(req)
    return (req as unknown as { data: Record<string, unknown> }).data
  }
}

/** Runs `fn` in a fresh context of the caller's user and tenant (no transaction of the caller). */
function detached<T>(fn: () => Promise<T>): Promise<T> {
  const caller = cds.context as { user?: unknown; tenant?: string } | undefined
  const EventContext = (cds as unknown as { EventContext: new (data: object) => object }).EventContext
  const context = new EventContext({ ...(caller?.user ? { user: caller.user } : {}), ...(caller?.tenant ? { tenant: caller.tenant } : {}) })
  return (cds as unknown as { _with(context: object, fn: () => Promise<T>): Promise<T> })._with(context, fn)
}
