/**
 * The files `cds add data-pipeline` writes: the model file, the .http requests for the management
 * API and, for a project with an imported API, a commented replicate example. Plain functions of
 * their inputs, so that the same input always gives the same bytes (a second run changes nothing).
 */
import { MANAGEMENT_PATH } from '../mounting.js'

/** The mocked development users (the demo's names): user → role. Passwords equal the names. */
export const DEV_USERS = { alice: 'PipelineAdmin', olivia: 'PipelineOperator', victor: 'PipelineViewer' } as const

/** An entity of an imported API to show the replicate example with. */
export interface ReplicaExample {
  /** The imported service (`cds import` names it after the EDMX file). */
  service: string
  /** The model path as written in a `using` from srv/ (`./external/CatalogService`). */
  using: string
  /** The entity's name inside the service (`Books`). */
  entity: string
  /** A timestamp element to use as delta watermark when it is not `modifiedAt` (the plugin's default). */
  deltaField?: string
}

export const REPLICA_SERVICE = 'ReplicaService'

export function modelFile(): string {
  return `// Added by \`cds add data-pipeline\` (cap-data-pipeline).
// The plugin's tracker tables: deployed with your model (cds deploy, HDI, your PostgreSQL migrations).
using from 'cap-data-pipeline/db';
// Its management API at ${MANAGEMENT_PATH}/ and its roles: here under srv/, the model \`cds add xsuaa\` and
// \`cds compile srv --to xsuaa\` read, so xs-security.json gets the scopes and role templates, and the
// output of \`cds build --production\` (HANA, PostgreSQL, gen/srv) holds its views.
using from 'cap-data-pipeline/srv/management';
`
}

/** The pipeline a replicate projection registers: named after the entity's fully qualified name. */
export const replicaPipeline = (example: ReplicaExample) => `${REPLICA_SERVICE}.${example.entity}`

export function replicasFile(example: ReplicaExample): string {
  const annotation = example.deltaField
    ? `@federation.replicate: { delta: { field: '${example.deltaField}' } }`
    : '@federation.replicate'
  return `// Added by \`cds add data-pipeline\` (cap-data-pipeline): a local copy of ${example.service}.${example.entity},
// imported into srv/external/ by \`cds import\`, kept by a pipeline named '${replicaPipeline(example)}'.
// Uncomment, give cds.requires.${example.service} its credentials (url or destination), run \`cds deploy\`
// and POST ${MANAGEMENT_PATH}/execute { "name": "${replicaPipeline(example)}" } (see the .http file).
// Options (schedule, preload, delta): README "Federation: replicate".
//
// using { ${example.service} as external } from '${example.using}';
//
// service ${REPLICA_SERVICE} {
//   ${annotation}
//   entity ${example.entity} as projection on external.${example.entity};
// }
`
}

/** Requests for the main management calls, as alice (PipelineAdmin); `pipeline` names the one to run. */
export function httpFile(pipeline: string | undefined): string {
  const auth = 'Authorization: Basic {{username}}:{{password}}'
  const base = `{{server}}${MANAGEMENT_PATH}`
  const request = (title: string, lines: string[]) => `### ${title}\n${lines.join('\n')}\n`
  return [
    `# Added by \`cds add data-pipeline\` (cap-data-pipeline): the management API (README "Management API").
# Start the app (cds watch) and send the requests from your editor (REST Client, IntelliJ HTTP Client).
# alice is PipelineAdmin; olivia (PipelineOperator) may run, victor (PipelineViewer) only read.
@server = http://localhost:4004
@username = alice
@password = alice
# a pipeline's name: a @federation.replicate entity's full name, or the name given to addPipeline
@pipeline = ${pipeline ?? 'my-pipeline'}
`,
    request('Who am I, what may I do', [`GET ${base}/permissions()`, auth]),
    request('Pipelines', [`GET ${base}/Pipelines`, auth]),
    request('Run a pipeline (waits for the run; add "async": true to return at once with 202)', [
      `POST ${base}/execute`, 'Content-Type: application/json', auth, '', '{ "name": "{{pipeline}}" }',
    ]),
    request('Status of a pipeline', [`GET ${base}/status(name='{{pipeline}}')`, auth]),
    request('Its latest runs', [`GET ${base}/PipelineRuns?$filter=pipeline_name eq '{{pipeline}}'&$orderby=startTime desc&$top=10`, auth]),
    request('Its open rejected records (onError: skip)', [`GET ${base}/PipelineRejects?$filter=pipeline_name eq '{{pipeline}}' and status eq 'open'`, auth]),
  ].join('\n')
}
