/**
 * Provider side of event-driven replication (issue 23, contract "Provider side"):
 * `@federation.emit` on an entity of a served application service makes every successful
 * CREATE / UPDATE / UPSERT / DELETE of it emit `<entity>.<Created|Updated|Deleted>` on a CAP
 * messaging service (`messaging`, or the name the annotation gives), with the rows' keys as data
 * and a `time` header: a transaction's consecutive changes of one topic in one message
 * (outbound.ts).
 *
 * Messages leave only after the change commits: CAP's messaging services are outboxed
 * (`outboxed: true` for redis-, enterprise-messaging, kafka, …), so the emit is written into
 * CAP's task queue within the request's transaction and sent once it commits — a rolled-back
 * change emits nothing. A messaging service configured without the outbox gets the emit on the
 * request's `succeeded` instead (after commit, but not retried).
 */
import cds from '@sap/cds'
import { ANNOTATIONS, EMIT, LOGGER } from '../constants.js'
import type { CsnEntity } from '../model/csn.js'
import { HIDE_ANNOTATION, SENSITIVE_ANNOTATION } from '../security/hidden.js'
import { gather, keysPerMessage, type TxContext } from './outbound.js'
import { affectedKeys, emittedKeyNames, enteredRows, existingKeys, keyIdentity, pickKeys, type ChangeRequest, type Keys } from './keys.js'
import { applicationServiceClass } from '../cap/index.js'

const LOG = cds.log(LOGGER.emit)

interface Request extends ChangeRequest {
  timestamp?: Date
  context?: unknown
}

interface ServedService {
  name: string
  entities: Iterable<CsnEntity>
  definition?: Record<string, unknown>
  before(events: string[], entity: CsnEntity, fn: (req: Request) => unknown): unknown
  after(events: string[], entity: CsnEntity, fn: (result: unknown, req: Request) => unknown): unknown
}

/** What one annotated entity emits on. */
export interface EmitSetting {
  entity: CsnEntity
  service: string
}

/** The messaging service `@federation.emit` names: `true` → `messaging`, a string → that service. */
export function emitService(entity: CsnEntity): string | undefined {
  const value = entity[ANNOTATIONS.emit as `@${string}`]
  if (value === undefined || value === null || value === false) return undefined
  if (value === true) return EMIT.defaultService
  if (typeof value === 'string' && value.trim()) return value.trim()
  throw new Error(`[federation] ${ANNOTATIONS.emit} on '${entity.name}' must be true or the name of a messaging service in cds.requires, not ${JSON.stringify(value)}`)
}

/** The annotated entities of a service (drafts excluded: only activated changes are emitted). */
export function emittingEntities(srv: ServedService): EmitSetting[] {
  const settings: EmitSetting[] = []
  for (const entity of srv.entities) {
    if (entity.name.endsWith('.drafts')) continue
    const service = emitService(entity)
    if (service) settings.push({ entity, service })
  }
  return settings
}

const $before = Symbol('federation.emit.before')
type Marked = Request & { [$before]?: { keys: Keys[]; existing?: Set<string> } }

/** The keys of a change join the messages its transaction sends when it commits (outbound.ts). */
function send(serviceName: string, req: Request, event: string, keys: Keys[]): Promise<void> {
  const context = (req.context ?? cds.context) as TxContext | undefined
  return gather(serviceName, context, req.timestamp, event, keys)
}

/** Registers the emit handlers of one annotated entity. */
function attach(srv: ServedService, { entity, service }: EmitSetting): void {
  const names = emittedKeyNames(entity)
  if (!names.length) {
    LOG.warn(`${ANNOTATIONS.emit} on '${entity.name}' ignored: the entity has no key elements to emit`)
    return
  }
  const topic = (suffix: string) => `${entity.name}.${suffix}`
  const sensitive = names.filter(name => entity.elements[name]?.[SENSITIVE_ANNOTATION] || entity.elements[name]?.[HIDE_ANNOTATION])
  if (sensitive.length) LOG.warn(`${ANNOTATIONS.emit} on '${entity.name}': the key ${sensitive.join(', ')} is hidden or sensitive personal data, and every message carries the keys — choose a technical key for an entity whose changes are emitted`)

  // rows an UPDATE / DELETE touches are read before the change, in its transaction
  srv.before(['UPDATE', 'DELETE'], entity, async (req: Marked) => {
    req[$before] = { keys: await affectedKeys(req, names) }
  })
  srv.before(['UPSERT'], entity, async (req: Marked) => {
    const keys = enteredRows(req.data).map(row => pickKeys(row, names)).filter((k): k is Keys => !!k)
    req[$before] = { keys, existing: await existingKeys(entity.name, names, keys) }
  })
  srv.after(['CREATE'], entity, async (result: unknown, req: Request) => {
    // CAP fills generated keys (UUIDs) into the request data; the result names them for single rows
    const rows = enteredRows(req.data)
    const keys = rows.map((row, i) => pickKeys(row, names) ?? (i === 0 ? pickKeys(result, names) : undefined)).filter((k): k is Keys => !!k)
    if (keys.length < rows.length && LOG._debug) LOG.debug(`${entity.name}: ${rows.length - keys.length} created row(s) without keys in the request data not emitted`)
    await send(service, req, topic(EMIT.created), keys)
  })
  srv.after(['UPDATE', 'DELETE'], entity, async (result: unknown, req: Marked) => {
    if (result === 0) return // nothing matched
    const suffix = req.event === 'DELETE' ? EMIT.deleted : EMIT.updated
    await send(service, req, topic(suffix), req[$before]?.keys ?? [])
  })
  srv.after(['UPSERT'], entity, async (_result: unknown, req: Marked) => {
    const before = req[$before]
    if (!before) return
    const created = before.keys.filter(k => !before.existing?.has(keyIdentity(names, k)))
    const updated = before.keys.filter(k => before.existing?.has(keyIdentity(names, k)))
    await send(service, req, topic(EMIT.created), created)
    await send(service, req, topic(EMIT.updated), updated)
  })
}

const attached = new WeakSet<object>()

/** Adds the emit handlers to a served application service (once). */
export function attachEmit(srv: ServedService): EmitSetting[] {
  if (attached.has(srv)) return []
  attached.add(srv)
  const settings = emittingEntities(srv)
  if (settings.length) keysPerMessage() // a wrong setting fails the start, not the first change
  const requires = cds.env.requires as Record<string, unknown>
  for (const setting of settings) {
    if (!requires[setting.service]) {
      LOG.error(`${ANNOTATIONS.emit} on '${setting.entity.name}': no messaging service '${setting.service}' in cds.requires — add one (e.g. "${setting.service}": { "kind": "redis-messaging" }); nothing is emitted for this entity`)
      continue
    }
    attach(srv, setting)
  }
  if (settings.length && LOG._debug) LOG.debug(`${srv.name}: emitting changes of ${settings.map(s => s.entity.name).join(', ')}`)
  return settings
}

let registered = false

/** Attaches `@federation.emit` to every application service when it is served. */
export function registerPublish(): void {
  if (registered) return
  registered = true
  cds.on('serving', (srv: unknown) => {
    const ApplicationService = applicationServiceClass()
    const service = srv as ServedService
    if (!(srv instanceof ApplicationService) || !service.entities || service.definition?.['@cds.external']) return
    attachEmit(service)
  })
}
