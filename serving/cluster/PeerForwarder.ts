/**
 * Forwarding a payer-scoped request to the instance that owns the payer (issue 32; product/billing/PayerOwnership.ts),
 * and the peer token that lets the owner tell a forwarded request from a client's.
 *
 * The token is `<ms>.<hex HMAC-SHA256(key, ms method path?query)>`, the key derived from the deployment's signing
 * secret (SVC_SIGNING_SECRET, which every instance of a cluster shares): bound to the request line and valid for
 * PEER_TOKEN_WINDOW_MS either side of its time, so a token seen once cannot be replayed on another route or later.
 * A request with a valid token is served by whoever receives it and is never forwarded again (one hop); one with an
 * invalid token is refused (403 OPS_FORBIDDEN, PEER_TOKEN_REJECTED).
 *
 * The owner's answer is relayed unchanged (status, headers, body); hop-by-hop headers are the transport's.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'
import type { IncomingRequest } from '../http/UwsAdapter.ts'

export const PEER_HEADER = 'x-svc-peer'
/** How far a token's time may be from the receiver's clock, ms. */
export const PEER_TOKEN_WINDOW_MS = 60_000
/** How long a forwarded request may take at the owner before the forwarder answers PROVIDER_DOWN, ms. */
const FORWARD_TIMEOUT_MS = 30_000
/** Headers of one connection (RFC 9110 §7.6.1) and those the transport computes: never copied across the hop. */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'proxy-connection', 'host', 'content-length', 'date'])

export interface ForwardedAnswer {
  status: number
  headers: Record<string, string>
  body: Buffer
}

export class PeerForwarder {
  private readonly key: Buffer

  constructor(signingSecret: Buffer) {
    // Its own key, not the hook signing secret itself: a peer token never verifies as a hook signature or vice versa.
    this.key = createHmac('sha256', signingSecret).update('svc.peer-forward.v1').digest()
  }

  token(method: string, target: string, nowMs: number): string {
    return `${nowMs}.${this.mac(nowMs, method, target)}`
  }

  verify(token: string, method: string, target: string, nowMs: number): boolean {
    const dot = token.indexOf('.')
    const ms = Number(token.slice(0, dot))
    if (dot <= 0 || !Number.isSafeInteger(ms) || Math.abs(nowMs - ms) > PEER_TOKEN_WINDOW_MS) return false
    const given = Buffer.from(token.slice(dot + 1), 'utf8')
    const want = Buffer.from(this.mac(ms, method, target), 'utf8')
    return given.length === want.length && timingSafeEqual(given, want)
  }

  /** Sends `req` to `baseUrl` with a peer token; rejects when the owner cannot be reached or does not answer in time. */
  async forward(req: IncomingRequest, baseUrl: string, nowMs: number): Promise<ForwardedAnswer> {
    const target = req.query ? `${req.path}?${req.query}` : req.path
    const headers = new Headers()
    for (const [name, value] of Object.entries(req.headers)) if (!HOP_BY_HOP.has(name) && name !== PEER_HEADER) headers.set(name, value)
    headers.set(PEER_HEADER, this.token(req.method, target, nowMs))
    headers.set('x-forwarded-for', req.ip)
    const res = await fetch(`${baseUrl}${target}`, {
      method: req.method,
      headers,
      ...(req.body !== null && req.body.length > 0 ? { body: new Uint8Array(req.body) } : {}),
      redirect: 'manual',
      signal: AbortSignal.timeout(FORWARD_TIMEOUT_MS),
    })
    const body = Buffer.from(await res.arrayBuffer())
    const out: Record<string, string> = {}
    res.headers.forEach((value, name) => {
      if (!HOP_BY_HOP.has(name)) out[name] = value
    })
    return { status: res.status, headers: out, body }
  }

  private mac(ms: number, method: string, target: string): string {
    return createHmac('sha256', this.key).update(`${ms} ${method} ${target}`).digest('hex')
  }
}
