/**
 * Securing /pipeline is the host's job (SPEC Authentication): a host-side
 * `annotate DataPipelineManagementService with @(requires: 'PipelineAdmin')` is honoured for the
 * projections and every operation — anonymous → 401, a mocked user without the role → 403,
 * a user with the role → 200. The same host sets `management.inspect: false`: inspectData →
 * 403 and inspectCapabilities reports none for both sides.
 */
import cds from '@sap/cds'
import path from 'node:path'
import { FIXTURES } from '../helpers/apps'
import { BOUND as B, client, errorOf, jsonValue } from '../helpers/management'
import { basicAuth } from '../helpers/auth'

const test$ = cds.test(path.join(FIXTURES, 'management-locked'))
const http = client(() => (test$ as unknown as { axios: any }).axios, null) // anonymous unless a call names a user
const admin = basicAuth('admin')
const viewer = basicAuth('viewer')

const requests: Array<[string, 'GET' | 'POST', string, object?]> = [
  ['Pipelines', 'GET', '/pipeline/Pipelines'],
  ['PipelineRuns', 'GET', '/pipeline/PipelineRuns'],
  ['value help', 'GET', '/pipeline/PipelineRunModes'],
  ['start', 'POST', `${B('items')}.start`, {}],
  ['setSchedule', 'POST', `${B('items')}.setSchedule`, { every: 60000 }],
  ['clearSchedule', 'POST', `${B('items')}.clearSchedule`, {}],
  ['setOverrides', 'POST', `${B('items')}.setOverrides`, { overrides: '{"description":"x"}' }],
  ['setEnabled', 'POST', `${B('items')}.setEnabled`, { enabled: false }],
  ['configView', 'GET', `${B('items')}.configView()`],
  ['validateOverrides', 'POST', `${B('items')}.validateOverrides`, { overrides: '{"description":"x"}' }],
  ['previewSchedule', 'GET', "/pipeline/previewSchedule(schedule='10m')"],
  ['inspectData', 'GET', `${B('items')}.inspectData(side='source')`],
  ['flowMetadata', 'GET', `${B('items')}.flowMetadata()`],
  ['landscapeMetadata', 'GET', '/pipeline/landscapeMetadata()'],
  ['execute', 'POST', '/pipeline/execute', { name: 'items' }],
  ['flush', 'POST', '/pipeline/flush', { name: 'items' }],
  ['status', 'GET', `/pipeline/status(name='items')`],
]

const send = (method: 'GET' | 'POST', url: string, body: object | undefined, headers?: Record<string, string>) =>
  method === 'GET' ? http.GET(url, headers) : http.POST(url, body, headers)

test.each(requests)('%s: anonymous → 401, user without the role → 403', async (_what, method, url, body) => {
  expect((await send(method, url, body)).status).toBe(401)
  expect((await send(method, url, body, viewer)).status).toBe(403)
})

test('a user with the role gets through', async () => {
  await cds.ql.INSERT.into('locked.Items').entries([{ ID: 1, name: 'one' }, { ID: 2, name: 'two' }])
  const list = await http.GET('/pipeline/Pipelines', admin)
  expect(list.status).toBe(200)
  expect(list.data.value.map((p: any) => p.name)).toEqual(['items'])
  const run = await http.POST(`${B('items')}.start`, {}, admin)
  expect(run.status, JSON.stringify(run.data)).toBe(200)
  expect(run.data).toMatchObject({ status: 'completed', statistics: { created: 2 } })
  expect((await http.GET(`/pipeline/status(name='items')`, admin)).data.status).toBe('idle')
  expect(jsonValue(await http.GET(`${B('items')}.configView()`, admin)).base.name).toBe('items')
})

test('management.inspect: false → inspectData 403 on both sides, inspectCapabilities none/none', async () => {
  for (const side of ['source', 'target']) {
    const res = await http.GET(`${B('items')}.inspectData(side='${side}')`, admin)
    expect(res.status).toBe(403)
    expect(errorOf(res)).toMatchObject({ code: 'FORBIDDEN' })
    expect(errorOf(res).message).toMatch(/inspect/)
  }
  expect(jsonValue(await http.GET(`${B('items')}.inspectCapabilities()`, admin))).toEqual({ source: 'none', target: 'none' })
})
