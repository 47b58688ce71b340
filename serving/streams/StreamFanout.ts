/**
 * The live streams' connections (issue 33): admission (a cap per client IP), catch-up after the client's cursor,
 * then live delivery, and dropping a slow reader. Transport only; the events come from the domains' EventStreams.
 *
 * - Exactly once, in order: a connection first reads from its reader (after its cursor) in chunks while the socket
 *   takes them; the chunk that reaches the newest event joins the live delivery in the same synchronous step, so the
 *   next live event is the one after the last read (both come from one append-only sequence on one thread).
 * - Live: one listener per stream topic, however many connections. An event is rendered once; WebSockets get it by
 *   one uWS publish to the topic (native fan-out), SSE connections by one write each.
 * - Backpressure: a connection whose unsent bytes pass `maxBufferedBytes` is ended (WebSocket close 4008
 *   SLOW_CONSUMER with the reason; SSE a final `event: close` naming it). The check runs once per burst of events
 *   (setImmediate), never blocking the writes to the others; uWS's own ceiling is set far above it so a publish is
 *   never silently dropped for a socket still open.
 */
import type { EventStream, StreamEvent, StreamReader } from '../../common/EventStream.ts'
import { ServiceError } from '../../common/ServiceError.ts'
import type { Logger } from 'pino'
import { eventFrame, type EventFrame, type StreamConnection } from '../http/StreamConnections.ts'

/** Events read per catch-up chunk before the socket's buffer is looked at again. */
const CATCH_UP_CHUNK = 256

export interface StreamFanoutOptions {
  maxBufferedBytes: number
  maxPerIp: number
  /** uWS pub/sub: sends to every WebSocket subscribed to the topic. */
  publish: (topic: string, message: string) => void
  logger: Logger
}

interface Live {
  unlisten: () => void
  connections: Set<StreamConnection>
}

export class StreamFanout {
  private readonly perIp = new Map<string, number>()
  private readonly live = new Map<string, Live>()
  private readonly all = new Set<StreamConnection>()
  private sweepScheduled = false
  private closing = false
  /** Connections ended for being slow, by transport (tests and /metrics-style counts). */
  readonly dropped = { ws: 0, sse: 0 }

  constructor(private readonly options: StreamFanoutOptions) {}

  get connections(): number {
    return this.all.size
  }

  /** Refuses before anything is written: the IP already holds its cap of streams, or the server is stopping. */
  admit(ip: string): void {
    if (this.closing) throw new ServiceError('PROVIDER_DOWN', { message: 'The service is stopping; reconnect with your last cursor.', retryAfterMs: 1000, detail: { reason: 'SHUTTING_DOWN' } })
    const held = this.perIp.get(ip) ?? 0
    if (held >= this.options.maxPerIp) {
      throw new ServiceError('RATE_LIMITED', {
        message: `This address already holds ${held} live streams (the limit); close one or reconnect later.`,
        retryAfterMs: 1000,
        detail: { reason: 'STREAM_CONNECTIONS_CAPPED', limit: this.options.maxPerIp },
      })
    }
  }

  /** Binds an accepted connection: catch-up from its reader, then live. */
  attach(conn: StreamConnection, ip: string, source: EventStream, reader: StreamReader): void {
    this.perIp.set(ip, (this.perIp.get(ip) ?? 0) + 1)
    this.all.add(conn)
    const state = { live: false, waiting: false }
    conn.onClose = () => {
      reader.close?.()
      this.detach(conn, ip, source.topic)
    }
    conn.onDrain = () => this.catchUp(conn, source, reader, state)
    this.catchUp(conn, source, reader, state)
  }

  /**
   * Reads the connection's reader until it is done (then live) or the socket is full (the rest on drain) or the reader
   * reads from storage (the rest when that resolves). `state` keeps a drain and a storage read that both resume it from
   * reading past the join, which would send events twice.
   */
  private catchUp(conn: StreamConnection, source: EventStream, reader: StreamReader, state: { live: boolean; waiting: boolean }): void {
    if (state.live || state.waiting) return
    const half = this.options.maxBufferedBytes / 2
    while (!conn.closed) {
      const { events, done, wait } = reader.next(CATCH_UP_CHUNK)
      for (const e of events) conn.send(frameOf(e))
      if (done) {
        state.live = true
        conn.onDrain = null
        reader.close?.()
        this.join(conn, source)
        this.check(conn)
        return
      }
      // The rest when the socket took this much (drain); a reader that never drains is ended by the bound.
      if (conn.bufferedBytes() > half) {
        this.check(conn)
        return
      }
      if (wait) {
        state.waiting = true
        wait.then(
          () => {
            state.waiting = false
            this.catchUp(conn, source, reader, state)
          },
          (err: unknown) => {
            state.waiting = false
            if (conn.closed) return
            this.options.logger.warn({ topic: source.topic, err: (err as Error).message }, 'stream catch-up could not read older events')
            conn.end('PROVIDER_DOWN', 'older events could not be read now; reconnect with your last cursor')
          },
        )
        return
      }
    }
  }

  private join(conn: StreamConnection, source: EventStream): void {
    let live = this.live.get(source.topic)
    if (!live) {
      const connections = new Set<StreamConnection>()
      const unlisten = source.listen((e) => this.deliver(source.topic, connections, e))
      this.live.set(source.topic, (live = { unlisten, connections }))
    }
    live.connections.add(conn)
    conn.subscribe(source.topic)
  }

  private deliver(topic: string, connections: Set<StreamConnection>, e: StreamEvent): void {
    const frame = frameOf(e)
    let ws = false
    for (const c of connections) {
      if (c.transport === 'ws') ws = true
      else c.send(frame)
    }
    if (ws) this.options.publish(topic, frame.ws)
    this.scheduleSweep()
  }

  private scheduleSweep(): void {
    if (this.sweepScheduled) return
    this.sweepScheduled = true
    setImmediate(() => {
      this.sweepScheduled = false
      for (const live of this.live.values()) for (const c of live.connections) this.check(c)
    })
  }

  /** Ends a connection over its bound (the others are not waited on: each is checked on its own). */
  private check(conn: StreamConnection): void {
    if (conn.closed || conn.bufferedBytes() <= this.options.maxBufferedBytes) return
    this.dropped[conn.transport]++
    this.options.logger.info({ transport: conn.transport, buffered: conn.bufferedBytes(), bound: this.options.maxBufferedBytes }, 'slow stream reader dropped')
    conn.end('SLOW_CONSUMER', `more than ${this.options.maxBufferedBytes} bytes unread; reconnect with your last cursor`)
  }

  private detach(conn: StreamConnection, ip: string, topic: string): void {
    if (!this.all.delete(conn)) return
    const n = (this.perIp.get(ip) ?? 1) - 1
    if (n <= 0) this.perIp.delete(ip)
    else this.perIp.set(ip, n)
    const live = this.live.get(topic)
    if (live && live.connections.delete(conn) && live.connections.size === 0) {
      live.unlisten()
      this.live.delete(topic)
    }
  }

  /** Ends every stream (shutdown), naming why; new ones are refused from now on. */
  closeAll(): void {
    this.closing = true
    for (const c of [...this.all]) c.end('SHUTDOWN', 'the service is stopping; reconnect with your last cursor')
  }
}

function frameOf(e: StreamEvent): EventFrame {
  return eventFrame(e.cursor, e.event, e.data)
}
