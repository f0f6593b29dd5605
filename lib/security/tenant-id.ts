/**
 * The one check of tenant ids (issue 20, finding 10). A tenant id names a database (CAP's
 * per-tenant SQLite file, a HANA container), a cache file and queue tasks, so every entry that
 * takes one — execute, schedules, the subscription hooks, the federation caches, a request's
 * tenant — checks it here before anything is derived from it. Allowed: what CAP and BTP use as
 * tenant ids (GUIDs, subdomains): letters, digits, `-`, `_` and `.` (not first, never two in a
 * row), at most `MAX_TENANT_ID_LENGTH` characters. Anything else (`../x`, `/`, `\`, NUL, spaces,
 * control characters, empty, overlong) is refused, never rewritten: a rewrite could make two
 * tenants share one database or file.
 */
import { PipelineError } from '../pipeline/errors.js'

/** The longest tenant id accepted. */
export const MAX_TENANT_ID_LENGTH = 128

const TENANT_ID = /^[A-Za-z0-9_-][A-Za-z0-9._-]*$/

/** Why `tenant` is not a safe tenant id, or undefined when it is. */
export function invalidTenantId(tenant: unknown): string | undefined {
  if (typeof tenant !== 'string' || tenant === '') return 'it is empty'
  if (tenant.length > MAX_TENANT_ID_LENGTH) return `it is longer than ${MAX_TENANT_ID_LENGTH} characters`
  if (tenant === '.' || tenant === '..' || tenant.includes('..')) return "it is or contains a relative directory name ('..')"
  if (!TENANT_ID.test(tenant)) return "only letters, digits, '.', '_' and '-' are allowed, and it must not start with '.'"
  return undefined
}

/** A tenant id for messages: quoted, control characters escaped, long ids shortened. */
export function shownTenant(tenant: unknown): string {
  const text = String(tenant)
  const quoted = JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text)
  return text.length > 40 ? `${quoted} (${text.length} characters)` : quoted
}

/** Throws INVALID_PARAMETER (400) naming `parameter` unless `tenant` is a safe tenant id. */
export function assertTenantId(tenant: unknown, parameter = 'tenant'): string {
  const reason = invalidTenantId(tenant)
  if (reason) throw new PipelineError('INVALID_PARAMETER', `${parameter}: ${shownTenant(tenant)} is not a valid tenant id: ${reason}`, { target: parameter })
  return tenant as string
}
