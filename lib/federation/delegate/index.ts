/** `@federation.delegate`: the live proxy (proxy.ts) and its caches (../cache). */
export { registerDelegation, attachDelegation, delegateInfo } from './proxy.js'
export { registry as delegateRegistry, type DelegateInfo, type DelegateOptions, type CacheOptions } from './model.js'
export { responseCache } from '../cache/response.js'
export { entityCache } from '../cache/entity.js'
