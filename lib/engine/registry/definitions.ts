/**
 * The definitions of one engine service's pipelines: what was coded, the overrides on top, the
 * effective config (per tenant with settings of its own), the registration rules, and the
 * adapters prepared once per effective config. No timers and no runs here.
 */
import cds from '@sap/cds'
import { LOGGER } from '../../constants.js'
import { PipelineError, invalidConfig } from '../../pipeline/errors.js'
import type { PipelineConfig, ResolvedPipeline } from '../../pipeline/types.js'
import { configFingerprint, resolvePipeline, serializable } from '../config/index.js'
import { applyOverrides, parseStoredOverrides, type Overrides } from '../config/overrides.js'
import { scheduleLabel } from '../schedule/spec.js'
import type { PipelineRow, RegistrationRow, Tracker } from '../tracker/index.js'
import type { PreparedPipeline } from '../run/types.js'
import { createAdapters, requiredKind } from '../../adapters/factory.js'
import { deriveMapping } from '../../adapters/mapping.js'
import { dataElementNames, findEntity, keyNames } from '../../model/csn.js'
import { ORIGIN_COLUMN } from '../../adapters/target/db.js'
import { CqnSourceAdapter } from '../../adapters/source/cqn.js'
import { contextTenant, tenancy } from '../tenancy/index.js'
import { checkSource } from './source-check.js'
import { checkOverridesSize } from '../config/limits.js'
import { warnNarrowerTarget } from '../drift/shapes.js'

const LOG = cds.log(LOGGER.engine)

/** An effective config and the adapters prepared for it. */
interface Effective {
  effective: ResolvedPipeline
  prepared?: Promise<PreparedPipeline>
}

/** One registered pipeline as defined. */
export interface Definition extends Effective {
  coded: PipelineConfig
  fingerprint: string
  overrides: Overrides
  /** The tracker row of the registration: written into a tenant's database on first use there (multitenancy). */
  registration?: { row: RegistrationRow; enabled: boolean }
  /** Tenants with settings of their own (`multitenancy.tenants`): their effective config and adapters. */
  tenants?: Map<string, Effective>
  /** What each tenant's admin set for its tenant (stored in its tracker row, `overrides`). */
  tenantOwn?: Map<string, Overrides>
}

export class PipelineDefinitions {
  private readonly pipelines = new Map<string, Definition>()

  constructor(private readonly tracker: Tracker) {}

  has(name: string): boolean {
    return this.pipelines.has(name)
  }

  names(): string[] {
    return [...this.pipelines.keys()]
  }

  definition(name: string): Definition {
    const definition = typeof name === 'string' ? this.pipelines.get(name) : undefined
    if (!definition) throw new PipelineError('UNKNOWN_PIPELINE', `Pipeline '${String(name)}' is not registered`, { target: 'name' })
    return definition
  }

  /**
   * Registers a pipeline after the registration rules, writing its tracker row. Returns the
   * overrides stored in that row (to apply next), or `existing` when the same config is already
   * registered under that name.
   */
  async define(config: PipelineConfig): Promise<{ definition: Definition; existing?: true; stored: Overrides }> {
    const coded = resolvePipeline(config, { serviceKind: requiredKind })
    const fingerprint = configFingerprint(config)
    const existing = this.pipelines.get(coded.name)
    if (existing) {
      if (existing.fingerprint === fingerprint) return { definition: existing, existing: true, stored: {} }
      throw invalidConfig('name', `'${coded.name}' is already registered with a different config; choose another name`)
    }
    this.checkCapabilities(coded)
    checkSource(coded)
    checkOrigin(coded)

    let row: PipelineRow | undefined
    const registration: RegistrationRow = {
      name: coded.name,
      description: config.description ?? null,
      source: JSON.stringify(serializable(config.source)),
      target: JSON.stringify(serializable(config.target)),
      mode: coded.mode,
      baseConfig: JSON.stringify(serializable(config)),
      schedule: scheduleLabel(coded.schedule),
      origin: config.source.origin ?? null,
    }
    // multitenancy: the tracker rows live in each tenant's database, written there on first use
    if (!tenancy().settings().active || contextTenant()) try {
      row = await this.tracker.register(registration, coded.enabled)
    } catch (error) {
      if ((error as PipelineError).code !== 'TRACKER_MISSING') throw error
      LOG.warn((error as Error).message)
    }
    const definition: Definition = { coded: config, fingerprint, overrides: {}, effective: coded, registration: { row: registration, enabled: coded.enabled } }
    this.pipelines.set(coded.name, definition)
    return { definition, stored: parseStoredOverrides(row?.overrides) }
  }

  /** Takes a pipeline out again (its registration failed after `define`). */
  undefine(name: string): void {
    this.pipelines.delete(name)
  }

  /** The effective config with these overrides, checked against the registration rules (nothing changes yet). */
  resolveOverrides(name: string, overrides: Overrides): ResolvedPipeline {
    const definition = this.definition(name)
    checkOverridesSize(JSON.stringify(overrides))
    const effective = resolvePipeline(applyOverrides(definition.coded, overrides), { serviceKind: requiredKind })
    this.checkCapabilities(effective)
    checkSource(effective)
    return effective
  }

  /**
   * Puts resolved overrides into effect and stores them; `scheduleShown` is the schedule the
   * tracker row's label shows (what runs: a deferred queued change shows once it is live).
   */
  async putOverrides(name: string, overrides: Overrides, effective: ResolvedPipeline, scheduleShown: ResolvedPipeline['schedule']): Promise<void> {
    const definition = this.definition(name)
    definition.overrides = overrides
    definition.effective = effective
    definition.prepared = undefined
    definition.tenants = undefined
    await this.tracker.update(name, {
      overrides: Object.keys(overrides).length ? JSON.stringify(overrides) : null,
      mode: effective.mode,
      description: effective.config.description ?? null,
      schedule: scheduleLabel(scheduleShown),
      ...('enabled' in overrides ? { enabled: effective.enabled } : {}),
    }).catch(error => { if ((error as PipelineError).code !== 'TRACKER_MISSING') throw error })
  }

  /** Registration rule: the target must offer what the mode needs. */
  checkCapabilities(pipeline: ResolvedPipeline): void {
    const { target } = createAdapters(pipeline)
    const capabilities = target.capabilities()
    const need = (capability: keyof typeof capabilities, why: string) => {
      if (!capabilities[capability]) throw invalidConfig(pipeline.config.target.adapter ? 'target.adapter' : 'target', `lacks capability '${capability}', needed ${why}`)
    }
    if (pipeline.shape === 'query') need('batchInsert', 'for a query-shape pipeline')
    else if (pipeline.mode === 'delta') need('keyAddressableUpsert', "for mode 'delta'")
    if (pipeline.mode === 'full' && !capabilities.truncate && !capabilities.batchDelete)
      throw invalidConfig('target', "lacks capability 'truncate' or 'batchDelete', needed for mode 'full'")
  }

  /**
   * A tenant's own settings of a pipeline: the provider's `multitenancy.tenants` and what the
   * tenant's admin set (within the provider's bounds); undefined when it has none.
   */
  tenantOverrides(name: string, tenant: string | undefined): Overrides | undefined {
    return tenant ? tenancy().overrides(tenant, name, this.definition(name).tenantOwn?.get(tenant)) : undefined
  }

  /**
   * The effective config of a pipeline for a tenant: with the tenant's own `mode`/`schedule`
   * (`multitenancy.tenants.<tenant>.replicate.<pipeline>`) on top, else the pipeline's.
   */
  effectiveFor(name: string, tenant: string | undefined = contextTenant()): ResolvedPipeline {
    return this.holder(name, tenant).effective
  }

  private holder(name: string, tenant: string | undefined): Effective {
    const definition = this.definition(name)
    const own = this.tenantOverrides(name, tenant)
    if (!own || !tenant) return definition
    let holder = definition.tenants?.get(tenant)
    if (!holder) {
      try {
        holder = { effective: resolvePipeline(applyOverrides(definition.coded, { ...definition.overrides, ...own }), { serviceKind: requiredKind }) }
      } catch (error) {
        throw invalidConfig(`multitenancy.tenants.${tenant}.replicate`, `of pipeline '${name}' is invalid: ${(error as Error).message}`)
      }
      ;(definition.tenants ??= new Map()).set(tenant, holder)
    }
    return holder
  }

  /** Connects adapters and derives the mapping once per effective config (per tenant with settings of its own). */
  prepare(name: string, tenant: string | undefined = contextTenant()): Promise<PreparedPipeline> {
    const entry = this.holder(name, tenant)
    if (!entry.prepared) {
      const pipeline = entry.effective
      entry.prepared = (async () => {
        const { source, target } = createAdapters(pipeline)
        await Promise.all([source.prepare(), target.prepare()])
        const targetEntity = target.entityDefinition()
        const sourceEntity = source.entityDefinition()
        const mapping = pipeline.shape === 'query'
          ? targetEntity && dataElementNames(targetEntity).map(n => ({ source: n, target: n }))
          : deriveMapping(targetEntity, sourceEntity)
        if (mapping) source.columns = mapping.map(m => m.source)
        if (source instanceof CqnSourceAdapter && targetEntity) source.orderKeys = keyNames(targetEntity)
        const prepared = { pipeline, source, target, mapping }
        warnNarrowerTarget(prepared) // a configuration fact, said once here, never as drift
        return prepared
      })()
      entry.prepared.catch(() => { if (entry.prepared) entry.prepared = undefined })
    }
    return entry.prepared
  }
}

/** Fan-in: a pipeline with `source.origin` needs the target key column of aspect `sourced`. */
function checkOrigin(pipeline: ResolvedPipeline): void {
  const { source, target } = pipeline.config
  if (source.origin === undefined || target.adapter || !target.entity) return
  const entity = findEntity(target.entity) ?? (target.service ? findEntity(`${target.service}.${target.entity}`) : undefined)
  if (entity && !keyNames(entity).includes(ORIGIN_COLUMN))
    throw invalidConfig('source.origin', `needs target.entity '${target.entity}' to include aspect plugin.data_pipeline.sourced (key column '${ORIGIN_COLUMN}')`)
}
