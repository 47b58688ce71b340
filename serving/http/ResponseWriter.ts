/**
 * Abort-safe, corked writes to one uWS HttpResponse.
 *
 * uWS rules held here: a response is written at most once; nothing is written after onAborted fired; every write
 * runs inside res.cork() (mandatory after an await, and packs status, headers and body into one syscall).
 */
import type { HttpResponse } from 'uWebSockets.js'

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

export const JSON_TYPE = 'application/json; charset=utf-8'
export const TEXT_TYPE = 'text/plain; charset=utf-8'

export type HeaderList = ReadonlyArray<readonly [string, string]>

// The response being written by ResponseWriter.writeCorked: one shared cork callback instead of a closure per response.
let corked: ResponseWriter | null = null
let corkedStatus = 0
let corkedHeaders: Record<string, string> | null = null
let corkedExtra: HeaderList | null = null
let corkedBody: string | Uint8Array = ''

export class ResponseWriter {
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
  send(status: number, headers: Record<string, string>, extra: HeaderList | null, body: string | Uint8Array): boolean {
    if (this.done) return false
    this.done = true
    corked = this
    corkedStatus = status
    corkedHeaders = headers
    corkedExtra = extra
    corkedBody = body
    try {
      this.res.cork(ResponseWriter.writeCorked)
    } finally {
      corked = null
      corkedHeaders = null
      corkedExtra = null
      corkedBody = ''
    }
    this.onFinished(this)
    return true
  }

  /** The cork callback: writes the send() in progress (cork calls back synchronously). */
  private static writeCorked(): void {
    ;(corked as ResponseWriter).write(corkedStatus, corkedHeaders as Record<string, string>, corkedExtra, corkedBody)
  }

  private write(status: number, headers: Record<string, string>, extra: HeaderList | null, body: string | Uint8Array): void {
    const res = this.res
    res.writeStatus(statusLine(status))
    // One writeHeader call for the whole block: uWS writes `key: value\r\n`, so a value carrying the following
    // lines yields the same bytes as one call per header, with one crossing into native code instead of one each.
    let firstKey: string | null = null
    let block = ''
    for (const key in headers) {
      if (firstKey === null) {
        firstKey = key
        block = headers[key] as string
      } else block += '\r\n' + key + ': ' + (headers[key] as string)
    }
    if (extra) {
      for (const [k, v] of extra) {
        if (firstKey === null) {
          firstKey = k
          block = v
        } else block += '\r\n' + k + ': ' + v
      }
    }
    if (firstKey !== null) res.writeHeader(firstKey, block)
    if (this.headOnly) res.endWithoutBody(typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength, this.closeConnection)
    else res.end(body, this.closeConnection)
  }

  /** Forcibly closes the connection (shutdown timeout). onAborted fires as a consequence. */
  forceClose(): void {
    if (this.done) return
    this.res.close()
  }
}
