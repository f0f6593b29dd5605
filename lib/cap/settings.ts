/**
 * `cds.env` as the plugin reads it: the app's `cds.requires` entries, typed once. cds-types types
 * `cds.env.requires` by CAP's own services with `any` for the rest; these readers give the plugin's
 * own entry and any other binding the shape its reader expects.
 */
import cds from '@sap/cds'
import { SERVICE_NAME } from '../constants.js'

/** The binding of a required service (`cds.requires[name]`), in the shape the caller reads it. */
export const requiredService = <T = Record<string, unknown>>(name: string): T | undefined => cds.env.requires[name] as T | undefined

/** Every `cds.requires` entry by name. */
export const allRequires = <T = Record<string, unknown>>(): Record<string, T | undefined> => cds.env.requires as Record<string, T | undefined>

/** The plugin's own settings (`cds.requires['data-pipeline']`), a section of them, or {}. */
export function pluginSettings<T = Record<string, unknown>>(section?: string): T {
  const own: Record<string, unknown> = cds.env.requires[SERVICE_NAME] ?? {}
  return (section === undefined ? own : own[section] ?? {}) as T
}
