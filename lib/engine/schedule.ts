/**
 * Schedules (the public face of lib/engine/schedule/): parsing of the user's input into one
 * spec and its label (spec.ts), cron (cron.ts), the in-process `spawn` timer (spawn-timer.ts),
 * and the `queued` engine on CAP's persistent task queue (queued.ts, queue-table.ts).
 */
export { parseDuration } from './duration.js'
export { parseSchedule, scheduleLabel, sameSchedule, majorVersion, scheduleLiveChangeSupported } from './schedule/spec.js'
export { parseCron, cronShortestGap, nextCronTime } from './schedule/cron.js'
export { SpawnTimer } from './schedule/spawn-timer.js'
export { QueuedSchedules, type QueueHost } from './schedule/queued.js'
export { queuedTaskName, asQueueError, type QueueRow, type QueuedRunMessage, type TickMessage } from './schedule/queue-table.js'
