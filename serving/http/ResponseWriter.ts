/**
 * Abort-safe, corked writes to one uWS HttpResponse.
 *
 * uWS rules held here: a response is written at most once; nothing is written after onAborted fired; every write
 * is corked (mandatory after an await, and packs status, headers and body into one syscall): an answer written
 * during its own uWS request callback is inside the cork uWS holds for that callback, any later one calls res.cork().
 */
import type { HttpResponse } from 'uWebSockets.js'
import { slabUtf8 } from './byteSlab.ts'
import { SseConnection, type StreamConnection } from './StreamConnections.ts'

const STATUS_TEXT: Record<number, string> = {
  200: '200 OK', 201: '201 Created', 204: '204 No Content', 301: '301 Moved Permanently', 302: '302 Found',
  304: '304 Not Modified', 400: '400 Bad Request', 401: '401 Unauthorized', 402: '402 Payment Required',
  403: '403 Forbidden', 404: '404 Not Found', 405: '405 Method Not Allowed', 409: '409 Conflict',
  413: '413 Payload Too Large', 415: '415 Unsupported Media Type', 422: '422 Unprocessable Content',
  429: '429 Too Many Requests', 500: '500 Internal Server Error', 502: '502 Bad Gateway',
  503: '503 Service Unavailable', 504: '504 Gateway Timeout',
}

export function statusLine(status: number): string {
  return STATUS_TEXT[status] ?? String(status)
}

// uWS converts every string argument to UTF-8 in a malloc'd copy; constant ones are handed over as bytes made once.
const statusBytes = new Map<number, Buffer>()
function statusLineBytes(status: number): Buffer {
  let b = statusBytes.get(status)
  if (b === undefined) statusBytes.set(status, (b = Buffer.from(statusLine(status), 'latin1')))
  return b
}

const headerNameBytes = new Map<string, Buffer>()
function headerNameOf(name: string): Buffer {
  let b = headerNameBytes.get(name)
  if (b === undefined) {
    b = Buffer.from(name, 'utf8')
    // Names come from code, not from requests; the bound only guards against a caller that builds them.
    if (headerNameBytes.size < 256) headerNameBytes.set(name, b)
  }
  return b
}

export const JSON_TYPE = 'application/json; charset=utf-8'
export const TEXT_TYPE = 'text/plain; charset=utf-8'

// The response being written by ResponseWriter.writeCorked: one shared cork callback instead of a closure per response.
let corked: ResponseWriter | null = null
let corkedStatus = 0
let corkedHeaders: Record<string, string> | null = null
let corkedBody: string | Uint8Array = ''

/**
 * The writer whose uWS request callback is running right now (set by the adapter around the synchronous part of a
 * request, cleared before the callback returns): its writes are inside uWS's own cork and need no cork() of their own.
 */
let answeringInCallback: ResponseWriter | null = null

export function enterCallback(w: ResponseWriter): void {
  answeringInCallback = w
}

export function leaveCallback(): void {
  answeringInCallback = null
}

/**
 * Every header after the first, as the value bytes of one writeHeader(firstName, …) call: uWS writes
 * `name: value\r\n`, so a value carrying the following lines yields the same bytes as one call per header, with one
 * crossing into native code instead of one each. One string, one UTF-8 write into the slab (cheaper than storing the
 * bytes one at a time in JS).
 */
export function headerBlockBytes(headers: Record<string, string>): Buffer {
  let block = ''
  let isFirst = true
  for (const key in headers) {
    block += isFirst ? (headers[key] as string) : '\r\n' + key + ': ' + (headers[key] as string)
    isFirst = false
  }
  return slabUtf8(block)
}

/**
 * What the dispatcher writes an answer to: a uWS response, or an in-process capture (an MCP tool call runs the same
 * dispatcher path as REST and reads its answer back).
 */
export interface AnswerWriter {
  /**
   * envelope: the body is the success envelope serializeSuccess wrote ({"data":…,"meta":…}, JSON text of an object by
   * construction), so a capture may use it as that object's JSON without parsing it again. A socket ignores it.
   * Body bytes are lent for the call only (a large envelope's memory is reused: byteSlab slabConcat): copy to keep.
   */
  send(status: number, headers: Record<string, string>, body: string | Uint8Array, envelope?: boolean): boolean
  /**
   * A live stream instead of one answer (a stream route accepted): the connection, or null when this writer cannot
   * stream (an in-process capture) or its client is gone. A socket writer streams Server-Sent Events; an upgrade
   * writer, a WebSocket.
   */
  stream?(headers: Record<string, string>): StreamConnection | null
}

export class ResponseWriter implements AnswerWriter {
  aborted = false
  done = false
  /** Set when the connection must close after this response (oversized body left unread, or shutdown). */
  closeConnection = false
  /** Whether the body must be omitted (HEAD). */
  headOnly = false
  /** Links of the adapter's in-flight list (intrusive: no hashing per request). */
  prev: ResponseWriter | null = null
  next: ResponseWriter | null = null
  private readonly res: HttpResponse
  private readonly onFinished: (w: ResponseWriter) => void

  constructor(res: HttpResponse, onFinished: (w: ResponseWriter) => void) {
    this.res = res
    this.onFinished = onFinished
  }

  /** Registers onAborted: needed before the uWS callback returns whenever the answer is not written yet. */
  watchAbort(): void {
    if (!this.done) this.res.onAborted(() => this.markAborted())
  }

  /** Called from the adapter's onAborted: the client went away; every later write is dropped. */
  markAborted(): void {
    if (this.done) return
    this.aborted = true
    this.done = true
    this.onFinished(this)
  }

  /** Writes status, headers and body in one corked operation. Returns false when the response was already gone. */
  send(status: number, headers: Record<string, string>, body: string | Uint8Array): boolean {
    if (this.done) return false
    this.done = true
    if (answeringInCallback === this) {
      // uWS corks the socket for the whole of its request callback: a synchronous answer is already corked.
      this.write(status, headers, body)
    } else {
      corked = this
      corkedStatus = status
      corkedHeaders = headers
      corkedBody = body
      try {
        this.res.cork(ResponseWriter.writeCorked)
      } finally {
        corked = null
        corkedHeaders = null
        corkedBody = ''
      }
    }
    this.onFinished(this)
    return true
  }

  /** The cork callback: writes the send() in progress (cork calls back synchronously). */
  private static writeCorked(): void {
    ;(corked as ResponseWriter).write(corkedStatus, corkedHeaders as Record<string, string>, corkedBody)
  }

  private write(status: number, headers: Record<string, string>, body: string | Uint8Array): void {
    const res = this.res
    // uWS writes "200 OK" itself when no status was written.
    if (status !== 200) res.writeStatus(statusLineBytes(status))
    let firstKey: string | null = null
    for (const key in headers) {
      firstKey = key
      break
    }
    if (firstKey !== null) res.writeHeader(headerNameOf(firstKey), headerBlockBytes(headers))
    if (this.headOnly) res.endWithoutBody(typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength, this.closeConnection)
    else res.end(body, this.closeConnection)
  }

  /**
   * Server-Sent Events on this response: status and headers now, then one write per event (SseConnection). The
   * response stays in the adapter's in-flight list until the stream ends.
   */
  stream(headers: Record<string, string>): StreamConnection | null {
    if (this.done) return null
    this.done = true
    const sse = new SseConnection(this.res, () => this.onFinished(this))
    this.sse = sse
    sse.open({ 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', 'x-accel-buffering': 'no', ...headers }, answeringInCallback === this)
    return sse
  }

  private sse: SseConnection | null = null

  /** Forcibly closes the connection (shutdown timeout). onAborted fires as a consequence. */
  forceClose(): void {
    if (this.sse) this.sse.forceClose()
    if (this.done) return
    this.res.close()
  }
}
