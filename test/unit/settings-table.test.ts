/**
 * The one settings table (issue 35, point 4: lib/engine/config/settings.ts): every key a config
 * accepts has an entry, what is derived from the table (overridable paths, served rules, tenant
 * paths) is what it was, and a new entry of a simple type is enforced by resolvePipeline without
 * further code.
 */
import { readFileSync } from 'node:fs'
import path from 'node:path'
import { SETTINGS, RULE_KEYS, TENANT_PATHS, type SettingEntry } from '../../lib/engine/config/settings'
import { checkSetting, settingRules } from '../../lib/engine/config/rules'
import { OVERRIDABLE_PATHS } from '../../lib/engine/config/overrides'
import { resolvePipeline } from '../../lib/engine/config/index'
import { REPLICATE_KEYS } from '../../lib/constants'
import type { PipelineConfig } from '../../lib/pipeline/types'
import { PipelineError } from '../../lib/pipeline/errors'

const base = (): PipelineConfig => ({ name: 'p', source: { entity: 'consumer.LocalBooks' }, target: { entity: 'consumer.LocalCopies' } })

/** The keys of an interface of lib/pipeline/types.ts, as declared. */
function keysOf(name: string): string[] {
  const text = readFileSync(path.join(__dirname, '../../lib/pipeline/types.ts'), 'utf8')
  const body = new RegExp(`export interface ${name} \\{([\\s\\S]*?)\\n\\}`).exec(text)?.[1]
  if (!body) throw new Error(`interface ${name} not found in lib/pipeline/types.ts`)
  // members at the first indentation level only (comments skipped)
  return [...body.matchAll(/^ {2}(\w+)\??:/gm)].map(m => m[1])
}

/** Every dotted path a config accepts, from PipelineConfig and the interfaces of its parts. */
function configPaths(): string[] {
  const parts: Record<string, string> = { source: 'SourceConfig', target: 'TargetConfig', delta: 'DeltaConfig', retry: 'RetryConfig', refresh: 'RefreshConfig', deletes: 'DeletesConfig' }
  const paths: string[] = []
  for (const key of keysOf('PipelineConfig')) {
    paths.push(key)
    if (parts[key]) for (const inner of keysOf(parts[key])) paths.push(`${key}.${inner}`)
  }
  return paths
}

describe('the settings table', () => {
  test('every key a pipeline config accepts has an entry (an object part: its entry or its keys\' entries), and no entry is unknown', () => {
    const paths = configPaths()
    expect(paths.length).toBeGreaterThan(30)
    const inTable = (key: string) => key in SETTINGS || Object.keys(SETTINGS).some(each => each.startsWith(`${key}.`))
    expect(paths.filter(key => !inTable(key)), 'config keys without an entry').toEqual([])
    expect(Object.keys(SETTINGS).filter(key => !paths.includes(key)), 'entries for no config key').toEqual([])
  })

  test('every entry has a description; entries with their own parser name it; types are known', () => {
    for (const [key, entry] of Object.entries(SETTINGS)) {
      expect(entry.description, key).toMatch(/\S/)
      expect(['enum', 'integer', 'number', 'boolean', 'text', 'schedule', 'duration', 'json', 'object', 'function'], key).toContain(entry.type)
      if (['schedule', 'duration', 'json'].includes(entry.type)) expect(entry.parser, `${key} needs its parser`).toMatch(/\w+ \(lib\/.+\.ts\)/)
    }
    for (const key of ['schedule', 'maxStaleness', 'delta.settle', 'deletes', 'schemaDrift', 'onError', 'events', 'rest']) expect(SETTINGS[key].parser, key).toBeDefined()
  })

  test('the overridable paths, the tenant paths and the served rules are derived from it', () => {
    expect(OVERRIDABLE_PATHS).toEqual([
      'description', 'mode', 'enabled', 'schedule', 'transaction', 'maxStaleness', 'parallel',
      'source.batchSize', 'delta.field', 'delta.mode', 'delta.dateField', 'delta.timeField',
      'retry.maxRetries', 'retry.baseDelay', 'retry.maxDelay',
      'onError', 'schemaDrift', 'deletes', 'deletes.sweep', 'deletes.maxShare', 'deletes.force',
    ])
    expect(TENANT_PATHS).toEqual(['mode', 'schedule'])
    const rules = settingRules()
    expect(Object.keys(rules)).toEqual([...OVERRIDABLE_PATHS])
    // a served rule holds the rule's keys only (not the description, default, parser, message)
    for (const [key, rule] of Object.entries(rules)) expect(Object.keys(rule).filter(each => !(RULE_KEYS as readonly string[]).includes(each)), key).toEqual([])
  })

  test('the keys @federation.replicate accepts that are settings are the entries marked annotation', () => {
    const settings = Object.entries(SETTINGS).filter(([, entry]) => entry.annotation).map(([key]) => key)
    expect([...settings].sort()).toEqual(REPLICATE_KEYS.filter(key => key !== 'preload').sort())
  })

  test('checkSetting keeps an entry\'s own message and names the path', () => {
    expect(() => checkSetting('target.kind', 'soap')).toThrow("Invalid pipeline config: target.kind 'soap' is unknown; expected odata, odata-v2 or hcql")
    expect(() => checkSetting('leaseDuration', 100)).toThrow('leaseDuration must be an integer of at least 500 ms')
    expect(() => checkSetting('name', undefined)).toThrow('name is required and must be a non-empty string')
    expect(() => checkSetting('name', '  ')).toThrow('name is required and must be a non-empty string')
    expect(() => checkSetting('name', 'x'.repeat(256))).toThrow('name is 256 characters long; at most 255 are stored')
    expect(() => checkSetting('no.such', 1)).toThrow(/not in the settings table/)
  })

  test('a new entry of a simple type is enforced by resolvePipeline without further code', () => {
    const added: Record<string, SettingEntry> = {
      'source.pageLimit': { type: 'integer', min: 1, max: 5, overridable: false, description: 'test entry' },
      tag: { type: 'enum', values: ['a', 'b'], overridable: false, description: 'test entry' },
    }
    Object.assign(SETTINGS, added)
    try {
      const withValues = (source: number, tag: string) => ({ ...base(), source: { ...base().source, pageLimit: source }, tag }) as unknown as PipelineConfig
      expect(() => resolvePipeline(withValues(3, 'a'))).not.toThrow()
      for (const [config, key] of [[withValues(9, 'a'), 'source.pageLimit'], [withValues(2, 'c'), 'tag']] as const) {
        let error: unknown
        try { resolvePipeline(config) } catch (caught) { error = caught }
        expect(error).toBeInstanceOf(PipelineError)
        expect((error as PipelineError).target).toBe(key)
      }
      expect(() => resolvePipeline({ ...base(), tag: null } as unknown as PipelineConfig)).not.toThrow() // null: the default
    } finally {
      for (const key of Object.keys(added)) delete SETTINGS[key]
    }
    expect(() => resolvePipeline(base())).not.toThrow()
  })
})
