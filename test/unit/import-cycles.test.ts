/**
 * Code health: the folders under lib/ (one concept each) import each other without cycles, and
 * no file of lib/, srv/ and the package entries is part of an import circle — type-only imports
 * included, since a cycle of types is a cycle of concepts too. The service depends on the
 * library, never the reverse: lib/ imports nothing from srv/. The graphs are read from the
 * sources; the tests print the offending chain.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import path from 'node:path'

const ROOT = path.resolve(__dirname, '../..')
const LIB = path.join(ROOT, 'lib')
const SRV = path.join(ROOT, 'srv')

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap(name => {
    const file = path.join(dir, name)
    return statSync(file).isDirectory() ? sources(file) : file.endsWith('.ts') ? [file] : []
  })
}

/** The folder directly under lib/ a file belongs to; a file directly in lib/ (constants, the package entry) is a node of its own. */
const folderOf = (file: string) => {
  const [first, ...rest] = path.relative(LIB, file).split(path.sep)
  return rest.length ? first : first.replace(/\.(js|ts)$/, '')
}

/** The source files a file imports (relative imports, value and type), as resolved paths of .ts files. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8')
  return [...text.matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+'(\.[^']+)'/gm)].map(match => {
    const target = path.resolve(path.dirname(file), match[1])
    if (target.endsWith('.js')) return target.replace(/\.js$/, '.ts')
    return statSync(target, { throwIfNoEntry: false })?.isDirectory() ? path.join(target, 'index.ts') : `${target}.ts`
  })
}

/** Folder → folders it imports from (relative imports only). */
function folderGraph(): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>()
  for (const file of sources(LIB)) {
    const from = folderOf(file)
    const edges = graph.get(from) ?? graph.set(from, new Set()).get(from)!
    for (const target of importsOf(file)) {
      if (!target.startsWith(LIB + path.sep)) continue
      const to = folderOf(target)
      if (to !== from) edges.add(to)
    }
  }
  return graph
}

/** File → files it imports, over lib/, srv/ and the package entries (paths relative to the repository). */
function fileGraph(): Map<string, Set<string>> {
  const files = [...sources(LIB), ...sources(SRV), path.join(ROOT, 'cds-plugin.ts'), path.join(ROOT, 'index.ts')]
  const known = new Set(files)
  return new Map(files.map(file => [path.relative(ROOT, file), new Set(importsOf(file).filter(target => known.has(target)).map(target => path.relative(ROOT, target)))]))
}

function findCycle(graph: Map<string, Set<string>>): string[] | undefined {
  const state = new Map<string, 'visiting' | 'done'>()
  const stack: string[] = []
  const visit = (node: string): string[] | undefined => {
    if (state.get(node) === 'done') return undefined
    if (state.get(node) === 'visiting') return [...stack.slice(stack.indexOf(node)), node]
    state.set(node, 'visiting')
    stack.push(node)
    for (const next of graph.get(node) ?? []) {
      const cycle = visit(next)
      if (cycle) return cycle
    }
    stack.pop()
    state.set(node, 'done')
    return undefined
  }
  for (const node of graph.keys()) {
    const cycle = visit(node)
    if (cycle) return cycle
  }
  return undefined
}

test('the folders under lib/ import each other without cycles', () => {
  const graph = folderGraph()
  expect(graph.size).toBeGreaterThan(3)
  expect(findCycle(graph)?.join(' → ')).toBeUndefined()
})

test('no file of lib/, srv/ and the package entries is part of an import circle, type imports included', () => {
  const graph = fileGraph()
  expect(graph.size).toBeGreaterThan(100)
  expect([...graph.values()].some(edges => edges.size)).toBe(true)
  expect(findCycle(graph)?.join(' → ')).toBeUndefined()
})

test('lib/ imports nothing from srv/ (the service depends on the library; the library reaches it through lib/engine/registry/port.ts)', () => {
  const upward = [...fileGraph()].flatMap(([file, edges]) => file.startsWith('lib') ? [...edges].filter(to => to.startsWith('srv')).map(to => `${file} → ${to}`) : [])
  expect(upward).toEqual([])
})

test('the cycle finder finds a cycle (self-check)', () => {
  const graph = new Map([['a', new Set(['b'])], ['b', new Set(['c'])], ['c', new Set(['a'])], ['d', new Set(['a'])]])
  expect(findCycle(graph)).toEqual(['a', 'b', 'c', 'a'])
  expect(findCycle(new Map([['a', new Set(['b'])], ['b', new Set<string>()]]))).toBeUndefined()
})
