/**
 * `management.reuse.api`: adds the management service (and with it the tracker model) to the
 * host's model by adding it to the model roots CAP loads (`cds.env.roots`).
 */
import cds from '@sap/cds'
import { SERVICE_NAME } from './constants.js'

export const MANAGEMENT_MODEL = 'cap-data-pipeline/srv/management'

export interface EngineSettings {
  management?: { reuse?: { api?: boolean; console?: boolean }; inspect?: boolean }
}

export function engineSettings(): EngineSettings | undefined {
  return (cds.env.requires as Record<string, EngineSettings | undefined>)[SERVICE_NAME]
}

export function registerManagementModel(): void {
  if (!engineSettings()?.management?.reuse?.api) return
  const env = cds.env as unknown as { roots: string[] }
  if (!env.roots.includes(MANAGEMENT_MODEL)) env.roots = [...env.roots, MANAGEMENT_MODEL]
}
