/**
 * The one error class of the plugin (engine, adapters, management API). `code` is stable for
 * programs, `status` is the HTTP status the management API answers with, `target` names the
 * offending config key or parameter.
 */
export type PipelineErrorCode =
  | 'INVALID_CONFIG'
  | 'UNKNOWN_PIPELINE'
  | 'UNKNOWN_TENANT'
  | 'TENANT_REQUIRED'
  | 'PIPELINE_RUNNING'
  | 'TRACKER_MISSING'
  | 'SOURCE_FAILED'
  | 'TARGET_FAILED'
  | 'INVALID_PARAMETER'
  | 'NOT_SUPPORTED'
  | 'LEASE_EXPIRED'
  | 'UNAUTHORIZED'
  | 'FORBIDDEN'
  | 'SCHEMA_DRIFT'

const STATUS: Record<PipelineErrorCode, number> = {
  INVALID_CONFIG: 400,
  INVALID_PARAMETER: 400,
  UNKNOWN_PIPELINE: 404,
  UNKNOWN_TENANT: 404,
  // multitenancy: the provider (no tenant) has no pipelines or runs of its own (issue 37)
  TENANT_REQUIRED: 404,
  PIPELINE_RUNNING: 409,
  NOT_SUPPORTED: 400,
  TRACKER_MISSING: 500,
  SOURCE_FAILED: 502,
  TARGET_FAILED: 500,
  LEASE_EXPIRED: 500,
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  // the source no longer matches what the pipeline was built against: a source failure, like SOURCE_FAILED
  SCHEMA_DRIFT: 502,
}

export class PipelineError extends Error {
  readonly code: PipelineErrorCode
  readonly status: number
  readonly target?: string

  constructor(code: PipelineErrorCode, message: string, options: { target?: string; cause?: unknown; status?: number } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'PipelineError'
    this.code = code
    this.status = options.status ?? STATUS[code]
    if (options.target) this.target = options.target
  }
}

/** Shorthand for registration errors: always names the offending key. */
export function invalidConfig(key: string, message: string): PipelineError {
  return new PipelineError('INVALID_CONFIG', `Invalid pipeline config: ${key} ${message}`, { target: key })
}
