/**
 * Schedules (the public face of lib/engine/schedule/): parsing of the user's input into one
 * spec and its label (spec.ts), cron (cron.ts), the in-process `spawn` timer (spawn-timer.ts),
 * and the `queued` engine on CAP's persistent task queue (queued.ts, queue-table.ts).
 */
export { parseDuration } from '../config/duration.js'
export { parseSchedule, scheduleLabel, sameSchedule, majorVersion, scheduleLiveChangeSupported } from './spec.js'
export { parseCron, cronShortestGap, nextCronTime } from './cron.js'
export { SpawnTimer } from './spawn-timer.js'
export { QueuedSchedules, type QueueHost } from './queued.js'
export { queuedTaskName, asQueueError, type QueueRow, type QueuedRunMessage, type TickMessage } from './queue-table.js'
