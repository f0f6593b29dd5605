/**
 * Code health: the folders under lib/ (one concept each) import each other without cycles —
 * type-only imports included, since a cycle of types is a cycle of concepts too. The graph is
 * read from the sources; the test prints the offending chain.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs'
import path from 'node:path'

const LIB = path.resolve(__dirname, '../../lib')

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

/** Folder → folders it imports from (relative imports only). */
function folderGraph(): Map<string, Set<string>> {
  const graph = new Map<string, Set<string>>()
  for (const file of sources(LIB)) {
    const from = folderOf(file)
    const edges = graph.get(from) ?? graph.set(from, new Set()).get(from)!
    const text = readFileSync(file, 'utf8')
    for (const match of text.matchAll(/^\s*(?:import|export)\b[^'"]*?from\s+'(\.[^']+)'/gm)) {
      const target = path.resolve(path.dirname(file), match[1])
      if (!target.startsWith(LIB + path.sep)) continue
      const to = folderOf(target)
      if (to !== from) edges.add(to)
    }
  }
  return graph
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

test('the cycle finder finds a cycle (self-check)', () => {
  const graph = new Map([['a', new Set(['b'])], ['b', new Set(['c'])], ['c', new Set(['a'])], ['d', new Set(['a'])]])
  expect(findCycle(graph)).toEqual(['a', 'b', 'c', 'a'])
  expect(findCycle(new Map([['a', new Set(['b'])], ['b', new Set<string>()]]))).toBeUndefined()
})
