/**
 * Overrides of onError, schemaDrift and deletes (lib/engine/config/overrides.ts): accepted paths, applied
 * over the coded config without touching it, and validated like the coded config (errors name the key).
 */
import { applyOverrides, flattenOverrides } from '../../lib/engine/config/overrides'
import { resolvePipeline } from '../../lib/engine/config/index'
import type { PipelineConfig } from '../../lib/pipeline/types'

const coded: PipelineConfig = {
  name: 'p', source: { service: 'S', entity: 'Items' }, target: { entity: 'my.Items' },
  deletes: { sweep: { every: '6h' } },
} as PipelineConfig
const effective = (overrides: unknown) => resolvePipeline(applyOverrides(coded, flattenOverrides(overrides)))

describe('overrides of onError, schemaDrift and deletes', () => {
  test('whole settings and single deletes settings are overridable', () => {
    expect(flattenOverrides({ onError: { mode: 'skip', maxSkipped: 5 }, schemaDrift: 'fail', 'deletes.force': true }))
      .toEqual({ onError: { mode: 'skip', maxSkipped: 5 }, schemaDrift: 'fail', 'deletes.force': true })
    const p = effective({ onError: 'skip', schemaDrift: { policy: 'fail', maxAge: '10m' }, 'deletes.force': true, 'deletes.maxShare': 0.9 })
    expect(p.onError.mode).toBe('skip')
    expect(p.schemaDrift?.policy).toBe('fail')
    expect(p.deletes).toMatchObject({ sweep: { interval: 6 * 3_600_000 }, maxShare: 0.9, force: true })
    expect((coded as { deletes: object }).deletes).toEqual({ sweep: { every: '6h' } }) // the coded config is untouched
    expect(effective({ deletes: { sweep: 'always' } }).deletes).toMatchObject({ sweep: { always: true }, maxShare: 0.5 })
    expect(effective({ deletes: null }).deletes).toBeUndefined()
  })

  test('validated like the coded config; other paths stay closed', () => {
    expect(() => effective({ onError: 'ignore' })).toThrow(/onError/)
    expect(() => effective({ schemaDrift: 'sometimes' })).toThrow(/schemaDrift/)
    expect(() => effective({ 'deletes.maxShare': 2 })).toThrow(/deletes\.maxShare/)
    expect(() => flattenOverrides({ 'deletes.unknown': 1 })).toThrow(/deletes\.unknown cannot be overridden/)
  })
})
