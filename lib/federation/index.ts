/**
 * Federation (SPEC "Federation annotations"): the model hook that turns annotated projections
 * into local tables (`@federation.replicate`) or storage-less proxies (`@federation.delegate`),
 * and the replicate pipelines registered when the app serves.
 */
import { registerModelHooks } from './annotations.js'
import { registerReplicate } from './replicate.js'
import { registerDelegation } from './delegate/index.js'

export function registerFederation(): void {
  registerModelHooks()
  registerReplicate()
  registerDelegation()
}
