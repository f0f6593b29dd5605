/**
 * CQN source: in-process services and database bindings. Entity-shape reads page with
 * keyset continuation in key (or watermark) order; query-shape reads run the pipeline's
 * `source.query` and page its result in a stable order.
 */
import { BaseSourceAdapter } from './base.js'
import { pagesOf, type PageRequest, type PageResult } from './pager.js'
import { partitionedPages } from './partitions.js'
import { keyRanges, type KeyRanges } from './key-ranges.js'
import { fromSlice, matches, toCqn } from '../predicate.js'
import { previewPage } from '../preview.js'
import { deltaPlan, readSegments, watermarkFields, type DeltaPlan } from '../watermark.js'
import { withRetry } from '../retry.js'
import { PipelineError } from '../../pipeline/errors.js'
import { builtinType, dataElementNames, findEntity, keyNames, type CsnEntity } from '../../model/csn.js'
import { shapeOfEntity, type LiveShape } from './live-shape.js'
import { connect, isDatabaseService, ql, type Query, type QueryRunner } from '../../model/ql.js'
import type { DataRecord } from '../../pipeline/types.js'
import type { PreviewRequest, PreviewResult, TrackerState } from '../types.js'

export class CqnSourceAdapter extends BaseSourceAdapter {
  protected service?: QueryRunner
  protected entity?: CsnEntity
  /** Output keys used to order query-shape pages; set by the engine from the target. */
  orderKeys?: string[]

  /** Full reads of an entity with one key column read `parallel` key ranges at once (partitions.ts); `source.query` reads do not. */
  override get readsPartitioned(): boolean {
    return !this.pipeline.config.source.query
  }

  override async prepare(): Promise<void> {
    const { service, entity } = this.pipeline.config.source
    this.service = await connect(service ?? 'db')
    if (entity) {
      this.entity = findEntity(entity) ?? (service ? findEntity(`${service}.${entity}`) : undefined)
      if (!this.entity) throw new PipelineError('INVALID_CONFIG', `Invalid pipeline config: source.entity '${entity}' is not in the model`, { target: 'source.entity' })
    }
  }

  override entityDefinition(): CsnEntity | undefined {
    return this.entity
  }

  /** Schema drift: the served model is what an in-process source delivers (a derived snapshot is not checked). */
  override async liveShape(_options: { maxAge: number }): Promise<LiveShape | undefined> {
    if (!this.entity || this.pipeline.config.source.query) return undefined
    return { basis: 'model', fetchedAt: new Date().toISOString(), elements: shapeOfEntity(this.entity) }
  }

  override watermarkPlan(): DeltaPlan {
    const entity = this.entity
    return entity ? deltaPlan(this.pipeline, dataElementNames(entity), keyNames(entity), field => builtinType(entity.elements[field])) : super.watermarkPlan()
  }

  readStream(tracker: TrackerState): AsyncGenerator<DataRecord[]> {
    return this.pipeline.config.source.query ? this.readQuery(tracker) : this.readEntity(tracker)
  }

  private async *readEntity(tracker: TrackerState): AsyncGenerator<DataRecord[]> {
    const entity = this.entity!
    const keys = keyNames(entity)
    const plan = this.watermarkPlan()
    const segments = readSegments(plan, tracker, keys)
    const columns = this.columns ? [...new Set([...this.columns, ...segments.flatMap(s => s.order), ...watermarkFields(plan)])] : dataElementNames(entity)
    const progress = tracker.progress
    if (this.partitions(tracker, segments)) {
      yield* partitionedPages({ name: this.pipeline.name, segment: segments[0], top: this.batchSize, parallel: this.pipeline.parallel, fetchPage: request => this.entityPage(entity, columns, request, true), retry: this.pipeline.retry, progress })
      return
    }
    yield* pagesOf(segments, this.batchSize, request => withRetry(() => this.entityPage(entity, columns, request, progress !== undefined), this.pipeline.retry), { progress })
  }

  override keyOrder(): string[] | undefined {
    return this.entity ? keyNames(this.entity) : undefined
  }

  /** Deletes sweep: the key columns only, keyset pages in key order (HCQL: with the first page's count). */
  override async *readKeys(): AsyncGenerator<DataRecord[]> {
    const entity = this.entity
    if (!entity || this.pipeline.config.source.query) yield* super.readKeys()
    else {
      const keys = keyNames(entity)
      yield* pagesOf([{ order: keys }], this.batchSize, request => withRetry(() => this.entityPage(entity, keys, request), this.pipeline.retry), { exhaustive: true })
    }
  }

  /** Deletes sweep with `parallel` > 1 (entity shape): the keys in ranges listed at once (key-ranges.ts). */
  override async keyRanges(): Promise<KeyRanges | undefined> {
    const entity = this.entity
    if (!entity || this.pipeline.config.source.query || this.pipeline.parallel <= 1) return undefined
    const keys = keyNames(entity)
    return keyRanges({ name: this.pipeline.name, order: keys, top: this.batchSize, parallel: this.pipeline.parallel, fetchPage: request => this.entityPage(entity, keys, request, true), retry: this.pipeline.retry })
  }

  /** Every row of the entity matching a CQN `where` (event micro-batches, lib/events); retried like reads. */
  async readWhere(where: unknown[]): Promise<DataRecord[]> {
    const entity = this.entity
    if (!entity || this.pipeline.config.source.query) throw new PipelineError('NOT_SUPPORTED', `pipeline '${this.pipeline.name}': a query-shape source cannot be read by key`, { target: 'events' })
    const names = keyNames(entity)
    const columns = this.columns ? [...new Set([...this.columns, ...names])] : dataElementNames(entity)
    const query = ql.SELECT.from(entity.name).columns(...columns).where(where as never)
    return (await withRetry(() => this.service!.run(query), this.pipeline.retry)) as DataRecord[]
  }

  /** One ordered keyset page of an entity-shape read (subclasses for remote runners add counts). */
  protected async entityPage(entity: CsnEntity, columns: string[], request: PageRequest, counted = false): Promise<PageResult> {
    const query = this.pageQuery(entity, columns, request)
    const records = (await this.service!.run(query)) as DataRecord[]
    // progress of a run: the first page of a segment also counts the segment's filter (one cheap query)
    const count = counted && request.count ? await this.countOf(entity, request) : undefined
    return { records, exact: isDatabaseService(this.service), ...(count === undefined ? {} : { count }) }
  }

  /** The CQN of one ordered keyset page: the columns, the page's filter, its order, at most `top` rows. */
  protected pageQuery(entity: CsnEntity, columns: string[], request: PageRequest): Query {
    const query = ql.SELECT.from(entity.name).columns(...(request.columns ?? columns)).orderBy(...request.order).limit(request.top, request.skip)
    if (request.filter) query.where(toCqn(request.filter))
    return query
  }

  /** `SELECT count(1)` of the page's filter; undefined when the service cannot answer it. */
  private async countOf(entity: CsnEntity, request: PageRequest): Promise<number | undefined> {
    const query = ql.SELECT.one.from(entity.name).columns('count(1) as count')
    if (request.filter) query.where(toCqn(request.filter))
    try {
      const row = (await this.service!.run(query)) as { count?: unknown } | undefined
      const count = Number(row?.count)
      return Number.isFinite(count) ? count : undefined
    } catch {
      return undefined
    }
  }

  private async *readQuery(tracker: TrackerState): AsyncGenerator<DataRecord[]> {
    const factory = this.pipeline.config.source.query!
    const slice = tracker.slice ? fromSlice(tracker.slice) : undefined
    for (let offset = 0; ; offset += this.batchSize) {
      const query = factory({ mode: tracker.mode, slice: tracker.slice }) as Query
      if (!query || typeof query !== 'object' || !('SELECT' in query))
        throw new PipelineError('INVALID_CONFIG', 'Invalid pipeline config: source.query must return a CQN SELECT', { target: 'source.query' })
      if (!query.SELECT?.orderBy?.length && this.orderKeys?.length) query.orderBy(...this.orderKeys)
      query.limit(this.batchSize, offset)
      const rows = (await withRetry(() => this.service!.run(query), this.pipeline.retry)) as DataRecord[]
      // a query that ignores the slice must not write outside it
      const records = slice ? rows.filter(row => matches(row, slice)) : rows
      if (records.length) yield records
      if (rows.length < this.batchSize) break
    }
  }

  /** Entity-shape: filters pushed to the service; query-shape: the default in-memory page. */
  override async preview(request: PreviewRequest): Promise<PreviewResult> {
    if (!this.entity) return super.preview(request)
    return previewPage(this.service!, this.entity.name, keyNames(this.entity), request)
  }
}
