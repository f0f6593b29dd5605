/**
 * The requests of the management service as its handlers read them: an operation's parameters and
 * answer, and what the provider's guards look at (event, target, query). CAP's request objects
 * carry more; these are the parts the service relies on.
 */
import { contextTenant } from '../engine/tenancy/index.js'
import { tenancySettings } from '../tenancy/settings.js'

export interface OperationRequest {
  data: Record<string, unknown>
  params: Array<Record<string, unknown> | string>
  http?: { res?: { status(code: number): unknown } }
  reject(status: number | { status: number; code: string; message: string; target?: string }, message?: string, target?: string): never
}

/** A request as the provider's guards see it: the event, the entity it reads or is bound to, the query. */
export interface ProviderRequest extends OperationRequest {
  event: string
  target?: { name?: string; actions?: Record<string, unknown>; '@cds.persistence.skip'?: boolean }
  query?: { SELECT?: { one?: boolean } }
  info(message: string): void
}

/** Whether the request calls a function or action of the service (bound or unbound), not a CRUD event. */
export function isOperation(srv: { actions?: Record<string, unknown> }, req: ProviderRequest): boolean {
  return Object.hasOwn(srv.actions ?? {}, req.event) || Object.hasOwn(req.target?.actions ?? {}, req.event)
}

/** The pipeline a bound operation is called on (the last key of its path). */
export function pipelineName(req: OperationRequest): string {
  const key = req.params[req.params.length - 1]
  return typeof key === 'object' ? String(key.name) : String(key)
}

/** The tenant whose admin calls (multitenancy active), or undefined for the provider and single-tenant apps. */
export function ownTenant(): string | undefined {
  const tenant = contextTenant()
  return tenant && tenancySettings().active ? tenant : undefined
}
