/**
 * Headless Chromium for the browser tests, from npm: the binary inside `@sparticuz/chromium`,
 * driven by playwright-core. Nothing to install by hand on Linux x64; elsewhere (macOS, Windows, Linux
 * arm64: the bundled binary is a Linux x64 build) an installed Chrome, Edge or Chromium
 * (`installedBrowsers`); `CHROMIUM_PATH` uses a browser of your own.
 *
 * @sparticuz/chromium unpacks its brotli'd files straight into os.tmpdir() (/tmp/chromium,
 * /tmp/fonts, …) and reuses whatever it finds there: not safe when two processes unpack at once
 * (or one was killed half-way), and an upgraded package would go on using the old binary. So it
 * unpacks here in a child process with its own TMPDIR, into a staging directory that is renamed
 * into place (atomically) once complete: <tmpdir>/cap-data-pipeline-chromium-<version>-<uid>.
 *
 * One browser for the whole `e2e` project: test/helpers/e2e-global-setup.ts starts it as a Playwright
 * browser server (`serveBrowser`) and provides its endpoint; `launchBrowser()` in a test file connects
 * to it (its contexts are the file's own: closed, with everything in them, when the file closes its
 * connection). Without that endpoint (a file run by another config), it launches a browser of its own.
 */
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { chromium, type Browser, type BrowserServer, type LaunchOptions } from 'playwright-core'
import { inject } from 'vitest'

const require = createRequire(import.meta.url)

/** The machine may have no internet: no background connections of the browser's own. */
const QUIET = ['--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run']
/** @sparticuz's GPU emulation (WebGL on SwiftShader), made for AWS Lambda: left out (--disable-gpu). */
const GPU = /^--(use-gl|use-angle|enable-unsafe-swiftshader|in-process-gpu|ignore-gpu-blocklist)\b/
/** For a browser of your own (CHROMIUM_PATH, or one installed where the bundled one cannot run). */
const OWN_ARGS = ['--no-sandbox', '--disable-gpu']
const READY = '.complete'
/** Whether the bundled Chromium (a Linux x64 build) can run on this machine. */
const BUNDLED_RUNS_HERE = process.platform === 'linux' && process.arch === 'x64'

export interface BrowserSetup {
  executablePath: string
  args: string[]
  env?: Record<string, string>
}

/**
 * Browsers installed in their usual places, looked for where the bundled Chromium cannot run: it is a
 * Linux x64 build (made for AWS Lambda). Windows always has Edge; macOS has Chrome or Edge where the
 * developer installed one; Linux arm64 a distribution's Chromium.
 */
export function installedBrowsers(platform: NodeJS.Platform, env: NodeJS.ProcessEnv, home: string): string[] {
  if (platform === 'darwin') {
    const apps = ['Google Chrome.app/Contents/MacOS/Google Chrome', 'Microsoft Edge.app/Contents/MacOS/Microsoft Edge', 'Chromium.app/Contents/MacOS/Chromium']
    return ['/Applications', path.posix.join(home, 'Applications')].flatMap(folder => apps.map(app => path.posix.join(folder, app)))
  }
  if (platform === 'win32') {
    const roots = [env.LOCALAPPDATA, env.PROGRAMFILES, env['PROGRAMFILES(X86)']].filter((root): root is string => Boolean(root))
    const apps = ['Google\\Chrome\\Application\\chrome.exe', 'Microsoft\\Edge\\Application\\msedge.exe']
    return apps.flatMap(app => roots.map(root => path.win32.join(root, app)))
  }
  return ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome', '/usr/bin/google-chrome-stable', '/usr/bin/microsoft-edge', '/snap/bin/chromium']
}

/** The browser to start on a machine where the bundled Chromium cannot run: the first installed one, or an error that says what to do. */
export function installedBrowser(platform: NodeJS.Platform, arch: string, env: NodeJS.ProcessEnv, home: string, exists: (file: string) => boolean): string {
  const candidates = installedBrowsers(platform, env, home)
  const found = candidates.find(exists)
  if (!found) throw new Error(`the bundled Chromium is a Linux x64 build, and no installed Chrome, Edge or Chromium was found on ${platform}-${arch} (looked for ${candidates.join(', ')}): install one, or set CHROMIUM_PATH to a browser`)
  return found
}

/** Where the browser comes from and how it is started (unpacks the bundled one on first use). */
export async function browserSetup(): Promise<BrowserSetup> {
  const own = process.env.CHROMIUM_PATH
  if (own) return { executablePath: own, args: [...OWN_ARGS, ...QUIET] }
  if (!BUNDLED_RUNS_HERE) {
    return { executablePath: installedBrowser(process.platform, process.arch, process.env, os.homedir(), fs.existsSync), args: [...OWN_ARGS, ...QUIET] }
  }
  const { default: bundled } = await import('@sparticuz/chromium')
  const dir = await unpack()
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) if (value !== undefined) env[key] = value
  // only the fonts it ships (fonts.conf written by unpack()): the same rendering on every machine
  env.FONTCONFIG_FILE = path.join(dir, 'fonts.conf')
  const al2023 = path.join(dir, 'al2023', 'lib') // unpacked on AWS Lambda/CodeBuild-like hosts only
  if (fs.existsSync(al2023)) env.LD_LIBRARY_PATH = [al2023, process.env.LD_LIBRARY_PATH].filter(Boolean).join(':')
  return {
    executablePath: path.join(dir, 'chromium'),
    // Chromium honours only the last --disable-features/--enable-features switch: @sparticuz's would
    // replace Playwright's own lists (which also keep the browser off the network at start-up).
    // What @sparticuz's lists turn off (site isolation, out-of-process audio)
    // --disable-site-isolation-trials already does.
    // Not --single-process (made for AWS Lambda): such a browser ends when any of its contexts is
    // closed, so one browser could not serve file after file, each closing its own contexts. And no
    // GPU (as for a browser of your own): @sparticuz's WebGL emulation (ANGLE on SwiftShader, GPU in
    // process) composited every frame on the CPU, twice the CPU time of software compositing.
    args: [...bundled.args.filter(arg => !/^--(disable|enable)-features=/.test(arg) && arg !== '--single-process' && !GPU.test(arg)), '--disable-gpu', ...QUIET],
    env,
  }
}

const HINT = () => process.env.CHROMIUM_PATH ? `CHROMIUM_PATH=${process.env.CHROMIUM_PATH}`
  : BUNDLED_RUNS_HERE ? 'the Chromium of @sparticuz/chromium (unset CHROMIUM_PATH; or set it to a browser of your own)'
    : 'an installed Chrome, Edge or Chromium (or set CHROMIUM_PATH to a browser of your own)'

/**
 * Headless Chromium for a test file: a connection to the project's browser (test/helpers/e2e-global-setup.ts)
 * when there is one, else a browser of the file's own (bundled, or CHROMIUM_PATH). `close()` ends
 * either: the connection closes the contexts the file opened, the project's browser goes on. `options`
 * apply to a browser of the file's own only.
 */
export async function launchBrowser(options: LaunchOptions = {}): Promise<Browser> {
  const shared = providedEndpoint()
  if (shared?.error) throw new Error(`headless Chromium did not start (${HINT()}): ${shared.error}`)
  if (shared?.endpoint) {
    try {
      return await chromium.connect(shared.endpoint, { timeout: 60_000 })
    } catch (error) {
      throw new Error(`the project's headless Chromium (${shared.endpoint}) does not answer: ${(error as Error).message}`, { cause: error })
    }
  }
  const setup = await browserSetup()
  try {
    return await chromium.launch({ headless: !process.env.HEADED, executablePath: setup.executablePath, env: setup.env, ...options, args: [...setup.args, ...options.args ?? []] })
  } catch (error) {
    throw new Error(`headless Chromium did not start (${HINT()}): ${(error as Error).message}`, { cause: error })
  }
}

/** Starts Chromium (headless unless HEADED is set, with a browser of your own in CHROMIUM_PATH) as a Playwright browser server on loopback (the `e2e` project's global setup). */
export async function serveBrowser(): Promise<BrowserServer> {
  const setup = await browserSetup()
  try {
    return await chromium.launchServer({ headless: !process.env.HEADED, host: '127.0.0.1', executablePath: setup.executablePath, env: setup.env, args: setup.args })
  } catch (error) {
    throw new Error(`headless Chromium did not start (${HINT()}): ${(error as Error).message}`, { cause: error })
  }
}

declare module 'vitest' {
  interface ProvidedContext {
    /** The project's browser server (test/helpers/e2e-global-setup.ts): its endpoint, or why it did not start. */
    chromium: { endpoint?: string; error?: string }
  }
}

/** What the global setup provided, if this runs in a vitest worker of a project that has one. */
function providedEndpoint(): { endpoint?: string; error?: string } | undefined {
  try {
    return inject('chromium')
  } catch {
    return undefined // not in a vitest worker
  }
}

/** Unpacks the @sparticuz/chromium files once per version and user; returns their directory. */
async function unpack(): Promise<string> {
  const entry = require.resolve('@sparticuz/chromium')
  const { version } = JSON.parse(fs.readFileSync(path.join(path.dirname(entry), '..', 'package.json'), 'utf8')) as { version: string }
  const dir = path.join(os.tmpdir(), `cap-data-pipeline-chromium-${version}-${process.getuid?.() ?? 0}`)
  const complete = () => fs.existsSync(path.join(dir, READY)) && fs.existsSync(path.join(dir, 'chromium'))
  if (complete()) return dir
  // (only a complete copy is ever renamed into place: one without its files lost them to a tmp
  // cleaner) move it aside, and leftovers of unpacking processes that were killed an hour ago or more
  const parent = path.dirname(dir)
  const leftovers = fs.readdirSync(parent).map(name => path.join(parent, name)).filter(file => file.startsWith(`${dir}.unpacking-`) && Date.now() - fs.statSync(file).mtimeMs > 3_600_000)
  if (fs.existsSync(dir)) {
    const stale = `${dir}.unpacking-stale-${process.pid}`
    await fs.promises.rename(dir, stale).catch(() => undefined)
    leftovers.push(stale)
  }
  for (const leftover of leftovers) await fs.promises.rm(leftover, { recursive: true, force: true })
  const staging = await fs.promises.mkdtemp(`${dir}.unpacking-`)
  try {
    const script = `const { default: c } = await import(${JSON.stringify(pathToFileURL(entry).href)}); await c.executablePath()`
    await promisify(execFile)(process.execPath, ['--input-type=module', '-e', script], { env: { ...process.env, TMPDIR: staging }, timeout: 120_000 })
    fs.writeFileSync(path.join(staging, 'fonts.conf'), [
      '<?xml version="1.0"?>',
      '<!DOCTYPE fontconfig SYSTEM "fonts.dtd">',
      '<fontconfig>',
      `  <dir>${path.join(dir, 'fonts', 'fonts')}</dir>`,
      `  <cachedir>${path.join(dir, 'fonts-cache')}</cachedir>`,
      '</fontconfig>',
      '',
    ].join('\n'))
    fs.writeFileSync(path.join(staging, READY), `${version}\n`)
    try {
      await fs.promises.rename(staging, dir)
    } catch (error) {
      // another process was quicker: use its copy
      if (!complete()) throw error
    }
  } finally {
    await fs.promises.rm(staging, { recursive: true, force: true })
  }
  return dir
}
