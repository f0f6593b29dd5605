/**
 * Registration rules on the source, checked against the model when a pipeline is registered
 * or its overrides change (not at the first run):
 *
 * - a source read through the model (OData, HCQL, CQN) needs its entity in the model, and a
 *   remote service (OData, HCQL) its service definition — `cds import` of the API brings both;
 * - every setting naming a source field (`delta.field`, `dateField`, `timeField`,
 *   `deletedField`) names an element of that entity.
 *
 * Sources without a definition (REST, custom adapters, query-shape pipelines) only get the
 * plain-name rule of lib/engine/config/limits.ts. Before the model is loaded nothing is checked here.
 */
import { invalidConfig } from '../../pipeline/errors.js'
import { currentModel, findEntity, type CsnEntity } from '../../model/csn.js'
import { sourceKindOf } from '../../adapters/factory.js'
import type { ResolvedPipeline } from '../../pipeline/types.js'

const FIELD_KEYS = ['field', 'dateField', 'timeField', 'deletedField'] as const
const REMOTE_KINDS = new Set(['odata', 'odata-v2', 'hcql'])

export function checkSource(pipeline: ResolvedPipeline): void {
  const model = currentModel()
  const { service, entity } = pipeline.config.source
  if (!model?.definitions || !entity || pipeline.shape === 'query') return
  const kind = sourceKindOf(pipeline)
  if (kind === 'rest' || kind === 'custom') return
  if (REMOTE_KINDS.has(kind) && service && (model.definitions[service] as { kind?: string } | undefined)?.kind !== 'service')
    throw invalidConfig('source.service', `'${service}' has no service definition in the model: import its API (cds import <its $metadata or EDMX>, which adds the service and its entities) or name a service of the model`)
  const definition = sourceEntity(entity, service, kind)
  if (!definition)
    throw invalidConfig('source.entity', `'${entity}' is not an entity${service ? ` of service '${service}'` : ''} in the model${REMOTE_KINDS.has(kind) ? ` (import the current API of '${service}' with cds import)` : ''}`)
  for (const key of FIELD_KEYS) {
    const field = pipeline.delta?.[key]
    // with OData delta links the provider marks deletions: the flag field may be the target's only (engine/deletes)
    if (key === 'deletedField' && pipeline.delta?.mode === 'odata-delta') continue
    if (typeof field === 'string' && !(field in definition.elements))
      throw invalidConfig(`delta.${key}`, `'${field}' is not an element of the source entity '${definition.name ?? entity}'`)
  }
}

/** As the adapters find it: OData `<service>.<entity>` first, CQN (and HCQL) the name as given first. */
function sourceEntity(entity: string, service: string | undefined, kind: string): CsnEntity | undefined {
  const qualified = service && !entity.startsWith(`${service}.`) ? `${service}.${entity}` : undefined
  if (kind === 'odata' || kind === 'odata-v2') return (qualified && findEntity(qualified)) || findEntity(entity)
  return findEntity(entity) ?? (qualified ? findEntity(qualified) : undefined)
}
