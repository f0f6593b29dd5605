/** Kinds of bound services, read from `cds.requires`. */
import cds from '@sap/cds'

/** OData remote services (V4, V2). */
export const ODATA_PROTOCOL_KINDS = new Set(['odata', 'odata-v4', 'odata-v2'])

/** CAP-to-CAP remote services speaking CQN over HTTP (`@protocol: 'hcql'` at the provider). */
export const HCQL_KIND = 'hcql'

/** Remote services a pipeline can write to without a custom adapter: OData and HCQL. */
export const REMOTE_TARGET_KINDS = new Set([...ODATA_PROTOCOL_KINDS, HCQL_KIND])

/** The configured kind of `cds.requires.<service>`, if any (`kind: { hcql: … }` objects included). */
export function requiredKind(service: string | undefined): string | undefined {
  if (!service) return undefined
  const entry = (cds.env.requires as Record<string, { kind?: string | Record<string, unknown> } | undefined>)[service]
  const kind = entry?.kind
  if (kind && typeof kind === 'object') return Object.keys(kind).find(k => ODATA_PROTOCOL_KINDS.has(k) || k === HCQL_KIND || k === 'rest')
  return kind
}
