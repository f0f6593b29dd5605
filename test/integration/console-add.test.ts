/**
 * `cds add pipeline-console` in a temporary CAP project: @sap/cds-dk loads the plugin, the
 * plugin registers the command, the built console lands in app/pipeline-console/ (served by the
 * host's static app serving) and the warning about `management.reuse.console` is printed.
 */
import { execFile } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)
const ROOT = path.resolve(__dirname, '../..')
const CDS = path.join(ROOT, 'node_modules/@sap/cds-dk/bin/cds.js')

let project: string

function createProject(requires: object): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cds-add-console-'))
  fs.writeFileSync(path.join(dir, 'package.json'), JSON.stringify({
    name: 'host-app', version: '1.0.0', private: true,
    dependencies: { '@sap/cds': '*', 'cap-data-pipeline': '*' },
    cds: { requires },
  }, null, 2))
  fs.mkdirSync(path.join(dir, 'node_modules', '@sap'), { recursive: true })
  fs.symlinkSync(ROOT, path.join(dir, 'node_modules', 'cap-data-pipeline'), 'junction')
  fs.symlinkSync(path.join(ROOT, 'node_modules/@sap/cds'), path.join(dir, 'node_modules/@sap/cds'), 'junction')
  return dir
}

const cdsAdd = (cwd: string, ...args: string[]) => run(process.execPath, [CDS, 'add', 'pipeline-console', ...args], { cwd, env: { ...process.env, CDS_ENV: '' } })

beforeAll(() => {
  if (!fs.existsSync(path.join(ROOT, 'dist/console/index.html'))) throw new Error('dist/console is missing: run `npm run build` first')
})
afterEach(() => { if (project) fs.rmSync(project, { recursive: true, force: true }) })

test('copies the console into app/pipeline-console and warns not to set reuse.console', async () => {
  project = createProject({ 'data-pipeline': { management: { reuse: { api: true } } } })
  const { stdout, stderr } = await cdsAdd(project)
  const output = stdout + stderr
  expect(output).toMatch(/copied the pipeline console to app[/\\]pipeline-console/)
  expect(output).toMatch(/Do not set cds\.requires\['data-pipeline'\]\.management\.reuse\.console/)
  const copied = path.join(project, 'app/pipeline-console')
  expect(fs.readFileSync(path.join(copied, 'index.html'), 'utf8')).toContain('sap-ui-custom.js')
  expect(fs.existsSync(path.join(copied, 'resources/sap-ui-custom.js'))).toBe(true)
  expect(fs.existsSync(path.join(copied, 'controller/App.controller.js'))).toBe(true)

  // a second run keeps the (customized) copy unless --force
  fs.writeFileSync(path.join(copied, 'css/style.css'), '/* mine */')
  const again = await cdsAdd(project)
  expect(again.stdout + again.stderr).toMatch(/existing files kept; use --force/)
  expect(fs.readFileSync(path.join(copied, 'css/style.css'), 'utf8')).toBe('/* mine */')
  await cdsAdd(project, '--force')
  expect(fs.readFileSync(path.join(copied, 'css/style.css'), 'utf8')).not.toBe('/* mine */')
}, 60_000)

test('warns louder when management.reuse.console is already set', async () => {
  project = createProject({ 'data-pipeline': { management: { reuse: { api: true, console: true } } } })
  const { stdout, stderr } = await cdsAdd(project)
  expect(stdout + stderr).toMatch(/WARNING: management\.reuse\.console is set in this project: remove it/)
}, 60_000)
