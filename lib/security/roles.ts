/**
 * The three roles of the management API (/pipeline), enforced by the plugin on every request
 * without any annotation by the app author: a level per role (view < operate < administer), the
 * level each operation and entity needs, and the check. A user holding a higher role holds the
 * lower ones. Role names come from `cds.requires['data-pipeline'].management.roles`
 * (`{ viewer, operator, admin }`, each a name or a list; CAP pseudo-roles such as
 * 'authenticated-user' or 'any' relax a level); `roles: false` leaves access to the app's own
 * `@requires`/`@restrict`.
 */
import cds from '@sap/cds'
import { SERVICE_NAME } from '../constants.js'
import { PipelineError } from '../pipeline/errors.js'

export const LEVELS = ['view', 'operate', 'administer'] as const
export type Level = (typeof LEVELS)[number]

/** The config key naming the roles of each level. */
const ROLE_KEYS: Record<Level, 'viewer' | 'operator' | 'admin'> = { view: 'viewer', operate: 'operator', administer: 'admin' }

export const DEFAULT_ROLES: Record<'viewer' | 'operator' | 'admin', string> = { viewer: 'PipelineViewer', operator: 'PipelineOperator', admin: 'PipelineAdmin' }

/** Operations by the level they need; anything not listed (writes, operations added later) needs `administer`. */
const OPERATION_LEVELS: Record<string, Level> = {
  READ: 'view', status: 'view', configView: 'view', flowMetadata: 'view', landscapeMetadata: 'view', inspectCapabilities: 'view', tenantsOverview: 'view', previewSchedule: 'view',
  execute: 'operate', start: 'operate', retry: 'operate', flush: 'operate', setEnabled: 'operate', replayRejects: 'operate',
  setOverrides: 'administer', validateOverrides: 'administer', clearOverrides: 'administer', setSchedule: 'administer', clearSchedule: 'administer', inspectData: 'administer',
}

/** Open to every authenticated user: tells the caller what they may do. */
export const PERMISSIONS_OPERATION = 'permissions'

/** Reject records hold source data: reading them, directly or through an association, needs `administer`. */
const REJECTS_ENTITY = 'PipelineRejects'

/** Pseudo-roles of CAP: relax a level when configured, never reported as a role the user holds. */
const PSEUDO_ROLES = new Set(['any', 'authenticated-user', 'identified-user', 'system-user', 'internal-user', 'registered-user', 'privileged-user'])

export type RoleNames = Record<Level, string[]>

interface User {
  id: string
  tenant?: string
  is(role: string): boolean
  _is_anonymous?: boolean
  _is_privileged?: boolean
}

export interface AccessRequest {
  event: string
  user: User
  target?: { name: string }
  query?: unknown
}

export interface Permissions {
  user: string
  tenant: string | null
  roles: string[]
  view: boolean
  operate: boolean
  administer: boolean
}

/** The configured role names per level, or false when the plugin's checks are switched off. */
export function roleNames(): RoleNames | false {
  const entry = (cds.env.requires as Record<string, { management?: { roles?: unknown } } | undefined>)[SERVICE_NAME]
  const configured = entry?.management?.roles
  if (configured === false) return false
  const given = (configured && typeof configured === 'object' ? configured : {}) as Record<string, unknown>
  const names = {} as RoleNames
  for (const level of LEVELS) {
    const key = ROLE_KEYS[level]
    const value = given[key] ?? DEFAULT_ROLES[key]
    const list = Array.isArray(value) ? value : [value]
    if (!list.length || list.some(name => typeof name !== 'string' || !name.trim()))
      throw new PipelineError('INVALID_CONFIG', `Invalid management config: management.roles.${key} must be a role name or a list of role names`, { target: `management.roles.${key}` })
    names[level] = list as string[]
  }
  return names
}

/** The roles that grant a level: its own and those of every higher level. */
export function rolesFor(level: Level, names: RoleNames): string[] {
  return LEVELS.slice(LEVELS.indexOf(level)).flatMap(each => names[each])
}

export function holds(user: User, level: Level, names: RoleNames | false): boolean {
  if (names === false || user._is_privileged) return true
  return rolesFor(level, names).some(role => user.is(role))
}

/** The level a request needs; undefined for `permissions()` (any authenticated user). */
export function levelOf(req: AccessRequest, rejectsAssociations: ReadonlySet<string>): Level | undefined {
  if (req.event === PERMISSIONS_OPERATION) return undefined
  const level = OPERATION_LEVELS[req.event] ?? 'administer'
  if (req.event !== 'READ') return level
  if (localName(req.target?.name) === REJECTS_ENTITY || reachesRejects(req.query, rejectsAssociations)) return 'administer'
  return level
}

/**
 * Checks a request against the roles; throws a PipelineError (401 anonymous, 403 lacking the role)
 * naming the roles that would grant it. Privileged (internal) calls pass.
 */
export function checkAccess(req: AccessRequest, rejectsAssociations: ReadonlySet<string>): void {
  const names = roleNames()
  const user = req.user
  if (names === false || user._is_privileged) return
  const level = levelOf(req, rejectsAssociations)
  const what = req.event === 'READ' ? `Reading ${localName(req.target?.name) ?? 'this entity'}${level === 'administer' ? ' (or its rejects)' : ''}` : `'${req.event}'`
  if (level === undefined) {
    if (user._is_anonymous) throw new PipelineError('UNAUTHORIZED', `${what} requires an authenticated user`)
    return
  }
  if (holds(user, level, names)) return
  const roles = rolesFor(level, names).join(' or ')
  if (user._is_anonymous) throw new PipelineError('UNAUTHORIZED', `${what} requires an authenticated user with role ${roles}`)
  throw new PipelineError('FORBIDDEN', `${what} requires role ${roles}; user '${user.id}' has none of them`)
}

/** What a user may do: the answer of `permissions()`. */
export function permissionsOf(user: User, tenant: string | undefined): Permissions {
  const names = roleNames()
  const roles = names === false ? [] : realRoles(names).filter(role => user.is(role))
  return {
    user: user.id,
    tenant: user.tenant ?? tenant ?? null,
    roles,
    view: holds(user, 'view', names),
    operate: holds(user, 'operate', names),
    administer: holds(user, 'administer', names),
  }
}

/** Names of the associations (of any entity of the service) that lead to the reject records. */
export function rejectsAssociationsOf(entities: Iterable<{ elements?: Record<string, { target?: string; isAssociation?: boolean }> }>): Set<string> {
  const names = new Set<string>()
  for (const entity of entities)
    for (const [name, element] of Object.entries(entity.elements ?? {}))
      if (element.target && localName(element.target) === REJECTS_ENTITY) names.add(name)
  return names
}

/** Whether a query touches a rejects association anywhere: expands at any depth, paths in filters, orderings, lambdas. */
function reachesRejects(node: unknown, associations: ReadonlySet<string>, seen = new WeakSet<object>()): boolean {
  if (!node || typeof node !== 'object' || seen.has(node)) return false
  seen.add(node)
  if (Array.isArray(node)) return node.some(each => reachesRejects(each, associations, seen))
  const ref = (node as { ref?: unknown }).ref
  if (Array.isArray(ref) && ref.some(step => associations.has(typeof step === 'string' ? step : (step as { id?: string } | null)?.id ?? ''))) return true
  return Object.values(node).some(value => reachesRejects(value, associations, seen))
}

function localName(name: string | undefined): string | undefined {
  return name?.slice(name.lastIndexOf('.') + 1)
}

/** The management service, and the `@requires` srv/management.cds gives it. */
export const MANAGEMENT_SERVICE = 'DataPipelineManagementService'
const DEFAULT_REQUIRES = [...Object.values(DEFAULT_ROLES), 'authenticated-user']

/** The configured role names of all levels, each once, without CAP's pseudo-roles. */
export function realRoles(names: RoleNames): string[] {
  return [...new Set(LEVELS.flatMap(level => names[level]))].filter(role => !PSEUDO_ROLES.has(role))
}

/** What the management service's `@requires` names for the configured roles: every real role, and any authenticated user (the levels are the plugin's check). */
export function requiredRoles(names: RoleNames | false): string[] {
  return [...(names === false ? [] : realRoles(names)), 'authenticated-user']
}

/**
 * A model hook (`loaded`): with `management.roles` of other names, the management service's
 * `@requires` names those instead of the defaults, so that `cds add xsuaa`, `cds compile --to xsuaa`
 * and the deployment descriptors of `cds add mta|helm` generate their scopes and role templates.
 * An `@requires` the app annotated itself stays; a malformed `management.roles` is left to the
 * check at start, which names the key.
 */
export function alignManagementRoles(csn: { definitions?: Record<string, Record<string, unknown>> }): void {
  const service = csn.definitions?.[MANAGEMENT_SERVICE]
  const current = service?.['@requires']
  if (!service || !Array.isArray(current) || current.join() !== DEFAULT_REQUIRES.join()) return
  let names: RoleNames | false
  try {
    names = roleNames()
  } catch {
    return
  }
  service['@requires'] = requiredRoles(names)
}
