/**
 * OData target against a real CAP provider, custom source/target adapters, multi-source
 * fan-in from two real providers, and event-triggered runs over CAP messaging.
 */
import cds from '@sap/cds'
import path from 'node:path'
import { createRequire } from 'node:module'
import { FIXTURES, type ProviderControl, type RunningApp } from '../helpers/apps'
import { sharedProvider } from '../helpers/shared-provider'
import { ql } from '../helpers/consumer'
import type DataPipelineService from '../../srv/data-pipeline'

// the plugin as CAP loads it (same module instances, so `instanceof` checks hold); loaded
// lazily: importing it at module level would load cds.env before cds.test picks the folder
const plugin = () => createRequire(__filename)('cap-data-pipeline') as typeof import('../../index')

type Provider = RunningApp & { control: ProviderControl }
const providers = {} as { north: Provider; south: Provider }
let engine: DataPipelineService

beforeAll(async () => {
  ;[providers.north, providers.south] = await Promise.all([sharedProvider(0), sharedProvider(1)])
})
cds.test(path.join(FIXTURES, 'fanin'))
beforeAll(async () => {
  const requires = cds.env.requires as unknown as Record<string, { credentials?: { url: string } }>
  requires.NorthProvider.credentials = { url: `${providers.north.url}/odata/v4/catalog` }
  requires.SouthProvider.credentials = { url: `${providers.south.url}/odata/v4/catalog` }
  engine = (await cds.connect.to('data-pipeline')) as unknown as DataPipelineService
})
afterAll(async () => {
  await Promise.all([providers.north?.stop(), providers.south?.stop()])
})

describe('OData target', () => {
  test('moves local rows to the provider with true upserts: re-runs create no duplicates', async () => {
    await providers.north.control.reset()
    await providers.north.control.seed({ from: 1, count: 3 }) // IDs 1..3 already exist remotely
    await ql.INSERT.into('fanin.Outbox').entries(Array.from({ length: 5 }, (_, i) => ({ ID: i + 1, title: `Local ${i + 1}`, author: 'Local', stock: i, modifiedAt: '2026-02-01T00:00:00.000Z' })))
    await engine.addPipeline({ name: 'outbox', source: { entity: 'fanin.Outbox' }, target: { service: 'NorthProvider', entity: 'Books' }, mode: 'delta' })

    const first = await (await engine.execute('outbox')).done
    expect(first.statistics).toEqual({ created: 2, updated: 3, deleted: 0 })
    const second = await (await engine.execute('outbox')).done
    expect(second.statistics.created).toBe(0)

    const remote = await providers.north.control.books('?$orderby=ID')
    expect(remote.map(r => r.ID)).toEqual([1, 2, 3, 4, 5])
    expect(remote.map(r => r.title)).toEqual(['Local 1', 'Local 2', 'Local 3', 'Local 4', 'Local 5'])
    const { urls } = await providers.north.control.stats()
    expect(urls.some(u => u.includes('$batch'))).toBe(true)
  })

  test('a full run against the OData target deletes remote rows page by page', async () => {
    await providers.north.control.reset()
    await providers.north.control.seed({ from: 100, count: 7 })
    await ql.DELETE.from('fanin.Outbox')
    await ql.INSERT.into('fanin.Outbox').entries([{ ID: 1, title: 'only' }])
    await engine.addPipeline({ name: 'outbox-full', source: { entity: 'fanin.Outbox' }, target: { service: 'NorthProvider', entity: 'Books' }, mode: 'full' })
    const outcome = await (await engine.execute('outbox-full')).done
    expect(outcome.statistics).toEqual({ created: 1, updated: 0, deleted: 7 })
    const remote = await providers.north.control.books()
    expect(remote.map(r => r.ID)).toEqual([1])
  })
})

describe('custom adapters', () => {
  const written: Array<Record<string, unknown>> = []
  const adapters = () => {
    const { BaseSourceAdapter, BaseTargetAdapter } = plugin()
    class CountingSource extends BaseSourceAdapter {
      async *readStream() {
        yield [{ ID: 1, title: 'one' }, { ID: 2, title: 'two' }]
        yield [{ ID: 3, title: 'three' }]
      }
    }
    class MemoryTarget extends BaseTargetAdapter {
      capabilities() {
        return { keyAddressableUpsert: true, truncate: true, batchDelete: false, batchInsert: true }
      }
      async writeBatch(records: Array<Record<string, unknown>>) {
        written.push(...records)
        return { created: records.length, updated: 0, deleted: 0 }
      }
      async truncate() {
        const count = written.length
        written.length = 0
        return count
      }
      async deleteSlice() {
        return 0
      }
    }
    class AppendOnlyTarget extends MemoryTarget {
      override capabilities() {
        return { keyAddressableUpsert: false, truncate: false, batchDelete: false, batchInsert: true }
      }
    }
    return { CountingSource, MemoryTarget, AppendOnlyTarget }
  }

  test('a custom source and a custom target run like built-in ones', async () => {
    const { CountingSource, MemoryTarget } = adapters()
    await engine.addPipeline({ name: 'custom', source: { adapter: CountingSource }, target: { adapter: MemoryTarget } })
    const outcome = await (await engine.execute('custom')).done
    expect(outcome.statistics.created).toBe(3)
    expect(written.map(r => r.title)).toEqual(['one', 'two', 'three'])
  })

  test('registration names the capability a custom target lacks for the mode', async () => {
    const { CountingSource, AppendOnlyTarget } = adapters()
    await expect(engine.addPipeline({ name: 'append-delta', source: { adapter: CountingSource }, target: { adapter: AppendOnlyTarget }, mode: 'delta' }))
      .rejects.toThrow(/keyAddressableUpsert/)
    await expect(engine.addPipeline({ name: 'append-full', source: { adapter: CountingSource }, target: { adapter: AppendOnlyTarget }, mode: 'full' }))
      .rejects.toThrow(/'truncate' or 'batchDelete'/)
  })

  test('an adapter that does not extend the base class is rejected', async () => {
    class NotAnAdapter {}
    await expect(engine.addPipeline({ name: 'bogus-adapter', source: { adapter: NotAnAdapter as never }, target: { entity: 'fanin.PlainBooks' } }))
      .rejects.toThrow(/source.adapter must extend BaseSourceAdapter/)
  })
})

describe('multi-source fan-in', () => {
  beforeAll(async () => {
    await Promise.all([providers.north.control.reset(), providers.south.control.reset()])
    await providers.north.control.seed({ from: 1, count: 4, author: 'north' })
    await providers.south.control.seed({ from: 1, count: 6, author: 'south' }) // same IDs, other provider
    await engine.addPipeline({ name: 'books-north', source: { service: 'NorthProvider', entity: 'Books', origin: 'north' }, target: { entity: 'fanin.Books' } })
    await engine.addPipeline({ name: 'books-south', source: { service: 'SouthProvider', entity: 'Books', origin: 'south' }, target: { entity: 'fanin.Books' } })
    await (await engine.execute('books-north')).done
    await (await engine.execute('books-south')).done
  })

  test('sibling pipelines produce disjoint rows keyed by origin', async () => {
    const rows = await ql.SELECT.from('fanin.Books').columns('source', 'count(1) as count').groupBy('source').orderBy('source')
    expect(rows).toEqual([{ source: 'north', count: 4 }, { source: 'south', count: 6 }])
    expect((await engine.status('books-north')).origin).toBe('north')
  })

  test("a full run and a flush delete only their origin's rows", async () => {
    await providers.south.control.reset()
    await providers.south.control.seed({ from: 1, count: 2 })
    const outcome = await (await engine.execute('books-south', { mode: 'full' })).done
    // counted by key against the origin's rows before: keys 1, 2 stay (their author changed), 4 are gone
    expect(outcome.statistics).toEqual({ created: 0, updated: 2, deleted: 4 })
    expect(await ql.SELECT.from('fanin.Books').where({ source: 'north' })).toHaveLength(4)
    await engine.flushPipeline('books-north')
    expect(await ql.SELECT.from('fanin.Books').where({ source: 'north' })).toHaveLength(0)
    expect(await ql.SELECT.from('fanin.Books').where({ source: 'south' })).toHaveLength(2)
  })

  test('origin with source.query, or into a target without the key column, is rejected at registration', async () => {
    await expect(engine.addPipeline({ name: 'fanin-query', source: { query: () => ({ SELECT: {} }), origin: 'x' }, target: { entity: 'fanin.Books' } }))
      .rejects.toThrow(/source.origin/)
    await expect(engine.addPipeline({ name: 'fanin-plain', source: { service: 'NorthProvider', entity: 'Books', origin: 'north' }, target: { entity: 'fanin.PlainBooks' } }))
      .rejects.toThrow(/plugin.data_pipeline.sourced/)
  })
})

describe('event trigger', () => {
  test('a message on a messaging topic starts a run with trigger event', async () => {
    await providers.north.control.seed({ from: 500, count: 2 })
    await engine.addPipeline({ name: 'books-on-event', source: { service: 'NorthProvider', entity: 'Books', origin: 'north-events' }, target: { entity: 'fanin.Books' } })
    const messaging = (await cds.connect.to('test-messaging', { kind: 'local-messaging' } as never)) as unknown as { on: (e: string, h: () => unknown) => void; emit: (e: string, d: object) => Promise<unknown> }
    engine.executeOn(messaging, 'catalog/BooksChanged', 'books-on-event')
    await messaging.emit('catalog/BooksChanged', { IDs: [500, 501] })
    let runs: Array<Record<string, unknown>> = []
    for (let i = 0; i < 50 && !runs.some(r => r.status === 'idle'); i++) {
      await new Promise(resolve => setTimeout(resolve, 100))
      runs = await ql.SELECT.from('plugin.data_pipeline.PipelineRuns').where({ pipeline_name: 'books-on-event' })
    }
    expect(runs).toHaveLength(1)
    expect(runs[0]).toMatchObject({ trigger: 'event', status: 'idle' })
    expect(await ql.SELECT.from('fanin.Books').where({ source: 'north-events', ID: { in: [500, 501] } })).toHaveLength(2)
  })
})
