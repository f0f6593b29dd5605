/**
 * lib/security/roles.ts without a server: the configured role names (and their validation, naming
 * the key), the level a request needs — reject records reached through any path of a query — and
 * that a higher role holds the lower levels. The HTTP matrix is test/integration/security-roles.test.ts.
 */
import cds from '@sap/cds'
import { holds, levelOf, roleNames } from '../../lib/security/roles'
import { PipelineError } from '../../lib/pipeline/errors'

const requires = cds.env.requires as unknown as Record<string, unknown>
const configure = (roles: unknown) => { requires['data-pipeline'] = { management: { roles } } }
afterEach(() => { delete requires['data-pipeline'] })

const user = (...roles: string[]) => ({ id: 'u', is: (role: string) => role === 'authenticated-user' || roles.includes(role) })
const REJECTS = new Set(['rejects'])
const read = (target: string, query: unknown) => ({ event: 'READ', user: user(), target: { name: `DataPipelineManagementService.${target}` }, query })

test('default names; a name or a list per level; false switches off; anything else is refused naming the key', () => {
  expect(roleNames()).toEqual({ view: ['PipelineViewer'], operate: ['PipelineOperator'], administer: ['PipelineAdmin'] })
  configure({ viewer: 'Reader', admin: ['Boss', 'Root'] })
  expect(roleNames()).toEqual({ view: ['Reader'], operate: ['PipelineOperator'], administer: ['Boss', 'Root'] })
  configure(false)
  expect(roleNames()).toBe(false)
  for (const bad of [{ operator: '' }, { operator: [] }, { operator: 42 }, { operator: ['ok', 7] }]) {
    configure(bad)
    const error = (() => { try { roleNames() } catch (e) { return e } })() as PipelineError
    expect(error).toBeInstanceOf(PipelineError)
    expect(error.message).toContain('management.roles.operator')
  }
})

test('a higher role holds the lower levels, never the other way round', () => {
  const names = roleNames() as Exclude<ReturnType<typeof roleNames>, false>
  expect(['view', 'operate', 'administer'].map(level => holds(user('PipelineAdmin'), level as never, names))).toEqual([true, true, true])
  expect(['view', 'operate', 'administer'].map(level => holds(user('PipelineOperator'), level as never, names))).toEqual([true, true, false])
  expect(['view', 'operate', 'administer'].map(level => holds(user('PipelineViewer'), level as never, names))).toEqual([true, false, false])
  expect(holds(user(), 'view', names)).toBe(false)
})

test('reject records need administer on every path of a query; unknown operations need administer too', () => {
  expect(levelOf(read('Pipelines', { SELECT: { from: { ref: ['DataPipelineManagementService.Pipelines'] } } }), REJECTS)).toBe('view')
  expect(levelOf(read('PipelineRejects', { SELECT: {} }), REJECTS)).toBe('administer')
  const deep = { SELECT: { columns: ['*', { ref: ['runs'], expand: ['*', { ref: ['rejects'], expand: ['*'] }] }] } }
  expect(levelOf(read('Pipelines', deep), REJECTS)).toBe('administer')
  const lambda = { SELECT: { where: ['exists', { ref: [{ id: 'rejects', where: [{ ref: ['record'] }, 'like', { val: '%x%' }] }] }] } }
  expect(levelOf(read('Pipelines', lambda), REJECTS)).toBe('administer')
  expect(levelOf({ event: 'start', user: user() }, REJECTS)).toBe('operate')
  expect(levelOf({ event: 'someFutureOperation', user: user() }, REJECTS)).toBe('administer')
  expect(levelOf({ event: 'permissions', user: user() }, REJECTS)).toBeUndefined()
})
