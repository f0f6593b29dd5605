/**
 * vitest `globalSetup` of the root config (runs once per `vitest run`, in the main process): a folder
 * for this run's one `npm pack` of the product, handed to the test files with `provide` (they read it
 * with `inject`, test/helpers/packed.ts) and removed when the run ends. Nothing is packed here: the
 * first test file that installs the product packs into the folder, the others reuse that tarball, and
 * a run without such files (`--project unit`, the browser tests) packs nothing.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import type { TestProject } from 'vitest/node'

export const PACK_DIR = 'capDataPipelinePackDir'

declare module 'vitest' {
  export interface ProvidedContext {
    capDataPipelinePackDir: string
  }
}

export default function setup(project: TestProject): () => void {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'cap-data-pipeline-packed-'))
  project.provide(PACK_DIR, dir)
  return () => rmSync(dir, { recursive: true, force: true })
}
