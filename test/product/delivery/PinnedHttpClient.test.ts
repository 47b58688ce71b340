/**
 * The pinned delivery client against real receivers on 127.0.0.1 (node:http and node:https servers), a real
 * certificate authority made with openssl (test/helpers/delivery/testCa.ts) and a real DNS server
 * (TestDnsServer). The guard runs with the test allowlist 127.0.0.1/32, the only way a local receiver passes.
 *
 * Spec, Authentication 7 (URLs checked at registration and before each delivery) and Events 2 (one delivery row per
 * attempt): post() connects to the checked address only, verifies the certificate against the URL's name, follows no
 * redirect, and turns every network outcome into a PostResult instead of an exception.
 */
import t, { type Test } from 'tap'
import { createServer as createHttpServer, type IncomingMessage, type Server as HttpServer, type ServerResponse } from 'node:http'
import { createServer as createHttpsServer, type Server as HttpsServer } from 'node:https'
import { createServer as createNetServer, type Socket } from 'node:net'
import type { TLSSocket } from 'node:tls'
import { OptionsError } from '../../../common/validation.ts'
import { PinnedHttpClient, RESPONSE_BODY_CAP } from '../../../product/delivery/PinnedHttpClient.ts'
import { UrlGuard } from '../../../product/delivery/UrlGuard.ts'
import { createTestCa, SERVER_NAMES } from '../../helpers/delivery/testCa.ts'
import { TestDnsServer } from '../../helpers/delivery/TestDnsServer.ts'
import { freePort } from '../../helpers/tmp.ts'

/** What a receiver saw of one request. */
interface Hit {
  method: string
  path: string
  headers: IncomingMessage['headers']
  body: string
  /** The SNI name the client sent (https only); false when it sent none. */
  servername: string | false | null | undefined
  remoteAddress: string | undefined
}

interface Receiver {
  port: number
  hits: Hit[]
}

type Handler = (req: IncomingMessage, res: ServerResponse, hit: Hit) => void

const ok: Handler = (_req, res) => res.end('received')

/** A receiver on 127.0.0.1 (a free port), closed with every open connection at teardown. */
async function receiver(t: Test, handler: Handler = ok, tls?: { key: string; cert: string }): Promise<Receiver> {
  const hits: Hit[] = []
  const onRequest = (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = []
    req.on('data', (c: Buffer) => chunks.push(c))
    req.on('end', () => {
      const hit: Hit = {
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        servername: tls ? (req.socket as TLSSocket).servername : undefined,
        remoteAddress: req.socket.remoteAddress,
      }
      hits.push(hit)
      handler(req, res, hit)
    })
  }
  const server: HttpServer | HttpsServer = tls ? createHttpsServer(tls, onRequest) : createHttpServer(onRequest)
  const port = await freePort()
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(port, '127.0.0.1', resolve)
  })
  t.teardown(() => {
    server.closeAllConnections()
    return new Promise<void>((resolve) => server.close(() => resolve()))
  })
  return { port, hits }
}

const dns = await TestDnsServer.start({
  'hooks.test': { A: ['127.0.0.1'] },
  // On the DNS but not on the server certificate (which does carry 127.0.0.1): only the name can make it fail.
  'other.test': { A: ['127.0.0.1'] },
})
t.teardown(() => dns.close())
const ca = await createTestCa(t)
const serverCert = await ca.issue(SERVER_NAMES)
const guard = UrlGuard.create({ resolve: dns.resolver(), allow: ['127.0.0.1/32'] })
const client = PinnedHttpClient.create({ ca: ca.cert, timeoutMs: 3000 })

const BODY = JSON.stringify({ decision_id: '6f1c0a52-8d0e-4b0a-9a53-2b8c1f1e2d3c', outcome: 'obtains' })
const HEADERS = { 'content-type': 'application/json', 'x-svc-signature': 'sha256=abc123' }

t.test('plain HTTP: the receiver gets the body and headers, the result is a 2xx row', async (t) => {
  const r = await receiver(t)
  const target = await guard.check(`http://hooks.test:${r.port}/hook/7?attempt=1`, 'hook')
  // A caller's Host and Content-Length are the client's to set: the pinned target decides them.
  const result = await client.post(target, BODY, { ...HEADERS, Host: 'evil.example', 'Content-Length': '1' })
  t.equal(result.status, 200)
  t.equal(result.error_class, null)
  t.ok(result.latency_ms > 0 && result.latency_ms < 3000, `latency ${result.latency_ms} ms`)
  t.equal(r.hits.length, 1)
  const hit = r.hits[0]!
  t.equal(hit.method, 'POST')
  t.equal(hit.path, '/hook/7?attempt=1')
  t.equal(hit.body, BODY, 'the body arrives byte for byte')
  t.equal(hit.headers.host, `hooks.test:${r.port}`, 'Host is the URL host and port, not the address')
  t.equal(hit.headers['content-type'], 'application/json')
  t.equal(hit.headers['x-svc-signature'], 'sha256=abc123')
  t.equal(hit.headers['content-length'], String(Buffer.byteLength(BODY)))
  t.match(hit.headers['user-agent'], /^decision-intelligence-service-delivery\//)
  t.equal(hit.headers.connection, 'close', 'one connection per attempt')
  t.equal(hit.remoteAddress, '127.0.0.1')

  const literal = await client.post(await guard.check(`http://127.0.0.1:${r.port}/`, 'hook'), Buffer.from('raw'), {})
  t.equal(literal.status, 200)
  t.equal(r.hits[1]?.headers.host, `127.0.0.1:${r.port}`)
  t.equal(r.hits[1]?.body, 'raw', 'a Buffer body is sent as is')
})

t.test('non-2xx statuses are http_status rows', async (t) => {
  let status = 500
  const r = await receiver(t, (_req, res) => {
    res.statusCode = status
    res.end('nope')
  })
  const target = await guard.check(`http://127.0.0.1:${r.port}/`, 'hook')
  for (const s of [500, 404, 429, 204]) {
    status = s
    const result = await client.post(target, BODY, HEADERS)
    t.equal(result.status, s)
    t.equal(result.error_class, s >= 200 && s < 300 ? null : 'http_status', `${s}`)
  }
})

t.test('HTTPS: the socket goes to the checked address, SNI and the certificate check use the name', async (t) => {
  const r = await receiver(t, ok, serverCert)
  const target = await guard.check(`https://hooks.test:${r.port}/hook`, 'hook')
  t.equal(target.address, '127.0.0.1')
  const result = await client.post(target, BODY, HEADERS)
  t.same({ status: result.status, error_class: result.error_class }, { status: 200, error_class: null })
  t.equal(r.hits[0]?.servername, 'hooks.test', 'SNI carried the URL name')
  t.equal(r.hits[0]?.headers.host, `hooks.test:${r.port}`)
  t.equal(r.hits[0]?.body, BODY)

  // other.test resolves to the same 127.0.0.1, which the certificate names; the name does not match, so it fails.
  const mismatch = await client.post(await guard.check(`https://other.test:${r.port}/hook`, 'hook'), BODY, HEADERS)
  t.equal(mismatch.error_class, 'tls', 'verified against the name, not the address')
  t.equal(mismatch.error_code, 'ERR_TLS_CERT_ALTNAME_INVALID')
  t.equal(mismatch.status, null)

  // An IP literal: no SNI (RFC 6066 allows names only), verified against the certificate's IP entry.
  const literal = await client.post(await guard.check(`https://127.0.0.1:${r.port}/hook`, 'hook'), BODY, HEADERS)
  t.equal(literal.status, 200)
  t.equal(r.hits.at(-1)?.servername, false, 'no SNI for an address')
  t.equal(r.hits.length, 2, 'the mismatched handshake never reached the receiver')
})

t.test('certificate verification is on: an unknown CA is a tls row', async (t) => {
  const stranger = await createTestCa(t, 'unknown test CA')
  const r = await receiver(t, ok, await stranger.issue(SERVER_NAMES))
  const result = await client.post(await guard.check(`https://hooks.test:${r.port}/`, 'hook'), BODY, HEADERS)
  t.equal(result.error_class, 'tls')
  t.equal(result.status, null)
  t.match(result.error_code, /UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT/)
  t.equal(r.hits.length, 0)

  // Without the ca option even the test CA is unknown: `ca` adds a trust anchor, it turns nothing off.
  const trusted = await receiver(t, ok, serverCert)
  const plain = PinnedHttpClient.create({ timeoutMs: 3000 })
  const refused = await plain.post(await guard.check(`https://hooks.test:${trusted.port}/`, 'hook'), BODY, HEADERS)
  t.equal(refused.error_class, 'tls')
  t.equal(trusted.hits.length, 0)
})

t.test('redirects are reported, never followed', async (t) => {
  const other = await receiver(t)
  const locations = ['http://10.0.0.1/', `http://127.0.0.1:${other.port}/steal`, 'http://169.254.169.254/latest/meta-data/']
  let next = 0
  const r = await receiver(t, (_req, res) => {
    res.writeHead(next % 2 === 0 ? 302 : 307, { location: locations[next] })
    res.end()
  })
  const target = await guard.check(`http://hooks.test:${r.port}/hook`, 'hook')
  for (next = 0; next < locations.length; next++) {
    const result = await client.post(target, BODY, HEADERS)
    t.equal(result.error_class, 'redirect')
    t.equal(result.status, next % 2 === 0 ? 302 : 307)
    t.equal(result.location, locations[next], 'the Location is reported as sent')
  }
  t.equal(r.hits.length, locations.length, 'one request per attempt')
  t.equal(other.hits.length, 0, 'the redirect target was never hit')
})

t.test('a receiver that never answers is a timeout row within timeoutMs', async (t) => {
  const r = await receiver(t, () => {}) // reads the request, never responds
  const quick = PinnedHttpClient.create({ ca: ca.cert, timeoutMs: 300 })
  const started = Date.now()
  const result = await quick.post(await guard.check(`http://127.0.0.1:${r.port}/`, 'hook'), BODY, HEADERS)
  const took = Date.now() - started
  t.equal(result.error_class, 'timeout')
  t.equal(result.status, null)
  t.ok(took >= 290 && took < 10_000, `gave up after ${took} ms (it would wait for ever otherwise)`)
  t.ok(result.latency_ms >= 290, `latency ${result.latency_ms} ms is the time waited`)
  t.equal(r.hits.length, 1, 'the request itself was delivered')

  // A TCP listener that accepts and never speaks: the TLS handshake stalls and counts against the same deadline.
  const sockets = new Set<Socket>()
  const mute = createNetServer((socket) => sockets.add(socket))
  const mutePort = await freePort()
  await new Promise<void>((resolve) => mute.listen(mutePort, '127.0.0.1', resolve))
  t.teardown(() => {
    for (const s of sockets) s.destroy()
    return new Promise<void>((resolve) => mute.close(() => resolve()))
  })
  const tlsResult = await quick.post(await guard.check(`https://hooks.test:${mutePort}/`, 'hook'), BODY, HEADERS)
  t.equal(tlsResult.error_class, 'timeout', 'a handshake that never completes is a timeout')
  t.equal(sockets.size, 1, 'the connection itself was made')
})

t.test('connection refused is a connect row; a reset before the answer is a reset row', async (t) => {
  const closed = await freePort()
  const refused = await client.post(await guard.check(`http://127.0.0.1:${closed}/`, 'hook'), BODY, HEADERS)
  t.same({ status: refused.status, error_class: refused.error_class, error_code: refused.error_code }, { status: null, error_class: 'connect', error_code: 'ECONNREFUSED' })
  t.ok(refused.latency_ms >= 0)

  const r = await receiver(t, (req) => req.socket.destroy())
  const reset = await client.post(await guard.check(`http://127.0.0.1:${r.port}/`, 'hook'), BODY, HEADERS)
  t.equal(reset.error_class, 'reset')
  t.equal(reset.status, null)
  t.equal(reset.error_code, 'ECONNRESET')
})

t.test('a response body is read up to 64 KiB, then the connection is dropped', async (t) => {
  let written = 0
  let finished = false
  let cutOff: () => void = () => {}
  const closed = new Promise<void>((resolve) => (cutOff = resolve))
  const r = await receiver(t, (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/octet-stream' })
    const chunk = Buffer.alloc(16 * 1024, 0x61)
    const pump = () => {
      // Streams up to 64 MiB, far more than any socket buffer: only a client that hangs up stops it early.
      while (written < 64 * 1024 * 1024 && !res.destroyed) {
        written += chunk.length
        if (!res.write(chunk)) return void res.once('drain', pump)
      }
      if (!res.destroyed) {
        finished = true
        res.end()
      }
    }
    res.on('close', cutOff)
    pump()
  })
  const port = r.port
  const result = await client.post(await guard.check(`http://127.0.0.1:${port}/`, 'hook'), BODY, HEADERS)
  t.equal(result.status, 200)
  t.equal(result.error_class, null)
  await closed
  t.equal(finished, false, 'the receiver was cut off before it finished streaming')
  t.ok(written > RESPONSE_BODY_CAP, `the receiver had written ${written} bytes when the client hung up`)
})

t.test('DNS rebinding: post() connects to the checked address, with no second lookup', async (t) => {
  dns.set('rebind.test', { A: ['127.0.0.1'] })
  t.teardown(() => dns.delete('rebind.test'))
  const r = await receiver(t)
  const target = await guard.check(`http://rebind.test:${r.port}/hook`, 'hook')
  t.equal(target.address, '127.0.0.1', 'checked while the name pointed at the receiver')
  const asked = dns.asked('rebind.test')
  t.ok(asked >= 1, 'the check asked the DNS server')

  dns.set('rebind.test', { A: ['10.0.0.9'] })
  const result = await client.post(target, BODY, HEADERS)
  t.equal(result.status, 200, 'the delivery went to the checked 127.0.0.1, not to 10.0.0.9')
  t.equal(r.hits.length, 1)
  t.equal(r.hits[0]?.headers.host, `rebind.test:${r.port}`)
  t.equal(dns.asked('rebind.test'), asked, 'post() asked the DNS nothing')

  // The next delivery re-checks, sees 10.0.0.9, and is refused before any connection.
  await t.rejects(guard.check(`http://rebind.test:${r.port}/hook`, 'hook'), { code: 'UNSAFE_URL', detail: { reason: 'URL_ADDRESS_REFUSED', address: '10.0.0.9', address_class: 'private' } })
})

t.test('misuse is a programming error; options are validated', async (t) => {
  const r = await receiver(t)
  const target = await guard.check(`http://hooks.test:${r.port}/`, 'hook')
  await t.rejects(client.post({ ...target, address: 'hooks.test' }, BODY, HEADERS), TypeError, 'an address that is not an IP is refused, never looked up')
  t.equal(r.hits.length, 0)

  const cases: Array<[unknown, string]> = [
    [{ timeoutMs: 0 }, '/timeoutMs'],
    [{ timeoutMs: 1.5 }, '/timeoutMs'],
    [{ userAgent: '' }, '/userAgent'],
    [{ userAgent: 'bad\nagent' }, '/userAgent'],
    [{ ca: 42 }, '/ca'],
    [{ ca: [] }, '/ca'],
    [{ retries: 1 }, '/retries'],
  ]
  for (const [options, path] of cases) {
    let caught: unknown = null
    try {
      PinnedHttpClient.create(options as Parameters<typeof PinnedHttpClient.create>[0])
    } catch (err) {
      caught = err
    }
    t.ok(caught instanceof OptionsError, `${JSON.stringify(options)} is refused`)
    t.equal((caught as OptionsError).path, path, `the error names ${path}`)
  }
  t.throws(() => PinnedHttpClient.create({ timeoutMs: -1 }), OptionsError)
})
