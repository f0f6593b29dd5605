/**
 * No runtime schema creation: when the tracker tables were not deployed, registration only
 * warns and the first run fails with TRACKER_MISSING naming plugin_data_pipeline_Pipelines.
 * Own file: it drops a table of the in-memory database of this worker.
 */
import cds from '@sap/cds'
import { useConsumer, ql } from '../helpers/consumer'

const ctx = useConsumer()

describe('missing tracker tables', () => {
  test('addPipeline still registers, execute rejects with TRACKER_MISSING naming the table; no target rows are written', async () => {
    await ql.INSERT.into('consumer.LocalBooks').entries([{ ID: 1, title: 'Book 1', author: 'A', stock: 1, modifiedAt: '2026-01-01T00:00:00.000Z' }])
    await (cds as any).db.run('DROP TABLE plugin_data_pipeline_Pipelines')

    await ctx.engine.addPipeline({ name: 'no-tracker', source: { entity: 'consumer.LocalBooks' }, target: { entity: 'consumer.LocalCopies' } } as never)
    expect(ctx.engine.getPipelineNames()).toContain('no-tracker')

    const failure = await ctx.engine.execute('no-tracker').then(() => undefined, (error: unknown) => error as { code?: string; message: string })
    expect(failure).toBeDefined()
    expect(failure!.code).toBe('TRACKER_MISSING')
    expect(failure!.message).toContain('plugin_data_pipeline_Pipelines')
    expect(failure!.message).toMatch(/deploy/)
    expect(await ql.SELECT.from('consumer.LocalCopies')).toEqual([])

    // every trigger keeps failing the same way (no silent table creation)
    await expect(ctx.engine.execute('no-tracker', { async: true })).rejects.toMatchObject({ code: 'TRACKER_MISSING' })
    await expect(ctx.engine.status('no-tracker')).rejects.toMatchObject({ code: 'TRACKER_MISSING' })
  })
})
