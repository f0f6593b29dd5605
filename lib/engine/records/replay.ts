/**
 * Replay of rejected records (README "Rejected records"): a run of the pipeline, under its
 * guard and lease and recorded in PipelineRuns (trigger `manual`, mode `delta`), whose records
 * are the pipeline's open rejects instead of a source read. Each stored source record goes
 * through MAP, validation and WRITE again (a mapped-only record through validation and WRITE);
 * written ones are marked `replayed`, failing ones are rejected again by the replay run (the old
 * reject `superseded`). The watermark and a pending checkpoint stay as they are.
 */
import { pipelineEventRequest } from '../../cap/index.js'
import { detached } from '../registry/background.js'
import { PipelineError } from '../../pipeline/errors.js'
import { assertConnectionAvailable, type Tracker } from '../tracker/index.js'
import { PipelineRun } from '../run/index.js'
import type { EventDispatcher, PreparedPipeline, RunOutcome } from '../run/types.js'

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
    const req = pipelineEventRequest(engine.name, event, pipeline, data)
    await engine.dispatch(req)
    return req.data
  }
}
