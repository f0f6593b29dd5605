/** Knows whether the host app is serving, so side effects (timers) start only then. */
import cds from '@sap/cds'

let serving = false
let listening = false

export function registerLifecycle(): void {
  cds.once('served', () => { serving = true })
  cds.once('shutdown', () => { serving = false })
  cds.once('listening', () => { listening = true })
}

/** Whether the server listens: messaging services have started listening to the topics subscribed until then. */
export function isListening(): boolean {
  return listening
}

/** Runs `fn` now if the app is already serving, otherwise once it starts serving. */
export function whenServing(fn: () => void): void {
  if (serving) fn()
  else cds.once('served', () => fn())
}
