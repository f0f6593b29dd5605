/**
 * DataPipelineManagementService at /pipeline: read-only projections of the tracker plus the
 * operations of the management API. Every operation goes through the engine service; errors
 * become CAP errors with an honest status (400 bad input, 403 inspect disabled, 404 unknown
 * pipeline, 409 run active) and a message naming the parameter.
 */
import cds from '@sap/cds'
import { LOGGER, REPLICATION_MODES, RUN_TRIGGERS, SERVICE_NAME } from '../lib/constants.js'
import { PipelineError } from '../lib/pipeline/errors.js'
import { describeError } from '../lib/engine/run/support.js'
import { configView } from '../lib/management/config-view.js'
import { previewSchedule, validateOverrides } from '../lib/management/settings-check.js'
import { optionalBoolean, optionalEnum, requiredString } from '../lib/management/parameters.js'
import { overridesParameter, scheduleParameter } from '../lib/management/setting-actions.js'
import { publicRow, runModes, runTriggers, withLiveCounts } from '../lib/management/run-answers.js'
import { capabilities, inspectData } from '../lib/management/inspect.js'
import { hideExpandedRejectFields, hideRejectFields } from '../lib/management/reject-fields.js'
import { replayRejects } from '../lib/engine/records/replay.js'
import { failedRun } from '../lib/management/retry-run.js'
import { flowMetadata, landscapeMetadata } from '../lib/management/metadata.js'
import type DataPipelineService from './data-pipeline.js'
import { assertTenantMayOverride, tenancySettings } from '../lib/tenancy/settings.js'
import { contextTenant } from '../lib/engine/tenancy/index.js'
import { withCorrelation } from '../lib/security/redact.js'
import { invalidTenantId } from '../lib/security/tenant-id.js'
import { PROVIDER_HINT, PROVIDER_OPERATIONS, providerRefusal, providerWithoutTenant, tenantsOverview } from '../lib/management/tenants-overview.js'
import { checkAccess, permissionsOf, rejectsAssociationsOf, roleNames, type AccessRequest } from '../lib/security/roles.js'
import { isOperation, ownTenant, pipelineName, type OperationRequest, type ProviderRequest } from '../lib/management/requests.js'
import { addFreshness, currentOverrides, pipelineFacts, saveOverrides, startRun } from '../lib/management/operations.js'
import { connectTo, handlerRegistry, type HandlerRegistry } from '../lib/cap/index.js'
import { pluginSettings } from '../lib/cap/settings.js'

const LOG = cds.log(LOGGER.engine)

type Operation = (req: OperationRequest, engine: DataPipelineService) => Promise<unknown>

interface ManagementSettings {
  inspect?: boolean
}

export default class DataPipelineManagementService extends cds.ApplicationService {
  private enginePromise?: Promise<DataPipelineService>

  private engine(): Promise<DataPipelineService> {
    return (this.enginePromise ??= connectTo<DataPipelineService>(SERVICE_NAME))
  }

  private settings(): ManagementSettings {
    return pluginSettings<ManagementSettings>('management')
  }

  override async init(): Promise<void> {
    const srv = handlerRegistry(this)
    const bound = (name: string, operation: Operation) => srv.on(name, 'Pipelines', (req: OperationRequest) => this.runOperation(req, operation))
    const unbound = (name: string, operation: Operation) => srv.on(name, (req: OperationRequest) => this.runOperation(req, operation))
    // in this order: CAP runs the handlers of a phase in the order they were registered
    this.registerAccess(srv)
    this.registerReads(srv)
    this.registerTenantGuards(srv)
    this.registerRunOperations(srv, bound, unbound)
    this.registerSettingOperations(bound, unbound)
    this.registerInspection(bound, unbound)
    this.registerRejectReads(srv)
    return super.init()
  }

  /** Roles first: a refused request starts nothing else. */
  private registerAccess(srv: HandlerRegistry): void {
    // roles (lib/security/roles.ts): first, synchronous, so a refused request starts nothing else;
    // a bad management.roles fails the start, naming the key
    roleNames()
    const rejects = rejectsAssociationsOf(Object.values(srv.entities))
    srv.before('*', (req: OperationRequest & AccessRequest) => {
      try {
        checkAccess(req, rejects)
      } catch (error) {
        if (!(error instanceof PipelineError)) throw error
        req.reject({ status: error.status, code: error.code, message: error.message })
      }
    })
  }

  /** A valid tenant id; what the provider (no tenant) may do; a tenant's tracker rows before its first read. */
  private registerTenantGuards(srv: HandlerRegistry): void {
    // a request's tenant names its database: an unsafe id is refused before anything reads it
    srv.before('*', (req: OperationRequest) => {
      const tenant = contextTenant()
      if (tenant && invalidTenantId(tenant)) return req.reject(400, `tenant: ${JSON.stringify(tenant.slice(0, 40))} is not a valid tenant id: ${invalidTenantId(tenant)}`, 'tenant')
    })
    // multitenancy: the provider (no tenant) has no tracker rows of its own; tenantsOverview() shows every
    // tenant's (issue 37). Every persisted entity reads empty with the hint (one row: 404 with it); an
    // operation answers only when it has an answer of its own (PROVIDER_OPERATIONS), else 404 with the hint
    srv.before('*', (req: ProviderRequest) => {
      if (!providerWithoutTenant() || !isOperation(this as { actions?: Record<string, unknown> }, req)) return
      const answer = PROVIDER_OPERATIONS[req.event]
      if (answer === 'hint') req.info(PROVIDER_HINT)
      if (answer) return
      const error = providerRefusal(req.event)
      return req.reject({ status: error.status, code: error.code, message: error.message })
    })
    srv.on('READ', '*', (req: ProviderRequest, next: () => unknown) => {
      if (!providerWithoutTenant() || req.target?.['@cds.persistence.skip']) return next()
      if (req.query?.SELECT?.one) {
        const error = providerRefusal(`${req.target?.name?.split('.').pop() ?? 'READ'}: one row`)
        return req.reject({ status: error.status, code: error.code, message: error.message })
      }
      req.info(PROVIDER_HINT)
      return []
    })
    // multitenancy: a tenant's user reads its own database; its tracker rows are written on first use
    srv.before('READ', ['Pipelines', 'PipelineRuns', 'PipelineRunEvents'], async () => {
      const tenant = contextTenant()
      if (tenant && tenancySettings().active) await (await this.engine()).registry.ensureTenant(tenant)
    })
  }

  /** Reads: permissions, value helps, live counts and freshness. */
  private registerReads(srv: HandlerRegistry): void {
    srv.on('permissions', (req: OperationRequest & AccessRequest) => permissionsOf(req.user, contextTenant()))
    srv.on('READ', 'PipelineRunModes', (req: { query?: Parameters<typeof runModes>[0] }) => runModes(req.query))
    srv.on('READ', 'PipelineRunTriggers', (req: { query?: Parameters<typeof runTriggers>[0] }) => runTriggers(req.query))
    // runs with one transaction show their progress from this process's live counters
    srv.after('READ', 'PipelineRuns', (rows: unknown) => withLiveCounts(rows))
    // freshness (README "Progress and freshness"): computed from lastSuccess and the effective maxStaleness
    srv.after('READ', 'Pipelines', async (rows: unknown) => {
      const engine = await this.engine()
      for (const row of (Array.isArray(rows) ? rows : [rows]) as Array<Record<string, unknown>>)
        if (row && typeof row.name === 'string') await addFreshness(engine, row)
    })
  }

  /** Runs: start, execute, retry, flush, status, the provider's overview. */
  private registerRunOperations(srv: HandlerRegistry, bound: (name: string, operation: Operation) => void, unbound: (name: string, operation: Operation) => void): void {
    bound('start', async (req, engine) => {
      const mode = optionalEnum(req.data.mode, REPLICATION_MODES, 'mode', "only unbound execute accepts 'partial-refresh'")
      const trigger = optionalEnum(req.data.trigger, RUN_TRIGGERS, 'trigger')
      // the provider's start fans out over the tenants; without fan-out it has no tenant to run for
      if (providerWithoutTenant() && !tenancySettings().fanOutScheduledRuns) throw providerRefusal('start')
      return startRun(req, engine, pipelineName(req), { mode, trigger, async: optionalBoolean(req.data.async, 'async') })
    })
    unbound('execute', async (req, engine) => {
      const name = requiredString(req.data.name, 'name')
      const mode = optionalEnum(req.data.mode, ['full', 'delta', 'partial-refresh'] as const, 'mode')
      const trigger = optionalEnum(req.data.trigger, RUN_TRIGGERS, 'trigger')
      let tenant = req.data.tenant === null || req.data.tenant === undefined ? undefined : requiredString(req.data.tenant, 'tenant')
      // a tenant's user runs in its own tenant only; a provider (tenant-less) user may name any tenant
      const own = contextTenant()
      if (own && tenant && tenant !== own) throw new PipelineError('FORBIDDEN', `tenant: '${tenant}' is not your tenant; you may run pipelines of tenant '${own}' only`, { target: 'tenant' })
      if (own && tenancySettings().active) tenant = own
      if (!tenant && providerWithoutTenant() && !tenancySettings().fanOutScheduledRuns)
        throw new PipelineError('INVALID_PARAMETER', `tenant: name the tenant to run for (multitenancy.fanOutScheduledRuns is off: the provider's execute does not run for every tenant). ${PROVIDER_HINT}`, { target: 'tenant' })
      return startRun(req, engine, name, { mode, trigger, async: optionalBoolean(req.data.async, 'async'), tenant })
    })
    // a failed run again: same pipeline and mode (lib/management/retry-run.ts)
    srv.on('retry', 'PipelineRuns', (req: OperationRequest) => this.runOperation(req, async (req, engine) => {
      const { name, mode } = await failedRun(req.params[req.params.length - 1])
      return startRun(req, engine, name, { mode, trigger: 'manual', async: optionalBoolean(req.data.async, 'async') })
    }))
    unbound('tenantsOverview', async (_req, engine) => tenantsOverview(engine.registry))
    unbound('flush', async (req, engine) => publicRow(await engine.flushPipeline(requiredString(req.data.name, 'name'))))
    unbound('status', async (req, engine) => {
      const name = requiredString(req.data.name, 'name')
      const row = await engine.registry.tracker.read(name)
      if (!row) throw new PipelineError('UNKNOWN_PIPELINE', `Pipeline '${name}' is not registered`, { target: 'name' })
      return addFreshness(engine, publicRow(row))
    })
  }

  /** Settings: enabled, schedule and overrides, validated before they are saved; the schedule preview and the config view. */
  private registerSettingOperations(bound: (name: string, operation: Operation) => void, unbound: (name: string, operation: Operation) => void): void {
    bound('setEnabled', async (req, engine) => {
      if (typeof req.data.enabled !== 'boolean') throw new PipelineError('INVALID_PARAMETER', 'enabled: must be true or false', { target: 'enabled' })
      if (ownTenant()) assertTenantMayOverride(['enabled'], ownTenant()!)
      return publicRow(await engine.setEnabled(pipelineName(req), req.data.enabled))
    })
    bound('setSchedule', async (req, engine) => {
      const name = pipelineName(req)
      engine.registry.get(name)
      const schedule = scheduleParameter(req.data)
      return saveOverrides(engine, name, { ...currentOverrides(engine, name), schedule })
    })
    bound('clearSchedule', async (req, engine) => {
      const name = pipelineName(req)
      return saveOverrides(engine, name, { ...currentOverrides(engine, name), schedule: null })
    })
    bound('setOverrides', async (req, engine) => {
      const name = pipelineName(req)
      const changes = overridesParameter(req.data.overrides)
      return saveOverrides(engine, name, { ...currentOverrides(engine, name), ...changes })
    })
    // validate-only: the console checks its edits before the diff is saved; nothing changes
    bound('validateOverrides', async (req, engine) => {
      const name = pipelineName(req)
      const text = requiredString(req.data.overrides, 'overrides')
      const tenant = ownTenant()
      return JSON.stringify(validateOverrides(text, currentOverrides(engine, name), overrides => {
        if (tenant) assertTenantMayOverride(Object.keys(overrides), tenant)
        engine.registry.checkOverrides(name, overrides)
      }))
    })
    unbound('previewSchedule', async req => JSON.stringify(previewSchedule(req.data.schedule, req.data.count)))
    bound('clearOverrides', async (req, engine) => {
      const name = pipelineName(req)
      const keys = requiredString(req.data.keys, 'keys').split(',').map(k => k.trim()).filter(Boolean)
      const remaining = { ...currentOverrides(engine, name) }
      for (const key of keys) delete remaining[key]
      return saveOverrides(engine, name, remaining)
    })
    bound('configView', async (req, engine) => {
      const name = pipelineName(req)
      const tenant = contextTenant()
      const effective = engine.registry.effectiveFor(name, tenant)
      return JSON.stringify(configView(engine.registry.coded(name), engine.registry.overrides(name), effective, {
        scheduleLiveChangeSupported: engine.registry.isScheduleLiveChangeSupported(name),
        tenant, tenantOverrides: engine.registry.tenantOverrides(name, tenant),
        // the delta link of an odata-delta pipeline is tracker state (a tenant's, when multitenant; the provider has none)
        ...(effective.delta?.mode === 'odata-delta' && !providerWithoutTenant() ? { tracker: await engine.status(name) } : {}),
      }))
    })
  }

  /** The data inspector, replay of rejects, and the flow and landscape metadata of the console. */
  private registerInspection(bound: (name: string, operation: Operation) => void, unbound: (name: string, operation: Operation) => void): void {
    bound('inspectData', async (req, engine) => {
      const name = pipelineName(req)
      const { side, columnsJson, filters, top, skip } = req.data as Record<string, never>
      const prepared = await engine.registry.prepare(name)
      return JSON.stringify(await inspectData(prepared, { side, columnsJson, filters, top, skip }, this.settings().inspect !== false))
    })
    bound('inspectCapabilities', async (req, engine) => {
      const prepared = await engine.registry.prepare(pipelineName(req))
      return JSON.stringify(capabilities(prepared, this.settings().inspect !== false))
    })
    bound('replayRejects', async (req, engine) => {
      const name = pipelineName(req)
      engine.registry.get(name)
      try {
        const { runId, status, statistics } = await replayRejects(engine, name)
        return { runId, name, status, statistics }
      } catch (error) {
        if (error instanceof PipelineError && ['PIPELINE_RUNNING', 'UNKNOWN_PIPELINE', 'NOT_SUPPORTED'].includes(error.code)) throw error
        const failure = describeError(error, `pipeline '${name}'`)
        LOG.error(`replay of the rejects of pipeline '${name}' failed [correlation id ${failure.correlationId}]: ${failure.detail}`)
        return req.reject(502, `Replay of the rejects of pipeline '${name}' failed: ${withCorrelation(failure.message, failure.correlationId)}`)
      }
    })
    bound('flowMetadata', async (req, engine) => JSON.stringify(flowMetadata(await pipelineFacts(engine, pipelineName(req)))))
    unbound('landscapeMetadata', async (_req, engine) =>
      JSON.stringify(landscapeMetadata(await Promise.all(engine.getPipelineNames().map(name => pipelineFacts(engine, name))))))
  }

  /** Rejected records without the fields hidden from the inspector, also when expanded or selected. */
  private registerRejectReads(srv: HandlerRegistry): void {
    // rejected records: fields hidden from the data inspector are not shown here either
    srv.after('READ', 'PipelineRejects', async (rows: unknown) => hideRejectFields((await this.engine()).registry, rows))
    // … also when expanded from a run or a pipeline (`$expand=rejects`), and under `$select=record`
    srv.after('READ', 'PipelineRuns', async rows => hideExpandedRejectFields((await this.engine()).registry, rows, row => row.pipeline_name))
    srv.after('READ', 'Pipelines', async (rows: unknown) => hideExpandedRejectFields((await this.engine()).registry, rows, row => row.name))
    srv.before('READ', 'PipelineRejects', (req: { query?: { SELECT?: { columns?: unknown[] } } }) => {
        const columns = req.query?.SELECT?.columns
        if (!columns?.length || columns.includes('*')) return
        const named = (name: string) => columns.some(c => (c as { ref?: string[] })?.ref?.[0] === name)
        for (const name of ['pipeline_name', 'recordKey', 'ID']) if (!named(name)) columns.push({ ref: [name] })
      })
  }

  /** Runs an operation and turns engine errors into CAP errors with their status. */
  private async runOperation(req: OperationRequest, operation: Operation): Promise<unknown> {
    try {
      const engine = await this.engine()
      // a tenant admin's bound operation: what it set for its tenant is loaded from its tracker row
      const tenant = ownTenant()
      if (tenant && req.params?.length) await engine.registry.ensureTenant(tenant)
      return await operation(req, engine)
    } catch (error) {
      // answers carry no credentials and no SQL; a 5xx names the correlation id its detail is logged under
      const shown = describeError(error)
      if (error instanceof PipelineError && error.status < 500) return req.reject({ status: error.status, code: error.code, message: shown.message, target: error.target })
      LOG.error(`management operation failed [correlation id ${shown.correlationId}]: ${shown.detail}`) // never the raw error: it carries request headers
      const message = withCorrelation(shown.message, shown.correlationId)
      if (error instanceof PipelineError) return req.reject({ status: error.status, code: error.code, message, target: error.target })
      // a fresh error with the message only: remote errors carry the request (headers with
      // credentials) and response, which CAP would otherwise serialize as `innererror`
      const e = error as { status?: unknown; statusCode?: unknown; code?: unknown }
      const status = Number(e.status ?? e.statusCode ?? (typeof e.code === 'number' ? e.code : undefined))
      return req.reject(status >= 400 && status < 600 ? status : 500, status >= 400 && status < 500 ? shown.message : message)
    }
  }

}


