/**
 * CAP projects made with the real tools for the tests that play a user's steps: the `cds import` of
 * the provider fixture's real `$metadata`, and a project that uses this repository's packages
 * (`cap-data-pipeline` there is the repository itself) instead of an install of the packed tarball.
 */
import { readFileSync, symlinkSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { ROOT, runCds } from './apps'

/** `cds import` of the provider's CatalogService into `project`, from its `$metadata` downloaded into `work` (as a user would). */
export async function importCatalog(providerUrl: string, work: string, project: string): Promise<void> {
  const metadata = await fetch(`${providerUrl}/odata/v4/catalog/$metadata`)
  if (metadata.status !== 200) throw new Error(`the provider's $metadata answered ${metadata.status}`)
  const edmx = path.join(work, 'CatalogService.edmx')
  writeFileSync(edmx, await metadata.text())
  await runCds(['import', edmx], project)
}

/**
 * What `npm add cap-data-pipeline` leaves, with this repository's packages: the plugin among the
 * project's dependencies (so that cds-dk loads it for `cds add` and `cds build`) and node_modules
 * linked to this repository's.
 */
export function useRepositoryPackages(project: string): void {
  const file = path.join(project, 'package.json')
  const manifest = JSON.parse(readFileSync(file, 'utf8'))
  manifest.dependencies['cap-data-pipeline'] = `^${JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')).version}`
  writeFileSync(file, JSON.stringify(manifest, null, 2))
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(project, 'node_modules'), 'junction')
}
