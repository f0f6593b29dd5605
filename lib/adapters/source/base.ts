import type { DataRecord, ResolvedPipeline } from '../../engine/config.js'
import type { AdapterContext, TrackerState } from '../types.js'
import { deltaPlan, type DeltaPlan } from '../../engine/watermark.js'

/**
 * Base of every source adapter. Subclasses yield the source's records in batches,
 * in a stable order, reading only what the tracker state says is new.
 *
 * ```ts
 * class MySource extends BaseSourceAdapter {
 *   async *readStream(tracker) { yield await fetchSomething(tracker.lastSync) }
 * }
 * ```
 */
export abstract class BaseSourceAdapter {
  readonly pipeline: ResolvedPipeline

  constructor(context: AdapterContext) {
    this.pipeline = context.pipeline
  }

  /** Source records in batches (arrays). Field names are the source's. */
  abstract readStream(tracker: TrackerState): AsyncIterable<DataRecord[]>

  /** Called once before reading; resolve models, connect services. */
  async prepare(): Promise<void> {}

  /**
   * Which field(s) carry the watermark; the engine derives `lastSync`/`lastKey` from the
   * records read. Adapters that know their entity infer more (e.g. `modifiedAt`).
   */
  watermarkPlan(): DeltaPlan {
    return deltaPlan(this.pipeline, undefined, [])
  }

  /** Records per batch requested from the source. */
  get batchSize(): number {
    return this.pipeline.batchSize
  }
}
