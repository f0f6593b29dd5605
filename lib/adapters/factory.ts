/**
 * Chooses adapters: an explicit class (`source.adapter` / `target.adapter`) wins, then
 * `source.kind` / `target.kind`, then the kind of the bound service in `cds.requires`
 * (`odata`/`odata-v4`, `odata-v2`, `hcql`, `rest`; anything else is a CQN runner).
 */
import cds from '@sap/cds'
import { requiredKind, HCQL_KIND, ODATA_PROTOCOL_KINDS } from './kinds.js'
import { ODataTargetAdapter } from './target/odata.js'
import { BaseSourceAdapter } from './source/base.js'
import { BaseTargetAdapter } from './target/base.js'
import { ODataSourceAdapter } from './source/odata.js'
import { ODataV2SourceAdapter } from './source/odata-v2.js'
import { CqnSourceAdapter } from './source/cqn.js'
import { HcqlSourceAdapter } from './source/hcql.js'
import { HcqlTargetAdapter } from './target/hcql.js'
import { RestSourceAdapter } from './source/rest.js'
import { DatabaseTargetAdapter } from './target/db.js'
import { PipelineError } from '../pipeline/errors.js'
import type { ResolvedPipeline } from '../pipeline/types.js'
import type { AdapterContext } from './types.js'

type SourceAdapterClass = new (context: AdapterContext) => BaseSourceAdapter
type TargetAdapterClass = new (context: AdapterContext) => BaseTargetAdapter

/** A config's custom adapter class (described there by shape only) must extend the base class. */
const isSourceAdapterClass = (custom: Function): custom is SourceAdapterClass => custom.prototype instanceof BaseSourceAdapter
const isTargetAdapterClass = (custom: Function): custom is TargetAdapterClass => custom.prototype instanceof BaseTargetAdapter

export type SourceKind = 'odata' | 'odata-v2' | 'hcql' | 'rest' | 'cqn' | 'custom'

export { requiredKind }

/**
 * Whether a required service is served in this process instead of being called remotely, as
 * `cds watch` does (mocks) for an imported API without credentials: it is read with CQN then.
 */
function servedInProcess(service: string | undefined): boolean {
  // while CAP connects a service, cds.services holds the pending promise, not a service
  const served = service ? (cds.services as Record<string, object | undefined>)[service] : undefined
  return served instanceof cds.Service && !(served instanceof cds.RemoteService)
}

export function sourceKindOf(pipeline: ResolvedPipeline): SourceKind {
  const { source, rest } = pipeline.config
  if (source.adapter) return 'custom'
  if (!source.kind && !rest?.path && servedInProcess(source.service)) return 'cqn'
  const kind = source.kind ?? (rest?.path ? 'rest' : requiredKind(source.service))
  if (kind === 'odata' || kind === 'odata-v4') return 'odata'
  if (kind === 'odata-v2') return 'odata-v2'
  if (kind === HCQL_KIND) return 'hcql'
  if (kind === 'rest') return 'rest'
  return 'cqn'
}

const SOURCES: Partial<Record<SourceKind, SourceAdapterClass>> = { odata: ODataSourceAdapter, 'odata-v2': ODataV2SourceAdapter, cqn: CqnSourceAdapter, hcql: HcqlSourceAdapter, rest: RestSourceAdapter }

export function sourceAdapterClass(pipeline: ResolvedPipeline): SourceAdapterClass {
  const kind = sourceKindOf(pipeline)
  const custom = pipeline.config.source.adapter
  if (custom) {
    if (!isSourceAdapterClass(custom)) throw new PipelineError('INVALID_CONFIG', 'Invalid pipeline config: source.adapter must extend BaseSourceAdapter', { target: 'source.adapter' })
    return custom
  }
  const adapter = SOURCES[kind]
  if (!adapter) throw new PipelineError('NOT_SUPPORTED', `Invalid pipeline config: source kind '${kind}' is not supported by this release`, { target: 'source.kind', status: 400 })
  return adapter
}

export function targetAdapterClass(pipeline: ResolvedPipeline): TargetAdapterClass {
  const { target } = pipeline.config
  if (target.adapter) {
    if (!isTargetAdapterClass(target.adapter)) throw new PipelineError('INVALID_CONFIG', 'Invalid pipeline config: target.adapter must extend BaseTargetAdapter', { target: 'target.adapter' })
    return target.adapter
  }
  const kind: string | undefined = target.kind ?? requiredKind(target.service)
  if (kind === HCQL_KIND) return HcqlTargetAdapter
  return kind && ODATA_PROTOCOL_KINDS.has(kind) ? ODataTargetAdapter : DatabaseTargetAdapter
}

export function createAdapters(pipeline: ResolvedPipeline): { source: BaseSourceAdapter; target: BaseTargetAdapter } {
  const Source = sourceAdapterClass(pipeline)
  const Target = targetAdapterClass(pipeline)
  return { source: new Source({ pipeline }), target: new Target({ pipeline }) }
}
