/**
 * The generated reference pages of the docs site are current (`npm run docs:reference` writes them
 * from the build: the setting rule table and the management API's CDS model), and what the code
 * defines is documented by hand too: every overridable setting in docs/reference/settings.md, every
 * error code in docs/reference/errors.md. Needs the build (dist/).
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { ROOT } from '../helpers/apps'

const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8')

describe('docs reference', () => {
  test('the generated pages are what npm run docs:reference writes now', async () => {
    const { generate } = await import(path.join(ROOT, 'scripts/docs-reference.mjs'))
    for (const { file, text } of await generate() as Array<{ file: string; text: string }>) {
      const name = path.relative(ROOT, file)
      expect(readFileSync(file, 'utf8'), `${name} is stale: run npm run build && npm run docs:reference`).toBe(text)
    }
  })

  test('every overridable setting is described in docs/reference/settings.md', async () => {
    const { OVERRIDABLE_PATHS } = await import(path.join(ROOT, 'dist/index.js')) as { OVERRIDABLE_PATHS: readonly string[] }
    const page = read('docs/reference/settings.md')
    const missing = OVERRIDABLE_PATHS.filter(setting => !page.includes(`\`${setting}\``))
    expect(missing, 'settings without a description').toEqual([])
  })

  test('every error code is in docs/reference/errors.md', () => {
    const types = read('dist/lib/pipeline/errors.d.ts')
    const codes = [...(/type PipelineErrorCode\s*=([^;]*);/.exec(types)?.[1] ?? '').matchAll(/'(\w+)'/g)].map(m => m[1])
    expect(codes.length).toBeGreaterThan(10)
    const page = read('docs/reference/errors.md')
    expect(codes.filter(code => !page.includes(`| \`${code}\` |`)), 'codes without a row').toEqual([])
  })
})
