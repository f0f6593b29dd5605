/**
 * Graph metadata for the console: the data flow of one pipeline (lifecycle events with the
 * application's hooks) and the landscape of all pipelines (source → pipeline → target,
 * grouped by service). Custom hooks, adapters and non-default settings are `Warning`.
 */
import { EVENTS } from '../constants.js'
import { sourceKindOf } from '../adapters/factory.js'
import { deviations } from './config-view.js'
import type { ResolvedPipeline } from '../pipeline/types.js'
import type { Overrides } from '../engine/config/overrides.js'
import { latestDrift, type SchemaDriftReport } from '../engine/drift/index.js'

export type GraphStatus = 'None' | 'Success' | 'Warning' | 'Error'

export interface GraphNode {
  key: string
  title: string
  kind: 'source' | 'target' | 'event' | 'pipeline'
  group?: string
  status: GraphStatus
  description?: string
  /** Pipeline nodes of the landscape: 'fresh' | 'stale' | 'unknown'. */
  freshness?: Freshness
  /** What the console marks the node with (its own colour and word, explained by the legend); unset: nothing. */
  state?: NodeState
}

/** Failed (the last run), stale (maxStaleness), customized (hooks, adapters, overrides), schema drift (a source). */
export type NodeState = 'failed' | 'stale' | 'customized' | 'drift'

export interface GraphLine {
  from: string
  to: string
  status: GraphStatus
}

export interface Hook {
  phase: string
  event: string
  scope: string
  handler: string
}

export interface PipelineFacts {
  pipeline: ResolvedPipeline
  hooks: Hook[]
  overrides: Overrides
  status?: string | null
  /** Schema drift of the latest checked run (the run row's `drift`); unset: the one this process saw last. */
  drift?: SchemaDriftReport | null
  /** End of the last successful run (`Pipelines.lastSuccess`), for freshness. */
  lastSuccess?: string | null
}

/** Freshness (README "Progress and freshness"): whether the last successful run is recent enough. */
export type Freshness = 'fresh' | 'stale' | 'unknown'

/** `unknown` without `maxStaleness`; `stale` when the last successful run is older than it, or there was none. */
export function freshnessOf(maxStaleness: number | undefined, lastSuccess: string | null | undefined, now: number = Date.now()): Freshness {
  if (!maxStaleness) return 'unknown'
  const at = lastSuccess ? Date.parse(lastSuccess) : Number.NaN
  return Number.isFinite(at) && now - at <= maxStaleness ? 'fresh' : 'stale'
}

/** The drift to show: the facts' (from the run row), else the latest one this process found. */
function driftOf(facts: PipelineFacts): SchemaDriftReport | null {
  return facts.drift !== undefined ? facts.drift : latestDrift(facts.pipeline.name) ?? null
}

/**
 * An entity of a service by its name within the service: `@federated`/`@federation.replicate`
 * declare `Orders` of `ProviderService`, a coded pipeline may say `ProviderService.Orders` — one
 * remote entity, so one landscape node.
 */
export function entityInService(service: string | undefined, entity: string): string {
  return service && entity.startsWith(`${service}.`) && entity.length > service.length + 1 ? entity.slice(service.length + 1) : entity
}

function sourceTitle(pipeline: ResolvedPipeline): { key: string; title: string; group: string } {
  const { source, rest } = pipeline.config
  const group = source.service ?? 'db'
  const what = source.entity ? entityInService(source.service, source.entity) : source.query ? '[query]' : (rest?.path as string | undefined) ?? (source.adapter ? source.adapter.name : '?')
  return { key: `source:${group}/${what}`, title: what, group }
}

function targetTitle(pipeline: ResolvedPipeline): { key: string; title: string; group: string } {
  const { target } = pipeline.config
  const group = target.service ?? 'db'
  const what = target.entity ? entityInService(target.service, target.entity) : target.adapter?.name ?? '?'
  return { key: `target:${group}/${what}`, title: what, group }
}

function isCustomized(facts: PipelineFacts): boolean {
  const { pipeline } = facts
  return facts.hooks.length > 0 || Object.keys(facts.overrides).length > 0 || Boolean(pipeline.config.source.adapter || pipeline.config.target.adapter)
}

export function flowMetadata(facts: PipelineFacts) {
  const { pipeline, hooks, overrides } = facts
  const drift = driftOf(facts)
  const source = sourceTitle(pipeline)
  const target = targetTitle(pipeline)
  const events = Object.values(EVENTS).map(event => {
    const eventHooks = hooks.filter(h => h.event === event)
    return { event, hooks: eventHooks, status: (eventHooks.length ? 'Warning' : 'None') as GraphStatus }
  })
  const nodes: GraphNode[] = [
    {
      key: 'source', title: source.title, kind: 'source', group: source.group, status: pipeline.config.source.adapter || drift ? 'Warning' : 'None',
      ...(drift ? { state: 'drift' as const } : pipeline.config.source.adapter ? { state: 'customized' as const } : {}),
      description: `${sourceKindOf(pipeline)} source${drift ? ` — schema drift: ${drift.changes.map(c => c.message).join('; ')}` : ''}`,
    },
    ...events.map(e => ({
      key: e.event, title: e.event, kind: 'event' as const, status: e.status, ...(e.hooks.length ? { state: 'customized' as const } : {}),
      description: e.hooks.length ? e.hooks.map(h => `${h.phase} ${h.handler}${h.scope === 'all' ? ' (all pipelines)' : ''}`).join(', ') : 'built-in',
    })),
    { key: 'target', title: target.title, kind: 'target', group: target.group, status: pipeline.config.target.adapter ? 'Warning' : 'None', ...(pipeline.config.target.adapter ? { state: 'customized' as const } : {}), description: pipeline.config.target.adapter ? 'custom target' : 'database target' },
  ]
  const chain = ['source', EVENTS.START, EVENTS.READ, EVENTS.MAP, EVENTS.WRITE, 'target']
  const statusOf = (key: string) => nodes.find(n => n.key === key)!.status
  const lines: GraphLine[] = chain.slice(1).map((to, i) => ({ from: chain[i], to, status: statusOf(to) === 'Warning' || statusOf(chain[i]) === 'Warning' ? 'Warning' : 'None' }))
  lines.push({ from: EVENTS.WRITE, to: EVENTS.DONE, status: statusOf(EVENTS.DONE) })
  return {
    name: pipeline.name,
    events,
    deviations: deviations(pipeline),
    overrides,
    hooks,
    drift,
    status: isCustomized(facts) || drift ? 'Warning' : 'None',
    nodes,
    lines,
  }
}

export function landscapeMetadata(all: PipelineFacts[]) {
  const nodes = new Map<string, GraphNode>()
  const lines = new Map<string, GraphLine>()
  const addLine = (line: GraphLine) => {
    const key = `${line.from}→${line.to}`
    const existing = lines.get(key)
    if (!existing || line.status === 'Warning') lines.set(key, line)
  }
  for (const facts of all) {
    const { pipeline } = facts
    const source = sourceTitle(pipeline)
    const target = targetTitle(pipeline)
    const warning: GraphStatus = isCustomized(facts) ? 'Warning' : 'None'
    const freshness = freshnessOf(pipeline.maxStaleness, facts.lastSuccess)
    const pipelineKey = `pipeline:${pipeline.name}`
    if (!nodes.has(source.key)) nodes.set(source.key, { key: source.key, title: source.title, kind: 'source', group: source.group, status: 'None' })
    if (driftOf(facts)) Object.assign(nodes.get(source.key)!, { status: 'Warning', description: 'schema drift', state: 'drift' })
    if (!nodes.has(target.key)) nodes.set(target.key, { key: target.key, title: target.title, kind: 'target', group: target.group, status: 'None' })
    nodes.set(pipelineKey, {
      key: pipelineKey, title: pipeline.name, kind: 'pipeline', group: 'pipelines',
      status: facts.status === 'failed' ? 'Error' : freshness === 'stale' ? 'Warning' : warning,
      description: `${pipeline.shape}-shape, ${pipeline.mode}${freshness === 'stale' ? `, stale: ${facts.lastSuccess ? `last successful run ${facts.lastSuccess}` : 'no successful run'}` : ''}`,
      freshness,
      ...(facts.status === 'failed' ? { state: 'failed' as const } : freshness === 'stale' ? { state: 'stale' as const } : warning === 'Warning' ? { state: 'customized' as const } : {}),
    })
    addLine({ from: source.key, to: pipelineKey, status: warning })
    addLine({ from: pipelineKey, to: target.key, status: warning })
  }
  const groups = [...new Set([...nodes.values()].map(n => n.group!))].map(key => ({ key, title: key === 'db' ? 'Database' : key === 'pipelines' ? 'Pipelines' : key }))
  return { groups, nodes: [...nodes.values()], lines: [...lines.values()] }
}
