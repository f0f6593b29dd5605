/**
 * CAP plugin entry: only wiring. The engine service itself is configured in package.json
 * (`cds.requires['data-pipeline']`) and created by `cds.connect.to('data-pipeline')`.
 */
import { registerLifecycle } from './lib/lifecycle.js'
import { registerManagementModel } from './lib/mounting.js'
import { registerConsole } from './lib/console.js'
import { registerAddCommands } from './lib/add/index.js'
import { registerLogRedaction } from './lib/security/redact.js'
import { registerFederation } from './lib/federation/index.js'
import { registerTenancy } from './lib/tenancy/index.js'
import { registerTelemetry } from './lib/telemetry/index.js'
import { registerPublish } from './lib/publish/index.js'
import { registerRunRetention } from './lib/retention/index.js'

registerLifecycle()
registerManagementModel()
registerConsole()
registerAddCommands()
registerLogRedaction()
registerFederation()
registerTenancy()
registerTelemetry()
registerPublish()
registerRunRetention()
