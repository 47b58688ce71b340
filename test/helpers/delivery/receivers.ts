/**
 * Local webhook receivers for delivery tests: real HTTP(S) servers on 127.0.0.1 that record every request and
 * verify its signature with their own HMAC computation (node:crypto), never with the service's HookSigner, so a
 * signing bug cannot hide behind a matching verification bug.
 */
import { createHmac } from 'node:crypto'
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'

export interface Received {
  path: string
  headers: Record<string, string>
  body: string
  /** The receiver's own check: HMAC-SHA256 over "<webhook-id>.<webhook-timestamp>.<body>" with the secret given. */
  verified: boolean | null
}

export interface Receiver {
  readonly url: string
  readonly port: number
  readonly received: Received[]
  /** What to answer: a status (default 200), optionally after a delay. */
  answer: (req: Received, n: number) => { status: number; delayMs?: number; headers?: Record<string, string> }
  /** Secrets by path prefix (the receiver verifies each request whose path starts with one). */
  secrets: Map<string, string>
  waitFor(n: number, timeoutMs?: number): Promise<void>
  close(): Promise<void>
}

/** Standard Webhooks: key = base64-decode(secret without 'whsec_'); signature = 'v1,' + base64(HMAC-SHA256(key, id.ts.body)). */
export function independentSignature(secret: string, id: string, ts: string, body: string): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64')
  return `v1,${createHmac('sha256', key).update(`${id}.${ts}.${body}`).digest('base64')}`
}

export async function startReceiver(t: { teardown(fn: () => unknown): void }, tls?: { key: string | Buffer; cert: string | Buffer }): Promise<Receiver> {
  const received: Received[] = []
  const waiters: Array<{ n: number; resolve: () => void }> = []
  const receiver = {
    received,
    secrets: new Map<string, string>(),
    answer: (() => ({ status: 200 })) as Receiver['answer'],
  } as Receiver & { url: string; port: number }
  const handle = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8')
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : (v ?? '')]))
      const path = req.url ?? '/'
      const secret = [...receiver.secrets.entries()].find(([prefix]) => path.startsWith(prefix))?.[1]
      const verified = secret
        ? headers['x-svc-signature'] === independentSignature(secret, headers['webhook-id'] ?? '', headers['webhook-timestamp'] ?? '', body) &&
          headers['x-svc-signature'] === headers['webhook-signature'] && headers['x-svc-delivery-id'] === headers['webhook-id']
        : null
      const r: Received = { path, headers, body, verified }
      received.push(r)
      const a = receiver.answer(r, received.length)
      const reply = () => {
        res.writeHead(a.status, a.headers ?? {})
        res.end('ok')
        for (const w of waiters.filter((w) => received.length >= w.n)) {
          waiters.splice(waiters.indexOf(w), 1)
          w.resolve()
        }
      }
      if (a.delayMs) setTimeout(reply, a.delayMs)
      else reply()
    })
  }
  const server = tls ? createHttpsServer({ key: tls.key, cert: tls.cert }, handle) : createHttpServer(handle)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  receiver.port = port
  receiver.url = `${tls ? 'https' : 'http'}://127.0.0.1:${port}`
  receiver.waitFor = (n, timeoutMs = 15_000) =>
    received.length >= n
      ? Promise.resolve()
      : new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`receiver got ${received.length} of ${n} requests`)), timeoutMs)
          waiters.push({ n, resolve: () => (clearTimeout(timer), resolve()) })
        })
  receiver.close = () => new Promise<void>((resolve) => {
    server.closeAllConnections?.()
    server.close(() => resolve())
  })
  t.teardown(() => receiver.close())
  return receiver
}
