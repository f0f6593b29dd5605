/**
 * The landscape's data and keyboard model (issue 25, point 6): one node per remote entity whatever
 * declared the pipeline (an annotation says `Orders` of `ProviderService`, code may say
 * `ProviderService.Orders`), a state per pipeline node (failed, stale, customized), and the arrow
 * keys inside the graph (one tab stop).
 */
import { entityInService, landscapeMetadata, type PipelineFacts } from '../../lib/management/metadata'
import { move } from '../../app/pipeline-console/webapp/control/roving'

const facts = (name: string, source: Record<string, unknown>, extra: Partial<PipelineFacts> & { maxStaleness?: number } = {}): PipelineFacts => ({
  pipeline: {
    name, shape: 'entity', mode: 'delta', maxStaleness: extra.maxStaleness,
    config: { source, target: { entity: `local.${name}` } },
  } as unknown as PipelineFacts['pipeline'],
  hooks: [], overrides: {}, drift: null, ...extra,
})

describe('landscape metadata', () => {
  test('an entity named with its service is the entity of that service', () => {
    expect(entityInService('ProviderService', 'ProviderService.Orders')).toBe('Orders')
    expect(entityInService('ProviderService', 'Orders')).toBe('Orders')
    expect(entityInService('sap.s4.API_BP', 'sap.s4.API_BP.A_BusinessPartner')).toBe('A_BusinessPartner')
    expect(entityInService('Provider', 'ProviderService.Orders')).toBe('ProviderService.Orders') // another service's prefix stays
    expect(entityInService(undefined, 'demo.Orders')).toBe('demo.Orders') // local entities keep their full name
  })

  test('one source node for a remote entity declared by an annotation and by code', () => {
    const result = landscapeMetadata([
      facts('demo.Orders', { service: 'ProviderService', entity: 'Orders' }),
      facts('order-copies', { service: 'ProviderService', entity: 'ProviderService.Orders' }),
    ])
    const sources = result.nodes.filter(n => n.kind === 'source')
    expect(sources.map(n => [n.key, n.title])).toEqual([['source:ProviderService/Orders', 'Orders']])
    expect(result.lines.filter(l => l.from === 'source:ProviderService/Orders').map(l => l.to).sort()).toEqual(['pipeline:demo.Orders', 'pipeline:order-copies'])
  })

  test('pipeline nodes carry their state: failed, stale, customized', () => {
    const result = landscapeMetadata([
      facts('failed', { service: 'S', entity: 'A' }, { status: 'failed', hooks: [{ phase: 'before', event: 'PIPELINE.READ', scope: 'failed', handler: 'h' }] }),
      facts('stale', { service: 'S', entity: 'A' }, { maxStaleness: 60_000, lastSuccess: null }),
      facts('customized', { service: 'S', entity: 'A' }, { overrides: { 'source.batchSize': 5 } as PipelineFacts['overrides'] }),
      facts('plain', { service: 'S', entity: 'A' }),
    ])
    const state = (name: string) => result.nodes.find(n => n.key === `pipeline:${name}`)?.state
    expect([state('failed'), state('stale'), state('customized'), state('plain')]).toEqual(['failed', 'stale', 'customized', undefined])
  })
})

describe('graph keyboard (roving focus)', () => {
  // two columns: a (y 0), b (y 100) | c (y 90)
  const spots = [{ key: 'c', layer: 1, y: 90 }, { key: 'a', layer: 0, y: 0 }, { key: 'b', layer: 0, y: 100 }]
  test('up/down in reading order, left/right to the nearest node of the next column, home/end', () => {
    expect(move(spots, 'a', 'ArrowDown')).toBe('b')
    expect(move(spots, 'b', 'ArrowDown')).toBe('c')
    expect(move(spots, 'c', 'ArrowDown')).toBeUndefined()
    expect(move(spots, 'a', 'ArrowUp')).toBeUndefined()
    expect(move(spots, 'a', 'ArrowRight')).toBe('c')
    expect(move(spots, 'c', 'ArrowLeft')).toBe('b')
    expect(move(spots, 'c', 'ArrowRight')).toBeUndefined()
    expect(move(spots, 'b', 'Home')).toBe('a')
    expect(move(spots, 'a', 'End')).toBe('c')
    expect(move(spots, 'a', 'Tab')).toBeUndefined()
  })

  test('laid out in rows (a timeline\'s lanes): left/right in reading order, up/down to the nearest node of the next lane', () => {
    // lane 0: a (x 0), b (x 100); lane 1: c (x 90)
    expect(move(spots, 'a', 'ArrowRight', 'rows')).toBe('b')
    expect(move(spots, 'b', 'ArrowRight', 'rows')).toBe('c')
    expect(move(spots, 'c', 'ArrowRight', 'rows')).toBeUndefined()
    expect(move(spots, 'b', 'ArrowLeft', 'rows')).toBe('a')
    expect(move(spots, 'a', 'ArrowDown', 'rows')).toBe('c')
    expect(move(spots, 'c', 'ArrowUp', 'rows')).toBe('b')
    expect(move(spots, 'a', 'ArrowUp', 'rows')).toBeUndefined()
    expect(move(spots, 'c', 'ArrowDown', 'rows')).toBeUndefined()
    expect(move(spots, 'c', 'Home', 'rows')).toBe('a')
    expect(move(spots, 'a', 'End', 'rows')).toBe('c')
  })
})
