/**
 * The code samples of the README and the docs site (docs/**\/*.md) as data, for
 * test/unit/docs-samples.test.ts: every fenced block with its language, the file and line it is in,
 * and the marker right before it, if any:
 *
 * - `<!-- quickstart:N … -->`: a step of the quick start (run by test/integration/readme-quickstart.test.ts);
 * - `<!-- sample: not checked — <why> -->`: a block no test can check, and why (a reason is required);
 * - `<!-- sample: <kind> -->` with further words for the checker, e.g. `<!-- sample: cds context -->`.
 */
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { ROOT } from './apps'

export interface DocSample {
  /** Relative to the repository, with `/`. */
  file: string
  /** The line of the opening fence (1-based). */
  line: number
  lang: string
  text: string
  /** The HTML comment right before the fence (blank lines between allowed), without `<!--`/`-->`. */
  marker?: string
}

/** Languages whose blocks must be checked or marked. */
export const CHECKED_LANGUAGES = new Set(['cds', 'cdl', 'json', 'jsonc', 'js', 'javascript', 'mjs', 'cjs', 'ts', 'typescript', 'sh', 'shell', 'bash', 'console', 'http'])

/** README.md and every page of the docs site (not the site's build output or cache). */
export function docFiles(): string[] {
  const pages: string[] = []
  const walk = (dir: string) => {
    for (const entry of readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
      const relative = `${dir}/${entry.name}`
      if (entry.isDirectory()) { if (entry.name !== '.vitepress' && entry.name !== 'node_modules') walk(relative) }
      else if (entry.name.endsWith('.md')) pages.push(relative)
    }
  }
  walk('docs')
  return ['README.md', ...pages.sort()]
}

/** The fenced blocks of one Markdown text (``` fences; `~~~` is not used here). */
export function samplesOf(file: string, text = readFileSync(path.join(ROOT, file), 'utf8')): DocSample[] {
  const lines = text.split('\n')
  const samples: DocSample[] = []
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```\s*([\w-]*)/.exec(lines[i])
    if (!open) continue
    const start = i
    const body: string[] = []
    for (i++; i < lines.length && !/^\s*```\s*$/.test(lines[i]); i++) body.push(lines[i].slice(open[1].length))
    let before = start - 1
    while (before >= 0 && !lines[before].trim()) before--
    const comment = before >= 0 ? /^<!--\s*([\s\S]*?)\s*-->\s*$/.exec(lines[before].trim()) : null
    samples.push({ file, line: start + 1, lang: open[2].toLowerCase(), text: `${body.join('\n')}\n`, ...(comment ? { marker: comment[1] } : {}) })
  }
  return samples
}

export const allSamples = (): DocSample[] => docFiles().flatMap(file => samplesOf(file))

/** `<!-- sample: not checked — why -->`: the reason, or undefined when the marker is not one. */
export function notCheckedReason(sample: DocSample): string | undefined {
  const match = /^sample:\s*not checked\s*[—–:-]+\s*(.*)$/s.exec(sample.marker ?? '')
  return match ? match[1].trim() : undefined
}

/** The step of a `<!-- quickstart:N -->` marker. */
export function quickstartStep(sample: DocSample): number | undefined {
  const match = /^quickstart:(\d+)\b/.exec(sample.marker ?? '')
  return match ? Number(match[1]) : undefined
}
