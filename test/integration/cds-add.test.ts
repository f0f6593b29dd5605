/**
 * `cds add data-pipeline` (docs/getting-started.md) with the real tools, in one project shared by the cases:
 *
 *   cds init shop --nodejs                 (this repository's @sap/cds-dk 10)
 *   cds import CatalogService.edmx         (the $metadata of a real provider: test/fixtures/provider)
 *   npm add <the packed tarball>
 *   cds add data-pipeline                  (twice: the second run changes no byte)
 *   cds deploy, cds-serve                  (the replicate example uncommented, the provider's URL given)
 *
 * and then the generated .http file is sent as written, as an .http client would send it.
 * KEEP_CDS_ADD_APP=1 keeps the project.
 */
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { packPlugin, runCds, runNpm, startInstalledApp, startProvider, type ProviderControl, type RunningApp } from '../helpers/apps'
import { importCatalog } from '../helpers/projects'
import { appsFolder } from '../helpers/packed'
import { basic } from '../helpers/auth'

const SEEDED = 5
const HTTP_FILE = 'test/http/data-pipeline.http'
const readJson = (file: string) => JSON.parse(readFileSync(file, 'utf8'))

/** Every file of the project but node_modules, with its bytes. */
function snapshot(dir: string, prefix = ''): Map<string, string> {
  const files = new Map<string, string>()
  for (const entry of readdirSync(path.join(dir, prefix), { withFileTypes: true })) {
    const name = path.join(prefix, entry.name)
    if (entry.isDirectory()) {
      if (entry.name !== 'node_modules') for (const [file, bytes] of snapshot(dir, name)) files.set(file, bytes)
    } else files.set(name, readFileSync(path.join(dir, name)).toString('base64'))
  }
  return files
}

interface HttpRequest { title: string; method: string; url: string; headers: Record<string, string>; body?: string }

/** The requests of an .http file as REST Client sends them: variables substituted, `Basic user:password` encoded. */
function parseHttpFile(text: string, overrides: Record<string, string>): HttpRequest[] {
  const [head, ...blocks] = text.split(/^###/m)
  const variables: Record<string, string> = {}
  for (const match of head.matchAll(/^@(\w+)\s*=\s*(.*)$/gm)) variables[match[1]] = match[2].trim()
  Object.assign(variables, overrides)
  const substitute = (value: string) => value.replace(/\{\{(\w+)\}\}/g, (_, name: string) => variables[name] ?? `{{${name}}}`)
  return blocks.map(block => {
    const [title, ...lines] = block.split('\n')
    const content = lines.filter(line => !line.startsWith('#'))
    const start = content.findIndex(line => line.trim())
    const [method, url] = substitute(content[start]).split(/ (.+)/)
    const headers: Record<string, string> = {}
    let i = start + 1
    for (; i < content.length && content[i].trim(); i++) {
      const [name, value] = substitute(content[i]).split(/:\s*(.+)/)
      headers[name.toLowerCase()] = value
    }
    const body = content.slice(i).join('\n').trim()
    const credentials = /^Basic (\S+?):(\S*)$/.exec(headers.authorization ?? '')
    if (credentials) headers.authorization = basic(credentials[1], credentials[2])
    return { title: title.trim(), method, url, headers, body: body ? substitute(body) : undefined }
  })
}

describe('cds add data-pipeline in a project made by cds init, with an imported API', () => {
  const work = appsFolder('cap-data-pipeline-cds-add-')
  const app = path.join(work, 'shop')
  const file = (name: string) => path.join(app, name)
  let provider: RunningApp & { control: ProviderControl }
  let server: RunningApp | undefined
  let firstRun = ''

  beforeAll(async () => {
    const project = async () => {
      provider = await startProvider()
      await provider.control.seed({ count: SEEDED, modifiedAt: '2026-03-01T10:00:00.000Z' })
      await runCds(['init', 'shop', '--nodejs'], work)
      await importCatalog(provider.url, work, app)
    }
    const [tarball] = await Promise.all([packPlugin(work), project()])
    await runNpm(['add', '--no-audit', '--no-fund', '--prefer-offline', tarball], app)
  }, 300_000)

  afterAll(async () => {
    await server?.stop()
    await provider?.stop()
    if (process.env.KEEP_CDS_ADD_APP) console.log(`cds-add: project kept in ${app}`)
    else rmSync(work, { recursive: true, force: true })
  })

  test('adds the configuration, mocked users, the model, an .http file and a replicate example of the import', async () => {
    firstRun = await runCds(['add', 'data-pipeline'], app)
    expect(firstRun).toMatch(/Adding facet: data-pipeline/)

    const { cds } = readJson(file('package.json'))
    expect(cds.requires.CatalogService).toEqual({ kind: 'odata', model: 'srv/external/CatalogService' })
    expect(cds.requires['data-pipeline']).toEqual({ management: { reuse: { api: true, console: true } } })
    expect(cds.requires['[development]']).toEqual({
      db: { kind: 'sqlite', credentials: { url: 'db.sqlite' } },
      auth: {
        kind: 'mocked',
        users: {
          alice: { password: 'alice', roles: ['PipelineAdmin'] },
          olivia: { password: 'olivia', roles: ['PipelineOperator'] },
          victor: { password: 'victor', roles: ['PipelineViewer'] },
        },
      },
    })
    // production is the app's choice (cds add hana|postgres, cds add xsuaa): nothing added for it
    expect(JSON.stringify(cds)).not.toContain('[production]')

    // under srv/: the model `cds add xsuaa` reads for the roles (test/integration/production-build.test.ts)
    expect(readFileSync(file('srv/data-pipeline.cds'), 'utf8')).toMatch(/^using from 'cap-data-pipeline\/db';$/m)
    expect(readFileSync(file('srv/data-pipeline.cds'), 'utf8')).toMatch(/^using from 'cap-data-pipeline\/srv\/management';$/m)

    // the example names a real entity of the import, every line of it commented
    const imported = readJson(file('srv/external/CatalogService.csn')).definitions
    expect(imported['CatalogService.Books']).toMatchObject({ kind: 'entity' })
    const replicas = readFileSync(file('srv/replicas.cds'), 'utf8')
    expect(replicas.trimEnd().split('\n').every(line => line.startsWith('//'))).toBe(true)
    expect(replicas).toContain("// using { CatalogService as external } from './external/CatalogService';")
    expect(replicas).toMatch(/^\/\/ {3}@federation\.replicate$/m)
    expect(replicas).toContain('//   entity Books as projection on external.Books;')

    const requests = parseHttpFile(readFileSync(file(HTTP_FILE), 'utf8'), {})
    expect(requests.map(r => `${r.method} ${r.url.replace(/\?.*/, '')}`)).toEqual([
      'GET http://localhost:4004/pipeline/permissions()',
      'GET http://localhost:4004/pipeline/Pipelines',
      'POST http://localhost:4004/pipeline/execute',
      "GET http://localhost:4004/pipeline/status(name='ReplicaService.Books')",
      'GET http://localhost:4004/pipeline/PipelineRuns',
      'GET http://localhost:4004/pipeline/PipelineRejects',
    ])
    expect(requests.every(r => r.headers.authorization === basic('alice', 'alice'))).toBe(true)
  })

  test('a second run changes nothing: every file stays byte-identical', async () => {
    const before = snapshot(app)
    const output = await runCds(['add', 'data-pipeline'], app)
    expect(output).toMatch(/keeping srv[/\\]data-pipeline\.cds/)
    expect(output).not.toMatch(/adding cds\.requires|creating/)
    expect(snapshot(app)).toEqual(before)
  })

  test('cds deploy and serve: /pipeline/ refuses anonymous, alice runs the .http file as written, the example replicates', async () => {
    // the user's side: uncomment the example (below its header), tell CAP where the provider is
    const generated = readFileSync(file('srv/replicas.cds'), 'utf8')
    const body = generated.indexOf('\n//\n') + 1
    writeFileSync(file('srv/replicas.cds'), generated.slice(0, body) + generated.slice(body).replace(/^\/\/ ?/gm, ''))
    writeFileSync(file('.cdsrc.json'), JSON.stringify({ requires: { CatalogService: { credentials: { url: `${provider.url}/odata/v4/catalog` } } } }))

    expect(await runCds(['deploy'], app)).toMatch(/successfully deployed to db\.sqlite/)
    expect(existsSync(file('db.sqlite'))).toBe(true)
    server = await startInstalledApp(app)

    const anonymous = await fetch(`${server.url}/pipeline/Pipelines`)
    expect(anonymous.status).toBe(401)
    const alice = await fetch(`${server.url}/pipeline/Pipelines`, { headers: { authorization: basic('alice', 'alice') } })
    expect(alice.status).toBe(200)
    expect((await alice.json()).value).toBeInstanceOf(Array)

    const answers: Record<string, { status: number; body: any }> = {}
    for (const request of parseHttpFile(readFileSync(file(HTTP_FILE), 'utf8'), { server: server.url })) {
      const response = await fetch(request.url, { method: request.method, headers: request.headers, body: request.body })
      const text = await response.text()
      answers[request.title] = { status: response.status, body: text ? JSON.parse(text) : undefined }
      expect(response.status, `${request.title}: ${text}`).toBe(200)
    }
    const answer = (title: RegExp) => Object.entries(answers).find(([key]) => title.test(key))![1].body
    expect(answer(/^Who am I/)).toMatchObject({ user: 'alice', roles: ['PipelineAdmin'], administer: true })
    expect(answer(/^Run a pipeline/)).toMatchObject({ name: 'ReplicaService.Books', status: 'completed', statistics: { created: SEEDED } })
    expect(answer(/^Status/)).toMatchObject({ name: 'ReplicaService.Books', mode: 'delta', status: 'idle', errorCount: 0 })
    expect(answer(/latest runs/).value).toEqual([expect.objectContaining({ pipeline_name: 'ReplicaService.Books', status: 'idle', statistics_created: SEEDED })])
    expect(answer(/rejected records/).value).toEqual([])

    const books = await fetch(`${server.url}/odata/v4/replica/Books/$count`, { headers: { authorization: basic('alice', 'alice') } })
    expect(await books.text()).toBe(String(SEEDED))

    // the other mocked users hold the lower roles
    const execute = (user: string) => fetch(`${server!.url}/pipeline/execute`, {
      method: 'POST', headers: { authorization: basic(user, user), 'content-type': 'application/json' }, body: JSON.stringify({ name: 'ReplicaService.Books' }),
    })
    expect((await execute('victor')).status).toBe(403)
    expect((await execute('olivia')).status).toBe(200)
    await server.stop()
    server = undefined
  })

  test('running it again keeps what the user changed', async () => {
    const before = snapshot(app)
    await runCds(['add', 'data-pipeline'], app)
    expect(snapshot(app)).toEqual(before)
    expect(readFileSync(file('srv/replicas.cds'), 'utf8')).toContain('\nusing { CatalogService as external }')
  })
})
