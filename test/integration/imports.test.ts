/**
 * The external API definitions of the fixtures and the demo are the real `cds import` of the real
 * providers (test/fixtures/imports.json, written by `npm run import:fixtures`): every committed
 * `<app>/srv/external/<service>.cds` must equal, byte for byte, a fresh import from its provider's
 * `$metadata`, and no app may carry an external API that the manifest does not produce.
 */
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
// the regeneration script itself, so the test imports exactly as `npm run import:fixtures` does
import { ROOT, externalFile, importAll, readManifest, type ImportEntry } from '../fixtures/import-apis.mjs'

const entries: ImportEntry[] = await readManifest()
let tmp: string
const fresh = new Map<ImportEntry, string>()

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'fixture-imports-'))
  const results = await importAll(entries, {
    outDir: entry => path.join(tmp, entry.app, 'srv/external'),
    parallel: 3, // each import into a folder of its own: side by side
  })
  for (const { entry, file } of results) fresh.set(entry, file)
}, 180_000)

afterAll(() => { if (tmp) fs.rmSync(tmp, { recursive: true, force: true }) })

describe('external APIs are the real cds import of the real providers', () => {
  test.each(entries.map(entry => [externalFile(entry), entry] as const))('%s equals a fresh import', (file, entry) => {
    const committed = fs.readFileSync(path.join(ROOT, file), 'utf8')
    const imported = fs.readFileSync(fresh.get(entry)!, 'utf8')
    // the tool's own output (its checksum header, @cds.persistence.skip, not null keys…), not a look-alike
    expect(imported).toMatch(/^\/\* checksum : [0-9a-f]{32} \*\/\n/)
    expect(imported).toContain(`service ${entry.service} {`)
    expect(committed, `${file} differs from \`cds import\` of ${entry.edmx ?? `${entry.path}/$metadata served by ${entry.provider}`} — run \`npm run import:fixtures\`, never edit it by hand`).toBe(imported)
  })

  test('cds import writes only the .cds file (no EDMX copy, no package.json change)', () => {
    const written = entries.map(entry => path.join(entry.app, 'srv/external', `${entry.service}.cds`)).sort()
    const found = fs.readdirSync(tmp, { recursive: true, withFileTypes: true })
      .filter(dirent => dirent.isFile())
      .map(dirent => path.relative(tmp, path.join(dirent.parentPath, dirent.name)))
      .sort()
    expect(found).toEqual(written)
  })

  test('every external .cds of the fixtures and the demo comes from the manifest', () => {
    const listed = new Set(entries.map(entry => externalFile(entry)))
    const apps = [
      ...fs.readdirSync(path.join(ROOT, 'test/fixtures')).map(name => `test/fixtures/${name}`),
      ...fs.readdirSync(path.join(ROOT, 'demo')).map(name => `demo/${name}`),
    ]
    const external = apps.flatMap(app => {
      const dir = path.join(ROOT, app, 'srv/external')
      if (!fs.existsSync(dir)) return []
      return fs.readdirSync(dir, { recursive: true }).map(String).filter(name => name.endsWith('.cds')).map(name => path.posix.join(app, 'srv/external', name))
    })
    expect(external.length).toBeGreaterThan(0)
    expect(external.filter(file => !listed.has(file)), 'hand-written external APIs: add them to test/fixtures/imports.json').toEqual([])
  })
})
