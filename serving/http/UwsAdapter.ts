/**
 * The one place that talks to uWebSockets.js.
 *
 * The uWS discipline lives here and nowhere else:
 *  - the request (method, path, query, remote address) is copied synchronously, because HttpRequest is
 *    stack-allocated and dies at the first await or return; the headers are copied on first read, and always before
 *    the uWS callback returns with the answer still pending, so only a request answered synchronously without a look
 *    at its headers skips the copy (one native call back into JS per header, the dearest part of a small request);
 *  - onAborted is registered before the uWS callback returns whenever the answer is still pending (a GET answered
 *    synchronously needs none; HEAD and body methods register up front); after an abort nothing is written;
 *  - the body is read with a size limit (oversized → the handler is told, reading stops, the connection closes);
 *  - every write is corked (ResponseWriter);
 *  - the listen socket is kept so close() can stop accepting, drain in-flight requests (with a timeout), then return;
 *  - live streams (issue 33): a WebSocket upgrade under the streams pattern runs the same handler as any request with
 *    an UpgradeWriter (a refusal is an ordinary HTTP answer; an accepted stream upgrades, corked); a plain GET there
 *    falls through to the GET route (uWS yields a non-upgrade request) and may answer Server-Sent Events. The
 *    connections themselves are in StreamConnections.ts.
 */
import uWS from 'uWebSockets.js'
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js'
import { enterCallback, leaveCallback, ResponseWriter, statusLine } from './ResponseWriter.ts'
import { ListenError } from './ListenError.ts'
import { WsConnection, type StreamConnection, type StreamSocketData } from './StreamConnections.ts'

/** uSockets' LIBUS_LISTEN_EXCLUSIVE_PORT (ListenOptions in the uWS typings, which the default export does not list). */
const LISTEN_EXCLUSIVE_PORT: number = (uWS as unknown as { LIBUS_LISTEN_EXCLUSIVE_PORT?: number }).LIBUS_LISTEN_EXCLUSIVE_PORT ?? 1

export interface IncomingRequest {
  /** Upper-case method. HEAD arrives as HEAD; the writer omits the body. */
  readonly method: string
  /** Path without the query string, as sent (not decoded). */
  readonly path: string
  /** Raw query string without '?', or ''. */
  readonly query: string
  /** Lower-cased header names; repeated headers joined with ', '. */
  readonly headers: Record<string, string>
  /** One header without copying them all (the dispatcher reads Authorization on every request for the rate limit). */
  header?(name: string): string | undefined
  readonly ip: string
  /** Complete body (null for methods without one or an empty body). */
  body: Buffer | null
  /** True when the body exceeded the limit; reading stopped and body is null. */
  bodyTooLarge: boolean
}

/**
 * A request copied from uWS. The headers stay in the live HttpRequest until first read or until the adapter seals the
 * request at the end of its uWS callback; reading them after an unsealed callback returned is a discipline bug and
 * throws rather than touching a dead HttpRequest.
 */
class CopiedRequest implements IncomingRequest {
  body: Buffer | null = null
  bodyTooLarge = false
  private live: HttpRequest | null
  private copied: Record<string, string> | null = null

  constructor(
    req: HttpRequest,
    readonly method: string,
    readonly path: string,
    readonly query: string,
    readonly ip: string,
  ) {
    this.live = req
  }

  get headers(): Record<string, string> {
    if (this.copied === null) {
      if (this.live === null) throw new Error('request headers read after the uWS callback returned without copying them')
      this.copied = copyHeaders(this.live)
    }
    return this.copied
  }

  header(name: string): string | undefined {
    if (this.copied !== null || this.live === null) return this.headers[name]
    const v = this.live.getHeader(name)
    return v === '' ? undefined : v
  }

  /** End of the uWS callback: copy the headers if anything may still read them (pending), then drop the handle. */
  seal(pending: boolean): void {
    if (pending && this.copied === null && this.live !== null) this.copied = copyHeaders(this.live)
    this.live = null
  }
}

export type RequestHandler = (req: IncomingRequest, res: ResponseWriter | UpgradeWriter) => void | Promise<void>

export interface UwsAdapterOptions {
  host: string
  port: number
  /** Request body limit in bytes. Default 64 KiB. */
  maxBodyBytes?: number
  /** Use the first x-forwarded-for hop as the client address (only behind a trusted proxy). */
  trustProxy?: boolean
  /** Called for errors a handler let escape (the handler should have answered already). */
  onHandlerError: (err: unknown, req: IncomingRequest, res: AnswerWriterLike) => void
  /** WebSocket upgrades under `pattern` (e.g. '/v1/streams/*') go to the handler with an UpgradeWriter. */
  streams?: {
    pattern: string
    /** uWS's own per-socket ceiling for sends and publishes; the stream owner drops a socket well before it. */
    maxBackpressure: number
    /** Seconds without traffic before uWS closes a socket; it pings before (sendPingsAutomatically). */
    idleTimeoutS: number
  }
}

type AnswerWriterLike = ResponseWriter | UpgradeWriter

/**
 * The answer to a WebSocket upgrade request: a refusal is written as an HTTP response (the handshake fails with the
 * error envelope); stream() upgrades (corked) and hands back the socket's connection, bound when uWS opens it
 * (synchronously inside upgrade()).
 */
export class UpgradeWriter {
  done = false
  aborted = false
  private readonly key: string
  private readonly protocol: string
  private readonly extensions: string

  constructor(
    private readonly res: HttpResponse,
    req: HttpRequest,
    private readonly context: uWS.us_socket_context_t,
  ) {
    this.key = req.getHeader('sec-websocket-key')
    this.protocol = req.getHeader('sec-websocket-protocol')
    this.extensions = req.getHeader('sec-websocket-extensions')
    res.onAborted(() => {
      this.aborted = true
      this.done = true
    })
  }

  send(status: number, headers: Record<string, string>, body: string | Uint8Array): boolean {
    if (this.done) return false
    this.done = true
    this.res.cork(() => {
      this.res.writeStatus(statusLine(status))
      for (const [k, v] of Object.entries(headers)) this.res.writeHeader(k, v)
      this.res.end(body, true)
    })
    return true
  }

  stream(): StreamConnection | null {
    if (this.done) return null
    this.done = true
    let connection: WsConnection | null = null
    const data: StreamSocketData = {
      // uWS hands the socket a copy of this object: the connection is set on the socket's own user data.
      attach: (ws) => {
        connection = new WsConnection(ws)
        ws.getUserData().connection = connection
      },
      connection: null,
    }
    this.res.cork(() => this.res.upgrade(data, this.key, this.protocol, this.extensions, this.context))
    return connection
  }
}

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH', 'DELETE'])
export const DEFAULT_MAX_BODY_BYTES = 64 * 1024

export class UwsAdapter {
  readonly port: number
  private readonly app: TemplatedApp
  private listenSocket: us_listen_socket | null
  /** In-flight responses: a doubly linked list through the writers, so adding and removing costs no hashing. */
  private head: ResponseWriter | null = null
  private count = 0
  private closing = false
  private drainWaiters: Array<() => void> = []

  private constructor(app: TemplatedApp, socket: us_listen_socket) {
    this.app = app
    this.listenSocket = socket
    this.port = uWS.us_socket_local_port(socket as unknown as uWS.us_socket)
  }

  /** Binds host:port (0 picks a free port) and dispatches every request to handler. */
  static listen(opts: UwsAdapterOptions, handler: RequestHandler): Promise<UwsAdapter> {
    const app = uWS.App()
    const maxBody = opts.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
    const trustProxy = opts.trustProxy === true
    let adapter: UwsAdapter | null = null
    const finished = (w: ResponseWriter): void => {
      if (adapter) adapter.remove(w)
    }

    const accept = (res: HttpResponse, req: HttpRequest, method: string | null): { writer: ResponseWriter; incoming: CopiedRequest } => {
      const writer = new ResponseWriter(res, finished)
      const incoming = copyRequest(res, req, method, trustProxy)
      if (adapter) {
        adapter.add(writer)
        if (adapter.closing) writer.closeConnection = true
      }
      return { writer, incoming }
    }

    // GET has its own uWS route (uWS prefers it over any), so the hottest method needs no getMethod() call.
    app.get('/*', (res: HttpResponse, req: HttpRequest) => {
      const { writer, incoming } = accept(res, req, 'GET')
      const pending = run(handler, incoming, writer, opts.onHandlerError)
      incoming.seal(pending)
      // A handler that answered synchronously needs no abort watch; one still working must have it before return.
      writer.watchAbort()
    })

    if (opts.streams) {
      app.ws<StreamSocketData>(opts.streams.pattern, {
        maxBackpressure: opts.streams.maxBackpressure,
        closeOnBackpressureLimit: 0,
        idleTimeout: opts.streams.idleTimeoutS,
        sendPingsAutomatically: true,
        // Clients have nothing to say on a stream: a small limit, and messages are ignored.
        maxPayloadLength: 4096,
        upgrade: (res, req, context) => {
          const writer = new UpgradeWriter(res, req, context)
          const incoming = copyRequest(res, req, 'GET', trustProxy)
          incoming.seal(true)
          try {
            const p = handler(incoming, writer)
            if (p) p.catch((err: unknown) => opts.onHandlerError(err, incoming, writer))
          } catch (err) {
            opts.onHandlerError(err, incoming, writer)
          }
        },
        open: (ws) => ws.getUserData().attach(ws),
        drain: (ws) => ws.getUserData().connection?.drained(),
        close: (ws) => ws.getUserData().connection?.gone(),
      })
    }

    app.any('/*', (res: HttpResponse, req: HttpRequest) => {
      const { writer, incoming } = accept(res, req, null)
      // uWS counts a HEAD answer (endWithoutBody) as not responded yet forbids touching the response after it, so
      // HEAD registers its abort watch up front like a body read does.
      if (incoming.method === 'HEAD') writer.headOnly = true
      writer.watchAbort()
      if (!BODY_METHODS.has(incoming.method)) {
        incoming.seal(run(handler, incoming, writer, opts.onHandlerError))
        return
      }
      const declared = Number(incoming.headers['content-length'] ?? '')
      if (declared > maxBody) {
        incoming.bodyTooLarge = true
        writer.closeConnection = true
        incoming.seal(run(handler, incoming, writer, opts.onHandlerError))
        return
      }
      // The body arrives after this callback returns: the headers were copied just above.
      incoming.seal(true)
      readBody(res, maxBody, (body, tooLarge) => {
        if (tooLarge) {
          incoming.bodyTooLarge = true
          writer.closeConnection = true
        } else incoming.body = body
        run(handler, incoming, writer, opts.onHandlerError, false)
      })
    })

    return new Promise((resolve, reject) => {
      // Exclusive: without it, uSockets sets SO_REUSEPORT and a second process on the same port also "listens",
      // and the kernel splits connections between two services with two ledgers. The native binding takes
      // (host, port, options, cb); the published typings list options only with a port.
      const listen = app.listen as unknown as (host: string, port: number, options: number, cb: (socket: us_listen_socket | false) => void) => void
      listen.call(app, opts.host, opts.port, LISTEN_EXCLUSIVE_PORT, (socket) => {
        if (!socket) {
          reject(new ListenError('PORT_IN_USE', `cannot listen on ${opts.host}:${opts.port}: the port is in use (another service or process holds it); stop it or choose another PORT`))
          return
        }
        adapter = new UwsAdapter(app, socket)
        resolve(adapter)
      })
    })
  }

  private add(w: ResponseWriter): void {
    w.next = this.head
    if (this.head) this.head.prev = w
    this.head = w
    this.count++
  }

  private remove(w: ResponseWriter): void {
    if (w.prev === null && this.head !== w) return // not listed (or already removed)
    if (w.prev) w.prev.next = w.next
    else this.head = w.next
    if (w.next) w.next.prev = w.prev
    w.prev = w.next = null
    this.count--
    if (this.count === 0 && this.drainWaiters.length > 0) {
      for (const wake of this.drainWaiters.splice(0)) wake()
    }
  }

  private listed(): ResponseWriter[] {
    const out: ResponseWriter[] = []
    for (let w = this.head; w; w = w.next) out.push(w)
    return out
  }

  /** Sends `message` to every WebSocket subscribed to `topic` (uWS pub/sub); false when none is. */
  publish(topic: string, message: string): boolean {
    return this.app.publish(topic, message, false, false)
  }

  get inFlightCount(): number {
    return this.count
  }

  get isClosing(): boolean {
    return this.closing
  }

  /**
   * Graceful stop: stop accepting, let in-flight requests finish (their responses close the connection),
   * and force-close whatever is still running after timeoutMs.
   */
  async close(timeoutMs = 10_000): Promise<{ drained: boolean }> {
    if (!this.closing) {
      this.closing = true
      for (let w = this.head; w; w = w.next) w.closeConnection = true
      if (this.listenSocket) {
        uWS.us_listen_socket_close(this.listenSocket)
        this.listenSocket = null
      }
    }
    if (this.count === 0) return { drained: true }
    let timer: NodeJS.Timeout | undefined
    const drained = await new Promise<boolean>((resolve) => {
      this.drainWaiters.push(() => resolve(true))
      timer = setTimeout(() => resolve(false), timeoutMs)
    })
    clearTimeout(timer)
    if (!drained) for (const w of this.listed()) w.forceClose()
    return { drained }
  }
}

/**
 * Runs the handler. From the request callback (inUwsCallback) whatever it writes before returning is inside uWS's own
 * cork; from a body-chunk callback the writer corks for itself. Returns whether work is still pending: a promise, or
 * no answer written yet.
 */
function run(handler: RequestHandler, incoming: IncomingRequest, writer: ResponseWriter, onError: UwsAdapterOptions['onHandlerError'], inUwsCallback = true): boolean {
  if (writer.done) return false
  if (inUwsCallback) enterCallback(writer)
  let pending = false
  try {
    const p = handler(incoming, writer)
    if (p) {
      pending = true
      p.catch((err: unknown) => onError(err, incoming, writer))
    }
  } catch (err) {
    onError(err, incoming, writer)
  } finally {
    leaveCallback()
  }
  return pending || !writer.done
}

/** uWS reports the method lower-cased; the common ones are looked up instead of upper-cased per request. */
const UPPER_METHODS: Record<string, string> = { get: 'GET', post: 'POST', head: 'HEAD', put: 'PUT', delete: 'DELETE', patch: 'PATCH', options: 'OPTIONS' }

function upperMethod(m: string): string {
  return UPPER_METHODS[m] ?? m.toUpperCase()
}

// The headers object req.forEach is filling: one shared callback instead of a closure per request.
let collecting: Record<string, string> = {}
function collectHeader(key: string, value: string): void {
  const prev = collecting[key]
  collecting[key] = prev === undefined ? value : `${prev}, ${value}`
}

function copyHeaders(req: HttpRequest): Record<string, string> {
  const headers: Record<string, string> = {}
  collecting = headers
  req.forEach(collectHeader)
  return headers
}

/** method: known from the uWS route (GET), or null to ask the request. */
function copyRequest(res: HttpResponse, req: HttpRequest, method: string | null, trustProxy: boolean): CopiedRequest {
  let ip = ''
  if (trustProxy) {
    // The first hop of the first x-forwarded-for header (the same hop the joined copy of repeated ones starts with).
    const xff = req.getHeader('x-forwarded-for')
    if (xff) ip = (xff.split(',')[0] ?? '').trim()
  }
  if (!ip) ip = remoteAddressText(res.getRemoteAddress())
  return new CopiedRequest(req, method ?? upperMethod(req.getMethod()), req.getUrl(), req.getQuery() ?? '', ip)
}

/**
 * The peer address as uWS's getRemoteAddressAsText() spells it (dotted IPv4; IPv6 as eight 4-digit hex groups), from
 * the binary form: the text call costs about as much again as the rest of a small request, and IPv4 texts are cached.
 */
const ipv4Texts = new Map<number, string>()
const IPV4_CACHE_MAX = 4096

export function remoteAddressText(binary: ArrayBuffer): string {
  const b = new Uint8Array(binary)
  if (b.length === 4) {
    const key = ((b[0] as number) << 24 | (b[1] as number) << 16 | (b[2] as number) << 8 | (b[3] as number)) >>> 0
    let text = ipv4Texts.get(key)
    if (text === undefined) {
      text = `${b[0]}.${b[1]}.${b[2]}.${b[3]}`
      if (ipv4Texts.size >= IPV4_CACHE_MAX) ipv4Texts.clear()
      ipv4Texts.set(key, text)
    }
    return text
  }
  let text = ''
  for (let i = 0; i + 1 < b.length; i += 2) {
    const group = (((b[i] as number) << 8) | (b[i + 1] as number)).toString(16)
    text += (i === 0 ? '' : ':') + '0000'.slice(group.length) + group
  }
  return text
}

/** Accumulates the body (copying each chunk: uWS neuters it on return) and stops at the limit. */
function readBody(res: HttpResponse, limit: number, done: (body: Buffer | null, tooLarge: boolean) => void): void {
  const chunks: Buffer[] = []
  let size = 0
  let over = false
  res.onData((chunk, isLast) => {
    if (over) return
    size += chunk.byteLength
    if (size > limit) {
      over = true
      chunks.length = 0
      done(null, true)
      return
    }
    if (chunk.byteLength > 0) chunks.push(Buffer.from(new Uint8Array(chunk)))
    if (isLast) done(size === 0 ? null : chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, size), false)
  })
}
