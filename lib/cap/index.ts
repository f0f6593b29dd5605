/**
 * CAP's runtime as the plugin uses it, beyond what @cap-js/cds-types declares (or declares
 * otherwise): the one door to it. Every other module reaches these parts through the functions
 * below, so a change of CAP shows up here and in the tests named beside each entry — not in a
 * cast somewhere in lib/. Each entry was checked on @sap/cds 9.9 and 10.x (the two CI jobs run
 * the tests named on both). Where cds-types already types a part well, modules use `cds` directly.
 */
import cds from '@sap/cds'

/** What the plugin reads of `cds.context` (an EventContext). */
export interface CapContext {
  tenant?: string
  locale?: string
  user?: CapUser
  id?: string
  /** The root transaction of the context, when one is open. */
  tx?: unknown
  /** `context.on('done', …)`: after the root transaction ended (commit or rollback). */
  on?(event: 'done' | 'succeeded' | 'failed', listener: () => void): void
  /** The context's open transactions per service (non-public; cds 9.9, 10.x — test: integration/odata-delta 'execute inside a transaction'). */
  transactions?: Map<unknown, { dbc?: unknown }>
}

export interface CapUser {
  id?: string
  tenant?: string
  is?(role: string): boolean
  attr?: Record<string, unknown>
  roles?: Record<string, unknown> | string[]
}

/** A service that runs queries (the database service, or any served one). */
export interface QueryRunner {
  name: string
  run(query: unknown, data?: unknown): Promise<unknown>
  tx<T>(fn: (tx: QueryRunner) => Promise<T>): Promise<T>
  tx<T>(context: object, fn: (tx: QueryRunner) => Promise<T>): Promise<T>
  disconnect?(tenant?: string): Promise<unknown>
}

/** The primary database service: a query runner with its connection pool's options. */
export interface DatabaseService extends QueryRunner {
  options?: { pool?: { max?: number } }
}

export type LogFormat = (label: string, level: number, ...args: unknown[]) => unknown[]

/** The parts of the `cds` facade read here, typed as CAP has them at run time. */
interface Runtime {
  /** `cds._with(context, fn)`: runs fn with `cds.context` set to a fresh context (non-public; test: integration/queued-schedule, multitenancy). */
  _with<T>(context: object, fn: () => Promise<T>): Promise<T>
  EventContext: new (data: object) => object
  User: { privileged: CapUser; anonymous: CapUser }
  Request: new (init: object) => unknown
  ApplicationService: new (...args: never[]) => unknown
  context?: CapContext
  db?: DatabaseService
  model?: unknown
  /** `cds.tx(context, fn)`: a root transaction in that context (test: integration/queued-schedule). */
  tx<T>(context: object, fn: (tx: QueryRunner) => Promise<T>): Promise<T>
  tx<T>(fn: (tx: QueryRunner) => Promise<T>): Promise<T>
  run(query: unknown): Promise<unknown>
  /** `cds.resolve(roots, { cache })`: the model files the roots name (test: integration/production-build). */
  resolve(roots: string[], options: { cache: object }): string[] | undefined
  /** `cds.log(id, options)` with `setFormat` and the default `format` (test: integration/security-redact). */
  log: ((id: string, options?: object) => { setFormat(format: LogFormat): unknown }) & { format: LogFormat }
  /** `cds.queued(srv)` / `cds.unqueued(srv)`: CAP's task queue (test: integration/queued-schedule). */
  queued?(srv: unknown): unknown
  unqueued?(srv: unknown): unknown
  /** `cds.odata.urlify(cqn, options)`: CQN to an OData URL (non-public; test: integration/federation-delegate-inlist). */
  odata: { urlify(cqn: object, options: object): { path: string } }
  /** `cds.utils.cron` (cds 10 only; test: unit/schedule-spec). */
  utils: { cron?: (text: string) => string | undefined }
  /** `cds.cli` and `cds.add` exist while cds-dk runs (test: integration/cds-add). */
  cli?: { command?: string; options?: { force?: boolean } }
  add?: unknown
  services: Record<string, unknown>
  root: string
  linked(csn: object): unknown
  compile: { for: { nodejs(csn: object): object }; to: { sql(csn: object): string[] } }
  on(event: string, listener: (...args: never[]) => unknown): unknown
}

const runtime = cds as unknown as Runtime

/** Runs `fn` in a fresh context with these properties (no transaction open), as CAP's own queue does. */
export function inContext<T>(properties: object, fn: () => Promise<T>): Promise<T> {
  return runtime._with(new runtime.EventContext(properties), fn)
}

/** The current context, if any. */
export const currentContext = (): CapContext | undefined => runtime.context

/** CAP's privileged technical user, and its anonymous one. */
export const privilegedUser = (): CapUser => runtime.User.privileged
export const anonymousUser = (): CapUser => runtime.User.anonymous

/** The served model, in the shape the caller reads it (CSN: definitions). */
export const servedModel = <T = { definitions: Record<string, unknown> }>(): T | undefined => runtime.model as T | undefined

/** The primary database service, when the app has one. */
export const primaryDatabase = (): DatabaseService | undefined => runtime.db

/** A root transaction in `context`; `cds.run` outside any. */
export const rootTx = <T>(context: object, fn: (tx: QueryRunner) => Promise<T>): Promise<T> => runtime.tx(context, fn)
/** A new root transaction in the current context (not the caller's transaction). */
export const inNewTransaction = <T>(fn: (tx: QueryRunner) => Promise<T>): Promise<T> => runtime.tx(fn)
export const resolveModel = (roots: string[], options: { cache: object }): string[] | undefined => runtime.resolve(roots, options)
export const capLog = () => runtime.log
export const runQuery = (query: unknown): Promise<unknown> => runtime.run(query)

/** A service connected by name, in the shape the caller uses it. */
export const connectTo = async <T>(name: string, options?: object): Promise<T> => (await cds.connect.to(name, options as never)) as unknown as T

/** A `cds.Request` (for events the plugin emits or sends itself). */
export const newRequest = (init: object): unknown => new runtime.Request(init)

/**
 * A request of a pipeline event (`PIPELINE.START`, …) on the engine service: its `path` names the
 * pipeline (`<service>.<pipeline>`), which is how handlers registered for one pipeline match it.
 */
export function pipelineEventRequest(service: string, event: string, pipeline: string, data: Record<string, unknown>): { event: string; path: string; data: Record<string, unknown> } {
  const req = new cds.Request({ event, data } as never) as unknown as { event: string; path: string; data: Record<string, unknown> }
  req.path = `${service}.${pipeline}`
  return req
}

/**
 * Handler registration with event and entity names known at run time only: cds-types types
 * `before`/`on`/`after` by the typed entities of a generated model, which the plugin's service
 * classes do not have. The registration itself is CAP's public API (test: every management test).
 */
export interface HandlerRegistry {
  before<R>(event: string | string[], handler: (req: R) => unknown): unknown
  before<R>(event: string | string[], entities: string | string[], handler: (req: R) => unknown): unknown
  on<R>(event: string | string[], handler: (req: R, next: () => unknown) => unknown): unknown
  on<R>(event: string | string[], entities: string | string[], handler: (req: R, next: () => unknown) => unknown): unknown
  after<T, R>(event: string | string[], entities: string | string[], handler: (result: T, req: R) => unknown): unknown
  /** The service's entities (linked definitions: name, elements with their associations). */
  entities: Record<string, { name?: string; elements?: Record<string, { target?: string; isAssociation?: boolean }> }>
}
/**
 * A service's handler lists, `srv.handlers` (non-public: `on`, `before`, `after`, and `_initial`
 * for cds 9's wrapped handlers; cds 9.9, 10.x — test: integration/run-events 'registeredHooks',
 * integration/events-and-cqn 'a handler of the application runs before the built-in one').
 */
export interface HandlerEntry { handler: (...args: never[]) => unknown; [property: string]: unknown }
export const handlerLists = (srv: object): Record<string, HandlerEntry[] | undefined> => (srv as unknown as { handlers: Record<string, HandlerEntry[] | undefined> }).handlers

/** The options a service was connected with (`cds.requires.<name>` merged with those given to connect). */
export const serviceOptions = <T>(srv: object): T | undefined => (srv as { options?: T }).options

/**
 * A database service (or its transaction) by the internals of @cap-js/db-service the fast paths use:
 * the native connection `dbc`, the renderer `class.CQN2SQL` and `cqn2sql`, `quote`, `name`
 * (non-public; @cap-js/sqlite 2 and 3, @cap-js/postgres 2 — tests: integration/fast-write,
 * integration/full-refresh-writes, integration/run-counts, unit/write-path).
 */
export const sqlInternals = <T>(service: object): T => service as unknown as T

export const handlerRegistry = (srv: object): HandlerRegistry => srv as unknown as HandlerRegistry

export const applicationServiceClass = () => runtime.ApplicationService
export const queuedService = <T>(srv: unknown): T => runtime.queued?.(srv) as T
export const unqueuedService = (srv: unknown): unknown => runtime.unqueued?.(srv) ?? srv
export const urlify = (cqn: object, options: object) => runtime.odata.urlify(cqn, options)
export const cronParser = () => runtime.utils.cron
export const cdsCli = () => runtime.cli
export const cdsAdd = <T>() => runtime.add as T | undefined
/** A linked model of these definitions (for a service connected with its own model), and their SQL DDL. */
export const linkedModel = (csn: object): unknown => runtime.linked(runtime.compile.for.nodejs(csn))
export const sqlDdl = (csn: object): string[] => runtime.compile.to.sql(csn)
export const appRoot = (): string => runtime.root
export const servedServices = (): Record<string, unknown> => runtime.services
export const onCds = <A extends unknown[]>(event: string, listener: (...args: A) => unknown): void => { runtime.on(event, listener as (...args: never[]) => unknown) }
