/**
 * Parameters of the management API's operations: each check answers a bad value with 400
 * INVALID_PARAMETER naming the parameter, and registration errors raised while applying a
 * parameter are turned into the same shape.
 */
import { PipelineError } from '../pipeline/errors.js'

/** A config validation error of an operation parameter becomes INVALID_PARAMETER (400) naming it. */
export function asParameter<T>(fn: () => T, parameter: string): T {
  try {
    return fn()
  } catch (error) {
    if (error instanceof PipelineError) throw new PipelineError('INVALID_PARAMETER', `${parameter}: ${error.message.replace(/^Invalid pipeline config: \S+ /, '')}`, { target: parameter })
    throw error
  }
}

/** An override the registration rules refuse is a bad parameter (400 INVALID_PARAMETER) naming the override key. */
export function asOverride<T>(fn: () => T): T {
  const refused = (error: unknown): never => {
    if (error instanceof PipelineError && error.code === 'INVALID_CONFIG')
      throw new PipelineError('INVALID_PARAMETER', error.message.replace(/^Invalid pipeline config: /, ''), { target: error.target })
    throw error
  }
  try {
    const result = fn()
    return (result instanceof Promise ? result.catch(refused) : result) as T
  } catch (error) {
    return refused(error)
  }
}

export function requiredString(value: unknown, parameter: string): string {
  if (typeof value !== 'string' || !value.trim()) throw new PipelineError('INVALID_PARAMETER', `${parameter}: is required`, { target: parameter })
  return value
}

export function optionalEnum<T extends string>(value: unknown, allowed: readonly T[], parameter: string, hint = ''): T | undefined {
  if (value === undefined || value === null || value === '') return undefined
  if (typeof value !== 'string' || !allowed.includes(value as T))
    throw new PipelineError('INVALID_PARAMETER', `${parameter}: '${String(value)}' is invalid; expected one of ${allowed.join(', ')}${hint ? ` (${hint})` : ''}`, { target: parameter })
  return value as T
}

export function optionalBoolean(value: unknown, parameter: string): boolean | undefined {
  if (value === undefined || value === null) return undefined
  if (typeof value !== 'boolean') throw new PipelineError('INVALID_PARAMETER', `${parameter}: must be true or false`, { target: parameter })
  return value
}
