/**
 * Spans and metrics of pipeline runs, hooked onto the engine service's CAP events from outside
 * (the engine does not know about telemetry): a span `data-pipeline run <name>` per run from
 * PIPELINE.START to PIPELINE.DONE, child spans for READ and each batch's MAP and WRITE, and
 * counters of records and runs plus a histogram of run durations.
 */
import { EVENTS, SERVICE_NAME } from '../constants.js'
import type { Attributes, OtelApi, OtelContext, OtelCounter, OtelHistogram, OtelSpan, OtelTracer } from './otel.js'

/** Instrumentation scope of the tracer and the meter. */
export const SCOPE = 'cap-data-pipeline'
export const SPAN_PREFIX = 'data-pipeline run '
export const METRICS = {
  records: 'data_pipeline.records',
  runs: 'data_pipeline.runs',
  duration: 'data_pipeline.run.duration',
} as const
const KINDS = ['created', 'updated', 'deleted', 'skipped'] as const
/** Run durations (seconds) from sub-second to hours. */
const DURATION_BUCKETS = [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200]

/** The part of a CAP request the handlers read. */
interface EventRequest { event: string; path?: string; data: Record<string, unknown> }
/** The part of the engine service the handlers register on. */
export interface EventSource {
  before(event: string, handler: (req: EventRequest) => void): unknown
  after(event: string, handler: (result: unknown, req: EventRequest) => void): unknown
  /** The engine's registration for its own observers (not reported as application hooks). */
  observe?(phase: 'before' | 'after', event: string, handler: ((req: EventRequest) => void) | ((result: unknown, req: EventRequest) => void)): unknown
}

interface RunState { span: OtelSpan; context: OtelContext; pipeline: string; attributes: Attributes; children: Map<string, OtelSpan> }

interface Instruments { records: OtelCounter; runs: OtelCounter; duration: OtelHistogram }

export function instrument(srv: EventSource, api: OtelApi, options: { version?: string; tenant: () => string | undefined }): void {
  const telemetry = new RunTelemetry(api, options)
  // registered as the engine's own observers where it offers that, so they never count as application hooks
  const before = (event: string, handler: (req: EventRequest) => void) => { if (srv.observe) srv.observe('before', event, safely(handler)); else srv.before(event, safely(handler)) }
  const after = (event: string, handler: (result: unknown, req: EventRequest) => void) => { if (srv.observe) srv.observe('after', event, safely(handler)); else srv.after(event, safely(handler)) }

  before(EVENTS.START, req => { telemetry.startRun(req) })
  before(EVENTS.READ, req => telemetry.startChild(req, 'READ', {}))
  after(EVENTS.READ, (_, req) => telemetry.endChild(req, 'READ'))
  before(EVENTS.MAP, req => telemetry.startChild(req, 'MAP', { 'batch.index': num(req.data.batchIndex), 'batch.records': len(req.data.sourceRecords) }))
  after(EVENTS.MAP, (_, req) => telemetry.endChild(req, 'MAP', { 'batch.mapped': len(req.data.targetRecords) }))
  before(EVENTS.WRITE, req => telemetry.startChild(req, 'WRITE', { 'batch.index': num(req.data.batchIndex), 'batch.records': len(req.data.targetRecords) }))
  after(EVENTS.WRITE, (_, req) => {
    const statistics = (req.data.statistics ?? {}) as Record<string, unknown>
    telemetry.endChild(req, 'WRITE', Object.fromEntries(KINDS.map(kind => [`batch.${kind}`, num(statistics[kind])])))
  })
  before(EVENTS.DONE, req => telemetry.endRun(req))
}

/** Never let telemetry break a run. */
const safely = <A extends unknown[]>(fn: (...args: A) => void) => (...args: A) => {
  try {
    fn(...args)
  } catch {
    // telemetry is best effort
  }
}

/** The open spans of the runs under way, and the instruments their ends are counted on. */
class RunTelemetry {
  private readonly runs = new Map<string, RunState>()
  private tracer: OtelTracer | undefined
  private instruments: Instruments | undefined

  constructor(private readonly api: OtelApi, private readonly options: { version?: string; tenant: () => string | undefined }) {}

  private getTracer(): OtelTracer {
    return (this.tracer ??= this.api.trace.getTracer(SCOPE, this.options.version))
  }

  /**
   * Created on first use: the metrics API has no proxy provider, so a meter taken before
   * @cap-js/telemetry registered its provider would stay a no-op.
   */
  private getInstruments(): Instruments {
    if (this.instruments) return this.instruments
    const meter = this.api.metrics.getMeter(SCOPE, this.options.version)
    return (this.instruments = {
      records: meter.createCounter(METRICS.records, { description: 'Records written by pipeline runs, by pipeline and kind (created/updated/deleted/skipped)', unit: '{record}' }),
      runs: meter.createCounter(METRICS.runs, { description: 'Finished pipeline runs, by pipeline and status', unit: '{run}' }),
      duration: meter.createHistogram(METRICS.duration, { description: 'Duration of pipeline runs', unit: 's', advice: { explicitBucketBoundaries: DURATION_BUCKETS } }),
    })
  }

  startRun(req: EventRequest, startTime?: Date): RunState {
    const pipeline = pipelineOf(req)
    const attributes: Attributes = clean({
      'pipeline': pipeline, 'runId': runIdOf(req), 'mode': str(req.data.mode), 'trigger': str(req.data.trigger), 'tenant': this.options.tenant(),
    })
    const parent = this.api.context.active()
    const span = this.getTracer().startSpan(`${SPAN_PREFIX}${pipeline}`, { attributes, ...(startTime ? { startTime } : {}) }, parent)
    const state: RunState = { span, context: this.api.trace.setSpan(parent, span), pipeline, attributes, children: new Map() }
    this.runs.set(runIdOf(req), state)
    return state
  }

  startChild(req: EventRequest, phase: string, attributes: Attributes): void {
    const run = this.runs.get(runIdOf(req))
    if (!run) return
    const span = this.getTracer().startSpan(`${SPAN_PREFIX}${run.pipeline} ${phase}`, { attributes: clean({ ...run.attributes, phase, ...attributes }) }, run.context)
    run.children.get(childKey(req, phase))?.end()
    run.children.set(childKey(req, phase), span)
  }

  endChild(req: EventRequest, phase: string, attributes: Attributes = {}): void {
    const run = this.runs.get(runIdOf(req))
    const span = run?.children.get(childKey(req, phase))
    if (!run || !span) return
    run.children.delete(childKey(req, phase))
    span.setAttributes(clean(attributes))
    span.setStatus({ code: this.api.SpanStatusCode.OK })
    span.end()
  }

  /** The run's span ends with its status, counts and event log; its counters and duration are recorded. */
  endRun(req: EventRequest): void {
    const runId = runIdOf(req)
    const data = req.data
    const startTime = parseDate(data.startTime)
    const run = this.runs.get(runId) ?? this.startRun(req, startTime)
    this.runs.delete(runId)
    const status = str(data.status) ?? 'completed'
    const error = data.error as { message?: string; code?: string } | undefined
    const statistics = (data.statistics ?? {}) as Record<string, unknown>
    const counts = Object.fromEntries(KINDS.map(kind => [kind, num(statistics[kind]) ?? 0]))
    this.failOpenChildren(run, error)
    addRunEvents(run.span, data.events)
    run.span.setAttributes(clean({ status, ...counts, error: error?.message, 'error.code': error?.code }))
    if (status !== 'completed') {
      run.span.recordException({ name: error?.code ?? 'PipelineError', message: error?.message ?? 'pipeline run failed' })
      run.span.setStatus({ code: this.api.SpanStatusCode.ERROR, message: error?.message })
    } else run.span.setStatus({ code: this.api.SpanStatusCode.OK })
    const endTime = parseDate(data.endTime)
    run.span.end(endTime)

    const { records, runs, duration } = this.getInstruments()
    const tenant = run.attributes.tenant
    for (const kind of KINDS) if (counts[kind]) records.add(counts[kind], clean({ pipeline: run.pipeline, kind, tenant }))
    runs.add(1, clean({ pipeline: run.pipeline, status, mode: str(data.mode), tenant }))
    if (startTime && endTime) duration.record(Math.max(0, endTime.getTime() - startTime.getTime()) / 1000, clean({ pipeline: run.pipeline, status, tenant }))
  }

  /** A batch span left open (its MAP or WRITE failed) ends with the run, as failed. */
  private failOpenChildren(run: RunState, error: { message?: string } | undefined): void {
    for (const [, child] of run.children) {
      if (error?.message) child.recordException({ name: 'PipelineError', message: error.message })
      child.setStatus({ code: this.api.SpanStatusCode.ERROR, message: error?.message })
      child.end()
    }
    run.children.clear()
  }
}

const pipelineOf = (req: EventRequest) => {
  const path = req.path ?? ''
  return path.startsWith(`${SERVICE_NAME}.`) ? path.slice(SERVICE_NAME.length + 1) : path
}
const runIdOf = (req: EventRequest) => String(req.data.runId ?? '')

/** The run's event log (lib/runs) as span events `data-pipeline.<kind>` at the time each happened. */
function addRunEvents(span: OtelSpan, events: unknown): void {
  if (!Array.isArray(events)) return
  for (const event of events as Array<Record<string, unknown>>) {
    const attributes = clean({
      'event.seq': num(event.seq), phase: str(event.phase), 'http.status': num(event.httpStatus), rows: num(event.rows), bytes: num(event.bytes),
      'duration_ms': num(event.durationMs), attempt: num(event.attempt), 'wait_ms': num(event.waitMs), message: str(event.message), details: str(event.details),
    })
    span.addEvent(`data-pipeline.${String(event.kind)}`, attributes, parseDate(event.time))
  }
}

const childKey = (req: EventRequest, phase: string) => (phase === 'READ' ? phase : `${phase}#${String(req.data.batchIndex ?? '')}`)
const str = (value: unknown): string | undefined => (typeof value === 'string' && value ? value : undefined)
const num = (value: unknown): number | undefined => (typeof value === 'number' && Number.isFinite(value) ? value : undefined)
const len = (value: unknown): number | undefined => (Array.isArray(value) ? value.length : undefined)
const parseDate = (value: unknown): Date | undefined => {
  const date = typeof value === 'string' ? new Date(value) : undefined
  return date && !Number.isNaN(date.getTime()) ? date : undefined
}
/** Attributes without undefined values (OpenTelemetry drops them with a warning). */
function clean(attributes: Attributes): Attributes {
  return Object.fromEntries(Object.entries(attributes).filter(([, value]) => value !== undefined))
}
