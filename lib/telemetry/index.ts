/**
 * Optional OpenTelemetry export of pipeline runs (README "Monitoring with OpenTelemetry"): when the
 * app resolves `@opentelemetry/api` (as `@cap-js/telemetry` brings it), spans and metrics of every
 * run of the `data-pipeline` service go to the providers `@cap-js/telemetry` registered. Without
 * the API nothing is loaded and nothing changes; without a registered provider the API is a no-op.
 */
import cds from '@sap/cds'
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { SERVICE_NAME } from '../constants.js'
import { instrument, type EventSource } from './instrument.js'
import { loadOtelApi } from './otel.js'
import { currentContext, onCds } from '../cap/index.js'

const LOG = cds.log('data-pipeline|telemetry')
const instrumented = new WeakSet<object>()

export function registerTelemetry(): void {
  if (cds.env.requires?.['data-pipeline']?.telemetry === false) return
  onCds('connect', (srv: EventSource & { name?: string }) => {
    if (srv.name !== SERVICE_NAME || instrumented.has(srv)) return
    instrumented.add(srv)
    const api = loadOtelApi(cds.root)
    if (!api) {
      if (LOG._debug) LOG.debug('no @opentelemetry/api in the app: pipeline runs are not exported')
      return
    }
    instrument(srv, api, { version: version(), tenant: () => currentContext()?.tenant ?? undefined })
    if (LOG._debug) LOG.debug('pipeline runs are exported through the OpenTelemetry API')
  })
}

function version(): string | undefined {
  try {
    return (JSON.parse(readFileSync(path.resolve(__dirname, '../../../package.json'), 'utf8')) as { version?: string }).version
  } catch {
    return undefined
  }
}
