/**
 * Reject records as the management API shows them: stored JSON without the hidden fields (rows
 * stored before hidden fields were left out of storage are stripped here too), and one
 * SensitiveDataRead per record that holds personal data.
 */
import { auditSensitiveRead } from './audit.js'
import { withoutFields, type FieldPolicy } from './hidden.js'
import type { DataRecord } from '../pipeline/types.js'

/** A stored record (JSON) without the hidden fields; records of unknown pipelines (no policy) are not shown. */
export function storedWithout(json: unknown, hidden: Set<string> | undefined): unknown {
  if (typeof json !== 'string') return json
  if (!hidden) return null
  if (!hidden.size) return json
  try {
    return JSON.stringify(withoutFields(JSON.parse(json) as DataRecord, hidden))
  } catch {
    return null // a truncated record cannot be filtered: not shown
  }
}

/** A reject read with sensitive fields in its record: one SensitiveDataRead, the record's key as the data subject. */
export function auditRejectRead(row: Record<string, unknown>, policy: FieldPolicy, type: string): void {
  const present = (json: unknown, names: Set<string>) => {
    if (typeof json !== 'string' || !names.size) return []
    try {
      const record = JSON.parse(json) as Record<string, unknown>
      return [...names].filter(n => record[n] !== undefined)
    } catch {
      return [...names].filter(n => json.includes(`"${n}":`)) // a truncated record: by its text
    }
  }
  const attributes = [...new Set([...present(row.record, policy.sensitive.source), ...present(row.mapped, policy.sensitive.target)])]
  let id: Record<string, unknown> = { ID: row.ID }
  try {
    if (typeof row.recordKey === 'string') id = JSON.parse(row.recordKey) as Record<string, unknown>
  } catch { /* the reject's own ID identifies it */ }
  auditSensitiveRead({ type, ids: [id], attributes })
}
