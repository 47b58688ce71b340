/**
 * A real local push service and the browsers behind it, for the push tests: a node:http (or, given a certificate,
 * node:https) server on 127.0.0.1 that does what a push service does with a request (RFC 8030 §5; RFC 8292 §4: verify
 * the VAPID JWT against the k= key, aud = its own origin, exp in the future and at most 24 h away) and what the
 * browser does with the message (RFC 8291: decrypt the aes128gcm body with the subscription's private ECDH key and
 * auth secret, here through http_ece, the reference implementation).
 *
 *   const svc = await pushService(t)                                  // plain HTTP; endpoints on push.example.test
 *   const svc = await pushService(t, { tls: await ca.issue(...) })    // HTTPS; endpoints on https://127.0.0.1:<port>
 *   const alice = svc.browser('alice')                                // alice.subscription is what a page registers
 *   ... svc.received[0].plaintext                                     // what alice's browser read
 */
import { createECDH, createPublicKey, randomBytes, verify, type ECDH } from 'node:crypto'
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import { createRequire } from 'node:module'
import type { PushSubscriptionInput } from '../../../product/delivery/WebPushSender.ts'
import { freePort } from '../tmp.ts'

/** http_ece ships no types; only decrypt is used. */
export const ece = createRequire(import.meta.url)('http_ece') as {
  decrypt(buffer: Buffer, params: { version: 'aes128gcm'; privateKey: ECDH; dh?: Buffer; authSecret: string }): Buffer
}

/** The made-up host of a plain-HTTP push service: a test transport connects to 127.0.0.1 and sends this as Host. */
export const PUSH_HOST = 'push.example.test'

type Teardown = { teardown(fn: () => unknown): void }

export interface Browser {
  ecdh: ECDH
  auth: string
  subscription: PushSubscriptionInput
}

/** What the browser keeps (its private key) and what it registers (the subscription), for an endpoint at `origin`. */
export function browser(token: string, origin = `https://${PUSH_HOST}`): Browser {
  const ecdh = createECDH('prime256v1')
  ecdh.generateKeys()
  const auth = randomBytes(16).toString('base64url')
  return {
    ecdh,
    auth,
    subscription: { endpoint: `${origin}/wpush/v2/${token}`, keys: { p256dh: ecdh.getPublicKey().toString('base64url'), auth } },
  }
}

export interface Received {
  path: string
  headers: IncomingHttpHeaders
  body: Buffer
  jwt: { header: Record<string, unknown>; claims: { aud?: unknown; exp?: unknown; sub?: unknown }; k: string } | null
  vapidProblem: string | null
  plaintext: string | null
  decryptProblem: string | null
}

/** RFC 8292 §2, §3, §4.2: the Authorization header, the ES256 signature over header.claims, aud, exp. */
export function checkVapid(authorization: string | undefined, host: string | undefined): { jwt: Received['jwt']; problem: string | null } {
  const m = /^vapid t=([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+), k=([A-Za-z0-9_-]+)$/.exec(authorization ?? '')
  if (!m) return { jwt: null, problem: `not a vapid Authorization header: ${authorization}` }
  const [, h, c, s, k] = m as unknown as [string, string, string, string, string]
  const jwt = {
    header: JSON.parse(Buffer.from(h, 'base64url').toString()) as Record<string, unknown>,
    claims: JSON.parse(Buffer.from(c, 'base64url').toString()) as { aud?: unknown; exp?: unknown; sub?: unknown },
    k,
  }
  const point = Buffer.from(k, 'base64url')
  if (point.length !== 65 || point[0] !== 4) return { jwt, problem: 'k is not an uncompressed P-256 point' }
  const key = createPublicKey({
    key: { kty: 'EC', crv: 'P-256', x: point.subarray(1, 33).toString('base64url'), y: point.subarray(33).toString('base64url') },
    format: 'jwk',
  })
  if (jwt.header.alg !== 'ES256') return { jwt, problem: `alg ${String(jwt.header.alg)}` }
  const signed = verify('sha256', Buffer.from(`${h}.${c}`), { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(s, 'base64url'))
  if (!signed) return { jwt, problem: 'ES256 signature does not verify against k' }
  if (jwt.claims.aud !== `https://${host}`) return { jwt, problem: `aud ${String(jwt.claims.aud)} is not this push service's origin` }
  const now = Math.floor(Date.now() / 1000)
  const exp = jwt.claims.exp
  if (typeof exp !== 'number' || exp <= now) return { jwt, problem: `exp ${String(exp)} is not in the future` }
  if (exp > now + 86_400) return { jwt, problem: `exp ${exp} is more than 24 h away` }
  return { jwt, problem: null }
}

/** The aes128gcm header (RFC 8188 §2.1): salt 16, rs 4, idlen 1, keyid = the sender's ephemeral public key. */
export function senderKeyOf(body: Buffer): Buffer {
  const idlen = body.readUInt8(20)
  return body.subarray(21, 21 + idlen)
}

export interface PushService {
  port: number
  /** The origin subscriptions point at. */
  origin: string
  received: Received[]
  browser(token: string): Browser
}

/**
 * The push service and the browsers behind it. `answer` picks the status per token (default 201 Created, RFC 8030
 * §5); a request whose VAPID fails is answered 403 as a real push service does (RFC 8292 §4.2). With `tls` it serves
 * HTTPS with that certificate and its subscriptions point at https://127.0.0.1:<port> (the address a test allowlist lets
 * through the URL guard; a name could also resolve to ::1).
 */
export async function pushService(
  t: Teardown,
  opts: { answer?: (token: string) => number; tls?: { key: string; cert: string } } = {},
): Promise<PushService> {
  const answer = opts.answer ?? (() => 201)
  const browsers = new Map<string, Browser>()
  const received: Received[] = []
  const port = await freePort()
  const origin = opts.tls ? `https://127.0.0.1:${port}` : `https://${PUSH_HOST}`
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks)
      const path = req.url ?? ''
      const token = path.split('/').pop() ?? ''
      const { jwt, problem } = checkVapid(req.headers.authorization, req.headers.host)
      let plaintext: string | null = null
      let decryptProblem: string | null = null
      const b = browsers.get(token)
      if (!b) decryptProblem = 'no such subscription'
      else {
        try {
          plaintext = ece.decrypt(body, { version: 'aes128gcm', privateKey: b.ecdh, dh: senderKeyOf(body), authSecret: b.auth }).toString('utf8')
        } catch (err) {
          decryptProblem = (err as Error).message
        }
      }
      received.push({ path, headers: req.headers, body, jwt, vapidProblem: problem, plaintext, decryptProblem })
      res.statusCode = problem ? 403 : answer(token)
      if (res.statusCode === 201) res.setHeader('location', `${origin}/m/${received.length}`)
      res.end()
    })
  }
  const server = opts.tls ? createHttpsServer({ key: opts.tls.key, cert: opts.tls.cert }, handle) : createServer(handle)
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()) }))
  return {
    port,
    origin,
    received,
    browser(token: string): Browser {
      const b = browser(token, origin)
      browsers.set(token, b)
      return b
    },
  }
}
