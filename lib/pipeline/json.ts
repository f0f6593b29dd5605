/** A plain object of a setting or a JSON document (not null, not an array): what every settings reader checks first. */
export const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)
