/** Kinds of bound services, read from `cds.requires`. */
import cds from '@sap/cds'

export const ODATA_KINDS = new Set(['odata', 'odata-v4', 'odata-v2'])

/** The configured kind of `cds.requires.<service>`, if any. */
export function requiredKind(service: string | undefined): string | undefined {
  if (!service) return undefined
  const entry = (cds.env.requires as Record<string, { kind?: string } | undefined>)[service]
  return entry?.kind
}
