/**
 * Run retention (README "Run retention"): `cds.requires['data-pipeline'].retention` (settings.ts)
 * and the pruning of a pipeline's runs after a run ended (prune.ts). The engine knows nothing of
 * it: the plugin observes the engine's `PIPELINE.DONE`, which every run (replays included) emits
 * once its outcome is recorded.
 */
import cds from '@sap/cds'
import { EVENTS, SERVICE_NAME } from '../constants.js'
import { pruneAfterRun, stopPruning } from './prune.js'
import { runRetentionSettings } from './settings.js'

export { runRetentionSettings, RETENTION_DEFAULTS, type RunRetentionSettings } from './settings.js'
export { pruneAfterRun, pruneRuns } from './prune.js'

interface EngineService {
  name?: string
  observe?(phase: 'after', event: string, handler: (result: unknown, req: { path?: string }) => void): unknown
}

const observed = new WeakSet<object>()

/** Checks the setting once the app serves (an invalid one stops it, naming the key) and prunes after every run. */
export function registerRunRetention(): void {
  cds.on('served', () => { runRetentionSettings() })
  cds.once('shutdown', () => stopPruning())
  cds.on('connect', (srv: EngineService) => {
    if (srv.name !== SERVICE_NAME || observed.has(srv) || typeof srv.observe !== 'function') return
    observed.add(srv)
    srv.observe('after', EVENTS.DONE, (_result, req) => {
      const path = req.path ?? ''
      if (path.startsWith(`${SERVICE_NAME}.`)) void pruneAfterRun(path.slice(SERVICE_NAME.length + 1))
    })
  })
}
