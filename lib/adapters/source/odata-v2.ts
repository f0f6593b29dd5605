/**
 * OData V2 source: the reads of the V4 adapter (`$select` restriction, ordered keyset pages,
 * the three delta modes, one request when nothing changed) in V2's wire format:
 * `$inlinecount=allpages` instead of `$count`, `__next` for server-driven paging, typed
 * literals in `$filter` (`datetime'…'`, `datetimeoffset'…'`, `time'PT…'`, `guid'…'`, `…L`,
 * `…M`) chosen per property type, and `/Date(…)/` and `PT…` values converted to CDS strings
 * before the engine sees them — keyset continuation, watermarks and targets only ever get
 * `YYYY-MM-DD`, `HH:MM:SS` and ISO `…Z` values.
 *
 * Property types come from the imported V2 model: `cds import` turns `Edm.DateTime` with
 * `sap:display-format="Date"` into `cds.Date`, `Edm.DateTimeOffset` into `cds.Timestamp`
 * (or `cds.DateTime` with `@odata.Type: 'Edm.DateTimeOffset'`), a plain `Edm.DateTime` into
 * `cds.DateTime` with `@odata.Type: 'Edm.DateTime'`, and `Edm.Time` into `cds.Time`.
 *
 * `delta.mode: 'odata-delta'` reads V2 delta tokens the way odata.ts reads V4 delta links (CAP's
 * remote service hands `__next`/`__delta` over as `$next`/`$delta`): SAP Gateway's delta query, its
 * deleted entries in the `$deletedEntity` form (delta-links.ts), and ODP's change modes (odp.ts).
 */
import { ODataSourceAdapter } from './odata.js'
import { ODP } from '../../constants.js'
import { changeEntry, isDeltaQueueEntity } from './odp.js'
import { deltaEntry } from './delta-links.js'
import { builtinType, type CsnElement } from '../../model/csn.js'
import type { ODataVersion } from '../predicate.js'
import type { DataRecord } from '../../pipeline/types.js'

export class ODataV2SourceAdapter extends ODataSourceAdapter {
  protected override version: ODataVersion = 'v2'

  /** The literal type of a property: its CDS type, or `Edm.DateTime` where the V2 model says so. */
  protected override typeOf = (field: string): string | undefined => v2LiteralType(this.entity?.elements[field])

  /** Drops `__metadata`/`__deferred` and converts V2 date and time formats (see {@link fromV2Value}). */
  protected override convertRecord(record: DataRecord): DataRecord {
    const elements = this.entity?.elements
    const out: DataRecord = {}
    for (const name of Object.keys(record)) {
      if (name.startsWith('__')) continue
      const value = record[name]
      if (value !== null && typeof value === 'object' && '__deferred' in value) continue
      out[name] = fromV2Value(value, elements?.[name])
    }
    return out
  }

  /** ODP rows by their ODQ_CHANGEMODE, other rows (Gateway's delta query) as delta entries. */
  protected override deltaRecord(record: DataRecord, keys: string[]): DataRecord {
    const converted = this.convertRecord(record)
    return isDeltaQueueEntity(this.entity) ? changeEntry(converted, keys, this.entitySet) : deltaEntry(converted, keys)
  }

  /** An ODP row is read with its change mode, whatever the target maps (a deletion is only told by it). */
  protected override trackedColumns(): string[] {
    return isDeltaQueueEntity(this.entity) ? [ODP.changeMode] : []
  }
}

export function v2LiteralType(element: CsnElement | undefined): string | undefined {
  const type = builtinType(element)
  if (element?.['@odata.Type'] === 'Edm.DateTime' && (type === 'cds.DateTime' || type === 'cds.Timestamp')) return 'Edm.DateTime'
  return type
}

/** `/Date(<ms>)/` or `/Date(<ms>±<minutes>)/`. */
const JSON_DATE = /^\/Date\((-?\d+)(?:([+-])(\d{1,4}))?\)\/$/
/** `PT10H20M30S`, `PT10H`, `P0DT10H20M30.5S` (Edm.Time is an xs:duration of a time of day). */
const DURATION = /^P(?:(\d+)D)?T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(?:\.\d+)?S)?$/i

/**
 * The UTC instant of a V2 JSON date. With an offset, the ticks are the clock time at that
 * offset, as OData V2's reference libraries write and read them (Microsoft ODataLib: the
 * `DateTimeOffset.Ticks` clock value; datajs/SAPUI5: "the offset is reversed to get back the
 * UTC date"): `/Date(1700000000000+0060)/` is 22:13:20 at +01:00, i.e. 21:13:20Z.
 */
export function jsonDateToMillis(text: string): number | undefined {
  const match = JSON_DATE.exec(text)
  if (!match) return undefined
  const offset = match[2] ? (match[2] === '-' ? -1 : 1) * Number(match[3]) : 0
  return Number(match[1]) - offset * 60_000
}

/** `PT10H20M30S` → `10:20:30`. */
export function durationToTime(text: string): string | undefined {
  const match = DURATION.exec(text)
  if (!match) return undefined
  const [, d = '0', h = '0', m = '0', s = '0'] = match
  const total = (((Number(d) * 24 + Number(h)) * 60 + Number(m)) * 60 + Number(s)) % 86_400
  const pad = (n: number) => String(n).padStart(2, '0')
  return `${pad(Math.floor(total / 3600))}:${pad(Math.floor(total / 60) % 60)}:${pad(total % 60)}`
}

/**
 * One V2 JSON value as a CDS value of the element's type: cds.Date → `YYYY-MM-DD`,
 * cds.DateTime → `YYYY-MM-DDTHH:MM:SSZ`, cds.Timestamp (and untyped `/Date(…)/` values) →
 * `YYYY-MM-DDTHH:MM:SS.sssZ`, cds.Time → `HH:MM:SS`. Values already in CDS form pass through.
 */
export function fromV2Value(value: unknown, element: CsnElement | undefined): unknown {
  if (typeof value !== 'string') return value
  const type = builtinType(element)
  switch (type) {
    case 'cds.Date': {
      const ms = jsonDateToMillis(value)
      if (ms !== undefined) return new Date(ms).toISOString().slice(0, 10)
      return /^\d{4}-\d{2}-\d{2}T/.test(value) ? value.slice(0, 10) : value
    }
    case 'cds.DateTime': {
      const ms = jsonDateToMillis(value)
      return ms === undefined ? value : `${new Date(ms).toISOString().slice(0, 19)}Z`
    }
    case 'cds.Time':
      return durationToTime(value) ?? value
    case 'cds.Timestamp':
    case undefined: {
      const ms = jsonDateToMillis(value)
      return ms === undefined ? value : new Date(ms).toISOString()
    }
    default:
      return value
  }
}
