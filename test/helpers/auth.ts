/**
 * Basic authentication as the fixtures' mocked users: one place that builds the header, so a test
 * says only who it is (`basicAuth('viewer')`) and with which password.
 */

/** The value of a Basic authorization header (an empty password by default: mocked users without one). */
export const basic = (user: string, password = '') => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`

/**
 * The headers of a request as a mocked user. The management fixtures' users have their name as
 * password and are named after the role they hold: admin, operator, viewer, nobody (none).
 */
export const basicAuth = (user: string, password = user): Record<string, string> => ({ authorization: basic(user, password) })
