/**
 * What the console's browser tests share: locating UI5 controls and calling the management API
 * beside the page (to set a scene up or to compare what the page shows with what the API says).
 */

/** A control's root element by its view-local id (UI5 prefixes component and view ids). */
export const byId = (id: string) => `[data-sap-ui$="--${id}"]`

export interface ApiAnswer { status: number; data: any }

/**
 * JSON requests to the app at `base()` with `authorization` (a Basic header, test/helpers/auth.ts)
 * unless a call passes its own; the answer's status and parsed body ({} when it has none).
 */
export function apiAs(base: () => string, authorization: string): (url: string, init?: RequestInit) => Promise<ApiAnswer> {
  return async (url, init = {}) => {
    const response = await fetch(`${base()}${url}`, { ...init, headers: { 'content-type': 'application/json', authorization, ...init.headers } })
    const text = await response.text()
    return { status: response.status, data: text ? JSON.parse(text) : {} }
  }
}
