/**
 * HTTP as a mocked user (basic auth with an empty password), for apps whose users are bound to
 * tenants: `call` answers status and parsed body; `get` insists on 200 and unwraps OData `value`.
 */
import { basic } from './auth'
export interface UserClient {
  call(user: string, method: string, url: string, body?: object): Promise<{ status: number; body: any }>
  get<T>(user: string, url: string): Promise<T>
}

export function userClient(base: () => string): UserClient {
  const call: UserClient['call'] = async (user, method, url, body) => {
    const response = await fetch(`${base()}${url}`, {
      method,
      headers: { authorization: basic(user), ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    })
    const text = await response.text()
    let parsed: any = text
    try { parsed = text ? JSON.parse(text) : undefined } catch { /* not JSON: the text itself */ }
    return { status: response.status, body: parsed }
  }
  const get = async <T>(user: string, url: string): Promise<T> => {
    const { status, body } = await call(user, 'GET', url)
    if (status !== 200) throw new Error(`GET ${url} as ${user}: ${status} ${JSON.stringify(body)}`)
    return (body.value ?? body) as T
  }
  return { call, get }
}
