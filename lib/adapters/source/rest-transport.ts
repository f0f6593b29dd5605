/**
 * How a REST source sends its requests: the HTTP client CAP chooses for its own remote services
 * (native fetch or the SAP Cloud SDK, see rest.ts's module comment) and the service binding's
 * URL, destination and headers. The SDK is an optional peer dependency, loaded once on demand.
 */
import cds from '@sap/cds'
import { PipelineError } from '../../pipeline/errors.js'
import { requiredService } from '../../cap/settings.js'

/** What a `cds.requires.<service>` entry of a REST source may hold. */
export interface RestBinding {
  kind?: string
  credentials?: {
    url?: string
    /** A destination name (BTP destination service or the `destinations` env variable). */
    destination?: string
    /** Path prefix appended to the URL (CAP remote-service convention). */
    path?: string
    headers?: Record<string, string>
  }
}

/** The part of `@sap-cloud-sdk/http-client` used here (typed locally: the SDK is an optional peer). */
export interface CloudSdkHttpClient {
  executeHttpRequest(destination: object, config: object, options?: object): Promise<{ status: number; data: unknown }>
}

/** Where and how one run sends its requests. */
export type RestTransport =
  | { client: 'fetch'; url: string; headers: Record<string, string> }
  | { client: 'cloud-sdk'; destination: { destinationName: string } | { url: string; headers: Record<string, string> } }

export const CLOUD_SDK = '@sap-cloud-sdk/http-client'
const INSTALL_HINT = `npm add ${CLOUD_SDK}@^4`

let cloudSdk: Promise<{ client?: CloudSdkHttpClient; problem?: string }> | undefined

/**
 * The SAP Cloud SDK HTTP client if the app has it installed (resolved like any peer dependency),
 * loaded once. `problem` says why not: not installed, or installed but failing to load.
 */
export function loadCloudSdk(): Promise<{ client?: CloudSdkHttpClient; problem?: string }> {
  cloudSdk ??= import(CLOUD_SDK).then(
    module => {
      const client = typeof (module as Partial<CloudSdkHttpClient>).executeHttpRequest === 'function' ? module : (module as { default?: unknown }).default
      if (typeof (client as Partial<CloudSdkHttpClient> | undefined)?.executeHttpRequest !== 'function') return { problem: `${CLOUD_SDK} has no executeHttpRequest` }
      return { client: client as CloudSdkHttpClient }
    },
    (error: NodeJS.ErrnoException) => {
      const missing = (error.code === 'ERR_MODULE_NOT_FOUND' || error.code === 'MODULE_NOT_FOUND') && String(error.message).includes(CLOUD_SDK)
      return { problem: missing ? `${CLOUD_SDK} is not installed` : `${CLOUD_SDK} failed to load: ${String(error.message).split('\n')[0]}` }
    },
  )
  return cloudSdk
}

/** CAP's switch between native fetch and the SAP Cloud SDK for remote services (undefined: not set). */
function nativeFetchSetting(): boolean | undefined {
  const value: unknown = cds.env.remote?.native_fetch
  return value === undefined || value === null ? undefined : Boolean(value)
}

/** The binding `cds.requires.<service>` of a REST source; INVALID_CONFIG naming the entry when missing. */
export function restBinding(service: string): RestBinding {
  const binding = requiredService<RestBinding>(service)
  if (!binding || typeof binding !== 'object')
    throw new PipelineError('INVALID_CONFIG', `REST source '${service}' is not configured: add cds.requires.${service} with kind 'rest' and credentials { url, headers }`, { target: 'source.service' })
  return binding
}

/**
 * Where and how requests go: a named destination (its URL and auth apply; needs the SAP Cloud
 * SDK) or the binding's URL and headers, sent with the HTTP client CAP would use.
 */
export async function restTransport(service: string): Promise<RestTransport> {
  const credentials = restBinding(service).credentials ?? {}
  const headers = { ...credentials.headers }
  if (credentials.destination) {
    const { client, problem } = await loadCloudSdk()
    if (!client)
      throw new PipelineError('INVALID_CONFIG', `REST source '${service}': cds.requires.${service}.credentials.destination ('${credentials.destination}') needs the SAP Cloud SDK to resolve the destination, but ${problem}; install it in the app (${INSTALL_HINT}) or give the binding a url instead`, { target: 'source.service' })
    // a named destination brings its own URL and authentication; binding headers are added per request
    return { client: 'cloud-sdk', destination: { destinationName: credentials.destination } }
  }
  if (!credentials.url)
    throw new PipelineError('INVALID_CONFIG', `REST source '${service}': cds.requires.${service}.credentials has neither url nor destination`, { target: 'source.service' })
  const native = nativeFetchSetting()
  if (native === true) return { client: 'fetch', url: credentials.url, headers }
  const { client, problem } = await loadCloudSdk()
  if (client) return { client: 'cloud-sdk', destination: { url: credentials.url, headers } }
  if (native === false)
    throw new PipelineError('INVALID_CONFIG', `REST source '${service}': cds.env.remote.native_fetch is false (remote calls through the SAP Cloud SDK), but ${problem}; install it in the app (${INSTALL_HINT}) or remove that setting`, { target: 'source.service' })
  return { client: 'fetch', url: credentials.url, headers }
}
