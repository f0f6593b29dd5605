// The console's one theme, compiled from the OpenUI5 sources for the libraries it uses: what UI5
// tooling's buildThemes task does, minus the themes and libraries the console never loads (that
// task compiles every theme of every library: four horizon variants and base, about half the build).
// Same processor (@ui5/builder's themeBuilder, less-openui5) and options (compressed) as the task.
import fs from 'node:fs'
import path from 'node:path'
import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'

/**
 * Writes `resources/<lib>/themes/<theme>/library.css` and `library-parameters.json` into `out`.
 * @param {{ root: string, libraries: Record<string, string>, theme: string, out: string }} options
 *   libraries: resource path (sap/m) → npm package name of its @openui5 library (sap.m)
 */
export async function buildThemes({ root, libraries, theme, out }) {
  const fromRoot = createRequire(path.join(root, 'package.json'))
  // @ui5/builder and @ui5/fs as the installed @ui5/cli uses them (not dependencies of this repository)
  const fromCli = createRequire(fromRoot.resolve('@ui5/cli/package.json'))
  const builderDir = path.dirname(fromCli.resolve('@ui5/builder/package.json'))
  const fromBuilder = createRequire(path.join(builderDir, 'package.json'))
  const fsDir = path.dirname(fromBuilder.resolve('@ui5/fs/package.json'))
  const load = file => import(pathToFileURL(file).href).then(module => module.default)
  const themeBuilder = await load(path.join(builderDir, 'lib/processors/themeBuilder.js'))
  const { createAdapter, createReaderCollection } = await import(pathToFileURL(path.join(fsDir, 'lib/resourceFactory.js')).href)
  const fsInterface = await load(path.join(fsDir, 'lib/fsInterface.js'))

  // every library's src/ and the theme library's, under /resources/ (as the build's dependency reader)
  const packages = [...new Set([...Object.values(libraries), `themelib_${theme}`])]
  const readers = packages.map(name => createAdapter({
    fsBasePath: path.join(path.dirname(fromRoot.resolve(`@openui5/${name}/package.json`)), 'src'),
    virBasePath: '/resources/',
  }))
  const reader = createReaderCollection({ name: 'console themes', readers })
  const sources = await Promise.all(Object.keys(libraries).map(async lib => {
    const resource = await reader.byPath(`/resources/${lib}/themes/${theme}/library.source.less`)
    if (!resource) throw new Error(`console themes: no ${theme} theme for ${lib}`)
    return resource
  }))
  const files = await themeBuilder({ resources: sources, fs: fsInterface(reader), options: { compress: true } })
  const written = []
  for (const file of files) {
    const rel = file.getPath().slice(1) // resources/…
    if (!/\/library(\.css|-parameters\.json)$/.test(rel)) continue // right-to-left CSS: the console is English only
    const to = path.join(out, rel)
    fs.mkdirSync(path.dirname(to), { recursive: true })
    fs.writeFileSync(to, await file.getBuffer())
    written.push(rel)
  }
  return written
}
