/**
 * Whether reads just started are on the wire yet (README "Paging"). A remote service puts its
 * request on the wire only some event-loop turns after `send()` (a new connection even later),
 * while database writes such as node:sqlite's run synchronously: started right away, a write
 * holds the requests back until it ends, and read and write take turns instead of overlapping.
 * Node's fetch (CAP's native-fetch client) reports on undici's diagnostics channels when a
 * request is created and when its headers are written to the socket.
 */
import diagnostics from 'node:diagnostics_channel'

const requestCreated = diagnostics.channel('undici:request:create')
const headersSent = diagnostics.channel('undici:client:sendHeaders')

interface UndiciMessage {
  request?: object
}

/** The first `count` requests created after `watchRequests` was called. */
export interface RequestWatch {
  readonly count: number
  /** How many of them the client reported created so far (none: a client that reports nothing, or an in-process source). */
  readonly created: number
  /** Settles once all `count` have their headers on the socket. */
  readonly sent: Promise<void>
  stop(): void
}

export function watchRequests(count = 1): RequestWatch {
  const ours = new Set<object>()
  const out = new Set<object>()
  let wentOut: () => void = () => undefined
  const sent = new Promise<void>(resolve => { wentOut = resolve })
  const onCreated = (message: unknown) => {
    const request = (message as UndiciMessage).request
    if (request && ours.size < count) ours.add(request)
  }
  const onSent = (message: unknown) => {
    const request = (message as UndiciMessage).request
    // while none of ours was seen created, any request going out counts (one created just before the call)
    if (ours.size === 0) wentOut()
    else if (request && ours.has(request)) {
      out.add(request)
      if (out.size >= count) wentOut()
    }
  }
  requestCreated.subscribe(onCreated)
  headersSent.subscribe(onSent)
  return {
    count,
    get created() {
      return ours.size
    },
    sent,
    stop: () => {
      requestCreated.unsubscribe(onCreated)
      headersSent.unsubscribe(onSent)
    },
  }
}

/**
 * Lets reads just started actually go out before the caller runs synchronous database work
 * (the write of the current batch, the run guard). Ends as soon as the watched requests (by
 * default: the first one created after the call) have their headers on the socket, or once
 * `next` settles (in-process sources). Clients that report nothing (the SAP Cloud SDK's): a few
 * turns, then at most ~1 ms. Several watched requests the client reports: all of them, bounded
 * by `next` (their connections may still be opening after those turns).
 */
export async function underway(next: Promise<unknown>, watch: RequestWatch = watchRequests(1)): Promise<void> {
  let over = false
  let timer: NodeJS.Timeout | undefined
  const fallback = async () => {
    for (let i = 0; i < 8 && !over; i++) await new Promise<void>(resolve => setImmediate(resolve))
    if (!over) await new Promise<void>(resolve => { timer = setTimeout(resolve, 1) })
    if (!over && watch.count > 1 && watch.created > 0) await watch.sent
  }
  try {
    await Promise.race([watch.sent, next.then(() => undefined, () => undefined), fallback()])
  } finally {
    over = true
    clearTimeout(timer)
    watch.stop()
  }
}
