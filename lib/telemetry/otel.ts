/**
 * The OpenTelemetry API, loaded lazily from the host app (`cds.root`): never a dependency of this
 * plugin. `@cap-js/telemetry` installs the global tracer and meter providers this module reads;
 * without them the API hands out no-op tracers and meters, and without the API nothing is loaded.
 *
 * Only the few API members used here are typed (structurally), so neither the build nor the
 * published types need `@opentelemetry/api`.
 */
import { createRequire } from 'node:module'
import path from 'node:path'

export type Attributes = Record<string, string | number | boolean | undefined>

export interface OtelSpan {
  setAttributes(attributes: Attributes): OtelSpan
  addEvent(name: string, attributes?: Attributes, startTime?: Date | number): OtelSpan
  setStatus(status: { code: number; message?: string }): OtelSpan
  recordException(exception: { name?: string; message: string }): void
  end(endTime?: Date | number): void
}
export interface OtelContext { readonly __context?: never }
export interface OtelTracer {
  startSpan(name: string, options?: { attributes?: Attributes; startTime?: Date | number; kind?: number }, context?: OtelContext): OtelSpan
}
export interface OtelCounter { add(value: number, attributes?: Attributes): void }
export interface OtelHistogram { record(value: number, attributes?: Attributes): void }
export interface OtelMeter {
  createCounter(name: string, options?: { description?: string; unit?: string }): OtelCounter
  createHistogram(name: string, options?: { description?: string; unit?: string; advice?: { explicitBucketBoundaries?: number[] } }): OtelHistogram
}
export interface OtelApi {
  trace: { getTracer(name: string, version?: string): OtelTracer; setSpan(context: OtelContext, span: OtelSpan): OtelContext }
  metrics: { getMeter(name: string, version?: string): OtelMeter }
  context: { active(): OtelContext }
  SpanStatusCode: { OK: number; ERROR: number }
}

/**
 * `@opentelemetry/api` as the host app resolves it from `cds.root` (its own, or the copy
 * `@cap-js/telemetry` brings); `undefined` when the app has neither.
 */
export function loadOtelApi(root: string): OtelApi | undefined {
  const require = createRequire(path.join(root, 'package.json'))
  try {
    return require('@opentelemetry/api') as OtelApi
  } catch {
    // not hoisted: the copy next to @cap-js/telemetry
  }
  try {
    return createRequire(require.resolve('@cap-js/telemetry/package.json'))('@opentelemetry/api') as OtelApi
  } catch {
    return undefined
  }
}
