/**
 * Data inspector + the real @cap-js/audit-logging plugin (console logger): previews of
 * columns annotated @PersonalData.IsPotentiallySensitive emit SensitiveDataRead, others don't.
 */
import cds from '@sap/cds'
import path from 'node:path'
import { FIXTURES, type ProviderControl, type RunningApp } from '../helpers/apps'
import { sharedProvider } from '../helpers/shared-provider'
import { ql } from '../helpers/consumer'
import { consoleDuring } from '../helpers/audit-output'

let provider: RunningApp & { control: ProviderControl }
beforeAll(async () => {
  provider = await sharedProvider()
})
const test$ = cds.test(path.join(FIXTURES, 'management'))
beforeAll(async () => {
  const requires = cds.env.requires as unknown as Record<string, { credentials?: object }>
  requires.Provider.credentials = { url: `${provider.url}/odata/v4/catalog` }
  await ql.INSERT.into('host.People').entries([
    { ID: 1, name: 'Ann', email: 'ann@example.com', secret: 'S1' },
    { ID: 2, name: 'Bob', email: 'bob@example.com', secret: 'S2' },
  ])
})
afterAll(async () => {
  await provider?.stop()
})

// inspectData needs PipelineAdmin: the fixture's mocked admin
const inspect = (params: string) => test$.GET(`/pipeline/Pipelines('people')/DataPipelineManagementService.inspectData(${params})`, { auth: { username: 'admin', password: 'admin' } })


describe('data inspector audit logging', () => {
  test('previewing a sensitive column emits SensitiveDataRead through the real audit-log service', async () => {
    let response: { status: number; data: { value: string } } | undefined
    const output = await consoleDuring(async () => {
      response = await inspect("side='source',columnsJson='[\"ID\",\"email\"]',filters=null,top=10,skip=0")
    })
    expect(response!.status).toBe(200)
    expect(JSON.parse(response!.data.value).rows).toEqual([{ ID: 1, email: 'ann@example.com' }, { ID: 2, email: 'bob@example.com' }])
    expect(output).toContain('[audit-log] - SensitiveDataRead:')
    expect(output).toMatch(/name: 'email'/)
    expect(output).toMatch(/type: 'host\.People'/)
  })

  test('a preview without sensitive columns emits nothing', async () => {
    const output = await consoleDuring(() => inspect("side='source',columnsJson='[\"ID\",\"name\"]',filters=null,top=10,skip=0"), 800)
    expect(output).not.toContain('SensitiveDataRead')
  })
})
