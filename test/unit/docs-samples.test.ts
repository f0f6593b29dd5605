/**
 * Samples that cannot lie: every code block of the README and the docs site (docs/**\/*.md) that is
 * CDS, JSON, JS/TS, shell or HTTP is checked here — or carries `<!-- sample: not checked — <why> -->`
 * right before it (test/helpers/doc-samples.ts). What each kind must pass:
 *
 * - CDS compiles (cds.load) with the API it imports — the real `cds import`s of the test fixtures, under
 *   the names the samples use (Provider, CatalogService, …) — and the plugin's model (`cap-data-pipeline/db`);
 *   the plugin's own federation hooks accept it (enhanceModel), and each replica it declares becomes a
 *   pipeline config that passes the plugin's validation (replicasOf, then resolvePipeline), as at startup.
 * - JSON parses (a `"cds": { … }` fragment as the member of an object, `jsonc` without its comments); a
 *   `cds.requires` in it names known kinds, and its `data-pipeline` entry only settings the plugin has.
 * - JS/TS parses (Babel, TypeScript syntax, top-level await); what it takes from `cap-data-pipeline` is
 *   exported by the package; a method it calls on `pipelines` exists on the data-pipeline service; an
 *   `addPipeline({ … })` names only keys of `PipelineConfig`, and passes resolvePipeline where it is a
 *   plain literal.
 * - HTTP names an entity or operation of the management API with the right method, and a JSON body with
 *   that operation's parameters.
 * - Shell: the quick start's blocks run in test/integration/readme-quickstart.test.ts; a block of the docs
 *   marked as a quick-start step must be the README's step, word for word; any other shell block repeats
 *   quick-start commands only, or is marked.
 *
 * Needs the build (dist/). A failure names the file and line of the block.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { createRequire } from 'node:module'
import { parse } from '@babel/parser'
import { ROOT } from '../helpers/apps'
import { CHECKED_LANGUAGES, allSamples, notCheckedReason, quickstartStep, samplesOf, type DocSample } from '../helpers/doc-samples'

const require = createRequire(path.join(ROOT, 'package.json'))
const cds = require('@sap/cds')

const samples = allSamples().filter(sample => CHECKED_LANGUAGES.has(sample.lang))
const where = (sample: DocSample) => `${sample.file}:${sample.line}`
const unmarked = (sample: DocSample) => notCheckedReason(sample) === undefined && quickstartStep(sample) === undefined
const ofLanguage = (...langs: string[]) => samples.filter(sample => langs.includes(sample.lang) && unmarked(sample))

/** The first build output that exists (files under lib/engine move into folders). */
function dist(...candidates: string[]): string {
  for (const candidate of candidates) {
    try { return require.resolve(path.join(ROOT, 'dist', candidate)) } catch { /* next */ }
  }
  throw new Error(`none of dist/${candidates.join(', dist/')}: run npm run build`)
}

const pkg = require(path.join(ROOT, 'dist/index.js')) as Record<string, unknown>
const { resolvePipeline } = require(dist('lib/engine/config/index.js'))
const { enhanceModel } = require(dist('lib/federation/annotations.js'))
const { replicasOf } = require(dist('lib/federation/replicate.js'))

/** The README's quick start: the executed blocks. */
const quickstart = samplesOf('README.md').filter(sample => quickstartStep(sample) !== undefined)
/** Each command of a shell text: lines without comments, split at `&&` and `;`. */
const commands = (text: string) => text.split('\n').map(line => line.replace(/(^|\s)#.*$/, '').trim()).filter(Boolean)
  .flatMap(line => line.split(/\s*(?:&&|;)\s*/)).filter(Boolean)
const QUICKSTART_COMMANDS = new Set(quickstart.filter(sample => sample.lang === 'sh').flatMap(sample => commands(sample.text)))

describe('docs samples', () => {
  test('every CDS, JSON, JS/TS, shell and HTTP block is checked below, or says why not', () => {
    expect(samples.length).toBeGreaterThan(40)
    const problems: string[] = []
    for (const sample of samples) {
      const reason = notCheckedReason(sample)
      if (reason !== undefined && reason.length < 10) problems.push(`${where(sample)}: "not checked" needs a reason`)
      if (sample.marker?.startsWith('sample:') && reason === undefined) problems.push(`${where(sample)}: unknown marker <!-- ${sample.marker} -->`)
      if (!unmarked(sample)) continue
      if (['sh', 'shell', 'bash', 'console'].includes(sample.lang) && !commands(sample.text).every(command => QUICKSTART_COMMANDS.has(command)))
        problems.push(`${where(sample)}: a ${sample.lang} block that is neither run by a test nor marked <!-- sample: not checked — <why> -->`)
    }
    expect(problems, problems.join('\n')).toEqual([])
  })

  test('the quick start of the docs is the README\'s, which readme-quickstart.test.ts runs', () => {
    expect(quickstart.length).toBeGreaterThanOrEqual(7)
    const copies = samples.filter(sample => sample.file !== 'README.md' && quickstartStep(sample) !== undefined)
    expect(copies.length).toBeGreaterThan(0)
    for (const copy of copies) {
      const original = quickstart.find(sample => quickstartStep(sample) === quickstartStep(copy))
      expect(original, `${where(copy)}: the README has no quick-start step ${quickstartStep(copy)}`).toBeDefined()
      expect(`${copy.marker}\n${copy.text}`, `${where(copy)} differs from the README's step`).toBe(`${original!.marker}\n${original!.text}`)
    }
  })

  describe('CDS compiles with the API it imports, and the plugin accepts its annotations', () => {
    const cdsSamples = ofLanguage('cds', 'cdl')
    let work: string
    /** The imported APIs the samples name, from the fixtures' real `cds import`s. */
    const APIS: Record<string, [from: string, service: string]> = {
      Provider: ['test/fixtures/consumer/srv/external/Provider.cds', 'Provider'],
      CatalogService: ['test/fixtures/consumer/srv/external/Provider.cds', 'Provider'],
      Catalog: ['test/fixtures/consumer/srv/external/Provider.cds', 'Provider'],
      CatalogAPI: ['test/fixtures/hcql-consumer/srv/external/CatalogAPI.cds', 'CatalogAPI'],
      Notes: ['test/fixtures/private-consumer/srv/external/Notes.cds', 'Notes'],
      Changes: ['test/fixtures/changes-consumer/srv/external/Changes.cds', 'Changes'],
      ProviderService: ['test/fixtures/emit-consumer/srv/external/ProviderService.cds', 'ProviderService'],
      API_BUSINESS_PARTNER: ['test/fixtures/s4-business-partner/srv/external/API_BUSINESS_PARTNER.cds', 'API_BUSINESS_PARTNER'],
      Z_ODP_SALES_SRV: ['test/fixtures/odp-consumer/srv/external/Z_ODP_SALES_SRV.cds', 'Z_ODP_SALES_SRV'],
    }
    /** The OData V2 ones (SAP's). */
    const V2_APIS = new Set(['API_BUSINESS_PARTNER', 'Z_ODP_SALES_SRV'])
    /** What samples that annotate an entity of "your app" refer to. */
    const CONTEXT = [
      "using { API_BUSINESS_PARTNER as S4 } from '../srv/external/API_BUSINESS_PARTNER';",
      "using from '../srv/external/ProviderService';",
      'namespace my;',
      'entity Partners as projection on S4.A_BusinessPartner { key BusinessPartner, FirstName, LastName, LastChangeDate, LastChangeTime };',
      '',
    ].join('\n')
    const requires = cds.env.requires as Record<string, unknown>
    const saved = new Map<string, unknown>()

    beforeAll(() => {
      work = mkdtempSync(path.join(os.tmpdir(), 'cdp-docs-samples-'))
      mkdirSync(path.join(work, 'srv/external'), { recursive: true })
      mkdirSync(path.join(work, 'db'))
      symlinkSync(path.join(ROOT, 'node_modules'), path.join(work, 'node_modules'), 'junction')
      for (const [name, [from, service]] of Object.entries(APIS)) {
        const text = readFileSync(path.join(ROOT, from), 'utf8').replace(new RegExp(`\\bservice ${service}\\b`), `service ${name}`)
        writeFileSync(path.join(work, 'srv/external', `${name}.cds`), text)
        // bound as the samples' apps bind them: replicasOf asks for the binding
        saved.set(name, requires[name])
        requires[name] = { kind: V2_APIS.has(name) ? 'odata-v2' : 'odata', model: `srv/external/${name}` }
      }
      writeFileSync(path.join(work, 'db/context.cds'), CONTEXT)
    })
    afterAll(() => {
      for (const [name, value] of saved) if (value === undefined) delete requires[name]; else requires[name] = value
      if (work) rmSync(work, { recursive: true, force: true })
    })

    test('there are CDS samples to check', () => expect(cdsSamples.length).toBeGreaterThan(8))

    for (const sample of cdsSamples) {
      test(where(sample), async () => {
        // where the sample's relative `using`s resolve: srv/ for './external/…', db/ otherwise
        const file = path.join(work, /from\s+'\.\/external\//.test(sample.text) ? 'srv' : 'db', `sample-${sample.line}.cds`)
        writeFileSync(file, sample.text)
        try {
          const csn = await cds.load([file, path.join(work, 'db/context.cds')], { silent: true })
          enhanceModel(csn)
          for (const replica of replicasOf(csn)) resolvePipeline(replica.config, { serviceKind: (service: string) => (requires[service] as { kind?: string } | undefined)?.kind })
        } catch (error) {
          throw new Error(`${where(sample)}: ${(error as Error).message}`, { cause: error })
        } finally {
          rmSync(file, { force: true })
        }
      })
    }
  })

  describe('JSON parses; cds.requires names known kinds and the plugin\'s settings', () => {
    const jsonSamples = ofLanguage('json', 'jsonc')
    const KINDS = new Set(['odata', 'odata-v2', 'odata-v4', 'hcql', 'rest', 'sqlite', 'postgres', 'hana', 'sql', 'mocked', 'basic', 'jwt', 'xsuaa', 'ias',
      'local-messaging', 'file-based-messaging', 'redis-messaging', 'enterprise-messaging', 'enterprise-messaging-shared'])
    /** `cds.requires['data-pipeline']`: the settings the plugin reads (docs/reference/settings.md, "App settings"). */
    const SETTINGS: Record<string, true | Record<string, true | Record<string, true>>> = {
      impl: true, schedules: true, runEvents: true, retention: true, schemaDrift: true, maxParallelReads: true, telemetry: true,
      emit: { keysPerMessage: true },
      management: { reuse: { api: true, console: true }, roles: true, inspect: true, console: { ui5: true } },
      federation: { keyChunkSize: true, keyListLength: true, maxFilterKeys: true, cacheEntries: true, federated: true },
      multitenancy: { active: true, fanOutScheduledRuns: true, parallel: true, syncOnSubscribe: true, flushOnUnsubscribe: true, tenants: true, lockedSettings: true },
    }
    const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value)

    function checkSettings(value: unknown, rules: typeof SETTINGS | Record<string, unknown>, at: string, problems: string[]) {
      if (!isObject(value)) return
      for (const [key, inner] of Object.entries(value)) {
        const rule = (rules as Record<string, unknown>)[key]
        if (rule === undefined) problems.push(`${at}.${key} is no setting of the plugin`)
        else if (rule !== true) checkSettings(inner, rule as Record<string, unknown>, `${at}.${key}`, problems)
      }
    }
    function checkRequires(requires: unknown, problems: string[]) {
      if (!isObject(requires)) return
      for (const [name, entry] of Object.entries(requires)) {
        if (/^\[.+\]$/.test(name)) { checkRequires(entry, problems); continue } // a profile
        if (name === 'data-pipeline') { checkSettings(entry, SETTINGS, "cds.requires['data-pipeline']", problems); continue }
        if (isObject(entry) && entry.kind !== undefined && !KINDS.has(entry.kind as string)) problems.push(`cds.requires.${name}.kind '${String(entry.kind)}' is no kind CAP or the plugin knows`)
      }
    }

    test('there are JSON samples to check', () => expect(jsonSamples.length).toBeGreaterThan(5))

    for (const sample of jsonSamples) {
      test(where(sample), () => {
        let text = sample.lang === 'jsonc' ? sample.text.replace(/^\s*\/\/.*$/gm, '') : sample.text
        if (/^\s*"/.test(text)) text = `{${text}}` // a member of package.json or xs-security.json, as the prose says
        let value: Record<string, unknown>
        try { value = JSON.parse(text) } catch (error) { throw new Error(`${where(sample)}: not JSON: ${(error as Error).message}`) }
        const problems: string[] = []
        const requires = (value.cds as { requires?: unknown } | undefined)?.requires
        checkRequires(requires, problems)
        if (value['role-collections']) {
          for (const collection of value['role-collections'] as Array<{ 'role-template-references': string[] }>)
            for (const reference of collection['role-template-references'])
              if (!/^\$XSAPPNAME\.Pipeline(Viewer|Operator|Admin)$/.test(reference)) problems.push(`role template ${reference} is none of the plugin's roles`)
        }
        if (!requires && !value['role-collections']) problems.push('neither cds.requires nor role-collections: what is it?')
        expect(problems, `${where(sample)}:\n${problems.join('\n')}`).toEqual([])
      })
    }
  })

  describe('JS/TS parses, and uses what the package and the service have', () => {
    const jsSamples = ofLanguage('js', 'javascript', 'mjs', 'cjs', 'ts', 'typescript')
    // the service's members as its published types declare them (some are fields: `flush`, `run`), and cds.Service's
    const methods = new Set<string>()
    const serviceTypes = /class DataPipelineService\b[\s\S]*?\n\}/.exec(readFileSync(dist('srv/data-pipeline.d.ts'), 'utf8'))?.[0] ?? ''
    for (const [, name] of serviceTypes.matchAll(/^ {4}(?:override\s+)?(?:readonly\s+)?(\w+)\??[(:<]/gm)) methods.add(name)
    for (let proto: object | null = (cds.Service as { prototype: object }).prototype; proto; proto = Object.getPrototypeOf(proto)) for (const name of Object.getOwnPropertyNames(proto)) methods.add(name)
    const typesFile = readFileSync(dist('lib/pipeline/types.d.ts'), 'utf8')
    const CONFIG_KEYS = new Set([...(/export interface PipelineConfig\b[^{]*\{([\s\S]*?)\n\}/.exec(typesFile)?.[1] ?? '').matchAll(/^ {4}(?:readonly )?(\w+)\??:/gm)].map(m => m[1]))

    type Node = { type: string; [key: string]: unknown }
    function walk(node: unknown, visit: (node: Node) => void) {
      if (Array.isArray(node)) { for (const child of node) walk(child, visit); return }
      if (!node || typeof node !== 'object' || typeof (node as Node).type !== 'string') return
      visit(node as Node)
      for (const [key, child] of Object.entries(node)) if (key !== 'loc' && key !== 'start' && key !== 'end') walk(child, visit)
    }
    const keyName = (property: Node) => ((property.key as Node).type === 'Identifier' ? (property.key as { name: string }).name : String((property.key as { value: unknown }).value))

    test('there are JS samples to check', () => {
      expect(jsSamples.length).toBeGreaterThan(8)
      expect(CONFIG_KEYS.has('source') && CONFIG_KEYS.has('schedule'), 'PipelineConfig read from dist/lib/pipeline/types.d.ts').toBe(true)
    })

    for (const sample of jsSamples) {
      test(where(sample), () => {
        const options = { sourceType: 'module', plugins: ['typescript'], allowAwaitOutsideFunction: true, allowReturnOutsideFunction: true } as const
        const problems: string[] = []
        let ast: unknown
        try {
          ast = parse(sample.text, options)
        } catch (error) {
          // settings of a pipeline config, one per line (`delta: { … }`): each line a member of PipelineConfig
          const lines = sample.text.split('\n').filter(line => line.trim() && !line.trim().startsWith('//'))
          const members = lines.map(line => { try { return parse(`({ ${line}\n})`, options) } catch { return undefined } })
          if (!lines.length || members.includes(undefined)) throw new Error(`${where(sample)}: does not parse: ${(error as Error).message}`)
          for (const line of lines) {
            const key = /^\s*(\w+)\s*:/.exec(line)?.[1]
            if (!key || !CONFIG_KEYS.has(key)) problems.push(`'${line.trim()}' is no member of PipelineConfig`)
          }
        }
        walk(ast, node => {
          // const { A, B } = require('cap-data-pipeline') / import { A } from 'cap-data-pipeline'
          if (node.type === 'VariableDeclarator' && (node.init as Node | null)?.type === 'CallExpression') {
            const call = node.init as Node
            const [arg] = call.arguments as Node[]
            if ((call.callee as { name?: string }).name === 'require' && (arg as { value?: string })?.value === 'cap-data-pipeline' && (node.id as Node).type === 'ObjectPattern')
              for (const property of (node.id as { properties: Node[] }).properties) if (!(keyName(property) in pkg)) problems.push(`cap-data-pipeline exports no ${keyName(property)}`)
          }
          if (node.type === 'ImportDeclaration' && (node.source as { value: string }).value === 'cap-data-pipeline')
            for (const specifier of node.specifiers as Node[]) if (specifier.type === 'ImportSpecifier' && !(((specifier.imported as { name: string }).name) in pkg)) problems.push(`cap-data-pipeline exports no ${(specifier.imported as { name: string }).name}`)
          // pipelines.<method>(…)
          if (node.type === 'CallExpression' && (node.callee as Node).type === 'MemberExpression') {
            const callee = node.callee as { object: { name?: string }; property: { name?: string } }
            if (callee.object.name === 'pipelines' && callee.property.name && !methods.has(callee.property.name)) problems.push(`the data-pipeline service has no method ${callee.property.name}`)
            if (callee.property.name === 'addPipeline') {
              const [config] = node.arguments as Node[]
              if (config?.type !== 'ObjectExpression') return
              for (const property of config.properties as Node[]) if (property.type === 'ObjectProperty' && !CONFIG_KEYS.has(keyName(property))) problems.push(`addPipeline: '${keyName(property)}' is no key of PipelineConfig`)
              // a plain literal (functions may use SELECT): the plugin's own validation, as addPipeline runs it
              const literal = sample.text.slice(config.start as number, config.end as number)
              const free = new Set<string>()
              walk(config, inner => { if (inner.type === 'Identifier') free.add((inner as { name: string }).name) })
              const bound = new Set(['SELECT'])
              if ([...free].some(name => /^[A-Z]/.test(name) && !bound.has(name))) return // names a class of the sample (custom adapters)
              const value = new Function('SELECT', `return (${literal})`)(() => ({ columns: () => ({ groupBy: () => ({}) }) }))
              try { resolvePipeline(value, { serviceKind: () => 'odata' }) } catch (error) { problems.push(`addPipeline(${value.name}): ${(error as Error).message}`) }
            }
          }
        })
        expect(problems, `${where(sample)}:\n${problems.join('\n')}`).toEqual([])
      })
    }
  })

  describe('HTTP requests name operations of the management API', () => {
    const httpSamples = ofLanguage('http')
    let model: { definitions: Record<string, { kind: string; actions?: Record<string, { kind: string; params?: Record<string, unknown> }>; params?: Record<string, unknown> }> }
    const SERVICE = 'DataPipelineManagementService'
    beforeAll(async () => { model = await cds.load(path.join(ROOT, 'srv/management.cds')) })

    test('there are HTTP samples to check', () => expect(httpSamples.length).toBeGreaterThan(0))

    for (const sample of httpSamples) {
      test(where(sample), () => {
        const problems: string[] = []
        for (const request of sample.text.split(/^###.*$/m).map(text => text.trim()).filter(Boolean)) {
          const [head, ...rest] = request.split(/\n\s*\n/)
          const [line, ...headers] = head.split('\n')
          const match = /^(GET|POST|PATCH|PUT|DELETE)\s+(\S+)(?:\s+HTTP\/[\d.]+)?$/.exec(line.trim())
          if (!match) { problems.push(`'${line}' is no request line`); continue }
          for (const header of headers) if (!/^[\w-]+:\s*\S/.test(header.trim())) problems.push(`'${header}' is no header`)
          const [, method, url] = match
          const body = rest.join('\n\n').trim()
          let data: Record<string, unknown> = {}
          if (body) try { data = JSON.parse(body) } catch (error) { problems.push(`the body is not JSON: ${(error as Error).message}`) }
          const route = /^(?:https?:\/\/[^/]+)?\/pipeline\/([^?]*)/.exec(url)
          if (!route) { problems.push(`${url}: not the management API (/pipeline/)`); continue }
          const segments = route[1].split('/').filter(Boolean)
          const first = segments[0]?.replace(/\(.*\)$/, '') ?? ''
          const definition = model.definitions[`${SERVICE}.${first}`]
          let operation: { kind: string; params?: Record<string, unknown> } | undefined
          if (!definition) problems.push(`${url}: the management API has no '${first}'`)
          else if (definition.kind === 'entity') {
            const bound = segments[1]?.replace(`${SERVICE}.`, '').replace(/\(.*\)$/, '')
            if (bound) { operation = definition.actions?.[bound]; if (!operation) problems.push(`${url}: ${first} has no operation '${bound}'`) }
            else if (method !== 'GET') problems.push(`${url}: the management API's entities are read-only`)
          } else operation = definition
          if (operation) {
            if ((operation.kind === 'action') !== (method === 'POST')) problems.push(`${url}: ${first} is a${operation.kind === 'action' ? 'n action (POST)' : ' function (GET)'}`)
            for (const key of Object.keys(data)) if (!(key in (operation.params ?? {}))) problems.push(`${url}: the body's '${key}' is no parameter`)
          }
        }
        expect(problems, `${where(sample)}:\n${problems.join('\n')}`).toEqual([])
      })
    }
  })
})
