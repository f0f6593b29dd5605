/**
 * Which HTTP client the proxy's own remote reads take. CAP's remote service sends through the
 * SAP Cloud SDK whenever it is installed, unless `cds.env.remote.native_fetch` says otherwise —
 * one switch for the whole process. The Cloud SDK costs about a millisecond per request (an
 * asynchronous hash of the destination for its agent cache, axios, its middlewares); for a
 * binding that is a plain URL, which Node's fetch serves the same way, the proxy's reads use
 * CAP's native-fetch client instead. The application's own calls on the same remote service
 * keep the client CAP chose, and `remote.native_fetch: false` keeps the Cloud SDK for all.
 *
 * CAP decides per request, synchronously between entering its ON handler and handing the
 * request to a client: an ON handler placed before it sets the switch for exactly that window,
 * and only for requests made inside `nativeFetch(…)` (an async-local scope).
 */
import { AsyncLocalStorage } from 'node:async_hooks'
import cds from '@sap/cds'

/** Credential properties both clients treat alike; any other (certificates, proxies, OAuth, …) needs the Cloud SDK. */
const PLAIN = new Set(['url', 'path', 'username', 'password', 'authentication', 'headers', 'queries', 'queryParameters', 'requestTimeout', 'forwardAuthToken', 'name', 'kind'])
const PLAIN_AUTHENTICATION = new Set([undefined, 'NoAuthentication', 'BasicAuthentication'])
const PROXY_VARIABLES = ['HTTP_PROXY', 'HTTPS_PROXY', 'http_proxy', 'https_proxy']

interface Remote {
  destination?: unknown
  prepend(fn: () => unknown): unknown
  on(event: string, handler: (req: unknown, next: () => unknown) => unknown): unknown
}

interface RemoteEnv {
  native_fetch?: boolean | null
}

const scope = new AsyncLocalStorage<boolean>()
const decided = new WeakMap<object, boolean>()

function remoteEnv(): RemoteEnv | undefined {
  const env: RemoteEnv | undefined = cds.env.remote
  return env && typeof env === 'object' ? env : undefined
}

/** Whether Node's fetch serves this remote's binding exactly as the Cloud SDK would. */
export function plainBinding(destination: unknown): boolean {
  if (!destination || typeof destination !== 'object') return false // a destination name: resolved by the Cloud SDK
  const credentials = destination as Record<string, unknown>
  if (typeof credentials.url !== 'string' || !/^https?:\/\//i.test(credentials.url)) return false
  // user info in the URL: Node's fetch refuses such URLs (the Cloud SDK sends them as Basic auth)
  if (/^https?:\/\/[^/?#]*@/i.test(credentials.url)) return false
  if (!Object.keys(credentials).every(key => PLAIN.has(key))) return false
  if (!PLAIN_AUTHENTICATION.has(credentials.authentication as string | undefined)) return false
  return !PROXY_VARIABLES.some(name => process.env[name])
}

/** Adds the switch to a remote service once; false when its reads stay on CAP's choice of client. */
function prepare(remote: Remote): boolean {
  const known = decided.get(remote)
  if (known !== undefined) return known
  const usable = Boolean(remoteEnv()) && plainBinding(remote.destination) && typeof remote.prepend === 'function'
  decided.set(remote, usable)
  if (!usable) return false
  remote.prepend(() => remote.on('*', function nativeFetchForFederation(_req, next) {
    const settings = remoteEnv()
    if (!scope.getStore() || !settings || settings.native_fetch === false) return next()
    const saved = settings.native_fetch
    settings.native_fetch = true
    try {
      return next()
    } finally {
      settings.native_fetch = saved
    }
  }))
  return true
}

/** Runs the proxy's own call on a remote service, on CAP's native-fetch client when the binding allows it. */
export function nativeFetch<T>(remote: object, call: () => Promise<T>): Promise<T> {
  const chosen = remoteEnv()?.native_fetch
  if (chosen === true || chosen === false || !prepare(remote as Remote)) return call()
  return scope.run(true, call)
}
