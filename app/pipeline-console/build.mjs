#!/usr/bin/env node
// Builds the console into dist/console/: a self-contained OpenUI5 build by UI5 tooling (TypeScript
// transpiled by ui5-tooling-transpile, every module the app needs in one resources/sap-ui-custom.js),
// pruned to what the browser loads: the used libraries' sap_horizon CSS, fonts and English texts.
// The result is cached by a hash of the sources and tool versions, so an unchanged console is not
// rebuilt (`--force` rebuilds); the hash is of file contents, so a fresh clone's second build skips too.
// The compiled theme is cached the same way by its own inputs (libraries, builder, themes.mjs): a change
// to the console's sources rebuilds without it. Run through `npm run build:console` (Node 22 from the
// devDependency).
//
// Only what the console uses is built (a first build took ~2 min, half of it themes, half minifying):
// UI5 tooling's buildThemes (every theme of every library) and minify (every module of every library)
// are left out, and so is writing the libraries into the build output (`--all`); themes.mjs compiles the
// one theme of the five libraries with the same processor, the few library files loaded besides the
// bundle (fonts, images, modules loaded by name) are copied from the libraries' sources, and the bundle,
// the app's own files and those modules are minified (oxc, in a second) with UI5 tooling's choices. The
// type check of the console's TypeScript, the UI5 build and the theme run side by side.
import { spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { buildThemes } from './themes.mjs'

const here = path.dirname(fileURLToPath(import.meta.url))
const root = path.resolve(here, '..', '..')
const require = createRequire(path.join(root, 'package.json'))
const out = path.join(root, 'dist', 'console')
const staging = path.join(root, 'node_modules', '.cache', 'pipeline-console', 'build')
const INFO = '.build-info.json'
const force = process.argv.includes('--force')

/** The OpenUI5 libraries the console uses (sap.m needs sap.ui.unified and sap.ui.layout). */
export const LIBRARIES = ['sap/ui/core', 'sap/m', 'sap/f', 'sap/ui/layout', 'sap/ui/unified']
export const THEME = 'sap_horizon'
/** Modules the framework loads by name at run time (not found by the bundler's analysis). */
export const DYNAMIC_MODULES = ['sap/ui/core/boot/', 'sap/ui/core/date/Gregorian.js']

function filesOf(dir, prefix = '') {
  if (!fs.existsSync(dir)) return []
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap(entry => {
    const rel = prefix ? `${prefix}/${entry.name}` : entry.name
    return entry.isDirectory() ? filesOf(path.join(dir, entry.name), rel) : [rel]
  })
}

function inputsHash() {
  const hash = createHash('sha256')
  for (const file of ['ui5.yaml', 'package.json', 'tsconfig.json', 'build.mjs', 'themes.mjs', ...filesOf(path.join(here, 'webapp')).map(f => `webapp/${f}`)].sort()) {
    hash.update(file).update(fs.readFileSync(path.join(here, file)))
  }
  for (const pkg of ['@ui5/cli', 'ui5-tooling-transpile', 'rolldown', ...['sap.ui.core', 'sap.m', 'sap.f', 'sap.ui.layout', 'sap.ui.unified', 'themelib_sap_horizon'].map(l => `@openui5/${l}`)]) {
    hash.update(`${pkg}@${require(`${pkg}/package.json`).version}`)
  }
  return hash.digest('hex').slice(0, 16)
}

/** Whether a file of the UI5 build output or of a library's sources (`resources/…`) is needed at run time. */
export function keep(file) {
  if (/(-dbg(\.[a-z]+)?\.js|\.map|\.ts|\.less)$/.test(file)) return false
  if (file.startsWith('test-resources/')) return false
  if (!file.startsWith('resources/')) return true // the app's own files
  const res = file.slice('resources/'.length)
  if (res === 'sap-ui-custom.js' || res === 'sap-ui-version.json') return true
  if (DYNAMIC_MODULES.some(pattern => pattern.endsWith('/') ? res.startsWith(pattern) && res.endsWith('.js') : res === pattern)) return true
  if (res === 'sap/ui/core/cldr/en.json') return true
  const lib = LIBRARIES.find(l => res.startsWith(`${l}/`))
  if (!lib) return false
  const rest = res.slice(lib.length + 1)
  if (/^messagebundle(_en)?\.properties$/.test(rest)) return true
  const theme = /^themes\/([^/]+)\/(.*)$/.exec(rest)
  if (!theme) return false
  const [, name, inner] = theme
  // compiled CSS and parameters of the one theme; fonts and images it references (also from base)
  if (name === THEME && (inner === 'library.css' || inner === 'library-parameters.json')) return true
  return (name === THEME || name === 'base') && /^(fonts|img)\//.test(inner)
  return false
}

function run(command, args, cwd) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] })
    let log = ''
    child.stdout.on('data', chunk => { log += chunk })
    child.stderr.on('data', chunk => { log += chunk })
    child.on('error', reject)
    child.on('exit', code => code === 0 ? resolve(log) : reject(new Error(`${path.basename(args[0])} failed (${code}):\n${log.slice(-6000)}`)))
  })
}

/**
 * Minifies a browser script in place: names mangled, whitespace removed, nothing else rewritten
 * (compress off, as UI5 tooling's terser settings), licence comments kept. oxc (through rolldown)
 * minifies the 11 MB bundle in about a second; terser took 10–20 s.
 */
async function minifier() {
  const { minify } = await import('rolldown/utils')
  return async (file) => {
    const result = await minify(path.basename(file), fs.readFileSync(file, 'utf8'), { compress: false, mangle: true, codegen: { removeWhitespace: true, legalComments: 'inline' } })
    if (result.errors?.length) throw new Error(`console build: minifying ${file}: ${result.errors.map(e => e.message).join('; ')}`)
    fs.writeFileSync(file, result.code)
  }
}

const started = Date.now()
const hash = inputsHash()
const info = path.join(out, INFO)
if (!force && fs.existsSync(info) && JSON.parse(fs.readFileSync(info, 'utf8')).hash === hash) {
  console.log(`console: dist/console is up to date (${hash})`)
  process.exit(0)
}

const ui5 = require.resolve('@ui5/cli/bin/ui5.cjs')
const themes = path.join(staging, '..', 'themes')
// the compiled theme depends only on the libraries and the theme builder, not on the console's sources:
// kept beside the staging folder with the hash it was built for, and reused while that hash holds (a
// change to the console's own files rebuilds the console without the theme, about half the work)
const themesInfo = path.join(staging, '..', 'themes.json')
const themesHash = (() => {
  const hash = createHash('sha256').update(fs.readFileSync(path.join(here, 'themes.mjs'))).update(THEME)
  const fromCli = createRequire(require.resolve('@ui5/cli/package.json'))
  hash.update(`@ui5/builder@${fromCli('@ui5/builder/package.json').version}`)
  for (const name of ['sap.ui.core', 'sap.m', 'sap.f', 'sap.ui.layout', 'sap.ui.unified', `themelib_${THEME}`]) hash.update(`${name}@${require(`@openui5/${name}/package.json`).version}`)
  return hash.update(JSON.stringify(LIBRARIES)).digest('hex').slice(0, 16)
})()
const themesCurrent = () => {
  try {
    return !force && fs.existsSync(themes) && JSON.parse(fs.readFileSync(themesInfo, 'utf8')).hash === themesHash
  } catch {
    return false
  }
}
const LIBRARY_PACKAGES = { 'sap/ui/core': 'sap.ui.core', 'sap/m': 'sap.m', 'sap/f': 'sap.f', 'sap/ui/layout': 'sap.ui.layout', 'sap/ui/unified': 'sap.ui.unified' }
// --prune-only (development): reuse the last UI5 build output, only redo the selection
/** When each part finished, seconds from the start (printed at the end). */
const phases = []
const pruneOnly = process.argv.includes('--prune-only') && fs.existsSync(path.join(staging, 'index.html')) && fs.existsSync(themes)
if (!pruneOnly) {
  const reuseThemes = themesCurrent()
  console.log(`console: type check, ui5 build self-contained (TypeScript → JavaScript, one bundle)${reuseThemes ? ' (the sap_horizon theme is current)' : ' and the sap_horizon theme'} …`)
  if (!reuseThemes) fs.rmSync(themes, { recursive: true, force: true })
  if (!reuseThemes) fs.rmSync(themesInfo, { force: true })
  const timed = (name, promise) => promise.then(result => { phases.push(`${name} ${((Date.now() - started) / 1000).toFixed(1)} s`); return result })
  await Promise.all([
    timed('type check', run(process.execPath, [path.join(path.dirname(require.resolve('typescript/package.json')), 'bin', 'tsc'), '-p', here], root)),
    // the app and its bundle only (--all would also write every library file: ~6,000 files, 100 MB)
    timed('ui5 build', run(process.execPath, [ui5, 'build', 'self-contained', '--dest', staging, '--clean-dest',
      // the per-library preloads and sap-ui-core.js are replaced by the self-contained bundle; themes
      // and minification: only what the console loads, below
      '--exclude-task', 'generateLibraryPreload', 'generateBundle', 'generateComponentPreload', 'buildThemes', 'minify'], here)),
    reuseThemes ? Promise.resolve() : timed('theme', buildThemes({ root, libraries: LIBRARY_PACKAGES, theme: THEME, out: themes })
      .then(() => fs.writeFileSync(themesInfo, JSON.stringify({ hash: themesHash })))),
  ])
}

/**
 * The library files the browser loads besides the bundle, from the libraries' sources: modules the
 * framework loads by name, and the fonts and images of the theme (and of base, which it references).
 * @returns {Array<[string, string]>} [path in the output, source file]
 */
function libraryFiles() {
  const found = new Map()
  for (const name of [...Object.values(LIBRARY_PACKAGES), `themelib_${THEME}`]) {
    const src = path.join(path.dirname(require.resolve(`@openui5/${name}/package.json`)), 'src')
    const dirs = [...DYNAMIC_MODULES.map(pattern => pattern.endsWith('/') ? pattern : path.posix.dirname(pattern)),
      ...LIBRARIES.flatMap(lib => [THEME, 'base'].flatMap(theme => ['fonts', 'img'].map(kind => `${lib}/themes/${theme}/${kind}`)))]
    for (const dir of dirs) {
      for (const file of filesOf(path.join(src, dir), dir)) {
        if (keep(`resources/${file}`)) found.set(`resources/${file}`, path.join(src, file))
      }
    }
  }
  return [...found]
}

fs.rmSync(out, { recursive: true, force: true })
let bytes = 0
const kept = []
const copies = [...filesOf(staging).filter(keep).map(file => [file, path.join(staging, file)]), ...libraryFiles()]
for (const [file, from] of copies) {
  const to = path.join(out, file)
  fs.mkdirSync(path.dirname(to), { recursive: true })
  fs.copyFileSync(from, to)
  bytes += fs.statSync(to).size
  kept.push(file)
}
// the compiled theme (themes.mjs)
for (const file of filesOf(themes)) {
  const to = path.join(out, file)
  fs.mkdirSync(path.dirname(to), { recursive: true })
  fs.copyFileSync(path.join(themes, file), to)
  bytes += fs.statSync(to).size
  kept.push(file)
}
// the bundle, the app's own modules and the few loaded by name, minified (the build left them as written)
const minify = await minifier()
for (const file of kept.filter(f => f.endsWith('.js'))) {
  const to = path.join(out, file)
  bytes -= fs.statSync(to).size
  await minify(to)
  bytes += fs.statSync(to).size
}
phases.push(`minified ${((Date.now() - started) / 1000).toFixed(1)} s`)
// texts and locale data are plain source files of the libraries (English only: index.html sets it)
const sources = LIBRARY_PACKAGES
for (const lib of LIBRARIES) {
  const src = path.join(path.dirname(require.resolve(`@openui5/${sources[lib]}/package.json`)), 'src', lib)
  const wanted = ['messagebundle.properties', 'messagebundle_en.properties', ...(lib === 'sap/ui/core' ? ['cldr/en.json'] : [])]
  for (const name of wanted) {
    if (!fs.existsSync(path.join(src, name))) continue
    const rel = `resources/${lib}/${name}`
    const to = path.join(out, rel)
    fs.mkdirSync(path.dirname(to), { recursive: true })
    let text = fs.readFileSync(path.join(src, name), 'utf8')
    // .properties are read as ISO-8859-1: escape everything else (as UI5 tooling's escapeNonAsciiCharacters)
    if (name.endsWith('.properties')) text = text.replace(/[^\x00-\x7f]/g, c => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
    fs.writeFileSync(to, text)
    bytes += fs.statSync(to).size
    kept.push(rel)
  }
}
if (!kept.includes('resources/sap-ui-custom.js') || !kept.includes('index.html')) throw new Error('console build: the self-contained bundle or index.html is missing')
// lazily referenced libraries ask for an optional bundle-info file; everything the console
// uses of them is in the self-contained bundle already
for (const lib of ['sap/ui/unified', 'sap/ui/layout']) {
  const rel = `resources/${lib}/library-preload-lazy.js`
  fs.writeFileSync(path.join(out, rel), `//@ui5-bundle ${lib}/library-preload-lazy.js\n// the console's modules of this library are in resources/sap-ui-custom.js\n`)
  kept.push(rel)
}
// the framework asks for the version info once; the bundle has no sap-ui-version.json of its own
const versionInfo = {
  name: 'pipeline.console',
  version: require(path.join(here, 'package.json')).version,
  buildTimestamp: new Date().toISOString(),
  libraries: Object.values(sources).map(name => ({ name, version: require(`@openui5/${name}/package.json`).version })),
}
fs.writeFileSync(path.join(out, 'resources', 'sap-ui-version.json'), JSON.stringify(versionInfo))
kept.push('resources/sap-ui-version.json')
const seconds = ((Date.now() - started) / 1000).toFixed(1)
fs.writeFileSync(info, JSON.stringify({ hash, files: kept.length, bytes, seconds: Number(seconds) }, null, 2))
console.log(`console: dist/console built in ${seconds} s (${phases.join(', ')}): ${kept.length} files, ${(bytes / 1024 / 1024).toFixed(2)} MiB`)
