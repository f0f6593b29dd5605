/**
 * Roles out of the box (issue 20, finding 5): the plugin enforces PipelineViewer < PipelineOperator
 * < PipelineAdmin on every operation and entity of /pipeline without any annotation by the app
 * (test/fixtures/roles/app has none). The matrix: every request × {anonymous, no role, viewer,
 * operator, admin} with its exact status — 401 anonymous, 403 lacking the role (an OData error
 * naming the role), else the operation's own answer. Reject records (PipelineRejects, `rejects`
 * expands at any depth, navigation, filters through the association) need PipelineAdmin.
 * `management.roles` maps the levels to the app's role names, `false` switches the checks off.
 */
import cds from '@sap/cds'
import path from 'node:path'
import { FIXTURES } from '../helpers/apps'
import { BOUND as B, basicAuth, client, errorOf, type HttpResponse } from '../helpers/management'

const test$ = cds.test(path.join(FIXTURES, 'roles/app'))
const http = client(() => (test$ as unknown as { axios: any }).axios, null)
let runId = ''

beforeAll(async () => {
  await cds.ql.INSERT.into('roles.Items').entries([{ ID: 1, name: 'one' }, { ID: 2, name: 'far too long' }])
  const engine = (await cds.connect.to('data-pipeline')) as unknown as { execute(name: string): Promise<{ runId: string; done: Promise<unknown> }> }
  const run = await engine.execute('items')
  await run.done
  runId = run.runId
})

type Who = 'anonymous' | 'nobody' | 'viewer' | 'operator' | 'admin'
const WHO: Who[] = ['anonymous', 'nobody', 'viewer', 'operator', 'admin']
type Level = 'authenticated' | 'view' | 'operate' | 'administer'

/** Who passes a level; everyone else: anonymous 401, the others 403. */
const PASSES: Record<Level, Who[]> = {
  authenticated: ['nobody', 'viewer', 'operator', 'admin'],
  view: ['viewer', 'operator', 'admin'],
  operate: ['operator', 'admin'],
  administer: ['admin'],
}

/** [what, level, method, url, body, the status of a user who passes] */
type Row = [string, Level, 'GET' | 'POST', () => string, object | undefined, number]
const ROWS: Row[] = [
  ['permissions()', 'authenticated', 'GET', () => '/pipeline/permissions()', undefined, 200],
  ['Pipelines', 'view', 'GET', () => '/pipeline/Pipelines', undefined, 200],
  ['Pipelines(name)', 'view', 'GET', () => "/pipeline/Pipelines('items')", undefined, 200],
  ['Pipelines?$expand=runs', 'view', 'GET', () => '/pipeline/Pipelines?$expand=runs', undefined, 200],
  ['Pipelines(name)/runs', 'view', 'GET', () => "/pipeline/Pipelines('items')/runs", undefined, 200],
  ['PipelineRuns', 'view', 'GET', () => '/pipeline/PipelineRuns', undefined, 200],
  ['PipelineRuns(ID)', 'view', 'GET', () => `/pipeline/PipelineRuns(${runId})`, undefined, 200],
  ['PipelineRunModes', 'view', 'GET', () => '/pipeline/PipelineRunModes', undefined, 200],
  ['PipelineRunTriggers', 'view', 'GET', () => '/pipeline/PipelineRunTriggers', undefined, 200],
  ['status()', 'view', 'GET', () => "/pipeline/status(name='items')", undefined, 200],
  ['landscapeMetadata()', 'view', 'GET', () => '/pipeline/landscapeMetadata()', undefined, 200],
  ['configView()', 'view', 'GET', () => `${B('items')}.configView()`, undefined, 200],
  ['previewSchedule()', 'view', 'GET', () => "/pipeline/previewSchedule(schedule='10m',count=3)", undefined, 200],
  ['flowMetadata()', 'view', 'GET', () => `${B('items')}.flowMetadata()`, undefined, 200],
  ['inspectCapabilities()', 'view', 'GET', () => `${B('items')}.inspectCapabilities()`, undefined, 200],
  // a single-tenant app: the role check passes, then the operation says multitenancy is off (security-tenants covers the provider's answer)
  ['tenantsOverview()', 'view', 'GET', () => '/pipeline/tenantsOverview()', undefined, 400],
  ['PipelineRejects', 'administer', 'GET', () => '/pipeline/PipelineRejects', undefined, 200],
  ['PipelineRejects?$select=record', 'administer', 'GET', () => '/pipeline/PipelineRejects?$select=record', undefined, 200],
  ['Pipelines?$expand=rejects', 'administer', 'GET', () => '/pipeline/Pipelines?$expand=rejects', undefined, 200],
  ['Pipelines(name)?$expand=rejects', 'administer', 'GET', () => "/pipeline/Pipelines('items')?$expand=rejects", undefined, 200],
  ['PipelineRuns?$expand=rejects', 'administer', 'GET', () => '/pipeline/PipelineRuns?$expand=rejects', undefined, 200],
  ['Pipelines?$expand=runs($expand=rejects)', 'administer', 'GET', () => '/pipeline/Pipelines?$expand=runs($expand=rejects)', undefined, 200],
  ['Pipelines?$filter=rejects/any(…)', 'administer', 'GET', () => "/pipeline/Pipelines?$filter=rejects/any(r:contains(r/record,'long'))", undefined, 200],
  ['PipelineRuns(ID)/rejects', 'administer', 'GET', () => `/pipeline/PipelineRuns(${runId})/rejects`, undefined, 200],
  ['Pipelines(name)/rejects', 'administer', 'GET', () => "/pipeline/Pipelines('items')/rejects", undefined, 200],
  ['inspectData()', 'administer', 'GET', () => `${B('items')}.inspectData(side='target')`, undefined, 200],
  ['execute', 'operate', 'POST', () => '/pipeline/execute', { name: 'items' }, 200],
  ['start', 'operate', 'POST', () => `${B('items')}.start`, {}, 200],
  ['flush', 'operate', 'POST', () => '/pipeline/flush', { name: 'items' }, 200],
  ['setEnabled', 'operate', 'POST', () => `${B('items')}.setEnabled`, { enabled: true }, 200],
  ['replayRejects', 'operate', 'POST', () => `${B('items')}.replayRejects`, {}, 200],
  ['setOverrides', 'administer', 'POST', () => `${B('items')}.setOverrides`, { overrides: '{"description":"x"}' }, 200],
  ['validateOverrides', 'administer', 'POST', () => `${B('items')}.validateOverrides`, { overrides: '{"source.batchSize":-5}' }, 200],
  ['clearOverrides', 'administer', 'POST', () => `${B('items')}.clearOverrides`, { keys: 'description' }, 200],
  ['setSchedule', 'administer', 'POST', () => `${B('items')}.setSchedule`, { every: 3_600_000 }, 200],
  ['clearSchedule', 'administer', 'POST', () => `${B('items')}.clearSchedule`, {}, 200],
]

const send = (who: string | undefined, method: 'GET' | 'POST', url: string, body?: object): Promise<HttpResponse> => {
  const headers = who && who !== 'anonymous' ? basicAuth(who) : undefined
  return method === 'GET' ? http.GET(url, headers) : http.POST(url, body, headers)
}

const ROLE_OF: Record<Level, string> = { authenticated: '', view: 'PipelineViewer', operate: 'PipelineOperator', administer: 'PipelineAdmin' }

describe('role × endpoint matrix of /pipeline (no annotation by the app)', () => {
  test.each(ROWS)('%s (%s)', async (_what, level, method, url, body, ok) => {
    const seen: Record<string, number> = {}
    const expected: Record<string, number> = {}
    for (const who of WHO) {
      const res = await send(who, method, url(), body)
      seen[who] = res.status
      expected[who] = PASSES[level].includes(who) ? ok : who === 'anonymous' ? 401 : 403
      if (res.status === 403) {
        // CAP's OData error, naming the role that would grant it
        expect(errorOf(res).message).toContain(ROLE_OF[level])
        expect(errorOf(res).message).toContain('PipelineAdmin')
      }
    }
    expect(seen).toEqual(expected)
  })

  test('a refused operation has no effect: the viewer cannot start a run or change the schedule', async () => {
    const runs = async () => (await send('admin', 'GET', "/pipeline/PipelineRuns/$count?$filter=pipeline_name eq 'items'")).data
    const before = await runs()
    expect((await send('viewer', 'POST', `${B('items')}.start`, {})).status).toBe(403)
    expect((await send('operator', 'POST', `${B('items')}.setSchedule`, { every: 60_000 })).status).toBe(403)
    expect(await runs()).toBe(before)
    expect((await send('admin', 'GET', "/pipeline/Pipelines('items')")).data.schedule ?? null).toBeNull()
  })

  test('reject records reach only PipelineAdmin: the viewer sees runs without them', async () => {
    const admin = await send('admin', 'GET', '/pipeline/PipelineRejects?$select=record')
    expect(admin.data.value.map((r: { record: string }) => JSON.parse(r.record).name)).toContain('far too long')
    const viewer = await send('viewer', 'GET', `/pipeline/PipelineRuns(${runId})`)
    expect(viewer.status).toBe(200)
    expect(JSON.stringify(viewer.data)).not.toContain('far too long')
  })

  test('permissions() tells each user their roles and what they may do', async () => {
    const of = async (who: string) => (await send(who, 'GET', '/pipeline/permissions()')).data
    expect(await of('nobody')).toMatchObject({ user: 'nobody', roles: [], view: false, operate: false, administer: false })
    expect(await of('viewer')).toMatchObject({ user: 'viewer', roles: ['PipelineViewer'], view: true, operate: false, administer: false })
    expect(await of('operator')).toMatchObject({ user: 'operator', roles: ['PipelineOperator'], view: true, operate: true, administer: false })
    expect(await of('admin')).toMatchObject({ user: 'admin', roles: ['PipelineAdmin'], view: true, operate: true, administer: true })
    const anonymous = await send('anonymous', 'GET', '/pipeline/permissions()')
    expect(anonymous.status).toBe(401)
  })
})

describe('management.roles', () => {
  const settings = () => (cds.env.requires as unknown as Record<string, { management: Record<string, unknown> }>)['data-pipeline'].management
  afterEach(() => {
    delete settings().roles
  })

  test("maps the levels to the app's role names (a name or a list)", async () => {
    settings().roles = { viewer: 'Reader', operator: ['Runner'], admin: 'Boss' }
    expect((await send('reader', 'GET', '/pipeline/Pipelines')).status).toBe(200)
    const refused = await send('reader', 'POST', '/pipeline/flush', { name: 'items' })
    expect(refused.status).toBe(403)
    expect(errorOf(refused).message).toContain('Runner or Boss')
    expect((await send('runner', 'POST', '/pipeline/flush', { name: 'items' })).status).toBe(200)
    expect((await send('runner', 'GET', '/pipeline/PipelineRejects')).status).toBe(403)
    expect((await send('boss', 'GET', '/pipeline/PipelineRejects')).status).toBe(200)
    // the default names no longer grant anything
    expect((await send('admin', 'GET', '/pipeline/Pipelines')).status).toBe(403)
    expect((await send('boss', 'GET', '/pipeline/permissions()')).data).toMatchObject({ roles: ['Boss'], view: true, operate: true, administer: true })
  })

  test("a pseudo-role relaxes a level: viewer 'authenticated-user' lets every user read", async () => {
    settings().roles = { viewer: 'authenticated-user' }
    expect((await send('nobody', 'GET', '/pipeline/Pipelines')).status).toBe(200)
    expect((await send('nobody', 'POST', '/pipeline/flush', { name: 'items' })).status).toBe(403)
    expect((await send('anonymous', 'GET', '/pipeline/Pipelines')).status).toBe(401)
    expect((await send('nobody', 'GET', '/pipeline/permissions()')).data).toMatchObject({ roles: [], view: true, operate: false })
  })

  test('false switches the checks off: any authenticated user may do everything (the app annotates its own)', async () => {
    settings().roles = false
    expect((await send('nobody', 'GET', '/pipeline/PipelineRejects')).status).toBe(200)
    expect((await send('nobody', 'POST', `${B('items')}.clearSchedule`, {})).status).toBe(200)
    expect((await send('anonymous', 'GET', '/pipeline/Pipelines')).status).toBe(401)
  })
})
