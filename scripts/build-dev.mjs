#!/usr/bin/env node
// The build `npm start` (and `npm run start:mtx`) needs, quick when little or nothing changed (issue 34):
// the plugin and the console side by side, each skipping what is current.
//
// - the plugin: `tsc -p . --incremental`, its build info in node_modules/.cache/cap-data-pipeline/ (never
//   in dist/, which is packed). An incremental tsc writes only what changed since its build info and does
//   not notice outputs removed from dist/ (`rm -rf dist`, a file deleted by hand): when a source's .js or
//   .d.ts is missing, the build info is thrown away and everything is compiled. Nothing changed: ≈ 0.3 s
//   instead of a full compile.
// - the console: app/pipeline-console/build.mjs, which skips the build when dist/console was built from
//   the same sources and tool versions (a hash of their contents, so it holds in a fresh clone too).
//
// `npm run build` (`npm test`, `npm pack`) stays the full build: tsc without build info, then the console.
// Run through npm (`npm start`): the Node 22 that `npm ci` put in node_modules/.bin is the one on PATH.
import { spawn } from 'node:child_process'
import fs from 'node:fs'
import { createRequire } from 'node:module'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const require = createRequire(path.join(root, 'package.json'))
const cache = path.join(root, 'node_modules', '.cache', 'cap-data-pipeline')
const buildInfo = path.join(cache, 'plugin.tsbuildinfo')

/** The TypeScript sources of the plugin (tsconfig.json `include`) whose .js or .d.ts is missing in dist/. */
function missingOutputs() {
  const sources = ['cds-plugin.ts']
  const walk = dir => {
    for (const entry of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const rel = `${dir}/${entry.name}`
      if (entry.isDirectory()) walk(rel)
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) sources.push(rel)
    }
  }
  for (const dir of ['lib', 'srv']) walk(dir)
  return sources.filter(file => ['.js', '.d.ts'].some(ext => !fs.existsSync(path.join(root, 'dist', file.replace(/\.ts$/, ext)))))
}

function run(label, args, priority = 0) {
  const started = Date.now()
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, args, { cwd: root, stdio: 'inherit' })
    // (before it starts the compiler: the compiler's process inherits the priority)
    if (priority) try { os.setPriority(child.pid, priority) } catch { /* not allowed here: normal priority */ }
    child.on('error', reject)
    child.on('exit', (code, signal) => code === 0
      ? resolve(Date.now() - started)
      : reject(new Error(`${label} failed (${signal ?? `exit ${code}`})`)))
  })
}

const started = Date.now()
const missing = missingOutputs()
if (missing.length && fs.existsSync(buildInfo)) {
  console.log(`plugin: ${missing.length} output(s) missing in dist/ (${missing[0]}${missing.length > 1 ? ', …' : ''}): compiling everything`)
  fs.rmSync(buildInfo, { force: true })
}
fs.mkdirSync(cache, { recursive: true })
const tsc = path.join(path.dirname(require.resolve('typescript/package.json')), 'bin', 'tsc')
// no console built yet (a fresh clone): its build (UI5 build, theme, type check) keeps both cores of a
// small machine busy for a few seconds, then only the UI5 build runs. tsc (≈ 1 s of CPU) at a lower
// priority fills that gap instead of slowing the UI5 build, the longest part. Otherwise the console is
// most likely current, and tsc runs at the normal priority (a busy machine would hold it back).
const consoleBuilt = fs.existsSync(path.join(root, 'dist', 'console', '.build-info.json'))
const results = await Promise.allSettled([
  run('tsc', [tsc, '-p', '.', '--incremental', '--tsBuildInfoFile', buildInfo], consoleBuilt ? 0 : 10)
    .then(ms => console.log(`plugin: dist/ compiled in ${(ms / 1000).toFixed(1)} s (tsc --incremental)`)),
  run('console build', [path.join(root, 'app', 'pipeline-console', 'build.mjs')]),
])
const failed = results.filter(result => result.status === 'rejected')
for (const { reason } of failed) console.error(reason.message)
if (failed.length) process.exit(1)
console.log(`build: done in ${((Date.now() - started) / 1000).toFixed(1)} s`)
