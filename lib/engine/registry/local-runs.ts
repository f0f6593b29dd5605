/**
 * The runs this process holds, per tenant and pipeline, from their guard's decision to their end.
 * A trigger of a pipeline this process already runs is rejected here, as the database guard would
 * reject it, without a transaction of its own; concurrent triggers in this process wait for the
 * first one's guard decision. 20 triggers at once each opened a guard transaction, and on a busy
 * machine some waited out the pool's acquire timeout instead of answering 409.
 */
import { PipelineError } from '../../pipeline/errors.js'

interface LocalRun {
  /** Settles once the guard decided. */
  decided: Promise<void>
  /** Whether the guard let the run start (it holds the pipeline until it ends). */
  holds: boolean
}

const runs = new Map<string, LocalRun>()

const keyOf = (name: string, tenant: string | undefined) => `${tenant ?? ''}\u0000${name}`

/**
 * Starts a run of `name` through `begin` (its guard) unless this process already holds one: then
 * PIPELINE_RUNNING. Returns `release`, to be called once the run ended.
 */
export async function holdLocally(name: string, tenant: string | undefined, begin: () => Promise<void>): Promise<() => void> {
  const key = keyOf(name, tenant)
  for (let current = runs.get(key); current; current = runs.get(key)) {
    await current.decided
    // a guard that refused removed its entry before deciding (below): the loop takes the next one
    if (current.holds) throw new PipelineError('PIPELINE_RUNNING', `Pipeline '${name}' is already running; the trigger was rejected`)
  }
  let decide!: () => void
  const run: LocalRun = { decided: new Promise<void>(resolve => { decide = resolve }), holds: false }
  runs.set(key, run)
  try {
    await begin()
    run.holds = true
  } catch (error) {
    if (runs.get(key) === run) runs.delete(key)
    throw error
  } finally {
    decide()
  }
  return () => {
    if (runs.get(key) === run) runs.delete(key)
  }
}
