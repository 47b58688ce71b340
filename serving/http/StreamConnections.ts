/**
 * The two live-stream transports over uWS (issue 33, streams), kept beside UwsAdapter because they obey the same
 * discipline: every write after the request callback is corked, nothing is written after an abort or a close, and the
 * connection tells its owner once when it is gone.
 *
 * - WebSocket: a uWS WebSocket. Live events reach it through uWS pub/sub (subscribe once, one publish per event for
 *   every subscriber, in native code); catch-up events are sent to it alone. Ended with a close code and reason.
 * - Server-Sent Events: a chunked text/event-stream response. Every event is a write of its own. Ended with a final
 *   `event: close` naming the reason, then the connection is closed.
 * Buffered bytes are what the socket has not taken yet: the owner drops a connection over its bound (a slow reader
 * must not hold memory or slow the others).
 */
import type { HttpResponse, WebSocket } from 'uWebSockets.js'

/** One event rendered once for both transports. */
export interface EventFrame {
  /** The WebSocket text message: {"id","event","data"}. */
  readonly ws: string
  /** The SSE block: id, event and data lines and the blank line. */
  readonly sse: string
}

export function eventFrame(cursor: string, event: string, data: unknown): EventFrame {
  const json = JSON.stringify(data)
  return {
    ws: `{"id":${JSON.stringify(cursor)},"event":${JSON.stringify(event)},"data":${json}}`,
    sse: `id: ${cursor}\nevent: ${event}\ndata: ${json}\n\n`,
  }
}

/** The reconnect delay an SSE client is told (its EventSource otherwise picks its own, often 3 s or more). */
export const SSE_RETRY_MS = 1000

/** WebSocket close codes of a stream ended by the service (4000–4999: application codes, RFC 6455 §7.4.2). */
export const STREAM_CLOSE_CODES = { SLOW_CONSUMER: 4008, SHUTDOWN: 1001, PROVIDER_DOWN: 1013 } as const
export type StreamCloseReason = keyof typeof STREAM_CLOSE_CODES

export interface StreamConnection {
  readonly transport: 'ws' | 'sse'
  readonly closed: boolean
  send(frame: EventFrame): void
  bufferedBytes(): number
  /** WebSocket: joins a pub/sub topic (true); SSE has none (false): its owner writes each event. */
  subscribe(topic: string): boolean
  /** Ends the stream, naming why. */
  end(reason: StreamCloseReason, message: string): void
  /** Called when the socket took its buffered bytes (so a catch-up can go on). */
  onDrain: (() => void) | null
  /** Called once when the connection is gone (ended by either side). */
  onClose: (() => void) | null
}

/** What uWS keeps as a stream WebSocket's user data: set at upgrade, bound to its connection at open. */
export interface StreamSocketData {
  attach: (ws: WebSocket<StreamSocketData>) => void
  connection: WsConnection | null
}

export class WsConnection implements StreamConnection {
  readonly transport = 'ws'
  closed = false
  onDrain: (() => void) | null = null
  onClose: (() => void) | null = null
  private sending: string = ''

  constructor(private readonly ws: WebSocket<StreamSocketData>) {}

  send(frame: EventFrame): void {
    if (this.closed) return
    this.sending = frame.ws
    this.ws.cork(this.sendCorked)
    this.sending = ''
  }

  private readonly sendCorked = (): void => void this.ws.send(this.sending, false, false)

  bufferedBytes(): number {
    return this.closed ? 0 : this.ws.getBufferedAmount()
  }

  subscribe(topic: string): boolean {
    if (!this.closed) this.ws.subscribe(topic)
    return true
  }

  end(reason: StreamCloseReason, message: string): void {
    if (this.closed) return
    // The socket is not to be touched after end() (uWS may run its close handler later): gone() now, once.
    this.ws.end(STREAM_CLOSE_CODES[reason], `${reason}: ${message}`.slice(0, 120))
    this.gone()
  }

  /** The socket closed (uWS close handler): nothing more is written to it. */
  gone(): void {
    if (this.closed) return
    this.closed = true
    this.onClose?.()
  }

  drained(): void {
    if (!this.closed) this.onDrain?.()
  }
}

export class SseConnection implements StreamConnection {
  readonly transport = 'sse'
  closed = false
  onDrain: (() => void) | null = null
  onClose: (() => void) | null = null
  /**
   * Bytes written since uWS last had nothing buffered: uWS reports no buffered amount for an HTTP response (its write
   * offset counts only tryEnd), so this counts the writes made while write() reports backpressure, and restarts when a
   * write goes out whole or the socket asks for more (onWritable). A reader that stopped never restarts it.
   */
  private backlog = 0
  private chunk = ''

  constructor(
    private readonly res: HttpResponse,
    private readonly finished: () => void,
  ) {
    res.onAborted(() => this.gone())
    res.onWritable(() => {
      this.drained()
      return true
    })
  }

  /** Writes the status, the headers and a first comment line (so the client sees the stream open at once). */
  open(headers: Record<string, string>, inCallback: boolean): void {
    const write = () => {
      this.res.writeStatus('200 OK')
      for (const [k, v] of Object.entries(headers)) this.res.writeHeader(k, v)
      // retry: how long a browser's EventSource waits before it reconnects on its own (with Last-Event-ID).
      this.write(`retry: ${SSE_RETRY_MS}\n: stream open\n\n`)
    }
    if (inCallback) write()
    else this.res.cork(write)
  }

  private write(text: string): void {
    if (this.res.write(text)) this.backlog = 0
    else this.backlog += Buffer.byteLength(text)
  }

  send(frame: EventFrame): void {
    if (this.closed) return
    this.chunk = frame.sse
    this.res.cork(this.writeCorked)
    this.chunk = ''
  }

  private readonly writeCorked = (): void => this.write(this.chunk)

  bufferedBytes(): number {
    return this.closed ? 0 : this.backlog
  }

  subscribe(): boolean {
    return false
  }

  end(reason: StreamCloseReason, message: string): void {
    if (this.closed) return
    this.res.cork(() => {
      this.write(`event: close\ndata: ${JSON.stringify({ reason, message })}\n\n`)
      this.res.end()
    })
    this.gone()
  }

  /** A stream dropped at once (shutdown timeout): onAborted follows from uWS, gone() runs once. */
  forceClose(): void {
    if (!this.closed) this.res.close()
  }

  private gone(): void {
    if (this.closed) return
    this.closed = true
    this.finished()
    this.onClose?.()
  }

  private drained(): void {
    this.backlog = 0
    if (!this.closed) this.onDrain?.()
  }
}
