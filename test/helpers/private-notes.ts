/**
 * The app pair of the delegate security tests (caches per user, a view's own where): the
 * private-provider app (Notes readable by their owner only) in a child process, and the
 * private-consumer served in-process by cds.test with its bindings pointed at it — `Notes`
 * forwards the caller's token, `AllNotes` does not. CAP forwards only bearer tokens, so both apps
 * authenticate users by an HS256 test token (`sign`).
 */
import cds from '@sap/cds'
import path from 'node:path'
import { createRequire } from 'node:module'
import { FIXTURES, startApp, type RunningApp } from './apps'

const require = createRequire(import.meta.url)
export const { sign } = require(path.join(FIXTURES, 'private-provider/srv/token-auth.js')) as { sign(user: string): string }

/** Starts both apps around the calling test file; call at its top level. */
export function privateNotes(): { test$: ReturnType<typeof cds.test>; providerUrl(): string } {
  let provider: RunningApp | undefined
  beforeAll(async () => {
    provider = await startApp(path.join(FIXTURES, 'private-provider'))
  })
  const test$ = cds.test(path.join(FIXTURES, 'private-consumer'))
  beforeAll(() => {
    const requires = cds.env.requires as unknown as Record<string, { credentials?: object }>
    requires.Notes.credentials = { url: `${provider!.url}/odata/v4/notes`, forwardAuthToken: true }
    requires.AllNotes.credentials = { url: `${provider!.url}/odata/v4/all-notes` }
  })
  afterAll(async () => {
    await provider?.stop()
  })
  return { test$, providerUrl: () => provider!.url }
}
