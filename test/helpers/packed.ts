/**
 * One `npm pack` of this checkout per test run, shared by the files that install the product as a user
 * does (packaging, new-user, cds-add, readme-quickstart: `npm add <tarball>` into a fresh CAP app).
 *
 * test/helpers/pack-global-setup.ts (a `globalSetup` of the root vitest config) makes a folder for the
 * run and hands it to the files (`provide`/`inject`). The first file that asks packs into it while it
 * holds a lock file (`packing.lock`, its pid inside); the others wait for `packed.json` and reuse the
 * tarball. A packer that died without an answer (its pid gone) leaves the lock to the next caller; a
 * pack that failed is answered to every caller with its error. Without the global setup (another
 * config), each file packs for itself, into its own folder.
 *
 * Every caller gets its own copy of the tarball in its folder (2–3 MB): an app's package.json points
 * at a file in its own project, which still installs when a test keeps the project (KEEP_*_APP).
 */
import { closeSync, copyFileSync, existsSync, mkdtempSync, openSync, readFileSync, renameSync, rmSync, statfsSync, writeFileSync, writeSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { inject } from 'vitest'
import { PACK_DIR } from './pack-global-setup'

export interface PackedPlugin {
  /** The tarball (the caller's copy when a folder was given). */
  tarball: string
  /** The files in the tarball, as `npm pack --json` lists them. */
  files: string[]
  /** Whether another test file of this run packed it (this one waited for or reused its tarball). */
  reused: boolean
}

const RESULT = 'packed.json'
const LOCK = 'packing.lock'
/** How long a caller waits for another file's pack before giving up. */
const WAIT_MS = 150_000

/** `npm pack` of this checkout into `dir` (scripts skipped: `npm test` has built already). */
async function packInto(dir: string): Promise<Omit<PackedPlugin, 'reused'>> {
  const { ROOT, runNpm } = await import('./apps')
  if (!existsSync(path.join(ROOT, 'dist/console/index.html'))) throw new Error('dist/console is missing: run `npm run build` first')
  const packed = JSON.parse(await runNpm(['pack', '--ignore-scripts', '--json', '--pack-destination', dir], ROOT, 120_000))
  return { tarball: path.join(dir, packed[0].filename as string), files: packed[0].files.map((f: { path: string }) => f.path) }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** The run's one pack in the shared folder `dir`: packs it under the lock, or waits for the file that does. */
async function sharedPack(dir: string): Promise<PackedPlugin> {
  const result = path.join(dir, RESULT)
  const lock = path.join(dir, LOCK)
  const deadline = Date.now() + WAIT_MS
  const answer = (): PackedPlugin => {
    const stored = JSON.parse(readFileSync(result, 'utf8')) as { tarball?: string; files?: string[]; error?: string }
    if (stored.error !== undefined) throw new Error(`npm pack of this run failed (in another test file): ${stored.error}`)
    return { tarball: stored.tarball!, files: stored.files!, reused: true }
  }
  for (;;) {
    if (existsSync(result)) return answer()
    let fd: number
    try {
      fd = openSync(lock, 'wx')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
      // another file packs; a lock whose process is gone without an answer is taken over
      const owner = Number(readFileSync(lock, 'utf8').trim() || 0)
      if (owner && !alive(owner) && !existsSync(result)) rmSync(lock, { force: true })
      else if (Date.now() > deadline) throw new Error(`npm pack by another test file (pid ${owner || '?'}) did not end within ${WAIT_MS / 1000} s (${dir})`)
      else await new Promise(resolve => setTimeout(resolve, 100))
      continue
    }
    writeSync(fd, String(process.pid))
    closeSync(fd)
    const write = (value: object) => {
      writeFileSync(`${result}.${process.pid}`, JSON.stringify(value))
      renameSync(`${result}.${process.pid}`, result)
    }
    try {
      const packed = await packInto(dir)
      write(packed)
      return { ...packed, reused: false }
    } catch (error) {
      write({ error: (error as Error).message })
      throw error
    }
  }
}

let pack: Promise<PackedPlugin> | undefined

/**
 * This run's packed tarball of the product (packed once per run, see above); with `dest`, a copy in
 * that folder. Without the global setup, a pack of its own into `dest` (or a temporary folder).
 */
export async function packedPlugin(dest?: string): Promise<PackedPlugin> {
  const dir = inject(PACK_DIR)
  if (!dir) {
    pack ??= (async () => {
      const own = dest ?? mkdtempSync(path.join(os.tmpdir(), 'cap-data-pipeline-pack-'))
      if (!dest) process.on('exit', () => rmSync(own, { recursive: true, force: true }))
      return { ...(await packInto(own)), reused: false }
    })()
    const packed = await pack
    return dest && path.dirname(packed.tarball) !== dest ? copyInto(packed, dest) : packed
  }
  pack ??= sharedPack(dir)
  const packed = await pack
  return dest ? copyInto(packed, dest) : packed
}

function copyInto(packed: PackedPlugin, dest: string): PackedPlugin {
  const tarball = path.join(dest, path.basename(packed.tarball))
  copyFileSync(packed.tarball, tarball)
  return { ...packed, tarball }
}

/** Free space a RAM disk must have to hold the test apps (each installs 100–200 MB of node_modules). */
const RAM_DISK_FREE = 4 * 1024 ** 3

/**
 * Where the tests make their fresh CAP apps: on Linux the RAM disk /dev/shm when it is a tmpfs that
 * allows executables and has room, otherwise the system's temporary folder. An install is the same
 * `npm add` either way; on tmpfs it writes its thousands of files without the disk's journal (here
 * about 40 % less time per install), and a removed app costs nothing to delete.
 */
export function appsRoot(): string {
  if (process.platform !== 'linux') return os.tmpdir()
  try {
    const mount = readFileSync('/proc/mounts', 'utf8').split('\n').map(line => line.split(' ')).find(([, at]) => at === '/dev/shm')
    if (!mount || mount[2] !== 'tmpfs' || mount[3].split(',').includes('noexec')) return os.tmpdir()
    const { bavail, bsize } = statfsSync('/dev/shm')
    return bavail * bsize >= RAM_DISK_FREE ? '/dev/shm' : os.tmpdir()
  } catch {
    return os.tmpdir()
  }
}

/** A new folder for a test app (see appsRoot). */
export const appsFolder = (prefix: string): string => mkdtempSync(path.join(appsRoot(), prefix))
