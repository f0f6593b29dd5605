/**
 * CAP's task queue as the queued engine meets it: task names, the payloads of its events, the
 * rows of `cds.outbox.Messages`, the queue's settings, and the guidance when its table is missing.
 */
import cds from '@sap/cds'
import { QUEUE } from '../../constants.js'
import { PipelineError } from '../../pipeline/errors.js'
import { parseDuration } from '../config/duration.js'
import { servedModel } from '../../cap/index.js'

/** The task name of a pipeline's queued schedule; a tenant segment keeps the name unique per tenant. */
export function queuedTaskName(pipeline: string, tenant?: string): string {
  return tenant ? `${QUEUE.taskPrefix}${tenant}/${pipeline}` : `${QUEUE.taskPrefix}${pipeline}`
}

/** Payload of a queued tick (`QUEUE.tickEvent`). */
export interface TickMessage {
  pipeline: string
  /** The schedule label when the task was written (for logs and the queue table). */
  schedule?: string | null
  tenant?: string
}

/** Payload of a queued one-off run (`QUEUE.runEvent`). */
export interface QueuedRunMessage {
  pipeline: string
  mode?: string
  trigger?: string
  tenant?: string
}

/** A row of `cds.outbox.Messages`, as far as the engine reads it. */
export interface QueueRow {
  ID: string
  task: string | null
  timestamp: string | null
  msg: string | null
  attempts: number | null
  status: string | null
  lastError?: string | null
}

const MISSING_TABLE = /no such table|does not exist|invalid table name|not found|could not find/i

/** The queue's processing timeout in ms (`cds.requires.queue.timeout`, default 1 h). */
export function queueTimeout(): number {
  const value = ((cds.env.requires as Record<string, unknown>).queue as { timeout?: string | number } | undefined)?.timeout
  if (typeof value === 'number') return value
  try {
    return typeof value === 'string' ? parseDuration(value.replace(/\s+/g, ''), 'cds.requires.queue.timeout') : 3_600_000
  } catch {
    return 3_600_000
  }
}

export function modelHasQueue(): boolean {
  const model = servedModel()
  return Boolean(model?.definitions?.[QUEUE.entity])
}

/** The task row carries the same interval or cron and is not dead-lettered. */
export function isSameTask(row: QueueRow, every: number | string): boolean {
  let stored: unknown
  try {
    stored = (JSON.parse(row.msg ?? '{}') as { queue?: { every?: unknown } }).queue?.every
  } catch {
    return false
  }
  const maxAttempts = Number(((cds.env.requires as Record<string, unknown>).queue as { maxAttempts?: number } | undefined)?.maxAttempts ?? 10)
  return stored === every && Number(row.attempts ?? 0) < maxAttempts
}

/** A missing queue table becomes a guidance error naming what to deploy. */
export function asQueueError(error: unknown): unknown {
  const message = (error as Error)?.message ?? String(error)
  if (MISSING_TABLE.test(message) && /outbox/i.test(message)) {
    return new PipelineError('NOT_SUPPORTED',
      `Queued schedules need CAP's task queue: table ${QUEUE.table} is missing: deploy CAP's queue model (${QUEUE.model}, ` +
      'included by cds deploy with @sap/cds ≥ 10 while cds.requires.queue is on): run cds deploy (or redeploy the database), ' +
      `or use engine 'spawn'. Cause: ${message}`,
      { target: 'schedule.engine', status: 500, cause: error })
  }
  return error
}
