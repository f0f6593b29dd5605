/**
 * `@federation.replicate`: one pipeline per annotated projection, registered when the app
 * serves. The pipeline is named after the entity's fully qualified name, reads the remote
 * entity the projection selects from (through the remote service, so renames and the column
 * restriction of the projection apply) and writes the entity's local table.
 *
 *   @federation.replicate: { schedule: 600000, preload: { wait: true }, delta: { field: 'changedAt' }, parallel: 8 }
 *   entity Books as projection on Provider.Books { key ID, title as name, modifiedAt as changedAt };
 *
 * `schedule` omitted → manual only; `preload: true` → one initial run in the background;
 * `preload: { wait: true }` → startup waits for that run and fails if it fails.
 */
import cds from '@sap/cds'
import { ANNOTATIONS, FEDERATED_DEFAULTS, LOGGER, REPLICATE_KEYS } from '../constants.js'
import { PipelineError } from '../pipeline/errors.js'
import { configFingerprint } from '../engine/config/index.js'
import { isPlainObject } from '../pipeline/json.js'
import type { DeltaConfig, PipelineConfig } from '../pipeline/types.js'
import type { ScheduleInput } from '../pipeline/types.js'
import type { RunOutcome } from '../engine/run/types.js'
import { projectionSource } from '../model/csn.js'
import { MAX_PARALLEL } from '../engine/config/limits.js'
import { annotationValue, classify, replicatedEntities, serviceOf, type FederationCsn, type FederationDefinition } from './annotations.js'
import { connectEngine, type PipelineEngine } from '../engine/registry/port.js'
import { pluginSettings, requiredService } from '../cap/settings.js'
import { servedModel } from '../cap/index.js'

const LOG = cds.log(LOGGER.federation)

export type PreloadMode = 'none' | 'background' | 'wait'

/** What `@federation.replicate` on one entity turns into. */
export interface Replica {
  /** The entity's fully qualified name, which is also the pipeline's name. */
  name: string
  config: PipelineConfig
  preload: PreloadMode
}

/** The trigger recorded for preload runs: started by the plugin, not by a user. */
export const PRELOAD_TRIGGER = 'scheduled'

function annotationError(entity: string, key: string, message: string): PipelineError {
  return new PipelineError('INVALID_CONFIG', `${ANNOTATIONS.replicate} on '${entity}': ${key ? `${key} ` : ''}${message}`, { target: key || ANNOTATIONS.replicate })
}

interface Column { ref?: string[]; as?: string }

/** The source element behind a projection element (`modifiedAt as changedAt` → `modifiedAt`). */
function sourceElement(def: FederationDefinition, element: string): string {
  const columns = ((def.projection as { columns?: unknown[] } | undefined)?.columns ?? (def.query?.SELECT as { columns?: unknown[] } | undefined)?.columns ?? []) as Array<Column | string>
  for (const column of columns) {
    if (typeof column !== 'object' || !column.ref || column.ref.length !== 1) continue
    if ((column.as ?? column.ref[0]) === element) return column.ref[0]
  }
  return element
}


function preloadMode(entity: string, value: unknown): PreloadMode {
  if (value === undefined || value === null || value === false) return 'none'
  if (value === true) return 'background'
  if (isPlainObject(value)) {
    for (const key of Object.keys(value)) if (key !== 'wait') throw annotationError(entity, `preload.${key}`, "is unknown; expected preload: true or preload: { wait: true }")
    if (value.wait === undefined || value.wait === false) return 'background'
    if (value.wait === true) return 'wait'
    throw annotationError(entity, 'preload.wait', 'must be true or false')
  }
  throw annotationError(entity, 'preload', 'must be true or { wait: true }')
}

/**
 * The options `@federated` alone stands for: FEDERATED_DEFAULTS, overridable under
 * `cds.requires['data-pipeline'].federation.federated` (`schedule`, `preload`); delta on the
 * default field when the projection has it, otherwise full refreshes.
 */
export function federatedOptions(def: FederationDefinition): Record<string, unknown> {
  const settings = pluginSettings<{ federated?: Record<string, unknown> }>('federation').federated ?? {}
  const { deltaField, ...defaults } = { ...FEDERATED_DEFAULTS, ...settings }
  const elements = (def.elements ?? {}) as Record<string, unknown>
  const options: Record<string, unknown> = { ...defaults }
  if (typeof deltaField === 'string' && deltaField in elements) options.delta = { field: deltaField }
  return options
}

/** Derives the pipeline config of one replicated entity; throws naming the entity and the key. */
export function replicaOf(name: string, csn: FederationCsn, federated = false): Replica {
  const def = csn.definitions?.[name]
  if (!def) throw annotationError(name, '', 'entity not found in the model')
  const value = federated ? federatedOptions(def) : annotationValue(def, ANNOTATIONS.replicate)
  if (value !== true && !isPlainObject(value)) throw annotationError(name, '', 'must be true or { schedule, preload, delta }')
  const options: Record<string, unknown> = value === true ? {} : (value as Record<string, unknown>)
  for (const key of Object.keys(options))
    if (!(REPLICATE_KEYS as readonly string[]).includes(key)) throw annotationError(name, key, `is unknown; expected one of ${REPLICATE_KEYS.join(', ')}`)

  const from = projectionSource(def)
  if (!from) throw annotationError(name, '', "must be a projection on one entity of a remote service ('entity X as projection on Remote.Entity')")
  const service = serviceOf(from, csn)
  if (!service) throw annotationError(name, '', `selects from '${from}', which is not an entity of a service; replicate a projection on an entity of an imported remote service`)
  if (!requiredService(service)) throw annotationError(name, '', `its source service '${service}' is not configured: add cds.requires.${service} (kind, credentials)`)
  const where = (def.projection ?? def.query?.SELECT)?.where
  if (where?.length) LOG.warn(`${ANNOTATIONS.replicate} on '${name}': the projection's where clause is not sent to '${service}'; all rows of '${from}' are replicated`)

  let delta: DeltaConfig | undefined
  if (options.delta !== undefined) {
    if (!isPlainObject(options.delta)) throw annotationError(name, 'delta', "must be an object such as { field: 'modifiedAt' }")
    delta = { ...(options.delta as DeltaConfig) }
    // the annotation names elements of the projection; the pipeline reads the source's names
    for (const key of ['field', 'dateField', 'timeField'] as const) {
      if (delta[key] === undefined) continue
      if (typeof delta[key] !== 'string' || !delta[key]) throw annotationError(name, `delta.${key}`, 'must be an element name')
      delta[key] = sourceElement(def, delta[key]!)
    }
  }
  const schedule = options.schedule as ScheduleInput | undefined | null
  const parallel = options.parallel ?? undefined
  if (parallel !== undefined && (!Number.isInteger(parallel) || (parallel as number) < 1 || (parallel as number) > MAX_PARALLEL))
    throw annotationError(name, 'parallel', `must be an integer between 1 and ${MAX_PARALLEL} (most requests a full copy or a large delta reads at once)`)
  const config: PipelineConfig = {
    name,
    description: `${federated ? ANNOTATIONS.federated : ANNOTATIONS.replicate}: ${from} → ${name}`,
    source: { service, entity: from.slice(service.length + 1) },
    target: { entity: name },
    ...(delta ? { delta } : federated ? { mode: 'full' as const } : {}),
    ...(schedule !== undefined && schedule !== null ? { schedule } : {}),
    ...(parallel !== undefined ? { parallel: parallel as number } : {}),
    // event-driven replication: validated with the pipeline (errors name `events…`)
    ...(options.events !== undefined && options.events !== null ? { events: options.events as PipelineConfig['events'] } : {}),
  }
  return { name, config, preload: preloadMode(name, options.preload) }
}

/** All replicas of a model (`@federation.replicate`, and `@federated` on remote entities), in model order. */
export function replicasOf(csn: FederationCsn): Replica[] {
  return [...classify(csn)].filter(([, role]) => role.kind === 'replicate' && role.own).map(([name, role]) => replicaOf(name, csn, role.federated))
}

function describe(config: PipelineConfig): string {
  const source = config.source.entity ? `${config.source.service ? `${config.source.service}.` : ''}${config.source.entity}` : config.source.query ? 'a query' : 'a custom source'
  return `source ${source} → target ${config.target?.entity ?? 'a custom target'}`
}

/**
 * Registers the pipelines of all replicas with the engine. A pipeline of the same name that
 * is already registered with a different config is a collision: reported naming both.
 */
export async function registerReplicas(engine: PipelineEngine, csn: FederationCsn): Promise<Replica[]> {
  const replicas = replicasOf(csn)
  for (const replica of replicas) {
    if (engine.registry.has(replica.name)) {
      const existing = engine.registry.coded(replica.name)
      if (configFingerprint(existing) !== configFingerprint(replica.config))
        throw new PipelineError('INVALID_CONFIG',
          `${ANNOTATIONS.replicate} on entity '${replica.name}' needs pipeline '${replica.name}' (${describe(replica.config)}), ` +
          `but pipeline '${replica.name}' is already registered with a different config (${describe(existing)}); ` +
          'replicate pipelines are named after their entity: rename the other pipeline', { target: 'name' })
    }
    await engine.addPipeline(replica.config)
  }
  if (replicas.length) LOG.info(`replicating ${replicas.map(r => `'${r.name}'`).join(', ')}`)
  return replicas
}

/** Starts one preload run; resolves with its outcome, or undefined when another run is active. */
async function startPreload(engine: PipelineEngine, replica: Replica): Promise<RunOutcome | undefined> {
  try {
    const { done } = await engine.execute(replica.name, { trigger: PRELOAD_TRIGGER, async: true })
    return await done
  } catch (error) {
    if ((error as PipelineError).code !== 'PIPELINE_RUNNING') throw error
    // another instance of the app preloads the same pipeline right now
    LOG.info(`preload of '${replica.name}' skipped: a run is active (another instance?)`)
    return undefined
  }
}

/**
 * Runs the preloads: background ones are started and only logged; the `wait` ones are
 * awaited and a failure of any of them rejects, naming the entity and the cause.
 */
export async function preloadReplicas(engine: PipelineEngine, replicas: Replica[]): Promise<void> {
  const waits: Array<{ replica: Replica; outcome: Promise<RunOutcome | undefined> }> = []
  for (const replica of replicas) {
    if (replica.preload === 'none') continue
    const outcome = startPreload(engine, replica)
    if (replica.preload === 'wait') waits.push({ replica, outcome })
    else outcome.then(
      result => { if (result) LOG.info(`preload of '${replica.name}' finished: ${JSON.stringify(result.statistics ?? {})}`) },
      error => LOG.error(`preload of '${replica.name}' failed (the app serves without it; the table fills with the next successful run): ${(error as Error).message}`),
    )
  }
  if (!waits.length) return
  LOG.info(`waiting for the preload of ${waits.map(w => `'${w.replica.name}'`).join(', ')}`)
  const settled = await Promise.allSettled(waits.map(w => w.outcome))
  const failures = settled
    .map((result, i) => ({ result, replica: waits[i].replica }))
    .filter((each): each is { result: PromiseRejectedResult; replica: Replica } => each.result.status === 'rejected')
  if (failures.length) {
    const reasons = failures.map(f => `'${f.replica.name}': ${(f.result.reason as Error)?.message ?? String(f.result.reason)}`).join('; ')
    throw new PipelineError('SOURCE_FAILED', `${ANNOTATIONS.replicate} preload { wait: true } failed, the app does not start — ${reasons}`, { cause: failures[0].result.reason })
  }
}

/** The `served` step: registers the replicas of the served model and runs their preloads. */
export async function startReplication(csn: FederationCsn | undefined = servedModel<FederationCsn>()): Promise<Replica[]> {
  if (!csn || !replicatedEntities(csn).length) return []
  const engine = await connectEngine()
  const replicas = await registerReplicas(engine, csn)
  await preloadReplicas(engine, replicas)
  return replicas
}

/** Registers replication for when the app serves (CAP awaits `served` listeners in order). */
export function registerReplicate(): void {
  // oxlint-disable-next-line typescript/no-misused-promises -- CAP awaits the promise of a 'served' listener
  cds.on('served', () => startReplication().then(() => undefined))
}
