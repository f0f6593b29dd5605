/**
 * `management.reuse.api`: adds the management service (and with it the tracker model) to the
 * host's model by adding it to the model roots CAP loads (`cds.env.roots`) — unless the roots are
 * a compiled model (`cds build --production`: `gen/srv/srv/csn.json`), which holds the service
 * already: loading its sources beside it failed with duplicate definitions (issue 33). That is
 * CAP's own rule for the models of `cds.requires` (compile/resolve.js), which would suit here but
 * makes `cds.connect.to('data-pipeline')` look for a service definition of that name.
 */
import cds from '@sap/cds'
import { SERVICE_NAME } from './constants.js'
import { alignManagementRoles } from './security/roles.js'
import { resolveModel } from './cap/index.js'

export const MANAGEMENT_MODEL = 'cap-data-pipeline/srv/management'

export interface EngineSettings {
  management?: { reuse?: { api?: boolean; console?: boolean }; inspect?: boolean }
}

export function engineSettings(): EngineSettings | undefined {
  return (cds.env.requires as Record<string, EngineSettings | undefined>)[SERVICE_NAME]
}

/** Where the management service is served (srv/management.cds `@path`). */
export const MANAGEMENT_PATH = '/pipeline'

export function registerManagementModel(): void {
  // also without reuse.api: a model that names the service itself (srv/data-pipeline.cds) is what `cds add xsuaa` reads
  cds.on('loaded', (csn: unknown) => alignManagementRoles(csn as Parameters<typeof alignManagementRoles>[0]))
  if (!engineSettings()?.management?.reuse?.api) return
  const roots: string[] = cds.env.roots
  if (!roots.includes(MANAGEMENT_MODEL) && !isCompiledModel(roots)) cds.env.roots = [...roots, MANAGEMENT_MODEL]
  cds.on('bootstrap', (app: unknown) => {
    ;(app as { use(path: string, handler: typeof rejectMalformedUrl): void }).use(MANAGEMENT_PATH, rejectMalformedUrl)
  })
}

/** Whether the model roots resolve to one compiled `csn.json` (a fresh resolve cache: CAP's own stays as it was). */
export function isCompiledModel(roots: string[]): boolean {
  const files = resolveModel(roots, { cache: {} }) ?? []
  return files.length === 1 && files[0].endsWith('csn.json')
}

interface Response { statusCode: number; setHeader(name: string, value: string): void; end(body: string): void }

/**
 * A URL whose percent-encoding is no UTF-8 (`%ED%A0%80`, `%E0%A4%A`) makes CAP's OData parser throw
 * `URIError` and answer 500: answered 400 here instead, before CAP parses it.
 */
export function rejectMalformedUrl(req: { url?: string }, res: Response, next: () => void): void {
  try {
    decodeURIComponent(req.url ?? '')
  } catch {
    res.statusCode = 400
    res.setHeader('content-type', 'application/json')
    res.end(JSON.stringify({ error: { code: '400', message: 'The URL is not valid: its percent-encoding is not UTF-8' } }))
    return
  }
  next()
}
