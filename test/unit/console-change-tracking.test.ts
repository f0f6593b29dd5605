/**
 * The console's overview of an `odata-delta` pipeline (issue 38, point 2): the tracker's lastKey is
 * shown as its "Delta link" (stored relative to the service root) with whether change tracking is
 * initialised; other pipelines keep "Last key". The logic (app/pipeline-console/webapp/model/
 * changeTracking.ts) with the console's own texts, and the overview's bindings to it.
 */
import fs from 'node:fs'
import path from 'node:path'
import { changeTracking, changeTrackingState, lastKeyLabel, lastKeyValue, readsDeltaLinks } from '../../app/pipeline-console/webapp/model/changeTracking'

const WEBAPP = path.join(__dirname, '../../app/pipeline-console/webapp')
const texts = Object.fromEntries(fs.readFileSync(path.join(WEBAPP, 'i18n/i18n.properties'), 'utf8').split('\n')
  .filter(line => line.includes('=') && !line.startsWith('#')).map(line => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]))
const text = (key: string) => {
  expect(texts, key).toHaveProperty(key)
  return texts[key]
}

const DELTA = JSON.stringify({ name: 'products', source: { service: 'Changes', entity: 'Products' }, delta: { mode: 'odata-delta' } })
const TIMESTAMP = JSON.stringify({ name: 'books', source: { service: 'Provider', entity: 'Books' }, delta: { field: 'modifiedAt' } })

describe('console: the change tracking state of an odata-delta pipeline', () => {
  test('an odata-delta pipeline shows its delta link and that change tracking is initialised', () => {
    expect(readsDeltaLinks(DELTA, null)).toBe(true)
    expect(lastKeyLabel(text, DELTA, null)).toBe('Delta link')
    expect(lastKeyValue('/Products?$deltatoken=2', DELTA, null)).toBe('/Products?$deltatoken=2')
    expect(changeTracking(text, '/Products?$deltatoken=2', DELTA, null)).toMatch(/^initialised/)
    expect(changeTrackingState('/Products?$deltatoken=2')).toBe('Success')
  })

  test('before its first tracked read (or after a flush): not initialised', () => {
    expect(lastKeyValue(null, DELTA, null)).toBe('–')
    expect(changeTracking(text, null, DELTA, null)).toMatch(/^not initialised/)
    expect(changeTrackingState(null)).toBe('Warning')
  })

  test('delta.mode from an override counts as well; other pipelines keep "Last key" and no change tracking row', () => {
    expect(lastKeyLabel(text, TIMESTAMP, JSON.stringify({ 'delta.mode': 'odata-delta' }))).toBe('Delta link')
    expect(lastKeyLabel(text, DELTA, JSON.stringify({ delta: { mode: 'timestamp' } }))).toBe('Last key')
    expect(readsDeltaLinks(TIMESTAMP, null)).toBe(false)
    expect(lastKeyValue('4711', TIMESTAMP, null)).toBe('4711')
    expect(changeTracking(text, '4711', TIMESTAMP, null)).toBe('')
  })

  test("the overview binds the tracker's lastKey through these formatters", () => {
    const view = fs.readFileSync(path.join(WEBAPP, 'view/Detail.view.xml'), 'utf8')
    expect(view).toMatch(/formatter: '\.formatLastKeyLabel'/)
    expect(view).toMatch(/<Text id="detailLastKey"[^>]*\{ path: 'lastKey'[^>]*formatter: '\.formatLastKey'/)
    expect(view).toMatch(/<ObjectStatus id="detailChangeTracking"[^>]*formatter: '\.readsDeltaLinks'[\s\S]*?formatter: '\.formatChangeTracking'/)
    expect(view).not.toMatch(/<Text text="\{lastKey\}"\/>/)
  })
})
