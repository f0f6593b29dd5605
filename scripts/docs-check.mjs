/**
 * After `vitepress build docs` (part of `npm run docs:build`): the built site in docs/.vitepress/dist
 * is checked for what VitePress does not check itself.
 *
 * - Every internal link's anchor exists: `href="/guide/delegate.html#caches"` needs an element with
 *   `id="caches"` on that page (VitePress fails on a dead link to a page, not on a dead anchor).
 * - The site works offline: no script, style sheet, font, image or CSS `url()`/`@import` is loaded
 *   from another origin (links a reader follows, `<a href="https://…">`, are fine).
 *
 * Exits 1 naming every problem. `node scripts/docs-check.mjs [<dist dir>]`.
 */
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const DIST = path.resolve(process.argv[2] ?? path.join(ROOT, 'docs/.vitepress/dist'))

/** Every file under `dir`, relative to it, with `/` separators. */
function files(dir, prefix = '') {
  return fs.readdirSync(path.join(dir, prefix), { withFileTypes: true }).flatMap(entry => {
    const relative = prefix ? `${prefix}/${entry.name}` : entry.name
    return entry.isDirectory() ? files(dir, relative) : [relative]
  })
}

const decode = text => text.replace(/&amp;/g, '&').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>')

/** The page a site path serves (`/guide/x.html`, `/concepts/`, `/guide/x`), relative to DIST, if any. */
function pageOf(sitePath) {
  const clean = decodeURIComponent(sitePath).replace(/^\//, '')
  for (const candidate of [clean, `${clean}index.html`, `${clean}.html`, `${clean}/index.html`]) {
    if (candidate && fs.existsSync(path.join(DIST, candidate)) && fs.statSync(path.join(DIST, candidate)).isFile()) return candidate
  }
  return clean === '' ? 'index.html' : undefined
}

export function checkSite(dist = DIST) {
  if (!fs.existsSync(path.join(dist, 'index.html'))) return [`no built site in ${dist}: run npx vitepress build docs first`]
  const all = files(dist)
  const pages = all.filter(file => file.endsWith('.html'))
  const ids = new Map(pages.map(page => {
    const html = fs.readFileSync(path.join(dist, page), 'utf8')
    return [page, new Set([...html.matchAll(/\sid="([^"]+)"/g)].map(m => decode(m[1])))]
  }))
  const problems = []
  for (const page of pages) {
    const html = fs.readFileSync(path.join(dist, page), 'utf8')
    // the page's own content and navigation; VitePress's inline scripts hold no links
    for (const [, href] of html.matchAll(/<a\b[^>]*\bhref="([^"]*)"/g)) {
      const link = decode(href)
      if (/^(?:[a-z][a-z0-9+.-]*:|\/\/)/i.test(link)) continue // another origin, mailto:, …: followed by the reader
      const [target, anchor] = link.split('#')
      const resolved = target === '' ? page : pageOf(target.startsWith('/') ? target : path.posix.join(path.posix.dirname(`/${page}`), target))
      if (!resolved) { problems.push(`${page}: link to ${link}: no such page`); continue }
      if (anchor && !ids.get(resolved)?.has(decodeURIComponent(anchor))) problems.push(`${page}: link to ${link}: no #${decodeURIComponent(anchor)} on ${resolved}`)
    }
    for (const [tag] of html.matchAll(/<(?:script|link|img|iframe|source|video|audio)\b[^>]*>/g)) {
      if (/^<a\b/.test(tag)) continue
      const url = /\s(?:src|href|srcset)="([^"]*)"/.exec(tag)?.[1] ?? ''
      if (/^(?:https?:)?\/\//i.test(url)) problems.push(`${page}: loads ${url} from another origin (${tag.slice(0, 80)})`)
    }
  }
  for (const file of all.filter(name => /\.(?:css|js|mjs)$/.test(name))) {
    const text = fs.readFileSync(path.join(dist, file), 'utf8')
    const external = file.endsWith('.css')
      ? [...text.matchAll(/(?:url\(\s*["']?|@import\s+["'])((?:https?:)?\/\/[^"')\s]+)/g)].map(m => m[1])
      : [...text.matchAll(/\bimport\s*\(?\s*["']((?:https?:)?\/\/[^"']+)["']/g)].map(m => m[1])
    for (const url of external) problems.push(`${file}: loads ${url} from another origin`)
  }
  return problems
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const problems = checkSite()
  if (problems.length) {
    console.error(`docs-check: ${problems.length} problem(s) in ${path.relative(ROOT, DIST)}:\n${problems.map(p => `  ${p}`).join('\n')}`)
    process.exit(1)
  }
  console.log(`docs-check: every internal link and anchor of ${path.relative(ROOT, DIST)} resolves; nothing is loaded from another origin`)
}
