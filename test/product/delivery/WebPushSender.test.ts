/**
 * WebPushSender against a real local push service (test/helpers/delivery/pushService.ts: VAPID checked as RFC 8292
 * says, the aes128gcm body decrypted with the subscription's keys through http_ece, as the browser would).
 *
 * Subscriptions carry https endpoints on a made-up host; the test transport connects to the local server instead, as
 * the service's pinned client connects to the address the URL guard checked, and sends the endpoint's host as Host.
 * TLS is that client's business, not the sender's, so the local hop is plain HTTP.
 */
import t from 'tap'
import { randomBytes } from 'node:crypto'
import { request } from 'node:http'
import { readdir, readFile, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import webpush from 'web-push'
import { ServiceError } from '../../../common/ServiceError.ts'
import { OptionsError } from '../../../common/validation.ts'
import {
  PUSH_DEFAULT_TTL_SECONDS, PUSH_MAX_PAYLOAD_BYTES, WebPushSender,
  type PushSubscriptionInput, type PushTransport,
} from '../../../product/delivery/WebPushSender.ts'
import { browser, checkVapid, ece, PUSH_HOST, pushService, senderKeyOf } from '../../helpers/delivery/pushService.ts'
import { freePort, makeTempDir } from '../../helpers/tmp.ts'

const SUBJECT = 'mailto:push-ops@example.test'

type Teardown = { teardown(fn: () => unknown): void }

/** A real HTTP POST to 127.0.0.1:port with the endpoint's host as Host: the shape of the pinned client. */
function localTransport(port: number): PushTransport & { posts: number } {
  const transport = {
    posts: 0,
    post(url: string, body: Buffer, headers: Record<string, string>) {
      transport.posts++
      const u = new URL(url)
      const started = performance.now()
      return new Promise<{ status: number | null; latency_ms: number; error_class: string | null }>((resolve) => {
        const req = request({ host: '127.0.0.1', port, method: 'POST', path: u.pathname + u.search, headers: { ...headers, host: u.host }, timeout: 5_000 }, (res) => {
          res.resume()
          res.on('end', () => resolve({ status: res.statusCode ?? null, latency_ms: performance.now() - started, error_class: null }))
        })
        req.on('timeout', () => req.destroy(new Error('timeout')))
        req.on('error', (err) => resolve({ status: null, latency_ms: performance.now() - started, error_class: (err as NodeJS.ErrnoException).code === 'ECONNREFUSED' ? 'connect' : 'timeout' }))
        req.end(body)
      })
    },
  }
  return transport
}

async function sender(t: Teardown, port: number, extra: { dir?: string; vapid?: { publicKey: string; privateKey: string }; ttlSeconds?: number } = {}) {
  const dir = extra.dir ?? (await makeTempDir(t, 'webpush-'))
  const s = await WebPushSender.open({ dir, subject: SUBJECT, transport: localTransport(port), ...extra })
  t.teardown(() => s.close())
  return s
}

t.test('a push arrives VAPID-signed and aes128gcm-encrypted, and the browser decrypts the payload', async (t) => {
  const svc = await pushService(t)
  const push = await sender(t, svc.port)
  const alice = svc.browser('alice')
  const payload = { kind: 'call_resolved', question_id: 'Q01', sentence: 'BTC closed above 64 000: your call was right ✓' }

  const r = await push.send(alice.subscription, payload, { ttlSeconds: 600, urgency: 'high', topic: 'Q01resolved' })
  t.equal(r.status, 201)
  t.equal(r.error_class, null)
  t.ok(r.latency_ms >= 0 && r.latency_ms < 5_000, `latency ${r.latency_ms} ms`)

  const got = svc.received[0]!
  t.equal(got.path, '/wpush/v2/alice', 'posted to the endpoint path')
  t.equal(got.vapidProblem, null, 'the push service accepts the VAPID JWT')
  t.equal(got.jwt?.k, push.publicKey, 'k= is the sender public key')
  t.same(got.jwt?.header, { typ: 'JWT', alg: 'ES256' })
  t.equal(got.jwt?.claims.aud, `https://${PUSH_HOST}`, 'aud is the endpoint origin')
  t.equal(got.jwt?.claims.sub, SUBJECT, 'sub is the contact')
  t.equal(got.headers['content-encoding'], 'aes128gcm')
  t.equal(got.headers['content-type'], 'application/octet-stream')
  t.equal(got.headers.ttl, '600')
  t.equal(got.headers.urgency, 'high')
  t.equal(got.headers.topic, 'Q01resolved')
  t.equal(Number(got.headers['content-length']), got.body.length)
  t.equal(got.decryptProblem, null, 'the browser decrypts the body')
  t.same(JSON.parse(got.plaintext ?? 'null'), payload, 'plaintext is the payload, as JSON')
  t.notOk(got.body.includes(Buffer.from('BTC closed')), 'the body on the wire is not the plaintext')

  const wrongAuth = () => ece.decrypt(got.body, { version: 'aes128gcm', privateKey: alice.ecdh, dh: senderKeyOf(got.body), authSecret: randomBytes(16).toString('base64url') })
  t.throws(wrongAuth, 'another auth secret cannot decrypt it: the message is bound to this subscription')

  // The verifier above is what makes the acceptance mean something: it refuses another key and another origin.
  const otherKey = webpush.generateVAPIDKeys().publicKey
  t.match(checkVapid(got.headers.authorization?.replace(/k=.*$/, `k=${otherKey}`), PUSH_HOST).problem, /signature does not verify/)
  t.match(checkVapid(got.headers.authorization, 'push.other.test').problem, /aud .* is not this push service's origin/)

  const r2 = await push.send(alice.subscription, 'plain text sentence')
  t.equal(r2.status, 201)
  const got2 = svc.received[1]!
  t.equal(got2.plaintext, 'plain text sentence', 'a string payload is sent as is')
  t.equal(got2.headers.ttl, String(PUSH_DEFAULT_TTL_SECONDS), 'default TTL')
  t.equal(got2.headers.urgency, 'normal', 'default urgency')
  t.equal(got2.headers.topic, undefined, 'no topic unless asked')
  t.not(senderKeyOf(got2.body).toString('hex'), senderKeyOf(got.body).toString('hex'), 'each message has its own ephemeral key')
})

t.test('payload size: the largest one-record payload goes, one byte more is refused before anything is sent', async (t) => {
  const svc = await pushService(t)
  const transport = localTransport(svc.port)
  const dir = await makeTempDir(t, 'webpush-')
  const push = await WebPushSender.open({ dir, subject: SUBJECT, transport })
  const bob = svc.browser('bob')
  const largest = 'x'.repeat(PUSH_MAX_PAYLOAD_BYTES)
  const ok = await push.send(bob.subscription, largest)
  t.equal(ok.status, 201)
  t.ok(svc.received.at(-1)!.body.length <= 4096, `encrypted body ${svc.received.at(-1)!.body.length} bytes fits the 4096 every push service accepts`)
  t.equal(svc.received.at(-1)!.plaintext, largest, 'decrypts to the same bytes')
  const before = transport.posts
  t.same(await push.send(bob.subscription, largest + 'x'), { status: null, latency_ms: 0, error_class: 'payload_too_large' })
  t.equal(transport.posts, before, 'nothing reached the transport')
})

t.test('the push service answers: 410 and 404 are gone, 500 is http_status, no answer is the transport class', async (t) => {
  const statuses: Record<string, number> = { expired: 410, unknown: 404, broken: 500, busy: 429 }
  const svc = await pushService(t, { answer: (token) => statuses[token] ?? 201 })
  const push = await sender(t, svc.port)
  const expired = await push.send(svc.browser('expired').subscription, { kind: 'rank_up' })
  t.same({ status: expired.status, error_class: expired.error_class }, { status: 410, error_class: 'gone' }, '410: the caller disables the device')
  t.equal(svc.received.at(-1)!.vapidProblem, null, 'the 410 was the subscription, not the signature')
  const unknown = await push.send(svc.browser('unknown').subscription, { kind: 'rank_up' })
  t.same({ status: unknown.status, error_class: unknown.error_class }, { status: 404, error_class: 'gone' })
  const broken = await push.send(svc.browser('broken').subscription, { kind: 'rank_up' })
  t.same({ status: broken.status, error_class: broken.error_class }, { status: 500, error_class: 'http_status' })
  const busy = await push.send(svc.browser('busy').subscription, { kind: 'rank_up' })
  t.same({ status: busy.status, error_class: busy.error_class }, { status: 429, error_class: 'http_status' })

  const closedPort = await freePort()
  const nowhere = await sender(t, closedPort)
  const refused = await nowhere.send(svc.browser('carol').subscription, { kind: 'rank_up' })
  t.same({ status: refused.status, error_class: refused.error_class }, { status: null, error_class: 'connect' }, 'the transport names why no answer came')
})

t.test('an invalid stored subscription or bad send options never reach the push service', async (t) => {
  const svc = await pushService(t)
  const transport = localTransport(svc.port)
  const push = await WebPushSender.open({ dir: await makeTempDir(t, 'webpush-'), subject: SUBJECT, transport })
  const dave = svc.browser('dave')
  const shortKey = { ...dave.subscription, keys: { ...dave.subscription.keys, p256dh: dave.subscription.keys.p256dh.slice(0, 40) } }
  t.same(await push.send(shortKey, 'hi'), { status: null, latency_ms: 0, error_class: 'invalid_subscription' })
  const plainHttp = { ...dave.subscription, endpoint: `http://${PUSH_HOST}/wpush/v2/dave` }
  t.same(await push.send(plainHttp, 'hi'), { status: null, latency_ms: 0, error_class: 'invalid_subscription' })
  await t.rejects(push.send(dave.subscription, 'hi', { ttlSeconds: -1 }), { name: 'OptionsError', message: /WebPushSender\.send options\/ttlSeconds/ })
  await t.rejects(push.send(dave.subscription, 'hi', { urgency: 'urgent' as 'high' }), { message: /\/urgency: must be one of very-low, low, normal, high/ })
  await t.rejects(push.send(dave.subscription, 'hi', { topic: 'has spaces' }), { message: /\/topic/ })
  await t.rejects(push.send(dave.subscription, 'hi', { topic: 'a'.repeat(33) }), { message: /\/topic/ })
  t.equal(transport.posts, 0, 'nothing was posted')
  await push.close()
  await t.rejects(push.send(dave.subscription, 'hi'), /closed/, 'a send after close is refused')
})

t.test('the generated VAPID key pair is kept in vapid.json (0600) and survives a re-open', async (t) => {
  const svc = await pushService(t)
  const dir = join(await makeTempDir(t, 'webpush-'), 'nested', 'push')
  const first = await sender(t, svc.port, { dir })
  t.match(first.publicKey, /^[A-Za-z0-9_-]{87}$/, '65 bytes as unpadded base64url')
  t.equal(Buffer.from(first.publicKey, 'base64url')[0], 4)
  const file = join(dir, 'vapid.json')
  t.equal((await stat(file)).mode & 0o777, 0o600, 'only the owner can read the private key')
  const stored = JSON.parse(await readFile(file, 'utf8')) as { publicKey: string; privateKey: string; created_at: string }
  t.equal(stored.publicKey, first.publicKey)
  t.equal(Buffer.from(stored.privateKey, 'base64url').length, 32)
  t.same(await readdir(dir), ['vapid.json'], 'no temp file left behind')

  const again = await sender(t, svc.port, { dir })
  t.equal(again.publicKey, first.publicKey, 'a restart keeps the key subscriptions are bound to')
  t.equal(JSON.parse(await readFile(file, 'utf8')).created_at, stored.created_at, 'the file is not rewritten')
  await again.send(svc.browser('erin').subscription, { kind: 'badge_earned' })
  t.equal(svc.received.at(-1)!.vapidProblem, null)
  t.equal(svc.received.at(-1)!.jwt?.k, first.publicKey, 'the re-opened sender signs with the same pair')

  const elsewhere = await sender(t, svc.port)
  t.not(elsewhere.publicKey, first.publicKey, 'another directory, another pair')
})

t.test('configured VAPID keys win and are checked field by field', async (t) => {
  const svc = await pushService(t)
  const dir = await makeTempDir(t, 'webpush-')
  const keys = webpush.generateVAPIDKeys()
  const configured = await sender(t, svc.port, { dir, vapid: keys })
  t.equal(configured.publicKey, keys.publicKey)
  t.same(await readdir(dir), [], 'no key file is written when keys are configured')
  await configured.send(svc.browser('frank').subscription, 'configured')
  t.equal(svc.received.at(-1)!.vapidProblem, null)
  t.equal(svc.received.at(-1)!.jwt?.k, keys.publicKey)

  const open = (vapid: unknown, subject = SUBJECT) =>
    WebPushSender.open({ dir, subject, transport: localTransport(svc.port), vapid: vapid as { publicKey: string; privateKey: string } })
  const other = webpush.generateVAPIDKeys()
  await t.rejects(open({ ...keys, publicKey: keys.publicKey.slice(0, 60) }), { name: 'OptionsError', message: /^WebPushSender options\/vapid\/publicKey: must decode to 65 bytes/ })
  await t.rejects(open({ ...keys, privateKey: keys.privateKey + '=' }), { message: /^WebPushSender options\/vapid\/privateKey: must be base64url without padding/ })
  await t.rejects(open({ ...keys, privateKey: Buffer.alloc(31, 7).toString('base64url') }), { message: /\/vapid\/privateKey: must decode to 32 bytes/ })
  await t.rejects(open({ ...keys, privateKey: Buffer.alloc(32).toString('base64url') }), { message: /\/vapid\/privateKey: is not a valid P-256 private key/ })
  await t.rejects(open({ publicKey: keys.publicKey, privateKey: other.privateKey }), { message: /\/vapid\/publicKey: is not the public key of privateKey/ })
  await t.rejects(open({ publicKey: keys.publicKey }), { message: /\/vapid\/privateKey: is required/ })
  await t.rejects(open(keys, 'http://example.test/contact'), { message: /WebPushSender options\/subject: must be a mailto: or https: URL/ })
  const err = await open({ publicKey: 'AAAA', privateKey: '!!!' }).catch((e: unknown) => e)
  t.ok(err instanceof OptionsError)
  t.same((err as OptionsError).errors.map((e) => e.path), ['/vapid/publicKey', '/vapid/privateKey'], 'both bad fields named at once')
})

t.test('a bad key file fails naming the file and field, and is never replaced', async (t) => {
  const svc = await pushService(t)
  const dir = await makeTempDir(t, 'webpush-')
  const file = join(dir, 'vapid.json')
  const keys = webpush.generateVAPIDKeys()
  const open = () => WebPushSender.open({ dir, subject: SUBJECT, transport: localTransport(svc.port) })

  const short = JSON.stringify({ publicKey: keys.publicKey, privateKey: Buffer.alloc(31, 9).toString('base64url') })
  await writeFile(file, short, { mode: 0o600 })
  await t.rejects(open(), { name: 'OptionsError', message: `${file}/privateKey: must decode to 32 bytes (a P-256 private key), not 31` })
  await writeFile(file, JSON.stringify({ privateKey: keys.privateKey }), { mode: 0o600 })
  await t.rejects(open(), { message: `${file}/publicKey: is required` })
  await writeFile(file, '{"publicKey": "', { mode: 0o600 })
  await t.rejects(open(), { message: new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: is not JSON`) })
  t.equal(await readFile(file, 'utf8'), '{"publicKey": "', 'a corrupt key file is left for the operator, not overwritten with a new pair')

  await writeFile(file, JSON.stringify(keys), { mode: 0o600 })
  t.equal((await open()).publicKey, keys.publicKey, 'a hand-written valid file is used')
})

t.test('validateSubscription names each bad field as a JSON pointer', async (t) => {
  const { subscription: good } = browser('gina')
  t.same(WebPushSender.validateSubscription(good), [], 'a browser subscription is valid')
  t.same(WebPushSender.validateSubscription({ ...good, expirationTime: null }), [], 'PushSubscription.toJSON extras are ignored')
  t.same(WebPushSender.validateSubscription({ ...good, keys: { ...good.keys, auth: good.keys.auth + '==' } }), [], 'padded base64url is the same key')

  const paths = (sub: unknown, root?: string) => WebPushSender.validateSubscription(sub, root).map((e) => `${e.path}: ${e.message}`)
  const keys = good.keys
  t.same(paths({ ...good, keys: { ...keys, p256dh: keys.p256dh.slice(0, 43) } }), ['/subscription/keys/p256dh: must decode to 65 bytes (an uncompressed P-256 point), not 32'])
  const compressed = Buffer.from(keys.p256dh, 'base64url')
  compressed[0] = 0x02
  t.same(paths({ ...good, keys: { ...keys, p256dh: compressed.toString('base64url') } }), ['/subscription/keys/p256dh: must be an uncompressed P-256 point (first byte 0x04)'])
  const offCurve = Buffer.alloc(65, 1)
  offCurve[0] = 0x04
  t.same(paths({ ...good, keys: { ...keys, p256dh: offCurve.toString('base64url') } }), ['/subscription/keys/p256dh: is not a point on the P-256 curve'])
  t.same(paths({ ...good, keys: { ...keys, p256dh: keys.p256dh.replace(/^./, '+') } }), ['/subscription/keys/p256dh: must be base64url'])
  t.same(paths({ ...good, keys: { ...keys, auth: randomBytes(12).toString('base64url') } }), ['/subscription/keys/auth: must decode to 16 bytes (RFC 8291 auth secret), not 12'])
  t.same(paths({ ...good, keys: { ...keys, auth: 'not base64url!' } }), ['/subscription/keys/auth: must be base64url'])
  t.same(paths({ ...good, keys: { ...keys, auth: 16 } }), ['/subscription/keys/auth: must be a string'])
  t.same(paths({ ...good, endpoint: 'http://push.example.test/x' }), ['/subscription/endpoint: must be an https URL'])
  t.same(paths({ ...good, endpoint: 'push.example.test/x' }), ['/subscription/endpoint: must be an absolute URL'])
  t.same(paths({ ...good, endpoint: `https://${PUSH_HOST}/${'a'.repeat(2048)}` }), ['/subscription/endpoint: must be at most 2048 characters'])
  t.same(paths({ endpoint: good.endpoint }), ['/subscription/keys: is required'])
  t.same(paths({ keys: {} }), ['/subscription/endpoint: is required', '/subscription/keys/p256dh: is required', '/subscription/keys/auth: is required'])
  t.same(paths('https://push.example.test/x'), ['/subscription: must be an object'])
  t.same(paths(null, '/body/subscription'), ['/body/subscription: must be an object'], 'the route chooses the root')

  t.same(WebPushSender.assertSubscription({ ...good, expirationTime: null }), good, 'the typed subscription, without extras')
  const err = (() => {
    try {
      WebPushSender.assertSubscription({ ...good, endpoint: 'http://x.test/', keys: { ...keys, auth: 'AAAA' } }, '/body/subscription')
    } catch (e) {
      return e
    }
    return null
  })()
  t.ok(err instanceof ServiceError)
  t.match(err, { code: 'VALIDATION', status: 400, detail: { reason: 'REQUEST_VALIDATION_FAILED', field: '/body/subscription/endpoint' } })
  t.same((err as ServiceError).detail.errors, [
    { field: '/body/subscription/endpoint', message: 'must be an https URL' },
    { field: '/body/subscription/keys/auth', message: 'must decode to 16 bytes (RFC 8291 auth secret), not 3' },
  ])
})
