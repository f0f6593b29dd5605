/**
 * The plugin's `cds add` facets, registered through CAP's `cds add` plugin API (`cds.add.register`,
 * present only while @sap/cds-dk runs `cds add` or `cds help`):
 *
 * - `cds add data-pipeline`: configuration, mocked users, model, an .http file and a replicate example
 *   for a new project (./data-pipeline.ts);
 * - `cds add pipeline-console`: a copy of the built console to customize (../console.ts).
 */
import cds from '@sap/cds'
import { ADD_COMMAND as CONSOLE_FACET, copyConsole } from '../console.js'
import { addDataPipeline, addTenancyConfig, DATA_PIPELINE_FACET, type AddApi } from './data-pipeline.js'
import { completeSecurity, XS_SECURITY } from './xs-security.js'
import { engineSettings } from '../mounting.js'
import { MANAGEMENT_SERVICE } from '../security/roles.js'
import { cdsAdd, cdsCli } from '../cap/index.js'

interface AddPluginBase {
  new (): { options(): Record<string, unknown> }
}
interface CdsAdd extends AddApi {
  Plugin: AddPluginBase
  register(name: string, plugin: unknown): void
}

const cli = cdsCli
const FORCE = { force: { type: 'boolean', help: 'overwrite files an earlier run created' } }

/** Whether the project serves the management API: `management.reuse.api`, or its srv/ model names the service. */
async function servesManagementApi(): Promise<boolean> {
  if (engineSettings()?.management?.reuse?.api) return true
  try {
    // silent: no `loaded` event, this load is only a look
    const csn = await cds.load(cds.env.folders.srv, { silent: true } as never)
    return Boolean(csn.definitions?.[MANAGEMENT_SERVICE])
  } catch {
    return false // no model under srv/
  }
}

export function registerAddCommands(): void {
  const command = cli()?.command
  if (command !== 'add' && command !== 'help') return
  const add = cdsAdd<CdsAdd>()
  if (!add?.register || !add.Plugin) return

  add.register(DATA_PIPELINE_FACET, class DataPipelinePlugin extends add.Plugin {
    static help() {
      return 'cap-data-pipeline: configuration, mocked users, tracker model, .http requests, a replicate example'
    }
    override options() {
      return FORCE
    }
    async run() {
      await addDataPipeline(cds.root, add, { force: Boolean(cli()?.options?.force) })
    }
    // after every `cds add` of a project with the plugin, once cds-dk's own facets (xsuaa) have combined
    async combine() {
      await addTenancyConfig(cds.root, add)
      if (!(await servesManagementApi())) return
      const added = completeSecurity(cds.root)
      if (added.length) console.log(`  adding ${added.join(', ')} to ${XS_SECURITY}`)
    }
  })

  add.register(CONSOLE_FACET, class PipelineConsolePlugin extends add.Plugin {
    static help() {
      return 'copy the cap-data-pipeline console into app/pipeline-console'
    }
    override options() {
      return FORCE
    }
    async run() {
      copyConsole(cds.root, { force: Boolean(cli()?.options?.force) })
    }
  })
}
