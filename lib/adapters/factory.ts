/**
 * Chooses adapters: an explicit class (`source.adapter` / `target.adapter`) wins, then
 * `source.kind` / `target.kind`, then the kind of the bound service in `cds.requires`.
 */
import cds from '@sap/cds'
import { BaseSourceAdapter } from './source/base.js'
import { BaseTargetAdapter } from './target/base.js'
import { ODataSourceAdapter } from './source/odata.js'
import { CqnSourceAdapter } from './source/cqn.js'
import { DatabaseTargetAdapter } from './target/db.js'
import { PipelineError } from '../engine/errors.js'
import type { ResolvedPipeline } from '../engine/config.js'
import type { SourceAdapterClass, TargetAdapterClass } from './types.js'

export type SourceKind = 'odata' | 'odata-v2' | 'rest' | 'cqn' | 'custom'

/** The configured kind of `cds.requires.<service>`, if any. */
export function requiredKind(service: string | undefined): string | undefined {
  if (!service) return undefined
  const entry = (cds.env.requires as Record<string, { kind?: string } | undefined>)[service]
  return entry?.kind
}

export function sourceKindOf(pipeline: ResolvedPipeline): SourceKind {
  const { source, rest } = pipeline.config
  if (source.adapter) return 'custom'
  const kind = source.kind ?? (rest?.path ? 'rest' : requiredKind(source.service))
  if (kind === 'odata' || kind === 'odata-v4') return 'odata'
  if (kind === 'odata-v2') return 'odata-v2'
  if (kind === 'rest') return 'rest'
  return 'cqn'
}

const SOURCES: Partial<Record<SourceKind, SourceAdapterClass>> = { odata: ODataSourceAdapter, cqn: CqnSourceAdapter }

export function sourceAdapterClass(pipeline: ResolvedPipeline): SourceAdapterClass {
  const kind = sourceKindOf(pipeline)
  const custom = pipeline.config.source.adapter
  if (custom) {
    if (!(custom.prototype instanceof BaseSourceAdapter)) throw new PipelineError('INVALID_CONFIG', 'Invalid pipeline config: source.adapter must extend BaseSourceAdapter', { target: 'source.adapter' })
    return custom
  }
  const adapter = SOURCES[kind]
  if (!adapter) throw new PipelineError('NOT_SUPPORTED', `Invalid pipeline config: source kind '${kind}' is not supported by this release`, { target: 'source.kind', status: 400 })
  return adapter
}

export function targetAdapterClass(pipeline: ResolvedPipeline): TargetAdapterClass {
  const { target } = pipeline.config
  if (target.adapter) {
    if (!(target.adapter.prototype instanceof BaseTargetAdapter)) throw new PipelineError('INVALID_CONFIG', 'Invalid pipeline config: target.adapter must extend BaseTargetAdapter', { target: 'target.adapter' })
    return target.adapter
  }
  const kind = target.kind ?? requiredKind(target.service)
  if (kind === 'odata' || kind === 'odata-v2' || kind === 'odata-v4')
    throw new PipelineError('NOT_SUPPORTED', `Invalid pipeline config: OData targets are not supported by this release (target.service '${target.service}')`, { target: 'target.kind', status: 400 })
  return DatabaseTargetAdapter
}

export function createAdapters(pipeline: ResolvedPipeline): { source: BaseSourceAdapter; target: BaseTargetAdapter } {
  const Source = sourceAdapterClass(pipeline)
  const Target = targetAdapterClass(pipeline)
  return { source: new Source({ pipeline }), target: new Target({ pipeline }) }
}
