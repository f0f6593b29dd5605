/**
 * Audit of personal data read through the plugin (README "Security"): a `SensitiveDataRead` per
 * row through CAP's `audit-log` service (@cap-js/audit-logging) when it is configured — data
 * inspector previews and filters of either side, and rejected records read at /pipeline.
 */
import cds from '@sap/cds'
import { LOGGER } from '../constants.js'
import { connectTo, inNewTransaction } from '../cap/index.js'

const LOG = cds.log(LOGGER.engine)

export interface SensitiveRead {
  /** The entity (or pipeline) the rows belong to. */
  type: string
  /** Each row's key (the data subject's id). */
  ids: Array<Record<string, unknown>>
  /** The sensitive attributes read (shown or filtered on). */
  attributes: string[]
}

export function auditConfigured(): boolean {
  return Boolean((cds.env.requires as Record<string, unknown>)['audit-log'])
}

/** Best effort: the read is not blocked when logging fails (it is logged as a warning). */
export function auditSensitiveRead({ type, ids, attributes }: SensitiveRead): void {
  if (!attributes.length || !ids.length || !auditConfigured()) return
  // In a root transaction of its own, one event after the other: CAP queues the events in
  // cds.outbox.Messages inside the current transaction, and the reading request's transaction has
  // committed by the time these writes run (on PostgreSQL the writes were then lost).
  void inNewTransaction(async () => {
    const audit = await connectTo<{ log(event: string, data: object): Promise<unknown> }>('audit-log')
    for (const id of ids) await audit.log('SensitiveDataRead', {
      data_subject: { type, id },
      object: { type, id },
      attributes: attributes.map(name => ({ name })),
    })
  }).catch(error => LOG.warn(`audit logging failed (read not blocked): ${(error as Error).message}`))
}
