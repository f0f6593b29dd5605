/**
 * The pipeline console: serving the prebuilt OpenUI5 app (shipped in `dist/console/`) at
 * `/pipeline-console/` when `cds.requires['data-pipeline'].management.reuse.console` is true,
 * and the copy `cds add pipeline-console` (registered in lib/add/) makes into the host's `app/` instead.
 */
import cds from '@sap/cds'
import fs from 'node:fs'
import path from 'node:path'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { engineSettings } from './mounting.js'
import { LOGGER } from './constants.js'

const LOG = cds.log(LOGGER.engine)

export const CONSOLE_PATH = '/pipeline-console'
/** The built console inside the installed package (`dist/lib/console.js` → `dist/console/`). */
export const CONSOLE_DIR = path.join(__dirname, '..', 'console')
export const ADD_COMMAND = 'pipeline-console'

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'application/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.xml': 'application/xml; charset=utf-8',
  '.properties': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
  '.woff': 'font/woff',
  '.ttf': 'font/ttf',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.gif': 'image/gif',
  '.jpg': 'image/jpeg',
}

export interface ConsoleSettings {
  /** Another OpenUI5 location (http or https URL) to bootstrap from instead of the bundled one. */
  ui5?: string
}

type Middleware = (req: IncomingMessage & { path?: string }, res: ServerResponse, next: (error?: unknown) => void) => void

/** The `ui5` setting if it is an http(s) URL (without a trailing slash); otherwise undefined. */
export function ui5Location(value: unknown): string | undefined {
  if (value === undefined || value === null || value === '') return undefined
  let url: URL | undefined
  try {
    url = new URL(String(value))
  } catch {
    url = undefined
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.username || url.password) {
    LOG.error(`management.console.ui5: '${String(value)}' is not an http(s) URL; serving the console with its bundled OpenUI5`)
    return undefined
  }
  return url.href.replace(/\/+$/, '')
}

const attribute = (text: string) => text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;')

/** index.html, bootstrapping from another OpenUI5 location when one is configured. */
export function indexHtml(html: string, ui5?: string): string {
  if (!ui5) return html
  return html.replace(/src="resources\/sap-ui-(?:custom|core)\.js"/, `src="${attribute(`${ui5}/resources/sap-ui-core.js`)}"`)
}

/** A small static file handler for the built console (GET/HEAD, ETag revalidation, no traversal). */
export function consoleMiddleware(root = CONSOLE_DIR, settings: ConsoleSettings = {}): Middleware {
  const base = path.resolve(root)
  const ui5 = ui5Location(settings.ui5)
  let index: { body: Buffer; etag: string } | undefined
  return (req, res, next) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return next()
    const url = new URL(req.url ?? '/', 'http://localhost')
    let pathname: string
    try {
      pathname = decodeURIComponent(url.pathname)
    } catch {
      res.statusCode = 400
      return res.end()
    }
    if (pathname === '' || pathname === '/') pathname = '/index.html'
    const file = path.resolve(base, `.${pathname}`)
    if (file !== base && !file.startsWith(base + path.sep)) return next()
    fs.stat(file, (error, stat) => {
      if (error || !stat.isFile()) {
        res.statusCode = 404
        res.setHeader('content-type', 'text/plain; charset=utf-8')
        return res.end(`Not found: ${CONSOLE_PATH}${pathname}`)
      }
      const isIndex = pathname === '/index.html'
      res.setHeader('content-type', CONTENT_TYPES[path.extname(file)] ?? 'application/octet-stream')
      res.setHeader('cache-control', 'no-cache')
      res.setHeader('x-content-type-options', 'nosniff')
      if (isIndex) {
        const etag = `"i${stat.size.toString(16)}-${Math.floor(stat.mtimeMs).toString(16)}-${ui5 ? 'x' : 'b'}"`
        if (index?.etag !== etag) index = { body: Buffer.from(indexHtml(fs.readFileSync(file, 'utf8'), ui5)), etag }
        res.setHeader('etag', index.etag)
        if (req.headers['if-none-match'] === index.etag) {
          res.statusCode = 304
          return res.end()
        }
        res.setHeader('content-length', index.body.length)
        return res.end(req.method === 'HEAD' ? undefined : index.body)
      }
      const etag = `"${stat.size.toString(16)}-${Math.floor(stat.mtimeMs).toString(16)}"`
      res.setHeader('etag', etag)
      if (req.headers['if-none-match'] === etag) {
        res.statusCode = 304
        return res.end()
      }
      res.setHeader('content-length', stat.size)
      if (req.method === 'HEAD') return res.end()
      fs.createReadStream(file).on('error', next).pipe(res)
    })
  }
}

interface ExpressLike {
  use(path: string, handler: Middleware): unknown
  get(path: string, handler: Middleware): unknown
}

/** Mounts the console on the host's express app when `management.reuse.console` is set. */
export function mountConsole(app: ExpressLike): boolean {
  const management = engineSettings()?.management as { reuse?: { console?: boolean }; console?: ConsoleSettings } | undefined
  if (!management?.reuse?.console) return false
  if (!fs.existsSync(path.join(CONSOLE_DIR, 'index.html'))) {
    LOG.error(`management.reuse.console: the built console is missing at ${CONSOLE_DIR}; reinstall cap-data-pipeline (or run \`npm run build\` in its repository)`)
    return false
  }
  if (fs.existsSync(path.join(cds.root, 'app', 'pipeline-console', 'index.html')))
    LOG.warn(`management.reuse.console is set although app/pipeline-console/ exists (copied by \`cds add ${ADD_COMMAND}\`): the packaged console takes ${CONSOLE_PATH}/; remove the setting to serve your copy`)
  // relative resource URLs need the trailing slash; the redirect is relative too, so that it keeps a
  // path prefix a reverse proxy put in front (an app router's /data/pipeline-console → /data/pipeline-console/)
  app.get(CONSOLE_PATH, (req, res, next) => {
    const url = new URL(req.url ?? '/', 'http://localhost')
    if (url.pathname !== CONSOLE_PATH) return next()
    res.statusCode = 301
    res.setHeader('location', `${CONSOLE_PATH.slice(1)}/${url.search}`)
    res.end()
  })
  app.use(CONSOLE_PATH, consoleMiddleware(CONSOLE_DIR, management.console))
  LOG.info(`serving the pipeline console at ${CONSOLE_PATH}/`)
  return true
}

/** Files of a folder, recursively, relative to it. */
function filesOf(dir: string, prefix = ''): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap(entry =>
    entry.isDirectory() ? filesOf(path.join(dir, entry.name), path.join(prefix, entry.name)) : [path.join(prefix, entry.name)])
}

export const COPY_WARNING = `Do not set cds.requires['data-pipeline'].management.reuse.console as well: `
  + `app/pipeline-console/ is now served by your app at ${CONSOLE_PATH}/ and the setting would serve the packaged console there instead. `
  + `The console needs the management API: set management.reuse.api (or serve DataPipelineManagementService at /pipeline yourself).`

/**
 * `cds add pipeline-console`: copies the built console into `<project>/app/pipeline-console/`
 * (existing files are kept unless `--force`), where CAP serves it at /pipeline-console/.
 */
export function copyConsole(projectRoot: string, options: { force?: boolean; log?: (text: string) => void } = {}): { copied: string[]; kept: string[] } {
  const log = options.log ?? ((text: string) => console.log(text))
  if (!fs.existsSync(path.join(CONSOLE_DIR, 'index.html'))) throw new Error(`the built console is missing at ${CONSOLE_DIR}`)
  const target = path.join(projectRoot, 'app', 'pipeline-console')
  const copied: string[] = []
  const kept: string[] = []
  for (const file of filesOf(CONSOLE_DIR)) {
    const to = path.join(target, file)
    if (!options.force && fs.existsSync(to)) {
      kept.push(file)
      continue
    }
    fs.mkdirSync(path.dirname(to), { recursive: true })
    fs.copyFileSync(path.join(CONSOLE_DIR, file), to)
    copied.push(file)
  }
  log(`copied the pipeline console to ${path.relative(projectRoot, target) || target} (${copied.length} files${kept.length ? `, ${kept.length} existing files kept; use --force to overwrite` : ''})`)
  const reuse = (engineSettings()?.management as { reuse?: { console?: boolean } } | undefined)?.reuse
  log(`${reuse?.console ? 'WARNING: management.reuse.console is set in this project: remove it. ' : 'WARNING: '}${COPY_WARNING}`)
  return { copied, kept }
}

/** Wiring: the console mount (at bootstrap, when configured); its `cds add` command is in lib/add/. */
export function registerConsole(): void {
  cds.on('bootstrap', (app: unknown) => {
    mountConsole(app as ExpressLike)
  })
}
