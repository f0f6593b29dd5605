import cds from '@sap/cds'
import type { DataRecord, ResolvedPipeline } from '../../pipeline/types.js'
import type { CsnEntity } from '../../model/csn.js'
import type { LiveShape } from './live-shape.js'
import type { AdapterContext, PreviewRequest, PreviewResult, TrackerState } from '../types.js'
import { matches } from '../predicate.js'
import { deltaPlan, type DeltaPlan, type ReadSegment } from '../watermark.js'
import { PipelineError } from '../../pipeline/errors.js'
import { sequentialReason } from './partitions.js'
import type { KeyRanges } from './key-ranges.js'
import { LOGGER } from '../../constants.js'

const LOG = cds.log(LOGGER.engine)

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
  /** Source columns the target needs, set by the engine from the mapping; adapters that can restrict what they read use it. */
  columns?: string[]

  constructor(context: AdapterContext) {
    this.pipeline = context.pipeline
  }

  /** Source records in batches (arrays). Field names are the source's. */
  abstract readStream(tracker: TrackerState): AsyncIterable<DataRecord[]>

  /** Called once before reading; resolve models, connect services. */
  async prepare(): Promise<void> {}

  /**
   * Whether records arrive in watermark order (true for the built-in model sources, which
   * order their reads). When false (REST), the engine does not resume a delta run from an
   * unfinished run's checkpoint, and never stores a `lastSync` later than the run's start:
   * in an unordered read, the highest value seen so far says nothing about the rows not yet read.
   */
  get readsInWatermarkOrder(): boolean {
    return true
  }

  /**
   * Whether a delta run may send its first read while the run guard is still being taken
   * (engine/run/read-ahead.ts): only where a read has no side effects and a dropped one costs the
   * source nothing but the request (remote OData and HCQL services). Default: false.
   */
  get readsAhead(): boolean {
    return false
  }

  /**
   * Whether a delta run may start this read early (see `readsAhead`), given where it would read
   * from: a read that initialises something at the provider (an OData delta subscription) may not.
   */
  readsAheadFrom(_state: TrackerState): boolean {
    return this.readsAhead
  }

  /**
   * Called when the tracker's position (`lastKey`) is dropped (a flush): a source holding something
   * for it at the provider (an ODP delta subscription) releases it. Default: nothing.
   */
  async releasePosition(_lastKey: string | null): Promise<void> {}

  /**
   * Whether full and delta reads may be split into `parallel` key ranges read at once (README
   * "Performance"): the built-in OData, HCQL and CQN entity sources. Others (REST, custom
   * adapters) read page after page, and a run with `parallel` > 1 says so in the log.
   */
  get readsPartitioned(): boolean {
    return false
  }

  /**
   * Whether this read is split into key ranges (`partitionedPages`): a full or delta run,
   * `parallel` > 1, one ordered segment; logs why not where the pipeline asked for more than one
   * range. Whether it is large enough to split is decided by its first page's count.
   */
  protected partitions(tracker: TrackerState, segments: ReadSegment[]): boolean {
    if ((tracker.mode !== 'full' && tracker.mode !== 'delta') || this.pipeline.parallel <= 1) return false
    const reason = sequentialReason(segments)
    if (reason) sequentialNote(this.pipeline, `the ${tracker.mode} read goes page after page: ${reason}`)
    return !reason
  }

  /**
   * Which field(s) carry the watermark; the engine derives `lastSync`/`lastKey` from the
   * records read. Adapters that know their entity infer more (e.g. `modifiedAt`).
   */
  watermarkPlan(): DeltaPlan {
    return deltaPlan(this.pipeline, undefined, [])
  }

  /**
   * Deletes sweep (README "Deletes in delta mode"): every key of the source, key columns only,
   * in ascending order of `keyOrder()`, in pages of at most `batchSize`, never one unbounded
   * read. Adapters that cannot list keys keep this default, and a sweep fails naming the setting.
   */
  readKeys(): AsyncIterable<DataRecord[]> {
    throw new PipelineError('NOT_SUPPORTED', `deletes.sweep: the source of pipeline '${this.pipeline.name}' (${this.constructor.name}) cannot list its keys; implement readKeys() or use delta.deletedField`, { target: 'deletes.sweep' })
  }

  /**
   * Deletes sweep with `parallel` > 1: the source's keys in key ranges listed at once
   * (key-ranges.ts), each ascending in `keyOrder()`; undefined where the keys are listed page
   * after page (`readKeys()`: the default, REST and custom adapters, `parallel` 1).
   */
  async keyRanges(): Promise<KeyRanges | undefined> {
    return undefined
  }

  /** Source names of the keys `readKeys()` orders by; undefined when its records carry the target's key names (REST). */
  keyOrder(): string[] | undefined {
    return undefined
  }

  /** Records per batch requested from the source. */
  get batchSize(): number {
    return this.pipeline.batchSize
  }

  /**
   * Data inspector page. The default reads the first batch of a full read and filters it in
   * memory (`limitedSupport`); adapters that can push filters down override it.
   */
  async preview(request: PreviewRequest): Promise<PreviewResult> {
    const tracker: TrackerState = { name: this.pipeline.name, mode: 'full', lastSync: null, lastKey: null }
    const iterator = this.readStream(tracker)[Symbol.asyncIterator]()
    const first = await iterator.next()
    await iterator.return?.()
    const batch = first.done ? [] : first.value
    const filtered = request.filter ? batch.filter(row => matches(row, request.filter!)) : batch
    const page = filtered.slice(request.skip, request.skip + request.top + 1)
    return { rows: page.slice(0, request.top).map(row => pick(row, request.columns)), hasMore: page.length > request.top, limitedSupport: true }
  }

  /** The source's entity definition, when the adapter has one (for previews and mappings). */
  entityDefinition(): CsnEntity | undefined {
    return undefined
  }

  /**
   * Schema drift (README "Schema drift"): the columns the live source delivers now, or
   * undefined when the adapter cannot tell (the default: custom adapters are not checked).
   * `maxAge`: how old a cached provider document may be; `firstBatch`: the run's first batch,
   * for adapters whose source has no schema (`shapeFromRecords`).
   */
  async liveShape(_options: { maxAge: number; firstBatch?: DataRecord[] }): Promise<LiveShape | undefined> {
    return undefined
  }

  /** Whether `liveShape` reads the run's first batch (a source without a schema: REST). */
  get shapeFromRecords(): boolean {
    return false
  }

  /** Drops cached schema documents of this source (called when a read failed). */
  forgetLiveShape(): void {}
}

/** Why a full read is not partitioned: info where the pipeline sets `parallel`, debug under the default. */
export function sequentialNote(pipeline: ResolvedPipeline, why: string): void {
  const text = `pipeline '${pipeline.name}': parallel ${pipeline.parallel} not used, ${why}`
  if (pipeline.config.parallel !== undefined) LOG.info(text)
  else LOG.debug(text)
}

export function pick(row: DataRecord, columns: string[]): DataRecord {
  if (!columns.length) return row
  const out: DataRecord = {}
  for (const column of columns) out[column] = row[column] ?? null
  return out
}

