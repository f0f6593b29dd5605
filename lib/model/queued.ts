/** Whether CAP queues a service's messages (`outboxed`, the default for messaging services). */
import { unqueuedService } from '../cap/index.js'

export function isQueued(srv: unknown): boolean {
  return unqueuedService(srv) !== srv
}
