/**
 * One OpenTelemetry span per micro-batch (`data-pipeline events <pipeline>`), when the app has
 * `@opentelemetry/api` (see telemetry/otel.ts); otherwise a no-op that costs nothing.
 */
import cds from '@sap/cds'
import { loadOtelApi, type Attributes, type OtelApi } from '../telemetry/otel.js'
import { SCOPE } from '../telemetry/instrument.js'

export const EVENT_SPAN_PREFIX = 'data-pipeline events '

let api: OtelApi | undefined | null

export interface BatchSpan {
  end(attributes: Attributes): void
  fail(message: string): void
}

export function batchSpan(pipeline: string, keys: number): BatchSpan {
  if (api === undefined) api = cds.env.requires?.['data-pipeline']?.telemetry === false ? null : loadOtelApi(cds.root) ?? null
  if (!api) return { end() {}, fail() {} }
  const { SpanStatusCode } = api
  const span = api.trace.getTracer(SCOPE).startSpan(`${EVENT_SPAN_PREFIX}${pipeline}`, { attributes: { 'pipeline.name': pipeline, 'pipeline.trigger': 'event', 'pipeline.events.keys': keys } })
  return {
    end(attributes) {
      span.setAttributes(Object.fromEntries(Object.entries(attributes).map(([k, v]) => [`pipeline.events.${k}`, v])))
      span.setStatus({ code: SpanStatusCode.OK })
      span.end()
    },
    fail(message) {
      span.recordException({ name: 'PipelineError', message })
      span.setStatus({ code: SpanStatusCode.ERROR, message })
      span.end()
    },
  }
}
