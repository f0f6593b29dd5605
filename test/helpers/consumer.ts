/**
 * The consumer app in-process (cds.test) wired to a real provider over HTTP.
 */
import cds from '@sap/cds'
import path from 'node:path'
import { FIXTURES, startProvider, type ProviderControl, type RunningApp } from './apps'
import { sharedProvider } from './shared-provider'
import type DataPipelineService from '../../srv/data-pipeline'
import type { RunOutcome } from '../../lib/engine/run/index'

export interface ConsumerContext {
  provider: RunningApp & { control: ProviderControl }
  engine: DataPipelineService
  test: ReturnType<typeof cds.test>
  /** Executes synchronously and returns the settled `done`. */
  run(name: string, options?: Record<string, unknown>): Promise<RunOutcome>
  /** The provider's request counter. */
  requestCount(): Promise<number>
  /** Requests since `before`: their number and the decoded URLs starting with or containing `match`. */
  readsSince(before: number, match?: (url: string) => boolean): Promise<{ requests: number; reads: string[]; urls: string[] }>
}

/** Call at module top level: takes the worker's provider over (or starts one), boots the consumer, connects the engine. */
export function useConsumer(options: { provider?: Record<string, string> } = {}): ConsumerContext {
  const context = {
    async run(name, options = {}) {
      const { done } = await context.engine.execute(name, options)
      return done
    },
    async requestCount() {
      return (await context.provider.control.stats()).requests
    },
    async readsSince(before, match = url => url.includes('/Books?')) {
      const { requests, urls } = await context.provider.control.stats()
      const count = requests - before
      const recent = count > 0 ? urls.slice(-count) : []
      return { requests: count, reads: recent.filter(match), urls: recent }
    },
  } as ConsumerContext
  beforeAll(async () => {
    // this worker's provider, fresh (test/helpers/shared-provider.ts), unless the file wants one with its own settings
    context.provider = options.provider ? await startProvider(options.provider) : await sharedProvider()
  })
  context.test = cds.test(path.join(FIXTURES, 'consumer'))
  beforeAll(async () => {
    const requires = cds.env.requires as unknown as Record<string, { credentials?: { url: string } }>
    requires.Provider.credentials = { url: `${context.provider.url}/odata/v4/catalog` }
    // the same provider serves OData V2 through @cap-js-community/odata-v2-adapter
    if (requires.ProviderV2) requires.ProviderV2.credentials = { url: `${context.provider.url}/odata/v2/catalog` }
    context.engine = (await cds.connect.to('data-pipeline')) as unknown as DataPipelineService
  })
  afterAll(async () => {
    await context.provider?.stop()
  })
  return context
}

/** CAP's query builders; resolved lazily (touching cds.ql early would load cds.env from the wrong folder). */
export const ql = {
  get SELECT() { return (cds as any).ql.SELECT },
  get INSERT() { return (cds as any).ql.INSERT },
  get UPSERT() { return (cds as any).ql.UPSERT },
  get UPDATE() { return (cds as any).ql.UPDATE },
  get DELETE() { return (cds as any).ql.DELETE },
}

/** Rows of an entity in the app's database. */
export const rowCount = async (entity: string): Promise<number> => ((await ql.SELECT.one.from(entity).columns('count(1) as n')) as { n: number }).n

/** `table` or `view` (or undefined) for a name in the app's SQLite database. */
export async function sqliteType(name: string): Promise<string | undefined> {
  const db = (cds as unknown as { db: { run(query: string, values: unknown[]): Promise<Array<{ type: string }>> } }).db
  return (await db.run('SELECT type FROM sqlite_master WHERE name = ?', [name]))[0]?.type
}
