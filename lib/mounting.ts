/**
 * `management.reuse.api`: adds the management service (and with it the tracker model) to the
 * host's model by adding it to the model roots CAP loads (`cds.env.roots`).
 */
import cds from '@sap/cds'
import { SERVICE_NAME } from './constants.js'

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
  if (!engineSettings()?.management?.reuse?.api) return
  const env = cds.env as unknown as { roots: string[] }
  if (!env.roots.includes(MANAGEMENT_MODEL)) env.roots = [...env.roots, MANAGEMENT_MODEL]
  cds.on('bootstrap', (app: unknown) => {
    ;(app as { use(path: string, handler: typeof rejectMalformedUrl): void }).use(MANAGEMENT_PATH, rejectMalformedUrl)
  })
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
