/**
 * The delivery HTTP client (spec, Authentication 7: hook and push URLs are "safety-checked at registration and again
 * before each delivery"; Events 2: "Delivery truth lives only in an append-only delivery record with one row per
 * attempt").
 *
 *   const target = await guard.check(url, 'hook')                         // UrlGuard: the address to connect to
 *   const result = await client.post(target, body, { 'content-type': 'application/json', 'x-svc-signature': sig })
 *   // result: { status, latency_ms, error_class, location? }: one delivery row, never an exception
 *
 * Why it is built this way:
 * - pinned: the socket goes to target.address, the address the guard checked. There is no second DNS lookup between
 *   check and connect, so a name that answers a public address to the check and a private one to the connect (DNS
 *   rebinding) still reaches the checked address. `lookup` is overridden to refuse any other name, in case a future
 *   Node resolves something we did not expect;
 * - the name still does its job: the Host header carries it, and for https it is the SNI name and the name the
 *   certificate is verified against (verification is never turned off; `ca` only adds a trust anchor for tests);
 * - no redirects: a 3xx is reported with its Location and never fetched, since the Location was never checked and a
 *   redirect to http://169.254.169.254/ is the classic way past a guard;
 * - no keep-alive (agent: false): deliveries are rare and go to many receivers, so a pool buys little, and a pooled
 *   socket keyed by host name could outlive the check that admitted its address. One connection per attempt;
 * - bounded: one deadline (timeoutMs) covers connect, TLS, request, response headers and the body; at most 64 KiB of
 *   the response body is read (it only keeps the exchange well-behaved; nothing is kept), then the socket is destroyed.
 */
import http from 'node:http'
import https from 'node:https'
import { isIP } from 'node:net'
import type { LookupFunction } from 'node:net'
import { performance } from 'node:perf_hooks'
import { rootCertificates } from 'node:tls'
import { childLogger } from '../../common/logger.ts'
import { OptionsError, validateOptions } from '../../common/validation.ts'
import type { CheckedUrl } from './UrlGuard.ts'

const log = childLogger('delivery.http')

/** Most response-body bytes read before the socket is destroyed. */
export const RESPONSE_BODY_CAP = 64 * 1024
export const DEFAULT_TIMEOUT_MS = 5000
export const DEFAULT_USER_AGENT = 'decision-intelligence-service-delivery/0.1'

/**
 * Why an attempt did not succeed (null: a 2xx answer).
 * - timeout: no response headers within timeoutMs (connect, TLS and the receiver's think time included);
 * - connect: the connection was refused or the address unreachable;
 * - tls: the handshake failed (unknown issuer, name mismatch, expired certificate, protocol alert);
 * - redirect: a 3xx; location carries the Location header, which was not followed;
 * - http_status: any other non-2xx status;
 * - reset: the receiver closed or reset the connection before answering;
 * - protocol: the answer was not parseable HTTP;
 * - network: any other socket error (error_code names it).
 */
export type DeliveryErrorClass = 'timeout' | 'connect' | 'tls' | 'redirect' | 'http_status' | 'reset' | 'protocol' | 'network'

export interface PostResult {
  /** The receiver's HTTP status, or null when none arrived. */
  status: number | null
  /** From the start of the attempt to the response headers (or the failure). */
  latency_ms: number
  error_class: DeliveryErrorClass | null
  /** The Location of a 3xx (error_class 'redirect'), as sent; never fetched. */
  location?: string
  /** The socket or TLS error code behind error_class (ECONNREFUSED, UNABLE_TO_VERIFY_LEAF_SIGNATURE, ...). */
  error_code?: string
}

export interface PinnedHttpClientOptions {
  /** Extra trust anchors (PEM), added to Node's bundled roots: a test CA. Verification stays on either way. */
  ca?: string | Buffer | Array<string | Buffer>
  /** The whole attempt up to the response headers, in ms. Default 5000. */
  timeoutMs?: number
  userAgent?: string
}

const OPTIONS_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    ca: {},
    timeoutMs: { type: 'integer', minimum: 1, maximum: 120_000 },
    userAgent: { type: 'string', minLength: 1, maxLength: 256, pattern: '^[\\x20-\\x7e]+$' },
  },
}

/** Headers the client owns: the caller may not set them (they pin the target and frame the body). */
const OWNED_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'te', 'trailer', 'proxy-connection'])

/** OpenSSL verification and handshake codes Node surfaces without an ERR_TLS_/ERR_SSL_ prefix. */
const TLS_CODES = new Set([
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_GET_ISSUER_CERT', 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT', 'CERT_HAS_EXPIRED', 'CERT_NOT_YET_VALID', 'CERT_REVOKED', 'CERT_UNTRUSTED', 'CERT_REJECTED',
  'CERT_SIGNATURE_FAILURE', 'INVALID_CA', 'INVALID_PURPOSE', 'HOSTNAME_MISMATCH', 'EPROTO',
])
const CONNECT_CODES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'EHOSTDOWN', 'ENETDOWN'])
const RESET_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED'])

function classify(err: NodeJS.ErrnoException): DeliveryErrorClass {
  const code = err.code ?? ''
  if (CONNECT_CODES.has(code)) return 'connect'
  if (RESET_CODES.has(code)) return 'reset'
  if (TLS_CODES.has(code) || code.startsWith('ERR_TLS_') || code.startsWith('ERR_SSL_') || code.startsWith('CERT_')) return 'tls'
  if (code.startsWith('HPE_')) return 'protocol'
  return 'network'
}

/** The Host header: an IPv6 literal in brackets, the port only where it is not the scheme's default. */
function hostHeader(target: CheckedUrl): string {
  const name = isIP(target.host) === 6 ? `[${target.host}]` : target.host
  const defaultPort = target.url.protocol === 'https:' ? 443 : 80
  return target.port === defaultPort ? name : `${name}:${target.port}`
}

export class PinnedHttpClient {
  private constructor(
    private readonly ca: string | Buffer | Array<string | Buffer> | undefined,
    private readonly timeoutMs: number,
    private readonly userAgent: string,
  ) {}

  static create(options: PinnedHttpClientOptions = {}): PinnedHttpClient {
    const o = validateOptions<PinnedHttpClientOptions>('PinnedHttpClient options', OPTIONS_SCHEMA, { ...options })
    const pem = (v: unknown) => typeof v === 'string' || Buffer.isBuffer(v)
    if (o.ca !== undefined && !(pem(o.ca) || (Array.isArray(o.ca) && o.ca.length > 0 && o.ca.every(pem)))) {
      throw OptionsError.at('PinnedHttpClient options', '/ca', 'must be PEM text, a Buffer, or a non-empty array of them')
    }
    // tls.connect's `ca` replaces the bundled roots; a test CA is added to them, so public receivers still verify.
    const ca = o.ca === undefined ? undefined : [...(Array.isArray(o.ca) ? o.ca : [o.ca]), ...rootCertificates]
    return new PinnedHttpClient(ca, o.timeoutMs ?? DEFAULT_TIMEOUT_MS, o.userAgent ?? DEFAULT_USER_AGENT)
  }

  /**
   * One attempt: POSTs body to the checked address with the URL's name in Host (and SNI), follows nothing, and
   * answers a PostResult whatever the network does. Throws only on a programming error, not a delivery outcome: a
   * target not of the guard's shape (an address that is not an IP, a scheme that is not http(s)) or a header value
   * Node refuses to send (a CR or LF in it).
   */
  async post(target: CheckedUrl, body: Buffer | string, headers: Record<string, string>): Promise<PostResult> {
    const family = isIP(target.address)
    if (family === 0) throw new TypeError(`PinnedHttpClient.post: target.address must be an IP address, got '${target.address}'`)
    const secure = target.url.protocol === 'https:'
    if (!secure && target.url.protocol !== 'http:') throw new TypeError(`PinnedHttpClient.post: scheme ${target.url.protocol} is not http(s)`)
    if (!Number.isInteger(target.port) || target.port < 1 || target.port > 65535) throw new TypeError(`PinnedHttpClient.post: bad port ${target.port}`)

    const payload = typeof body === 'string' ? Buffer.from(body, 'utf8') : body
    const outgoing: Record<string, string> = { 'user-agent': this.userAgent }
    for (const [k, v] of Object.entries(headers)) if (!OWNED_HEADERS.has(k.toLowerCase())) outgoing[k.toLowerCase()] = v
    outgoing.host = hostHeader(target)
    outgoing['content-length'] = String(payload.length)
    outgoing.connection = 'close'

    // Only the checked address resolves: anything else would be a lookup the guard never saw.
    const pinnedLookup = ((hostname: string, opts: { all?: boolean }, cb: (...args: unknown[]) => void) => {
      if (hostname !== target.address) {
        cb(Object.assign(new Error(`pinned client refuses to resolve ${hostname}`), { code: 'ENOTFOUND' }))
      } else if (opts?.all) {
        cb(null, [{ address: target.address, family }])
      } else {
        cb(null, target.address, family)
      }
    }) as unknown as LookupFunction

    const options: https.RequestOptions = {
      method: 'POST',
      host: target.address,
      port: target.port,
      path: `${target.url.pathname}${target.url.search}`,
      headers: outgoing,
      agent: false,
      lookup: pinnedLookup,
      family,
    }
    if (secure) {
      options.rejectUnauthorized = true
      if (this.ca !== undefined) options.ca = this.ca
      // SNI carries names only (RFC 6066 3); for an IP literal the certificate is verified against the IP itself.
      options.servername = isIP(target.host) === 0 ? target.host : ''
    }

    const started = performance.now()
    const elapsed = () => Math.round((performance.now() - started) * 1000) / 1000
    return new Promise<PostResult>((resolve) => {
      let settled = false
      const finish = (r: PostResult) => {
        if (settled) return
        settled = true
        if (r.error_class !== null) log.debug({ host: target.host, address: target.address, ...r }, 'delivery attempt failed')
        resolve(r)
      }
      const req = (secure ? https : http).request(options, (res) => {
        const status = res.statusCode ?? null
        const result: PostResult = { status, latency_ms: elapsed(), error_class: null }
        if (status === null || status < 200 || status >= 300) result.error_class = status !== null && status >= 300 && status < 400 ? 'redirect' : 'http_status'
        if (result.error_class === 'redirect' && typeof res.headers.location === 'string') result.location = res.headers.location
        finish(result)
        drain(res)
      })
      // One deadline for the whole exchange: before the headers it is the attempt's timeout, after them it cuts a
      // slow body short (the result is decided by then). The request closes when its socket does.
      // The flag, not the error's message or code, tells the deadline apart from a socket error that ends the same way.
      let timedOut = false
      const deadline = setTimeout(() => {
        timedOut = true
        req.destroy(Object.assign(new Error(`no response within ${this.timeoutMs} ms`), { code: 'ETIMEDOUT' }))
      }, this.timeoutMs)
      req.on('close', () => clearTimeout(deadline))
      req.on('error', (err: NodeJS.ErrnoException) => {
        const error_class = timedOut ? 'timeout' : classify(err)
        finish({ status: null, latency_ms: elapsed(), error_class, ...(err.code ? { error_code: err.code } : {}) })
      })
      req.end(payload)
    })
  }

  /** Nothing pooled (agent: false); here so owners close every part the same way. */
  async close(): Promise<void> {}
}

/**
 * Reads at most RESPONSE_BODY_CAP bytes of a response the result no longer needs, then lets the socket go: a
 * receiver that streams forever costs 64 KiB and one destroyed socket (or the deadline), not memory or a hung socket.
 */
function drain(res: http.IncomingMessage): void {
  let read = 0
  res.on('data', (chunk: Buffer) => {
    read += chunk.length
    if (read >= RESPONSE_BODY_CAP) res.destroy()
  })
  res.on('error', () => {}) // the result is already decided; a body cut short changes nothing
}
