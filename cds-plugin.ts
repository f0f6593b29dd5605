/**
 * CAP plugin entry: only wiring. The engine service itself is configured in package.json
 * (`cds.requires['data-pipeline']`) and created by `cds.connect.to('data-pipeline')`.
 */
import { registerLifecycle } from './lib/lifecycle.js'

registerLifecycle()
