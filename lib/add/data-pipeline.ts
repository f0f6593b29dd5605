/**
 * `cds add data-pipeline`: sets up a CAP project for the plugin.
 *
 * - configuration in the project's config file (package.json `cds`, or .cdsrc.json in a Java
 *   project), merged with cds-dk's own helper (`cds.add.merge`): the management API and console, a
 *   `[development]` file database (so that `cds deploy` and the served app share data) and mocked
 *   users holding the plugin's roles. Only settings the project does not have yet are added: a value
 *   the user set (also `false`) stays; a project with its own `db` keeps it. Production gets nothing:
 *   its database (`cds add hana|postgres`) and authentication (`cds add xsuaa`) are the app's choice.
 * - srv/data-pipeline.cds (tracker tables and the management API in the model, under srv/ where
 *   `cds add xsuaa` finds its roles), an .http file with the
 *   main management calls and, when an API was imported under srv/external, srv/replicas.cds with a
 *   commented replicate example for one of its entities. Existing files are kept unless `--force`.
 *
 * A second run finds everything in place and writes nothing.
 */
import cds from '@sap/cds'
import fs from 'node:fs'
import path from 'node:path'
import { SERVICE_NAME } from '../constants.js'
import { DEV_USERS, httpFile, modelFile, replicaPipeline, replicasFile, type ReplicaExample } from './templates.js'
import { isPlainObject } from '../pipeline/json.js'

export const DATA_PIPELINE_FACET = 'data-pipeline'

/** The parts of `cds.add` (@sap/cds-dk) this facet uses. */
export interface AddApi {
  merge(source: object): { into(file: string): Promise<unknown> }
  readProject(): { configFile?: string }
}

type Json = Record<string, unknown>

/** What the plugin needs in `cds.requires`. */
export function wantedRequires(): Json {
  const users = Object.fromEntries(Object.entries(DEV_USERS).map(([name, role]) => [name, { password: name, roles: [role] }]))
  return {
    [SERVICE_NAME]: { management: { reuse: { api: true, console: true } } },
    '[development]': {
      db: { kind: 'sqlite', credentials: { url: 'db.sqlite' } },
      auth: { kind: 'mocked', users },
    },
  }
}

/** A mocked user the project defines already is the user's: not completed with our password or roles. */
const isLeaf = (at: string) => /(^|\.)auth\.users\.[^.]+$/.test(at)

/** The part of `wanted` whose leaves `current` lacks (arrays and users count as leaves); undefined when nothing is missing. */
export function missing(current: unknown, wanted: Json, at = ''): Json | undefined {
  const result: Json = {}
  for (const [key, value] of Object.entries(wanted)) {
    const have = isPlainObject(current) ? current[key] : undefined
    const where = at ? `${at}.${key}` : key
    if (isPlainObject(value) && isPlainObject(have) && !isLeaf(where)) {
      const sub = missing(have, value, where)
      if (sub) result[key] = sub
    } else if (have === undefined) {
      result[key] = value
    }
  }
  return Object.keys(result).length ? result : undefined
}

/** Whether the project configures a database for development already (any profile placement). */
function hasOwnDb(cdsConfig: Json): boolean {
  const requires = isPlainObject(cdsConfig.requires) ? cdsConfig.requires : {}
  const development = isPlainObject(requires['[development]']) ? requires['[development]'] : {}
  const profile = isPlainObject(cdsConfig['[development]']) ? cdsConfig['[development]'] : {}
  const profileRequires = isPlainObject(profile.requires) ? profile.requires : {}
  return requires.db !== undefined || development.db !== undefined || profileRequires.db !== undefined
}

const isProfile = (key: string) => /^\[.+\]$/.test(key)

/**
 * The engine per tenant (`multitenancy.active`) wherever the project turns CAP's multitenancy on —
 * `cds add multitenancy` writes it into `[production]` and `[with-mtx]` —, in the same profiles, so that
 * a single-tenant development run stays single-tenant. Nothing when the project decided already.
 */
export function tenancyRequires(cdsConfig: Json): Json {
  const requires = isPlainObject(cdsConfig.requires) ? cdsConfig.requires : {}
  const own = isPlainObject(requires[SERVICE_NAME]) ? requires[SERVICE_NAME] : {}
  const parts = [own, ...Object.keys(own).filter(isProfile).map(key => own[key])]
  if (parts.some(part => isPlainObject(part) && isPlainObject(part.multitenancy) && part.multitenancy.active !== undefined)) return {}
  const active = { multitenancy: { active: true } }
  const wanted: Json = requires.multitenancy ? { ...active } : {}
  for (const [key, value] of Object.entries(requires)) if (isProfile(key) && isPlainObject(value) && value.multitenancy) wanted[key] = active
  for (const [key, value] of Object.entries(cdsConfig)) if (isProfile(key) && isPlainObject(value) && isPlainObject(value.requires) && value.requires.multitenancy) wanted[key] = active
  return wanted
}

const readJson = (file: string): Json => (fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as Json) : {})

/** The project's config file and its `cds` configuration. */
function projectConfig(root: string, api: AddApi): { configFile: string; inPackageJson: boolean; cdsConfig: Json } {
  const configFile = api.readProject().configFile ?? 'package.json'
  const inPackageJson = path.basename(configFile) === 'package.json'
  const file = readJson(path.resolve(root, configFile))
  return { configFile, inPackageJson, cdsConfig: ((inPackageJson ? file.cds : file) ?? {}) as Json }
}

async function mergeRequires(requires: Json, config: ReturnType<typeof projectConfig>, api: AddApi, log: (text: string) => void): Promise<void> {
  await api.merge(config.inPackageJson ? { cds: { requires } } : { requires }).into(config.configFile)
  log(`  adding cds.requires ${Object.keys(requires).join(', ')} to ${config.configFile}`)
}

/** Adds the missing configuration; returns what it added (undefined: nothing). */
async function addConfig(root: string, api: AddApi, log: (text: string) => void): Promise<Json | undefined> {
  const config = projectConfig(root, api)
  const { cdsConfig } = config
  const wanted = wantedRequires()
  wanted[SERVICE_NAME] = { ...(wanted[SERVICE_NAME] as Json), ...tenancyRequires(cdsConfig) }
  let requires = missing(cdsConfig.requires, wanted)
  const development = requires?.['[development]'] as Json | undefined
  if (development?.db && hasOwnDb(cdsConfig)) {
    delete development.db
    if (!Object.keys(development).length) delete requires!['[development]']
    if (!Object.keys(requires!).length) requires = undefined
    log(`  keeping the project's own db configuration`)
  }
  if (!requires) return undefined
  await mergeRequires(requires, config, api, log)
  return requires
}

/** After a later `cds add multitenancy`: only the engine per tenant (what the user removed of the rest stays removed). */
export async function addTenancyConfig(root: string, api: AddApi, log: (text: string) => void = text => console.log(text)): Promise<Json | undefined> {
  const config = projectConfig(root, api)
  const requires = missing(config.cdsConfig.requires, { [SERVICE_NAME]: tenancyRequires(config.cdsConfig) })
  if (requires) await mergeRequires(requires, config, api, log)
  return requires
}

/** The first API imported under srv/external (by `cds import`) and an entity of it to replicate. */
export async function findImport(root: string): Promise<ReplicaExample | undefined> {
  const dir = path.join(root, 'srv', 'external')
  if (!fs.existsSync(dir)) return undefined
  const names = [...new Set(fs.readdirSync(dir).filter(name => /\.(csn|cds)$/.test(name)).map(name => name.replace(/\.(csn|cds)$/, '')))].sort()
  for (const name of names) {
    const file = [`${name}.csn`, `${name}.cds`].map(candidate => path.join(dir, candidate)).find(candidate => fs.existsSync(candidate))!
    let definitions: Record<string, Json>
    try {
      definitions = ((await cds.load(file)) as { definitions?: Record<string, Json> }).definitions ?? {}
    } catch {
      continue // not a model cds can load: not an import this facet can show
    }
    const service = definitions[name]?.kind === 'service' ? name : Object.keys(definitions).find(key => definitions[key].kind === 'service')
    if (!service) continue
    const entities = Object.entries(definitions).filter(([key, definition]) => key.startsWith(`${service}.`)
      && definition.kind === 'entity' && !key.slice(service.length + 1).includes('.')
      && !definition.params && Object.values((definition.elements ?? {}) as Record<string, Json>).some(element => element.key))
    if (!entities.length) continue
    const deltaFieldOf = (elements: Record<string, Json>) => {
      if (elements.modifiedAt) return 'modifiedAt'
      return Object.keys(elements).find(key => /modif|chang|updat/i.test(key) && ['cds.Timestamp', 'cds.DateTime'].includes(String(elements[key].type)))
    }
    // prefer an entity with a delta watermark: its runs read changes only
    const [entityName, definition] = entities.find(([, entity]) => deltaFieldOf(entity.elements as Record<string, Json>)) ?? entities[0]
    const deltaField = deltaFieldOf(definition.elements as Record<string, Json>)
    return {
      service,
      using: `./external/${name}`,
      entity: entityName.slice(service.length + 1),
      ...(deltaField && deltaField !== 'modifiedAt' ? { deltaField } : {}),
    }
  }
  return undefined
}

/** The folder for .http files, as cds-dk's `cds add http` chooses it. */
function httpFolder(root: string): string {
  const tests = ['test', 'tests', '__tests__'].find(name => fs.existsSync(path.join(root, name)))
  return path.join(tests ?? 'test', 'http')
}

function writeFile(root: string, file: string, text: string, force: boolean, log: (text: string) => void): boolean {
  const target = path.join(root, file)
  if (fs.existsSync(target) && !force) {
    log(`  keeping ${file}`)
    return false
  }
  fs.mkdirSync(path.dirname(target), { recursive: true })
  log(`  ${fs.existsSync(target) ? 'overwriting' : 'creating'} ${file}`)
  fs.writeFileSync(target, text)
  return true
}

export interface AddResult {
  requires?: Json
  written: string[]
  example?: ReplicaExample
}

export async function addDataPipeline(root: string, api: AddApi, options: { force?: boolean; log?: (text: string) => void } = {}): Promise<AddResult> {
  const log = options.log ?? ((text: string) => console.log(text))
  const force = Boolean(options.force)
  const requires = await addConfig(root, api, log)
  const example = await findImport(root)
  const files: Array<[string, string]> = [
    [path.join('srv', 'data-pipeline.cds'), modelFile()],
    [path.join(httpFolder(root), 'data-pipeline.http'), httpFile(example && replicaPipeline(example))],
  ]
  if (example) files.push([path.join('srv', 'replicas.cds'), replicasFile(example)])
  const written = files.filter(([file, text]) => writeFile(root, file, text, force, log)).map(([file]) => file)
  if (requires || written.length) {
    log(`
  Next: cds deploy && cds watch, then send the requests in ${files[1][0]} (alice is PipelineAdmin).
  ${example ? `srv/replicas.cds shows how to replicate ${example.service}.${example.entity}: uncomment it.` : 'After a `cds import`, run `cds add data-pipeline` again for a replicate example.'}
  The mocked users are for development only; for production add a database (cds add hana|postgres)
  and authentication (cds add xsuaa: the roles PipelineViewer/Operator/Admin come from the model).
  Either order works: cds add xsuaa, mta or helm read the roles from srv/data-pipeline.cds.`)
  }
  return { requires, written, example }
}
