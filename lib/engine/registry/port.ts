/**
 * What the library needs of the running `data-pipeline` service: the tenancy hooks and the
 * replicas of `@federation.replicate` register, run and forget pipelines through it.
 * srv/data-pipeline.ts implements this port; the library never imports the service, so the
 * dependency points one way only (srv → lib).
 */
import { connectTo } from '../../cap/index.js'
import { SERVICE_NAME } from '../../constants.js'
import type { PipelineConfig, ResolvedPipeline } from '../../pipeline/types.js'
import type { ExecuteOptions, ExecuteResult, PipelineRegistry } from './index.js'

export interface PipelineEngine {
  readonly registry: PipelineRegistry
  /** Event-driven replication: the part a tenant's unsubscribe ends. */
  readonly eventReplication: { stopTenant(tenant: string): void }
  addPipeline(config: PipelineConfig): Promise<ResolvedPipeline>
  execute(name: string, options?: ExecuteOptions): Promise<ExecuteResult>
  /** The application's handlers of a pipeline's events (the flow metadata shows them). */
  registeredHooks(name: string): Array<{ phase: string; event: string; scope: string; handler: string }>
}

/** The served `data-pipeline` service, by the port the library uses. */
export function connectEngine(): Promise<PipelineEngine> {
  return connectTo<PipelineEngine>(SERVICE_NAME)
}
