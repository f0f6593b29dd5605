/**
 * The management roles in `xs-security.json`, for the order `cds add xsuaa` → `cds add data-pipeline`:
 * `cds add xsuaa` re-runs on every `cds add` and merges the scopes of srv/ into the file, but no role
 * templates into one it wrote before. This completes the scopes and role templates of the
 * configured role names (`management.roles`, srv/management.cds `@requires`); everything else in
 * the file stays. In the other order `cds add xsuaa` writes them itself.
 */
import fs from 'node:fs'
import path from 'node:path'
import { realRoles, roleNames } from '../security/roles.js'

export const XS_SECURITY = 'xs-security.json'

interface Named { name: string }
type Security = Record<string, unknown> & { scopes?: Named[]; 'role-templates'?: Named[] }

/** The scopes and role templates the management API needs (`cds compile --to xsuaa`'s shape). */
export function managementSecurity(): { scopes: Array<Named & { description: string }>; 'role-templates': Array<Named & Record<string, unknown>> } {
  const names = roleNames()
  const roles = names === false ? [] : realRoles(names)
  return {
    scopes: roles.map(role => ({ name: `$XSAPPNAME.${role}`, description: role })),
    'role-templates': roles.map(role => ({ name: role, description: `cap-data-pipeline: ${role}`, 'scope-references': [`$XSAPPNAME.${role}`], 'attribute-references': [] })),
  }
}

/** Adds what `xs-security.json` lacks; returns the names added (none: the file is left untouched, as is a project without one). */
export function completeSecurity(root: string): string[] {
  const file = path.join(root, XS_SECURITY)
  if (!fs.existsSync(file)) return []
  const security = JSON.parse(fs.readFileSync(file, 'utf8')) as Security
  const added: string[] = []
  for (const [key, wanted] of Object.entries(managementSecurity()) as Array<['scopes' | 'role-templates', Named[]]>) {
    const present = Array.isArray(security[key]) ? security[key] : []
    const missing = wanted.filter(entry => !present.some(have => have?.name === entry.name))
    if (!missing.length) continue
    security[key] = [...present, ...missing]
    added.push(...missing.map(entry => entry.name))
  }
  if (added.length) fs.writeFileSync(file, `${JSON.stringify(security, null, 2)}\n`)
  return added
}
