/**
 * Event-driven replication (README "Event-driven replication"): per pipeline with `events`, the
 * subscriptions (subscribe.ts), the waiting keys (store.ts), the coalescing drain (batcher.ts)
 * and the statistics (stats.ts). The engine service owns one instance. With multitenancy a
 * message is applied in its tenant's database (tenant.ts): one batcher per pipeline and tenant.
 */
import cds from '@sap/cds'
import type { EventDispatcher, PreparedPipeline } from '../engine/run/types.js'
import type { Tracker } from '../engine/tracker/index.js'
import type { PipelineConfig, ResolvedPipeline } from '../pipeline/types.js'
import { findEntity, keyNames } from '../model/csn.js'
import { readsByKey } from './fetch.js'
import { invalidConfig } from '../pipeline/errors.js'
import { EventBatcher } from './batcher.js'
import { PendingKeys } from './store.js'
import { EventStats } from './stats.js'
import { keyElements, sourceKeys } from './apply.js'
import { checkKeys, eventTimeOf, handlerHoldsOnlyConnection, identityOf, keyPaths, keysOf, messageIdOf, subscribeTopics, topicsOf, type InboundMessage } from './subscribe.js'
import type { CsnElement } from '../model/csn.js'
import type { ResolvedEvents, ResolvedTopic } from './config.js'
import { labelOf, messageTenant, perTenant, slotOf, tenantGone } from './tenant.js'

export { eventsOf, resolveEvents, type EventsConfig, type EventsInput, type EventTopicConfig, type ResolvedEvents } from './config.js'

const LOG = cds.log('data-pipeline|events')

export interface EventsHost {
  prepare(name: string): Promise<PreparedPipeline>
  tracker: Tracker
  dispatch: EventDispatcher
  /** Makes sure the pipeline's tracker row exists in the tenant's database (multitenancy). */
  ensureInTenant?(name: string, tenant: string): Promise<void>
}

/** A pipeline's subscription: what its batchers (one per tenant) share. */
interface Subscription {
  events: ResolvedEvents
}

export class EventReplication {
  readonly keys = new PendingKeys()
  readonly stats = new EventStats()
  private readonly subscriptions = new Map<string, Subscription>()
  /** Per pipeline and tenant (tenant.ts slotOf); the provider's (or a single-tenant app's) without tenant. */
  private readonly batchers = new Map<string, EventBatcher>()

  constructor(private readonly host: EventsHost) {}

  /**
   * Checks `events` against the model before the pipeline is registered, so a refused config
   * leaves nothing behind: the messaging service must be configured, key mappings must name the
   * source entity's keys (sources without a model entity are checked when subscribing).
   */
  check(config: PipelineConfig, events: ResolvedEvents): void {
    const requires = cds.env.requires as unknown as Record<string, unknown>
    const services = (cds as unknown as { services: Record<string, unknown> }).services
    if (!requires[events.service] && !services[events.service])
      throw invalidConfig('events.service', `'${events.service}' is not configured: add cds.requires.${events.service} (kind: local-messaging, file-based-messaging, redis-messaging, enterprise-messaging, …)`)
    const { service, entity } = config.source ?? {}
    if (!entity || config.source.adapter) return
    const definition = (service && !entity.startsWith(`${service}.`) ? findEntity(`${service}.${entity}`) : undefined) ?? findEntity(entity)
    if (!definition) return
    const keys = keyNames(definition)
    topicsOf(events, definition.name).forEach((topic, i) => keyPaths(topic, events.topics ? i : undefined, keys))
  }

  /** Subscribes a pipeline with `events` (once per pipeline) and drains keys a previous process left. */
  async subscribe(pipeline: ResolvedPipeline, events: ResolvedEvents): Promise<void> {
    if (this.subscriptions.has(pipeline.name)) return
    const prepared = await this.host.prepare(pipeline.name)
    const keys = sourceKeys(prepared)
    const entity = prepared.source.entityDefinition()?.name ?? qualified(pipeline)
    const topics = topicsOf(events, entity)
    const paths = new Map(topics.map((topic, i) => [topic, keyPaths(topic, events.topics ? i : undefined, keys)]))
    if (topics.some(t => t.action === 'upsert') && !readsByKey(prepared.source))
      throw invalidConfig('events', `an 'upsert' topic reads the changed rows by key, which the source of pipeline '${pipeline.name}' (${prepared.source.constructor.name}) cannot; use action 'payload' or 'delete'`)
    this.subscriptions.set(pipeline.name, { events })
    this.keys.receiptsFor(pipeline.name, events.window)
    const batcher = this.batcher(pipeline.name, undefined)!
    const elements = keyElements(prepared)
    let inHandlerTransaction = false
    try {
      const srv = await subscribeTopics(pipeline.name, events, topics, (topic, message) => this.receive(pipeline.name, topic, paths.get(topic)!, elements, message, inHandlerTransaction))
      inHandlerTransaction = handlerHoldsOnlyConnection(srv)
    } catch (error) {
      this.subscriptions.delete(pipeline.name)
      this.batchers.delete(slotOf(pipeline.name, undefined))
      throw error
    }
    // keys stored before a crash or restart; with multitenancy a tenant's wait for its next message,
    // and the provider's database holds no tracker tables to drain (they live in each tenant's)
    if (!perTenant()) batcher.notify()
  }

  /** The batcher of a pipeline in a tenant (created on its first message), undefined once unsubscribed. */
  private batcher(name: string, tenant: string | undefined): EventBatcher | undefined {
    const subscription = this.subscriptions.get(name)
    if (!subscription) return undefined
    const slot = slotOf(name, tenant)
    let batcher = this.batchers.get(slot)
    if (!batcher) this.batchers.set(slot, batcher = new EventBatcher(name, subscription.events, { ...this.host, keys: this.keys, stats: this.stats }, tenant))
    return batcher
  }

  private async receive(name: string, topic: ResolvedTopic, paths: Record<string, string>, elements: Record<string, CsnElement | undefined>, message: InboundMessage, inHandlerTransaction: boolean): Promise<void> {
    // CAP runs the handler in the message's tenant: its keys go to that tenant's database
    const tenant = messageTenant()
    if (tenantGone(tenant)) {
      LOG.warn(`${labelOf(name, tenant)}: a message of '${topic.topic}' arrived after the tenant unsubscribed; dropped`)
      return
    }
    const batcher = this.batcher(name, tenant)
    if (!batcher) return
    const named = keysOf(message, topic, paths)
    const { unnamed } = named
    const { valid: keys, refused } = checkKeys(named.keys, elements)
    const eventTime = eventTimeOf(message)
    if (unnamed) {
      LOG.warn(`${labelOf(name, tenant)}: a message of '${topic.topic}' names no complete key (${Object.values(paths).join(', ')}); skipped`)
      this.stats.applied(name, 0, unnamed, [], tenant)
    }
    if (refused.length) {
      // a key no row can have would fail every micro-batch it joins: refused here, never stored
      const id = messageIdOf(message)
      const [first] = refused
      const more = refused.length > 1 ? ` (and ${refused.length - 1} more of its keys)` : ''
      LOG.warn(`${labelOf(name, tenant)}: message ${id === undefined ? '(without id)' : `'${id}'`} of '${topic.topic}': key element '${first.element}' (payload field '${paths[first.element]}'): ${first.problem}${more}; refused, counted as skipped`)
      this.stats.applied(name, 0, refused.length, [], tenant)
    }
    this.stats.received(name, keys.length + unnamed + refused.length, eventTime, tenant)
    // fan-out copies of one message (every instance receives it) collapse into one stored row per key
    await this.keys.put(name, keys, eventTime, inHandlerTransaction, tenant, identityOf(message, topic.topic))
    batcher.notify()
    if (!inHandlerTransaction) return // put() resolved after its own commit: the keys are visible
    // written in the handler's transaction: visible to a drain once it has committed, so another
    // drain once CAP reports the commit (a slow commit never strands a key)
    const context = cds.context as { on?(event: string, fn: () => void): void } | undefined
    if (typeof context?.on === 'function') context.on('succeeded', () => batcher.notify())
  }

  /** Resolves once the pipeline's (or every pipeline's) waiting keys are applied (in every tenant) and the statistics written. */
  async idle(name?: string): Promise<void> {
    for (const batcher of this.batchers.values()) if (!name || batcher.name === name) await batcher.idle()
    await this.stats.flush()
  }

  /**
   * The tenant unsubscribes (lib/tenancy hooks): its batchers stop, its keys not yet written and
   * its counts go; messages arriving for it from now on are dropped with a warning. A drain step
   * under way ends first (it runs in the tenant's context, which the unsubscribe waits for).
   */
  stopTenant(tenant: string): void {
    for (const [slot, batcher] of this.batchers) {
      if (batcher.tenant !== tenant) continue
      batcher.stop()
      this.batchers.delete(slot)
    }
    this.keys.dropTenant(tenant)
    this.stats.dropTenant(tenant)
  }

  stop(): void {
    // counts not yet written are dropped: the database may be closing with the app
    for (const batcher of this.batchers.values()) batcher.stop()
    this.stats.stop()
  }
}

function qualified(pipeline: ResolvedPipeline): string {
  const { service, entity = '' } = pipeline.config.source
  return service && !entity.startsWith(`${service}.`) ? `${service}.${entity}` : entity
}
