/**
 * The README's quick start as data: every fenced code block right after a `<!-- quickstart:N -->`
 * comment, in the order of N. `<!-- quickstart:N file=<path> -->` marks a block that the reader
 * writes into that file of the project; the others are shell command lines.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { ROOT } from './apps'

export interface QuickstartBlock {
  step: number
  /** The fence's language (`sh`, `cds`, …). */
  lang: string
  /** The block's text, without the fences, with a final newline. */
  text: string
  /** Where the reader puts a file block, relative to the project. */
  file?: string
}

const MARKED_BLOCK = /^<!-- quickstart:(\d+)((?:\s+\w+=\S+)*)\s*-->\n```(\w*)\n([\s\S]*?)^```$/gm

export function quickstartBlocks(readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8')): QuickstartBlock[] {
  const blocks = [...readme.matchAll(MARKED_BLOCK)].map(([, step, attributes, lang, text]) => {
    const file = /\bfile=(\S+)/.exec(attributes)?.[1]
    return { step: Number(step), lang, text, ...(file ? { file } : {}) }
  })
  return blocks.sort((a, b) => a.step - b.step)
}

/** The command lines of a shell block: neither blank nor comments. */
export const commandLines = (block: QuickstartBlock): string[] =>
  block.file ? [] : block.text.split('\n').map(line => line.trim()).filter(line => line && !line.startsWith('#'))
