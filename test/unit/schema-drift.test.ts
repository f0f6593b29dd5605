/**
 * Schema drift (docs/concepts/drift.md): the EDMX reading of `$metadata` (V4 and V2), the
 * `schemaDrift` setting, and the comparison rules — which differences are breaking.
 */
import { parseEdmx, entityOfCsn, type LiveShape } from '../../lib/adapters/source/live-shape'
import { compareShapes } from '../../lib/engine/drift/index'
import { narrowerTarget } from '../../lib/engine/drift/shapes'
import { resolveSchemaDrift } from '../../lib/engine/config/index'
import type { PreparedPipeline } from '../../lib/engine/run/index'
import type { CsnEntity } from '../../lib/model/csn'

describe('parseEdmx', () => {
  test('V4: entity sets with their types\' properties, alias-qualified types and base types', () => {
    const xml = `<?xml version="1.0"?>
      <edmx:Edmx Version="4.0" xmlns:edmx="http://docs.oasis-open.org/odata/ns/edmx"><edmx:DataServices>
        <Schema Namespace="my.ns" Alias="A" xmlns="http://docs.oasis-open.org/odata/ns/edm">
          <!-- <EntityType Name="Commented"/> -->
          <EntityType Name="Base" Abstract="true"><Key><PropertyRef Name="ID"/></Key><Property Name="ID" Type="Edm.Guid" Nullable="false"/></EntityType>
          <EntityType Name="Orders" BaseType="A.Base">
            <Property Name="note" Type="Edm.String" MaxLength="500"/>
            <Property Name="total" Type="Edm.Decimal" Precision="15" Scale="3"/>
            <Property Name="count" Type="Edm.Int64"/>
            <Property Name="at" Type="Edm.DateTimeOffset" Precision="7"/>
            <Property Name="day" Type="Edm.Date"/>
            <Property Name="time" Type="Edm.TimeOfDay"/>
            <NavigationProperty Name="items" Type="Collection(my.ns.Items)"/>
          </EntityType>
          <EntityContainer Name="C"><EntitySet Name="Orders" EntityType="A.Orders"/><EntitySet Name="Gone" EntityType="my.ns.Missing"/></EntityContainer>
        </Schema></edmx:DataServices></edmx:Edmx>`
    const sets = parseEdmx(xml)
    expect([...sets.keys()]).toEqual(['Orders'])
    expect(sets.get('Orders')).toEqual({
      ID: { type: 'cds.UUID' },
      note: { type: 'cds.String', length: 500 },
      total: { type: 'cds.Decimal', precision: 15, scale: 3 },
      count: { type: 'cds.Int64' },
      at: { type: 'cds.Timestamp' },
      day: { type: 'cds.Date' },
      time: { type: 'cds.Time' },
    })
  })

  test('V2: Edm.DateTime with display-format Date is a Date, Edm.Time a Time, Edm.DateTime a DateTime', () => {
    const xml = `<edmx:Edmx Version="1.0" xmlns:edmx="http://schemas.microsoft.com/ado/2007/06/edmx" xmlns:sap="http://www.sap.com/Protocols/SAPData"><edmx:DataServices>
      <Schema Namespace="S" xmlns="http://schemas.microsoft.com/ado/2008/09/edm">
        <EntityContainer Name="C"><EntitySet Name="Books" EntityType="S.Books"/></EntityContainer>
        <EntityType Name="Books"><Property Name="d" Type="Edm.DateTime" sap:display-format="Date"/><Property Name="t" Type="Edm.Time"/><Property Name="dt" Type="Edm.DateTime"/><Property Name="s" Type="Edm.String"/></EntityType>
      </Schema></edmx:DataServices></edmx:Edmx>`
    expect(parseEdmx(xml).get('Books')).toEqual({ d: { type: 'cds.Date' }, t: { type: 'cds.Time' }, dt: { type: 'cds.DateTime' }, s: { type: 'cds.String' } })
  })

  test('$csn: the service-relative entity, derived types resolved, associations left out', () => {
    const csn = { definitions: {
      Svc: { kind: 'service' },
      'Svc.Books': { kind: 'entity', elements: { ID: { key: true, type: 'cds.Integer' }, code: { type: 'my.Code' }, author: { type: 'cds.Association', target: 'Svc.Authors' } } },
      'my.Code': { kind: 'type', type: 'cds.String', length: 3 },
    } }
    expect(entityOfCsn(csn, 'Books')).toEqual({ ID: { type: 'cds.Integer' }, code: { type: 'cds.String', length: 3 } })
    expect(entityOfCsn(csn, 'Nope')).toBeUndefined()
  })
})

describe('schemaDrift setting', () => {
  test('policies and maxAge; errors name the key', () => {
    expect(resolveSchemaDrift('fail', 'schemaDrift')).toEqual({ policy: 'fail' })
    expect(resolveSchemaDrift({ maxAge: '30m' }, 'schemaDrift')).toEqual({ policy: 'warn', maxAge: 1_800_000 })
    expect(resolveSchemaDrift({ policy: 'ignore', maxAge: 0 }, 'schemaDrift')).toEqual({ policy: 'ignore', maxAge: 0 })
    expect(() => resolveSchemaDrift('strict', 'schemaDrift')).toThrow(expect.objectContaining({ target: 'schemaDrift' }))
    expect(() => resolveSchemaDrift({ policy: 'x' }, 'schemaDrift')).toThrow(expect.objectContaining({ target: 'schemaDrift.policy' }))
    expect(() => resolveSchemaDrift({ maxAge: -5 }, 'schemaDrift')).toThrow(expect.objectContaining({ target: 'schemaDrift.maxAge' }))
    expect(() => resolveSchemaDrift({ every: 3 }, 'schemaDrift')).toThrow(expect.objectContaining({ target: 'schemaDrift.every' }))
  })
})

describe('compareShapes', () => {
  const entity = (name: string, elements: Record<string, object>): CsnEntity => ({ name, kind: 'entity', elements: elements as CsnEntity['elements'] })
  const imported = entity('API.Orders', {
    ID: { key: true, type: 'cds.Integer' }, qty: { type: 'cds.Integer' }, code: { type: 'cds.String', length: 10 }, amount: { type: 'cds.Decimal', precision: 9, scale: 2 }, at: { type: 'cds.Timestamp' },
  })
  const prepared = (target: CsnEntity): PreparedPipeline => ({
    pipeline: { name: 'p', config: { name: 'p', source: { service: 'API', entity: 'Orders' }, target: {} } },
    source: { entityDefinition: () => imported, watermarkPlan: () => ({ mode: 'timestamp', field: 'at' }) },
    target: { entityDefinition: () => target },
    mapping: Object.keys(target.elements).map(name => ({ source: name, target: name })),
  }) as unknown as PreparedPipeline
  const live = (elements: LiveShape['elements']): LiveShape => ({ basis: '$metadata', fetchedAt: new Date().toISOString(), elements })
  const same = { ID: { type: 'cds.Integer' }, qty: { type: 'cds.Integer' }, code: { type: 'cds.String', length: 10 }, amount: { type: 'cds.Decimal', precision: 9, scale: 2 }, at: { type: 'cds.Timestamp' } }
  const summary = (report: ReturnType<typeof compareShapes>) => report?.changes.map(c => `${c.column}:${c.change}${c.breaking ? '!' : ''}${c.fatal ? ' fatal' : ''}`)

  test('an unchanged source has no drift; DateTime and Timestamp count as the same', () => {
    expect(compareShapes(prepared(imported), live(same), 'r', 'warn')).toBeUndefined()
    expect(compareShapes(prepared(imported), live({ ...same, at: { type: 'cds.DateTime' } }), 'r', 'warn')).toBeUndefined()
  })

  test('changes that still fit a wider target are reported, not breaking', () => {
    const wide = entity('my.Orders', { ID: { key: true, type: 'cds.Integer' }, qty: { type: 'cds.Int64' }, code: { type: 'cds.String', length: 100 }, amount: { type: 'cds.Decimal', precision: 15, scale: 4 }, at: { type: 'cds.Timestamp' } })
    const report = compareShapes(prepared(wide), live({ ...same, qty: { type: 'cds.Int64' }, code: { type: 'cds.String', length: 50 }, amount: { type: 'cds.Decimal', precision: 12, scale: 3 } }), 'r', 'fail')
    expect(summary(report)).toEqual(['qty:type', 'code:length', 'amount:precision'])
    expect(report?.breaking).toBe(false)
  })

  test('what the target cannot hold is breaking: wider integers, longer or unbounded strings, more scale, text into numbers', () => {
    const report = compareShapes(prepared(imported), live({ ...same, qty: { type: 'cds.Int64' }, code: { type: 'cds.String' }, amount: { type: 'cds.Decimal', precision: 9, scale: 4 } }), 'r', 'warn')
    expect(summary(report)).toEqual(['qty:type!', 'code:length!', 'amount:precision!'])
    expect(summary(compareShapes(prepared(imported), live({ ...same, qty: { type: 'cds.String', length: 5 } }), 'r', 'warn'))).toEqual(['qty:type!'])
  })

  test('a target narrower than the imported API is configuration, not drift; a change of the source still is', () => {
    const narrow = entity('my.Orders', { ID: { key: true, type: 'cds.Integer' }, qty: { type: 'cds.Int16' }, code: { type: 'cds.String', length: 3 }, amount: { type: 'cds.Decimal', precision: 5, scale: 1 }, at: { type: 'cds.Timestamp' } })
    expect(compareShapes(prepared(narrow), live(same), 'r', 'fail')).toBeUndefined()
    expect(narrowerTarget(prepared(narrow)).map(n => `${n.column}: ${n.source} into ${n.targetType}`)).toEqual(['qty: Integer into Int16', 'code: String(10) into String(3)', 'amount: Decimal(9,2) into Decimal(5,1)'])
    expect(narrowerTarget(prepared(imported))).toEqual([])
    // the source changes: reported, but not breaking where the target already could not take the column
    const report = compareShapes(prepared(narrow), live({ ...same, qty: { type: 'cds.Int64' }, code: { type: 'cds.String', length: 20 }, amount: { type: 'cds.Decimal', precision: 12, scale: 2 } }), 'r', 'fail')
    expect(summary(report)).toEqual(['qty:type', 'code:length', 'amount:precision'])
    // a change the target took before and no longer does is breaking
    const wide = entity('my.Orders', { ID: { key: true, type: 'cds.Integer' }, qty: { type: 'cds.Int16' }, code: { type: 'cds.String', length: 10 }, at: { type: 'cds.Timestamp' } })
    expect(summary(compareShapes(prepared(wide), live({ ...same, code: { type: 'cds.String', length: 20 }, qty: { type: 'cds.String', length: 5 } }), 'r', 'fail'))).toEqual(['qty:type!', 'code:length!'])
  })

  test('a removed key or watermark column is fatal; a removed entity too; new columns are informational', () => {
    const { ID: _id, at: _at, ...rest } = same
    expect(summary(compareShapes(prepared(imported), live({ ...rest, extra: { type: 'cds.Boolean' } }), 'r', 'warn'))).toEqual(['ID:removed! fatal', 'at:removed! fatal', 'extra:added'])
    expect(summary(compareShapes(prepared(imported), { ...live({}), missing: true }, 'r', 'warn'))).toEqual(['Orders:removed! fatal'])
  })
})
