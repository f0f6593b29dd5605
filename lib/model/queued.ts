/** Whether CAP queues a service's messages (`outboxed`, the default for messaging services). */
import cds from '@sap/cds'

export function isQueued(srv: unknown): boolean {
  const unqueued = (cds as unknown as { unqueued?: (s: unknown) => unknown }).unqueued
  return typeof unqueued === 'function' && unqueued(srv) !== srv
}
