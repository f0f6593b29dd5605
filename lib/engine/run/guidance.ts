/**
 * What a failed run tells its user to do next, for the failures of a first setup (README "Quick
 * start"): a table that was never deployed, a source service that `cds watch` only mocks, a
 * provider that cannot be reached or refuses the binding. The text names the table, the service
 * and the setting to fix; it replaces the run error's message in answers and stored run errors
 * (`publicError` reads it), while the log keeps the original. Other failures keep their messages.
 */
import cds from '@sap/cds'
import { LOGGER } from '../../constants.js'
import { PipelineError } from '../../pipeline/errors.js'
import { missingTable, redactText } from '../../security/redact.js'
import type { ResolvedPipeline } from '../../pipeline/types.js'
import { requiredService } from '../../cap/settings.js'

const LOG = cds.log(LOGGER.engine)

interface Binding { url?: string; destination?: string }

/** The binding of a required service, as configured (`cds.requires.<name>.credentials`). */
function bindingOf(service: string): Binding | undefined {
  return requiredService<{ credentials?: Binding }>(service)?.credentials
}

/** Whether `cds serve --with-mocks` (`cds watch`) serves the required service itself: no credentials, no provider. */
function isMocked(service: string | undefined): service is string {
  const served = service ? (cds.services as Record<string, { mocked?: unknown } | undefined>)[service] : undefined
  return served?.mocked === true
}

/** The database name of an entity (`ReplicaService.Books` → `ReplicaService_Books`), compared case-insensitively. */
const tableOf = (entity: string) => entity.replace(/\./g, '_').toLowerCase()

const mockedText = (service: string) =>
  `${service} is not bound to a provider: cds.requires.${service} has no credentials, so cds watch (cds serve --with-mocks) mocks it in-process, ` +
  `with no data of its own (cds import writes none) and, on a deployed database file, no tables. ` +
  `Give it the provider's service URL (cds.requires.${service}.credentials.url, or a destination) and restart the app`

const warnedMocks = new Set<string>()

/** Logged at a pipeline's first run in this process: a copy of a mock is rarely what the user wants. */
export function warnMockedSource(pipeline: ResolvedPipeline): void {
  const { service } = pipeline.config.source
  if (!isMocked(service) || warnedMocks.has(pipeline.name)) return
  warnedMocks.add(pipeline.name)
  LOG.warn(`pipeline '${pipeline.name}' copies a mock, not a provider: ${mockedText(service)}`)
}

const UNREACHABLE: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host not found',
  ETIMEDOUT: 'connection timed out',
  UND_ERR_CONNECT_TIMEOUT: 'connection timed out',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
}

interface Failure { code?: unknown; status?: unknown; statusCode?: unknown; reason?: unknown; cause?: unknown; response?: { status?: unknown }; message?: unknown }

/** The network error code and the remote HTTP status somewhere in a remote call's error (CAP wraps the client's error in `reason`). */
function remoteFacts(error: unknown): { code?: string; status?: number } {
  const facts: { code?: string; status?: number } = {}
  let each = error as Failure | undefined
  for (let depth = 0; each && typeof each === 'object' && depth < 5; depth++) {
    if (!facts.code && typeof each.code === 'string' && UNREACHABLE[each.code]) facts.code = each.code
    const status = Number(each.response?.status ?? (depth > 0 ? each.status : undefined))
    if (!facts.status && status >= 400 && status < 600) facts.status = status
    each = (each.reason ?? each.cause) as Failure | undefined
  }
  if (!facts.code) facts.code = Object.keys(UNREACHABLE).find(code => new RegExp(`\\b${code}\\b`).test(String((error as Failure)?.message ?? '')))
  return facts
}

/**
 * What the SAP Cloud SDK said about a destination it could not resolve or use (not found, no auth
 * tokens, …): CAP's error message stops at the SDK's summary ("Failed to build headers."), the
 * causes are only in its `reason.message` (" Caused by: …").
 */
function destinationCause(error: unknown): string | undefined {
  const text = ((error as Failure)?.reason as Failure | undefined)?.message
  return typeof text === 'string' && text.includes(' Caused by: ') ? text.replace(/^Error during request to remote service: /, '') : undefined
}

/** Where a binding points, for the message: its URL (credentials redacted) or its destination. */
function whereOf(binding: Binding | undefined): string {
  if (binding?.url) return `at ${redactText(binding.url)}`
  if (binding?.destination) return `through destination '${binding.destination}'`
  return 'without a URL'
}

/** The remote service a failed call went to: the target's when its URL shows in the error, else the source's. */
function remoteServiceOf(pipeline: ResolvedPipeline, error: unknown): string | undefined {
  const { source, target } = pipeline.config
  const candidates = [source.service, target.service].filter((name): name is string => !!name && name !== 'db' && !isMocked(name) && !!bindingOf(name))
  if (candidates.length < 2) return candidates[0]
  const text = String((error as Failure)?.message ?? '') + String(((error as Failure)?.reason as Failure | undefined)?.message ?? '')
  const hostOf = (name: string) => { try { return new URL(bindingOf(name)!.url!).host } catch { return undefined } }
  return candidates.find(name => { const host = hostOf(name); return host && text.includes(host) }) ?? candidates[0]
}

/** The user's next step for a failed run of `pipeline`, or undefined when the error's own message is best. */
export function explainFailure(error: unknown, pipeline: ResolvedPipeline): string | undefined {
  const { source, target } = pipeline.config
  const table = missingTable(error)
  if (table) {
    const missing = table.toLowerCase()
    if (target.entity && !target.service && missing === tableOf(target.entity)) {
      const what = target.entity === pipeline.name ? 'replica table' : 'target table'
      return `The ${what} of pipeline '${pipeline.name}' (${table}) is not deployed: run cds deploy and restart the app (for a tenant: upgrade its database), then run the pipeline again`
    }
    if (isMocked(source.service) && missing.startsWith(`${tableOf(source.service)}_`)) return mockedText(source.service)
    return undefined
  }
  // the plugin's own errors (a refused change set, a REST source's page) say already what failed
  if (error instanceof PipelineError) return undefined
  const service = remoteServiceOf(pipeline, error)
  if (!service) return undefined
  const { code, status } = remoteFacts(error)
  const binding = bindingOf(service)
  if (code) {
    const setting = binding?.destination && !binding.url ? `its destination '${binding.destination}'` : `cds.requires.${service}.credentials.url`
    return `Cannot reach ${service} ${whereOf(binding)} (${UNREACHABLE[code]}): check ${setting} and that the provider is running`
  }
  if (status === 401 || status === 403) {
    return `${service} ${whereOf(binding)} refused the request with ${status} (${status === 401 ? 'not authenticated' : 'not authorized'}): ` +
      // no "credentials:" in this text: redaction would take the words after it for a secret
      `check the binding cds.requires.${service} (its credentials — user and password or headers — or its destination)`
  }
  if (status === 404) {
    return `${service} ${whereOf(binding)} answered 404 (not found): check the binding cds.requires.${service} — ` +
      `credentials.url must be the service root whose $metadata was imported — and that the provider serves the entity set`
  }
  const cause = !status && binding?.destination && !binding.url ? destinationCause(error) : undefined
  if (cause) return `${service} ${whereOf(binding)} could not be used: ${cause}`
  return undefined
}

/** Marks a run's error with the user's next step, for `publicError` (answers, stored run errors). */
export function rememberGuidance(error: unknown, pipeline: ResolvedPipeline): void {
  if (!error || typeof error !== 'object' || !Object.isExtensible(error)) return
  const guidance = explainFailure(error, pipeline)
  if (guidance) Object.defineProperty(error, 'guidance', { value: guidance, enumerable: false, configurable: true })
}
