/**
 * Delivery over real parts: journals on a real EmbeddedLog, the real URL guard and pinned HTTP client, receivers on
 * 127.0.0.1 that verify every signature with their own HMAC computation, and the engine's bus primitive replaying
 * resolutions as after a restart.
 */
import t from 'tap'
import { join } from 'node:path'
import type { Clock } from '../../../common/Clock.ts'
import { ServiceError } from '../../../common/ServiceError.ts'
import { UnitOfWork } from '../../../pipeline/journal/UnitOfWork.ts'
import type { PaidCall } from '../../../pipeline/journal/PaidCall.ts'
import { EmbeddedLog } from '../../../pipeline/log/EmbeddedLog.ts'
import { Journal } from '../../../pipeline/journal/Journal.ts'
import { DELIVERY_ATTEMPTS, type AttemptRow } from '../../../pipeline/records/deliveryRecord.ts'
import { ENDPOINT_CAP, DeliveryService } from '../../../product/delivery/DeliveryService.ts'
import { ENDPOINT_WINDOW_MS } from '../../../product/delivery/DeliveryBook.ts'
import { HookSigner } from '../../../product/delivery/HookSigner.ts'
import { PinnedHttpClient } from '../../../product/delivery/PinnedHttpClient.ts'
import { UrlGuard } from '../../../product/delivery/UrlGuard.ts'
import { WebPushSender } from '../../../product/delivery/WebPushSender.ts'
import { guardedPushTransport } from '../../../product/delivery/guardedPushTransport.ts'
import { pushService } from '../../helpers/delivery/pushService.ts'
import { TestLedger } from '../../helpers/delivery/ledgerBus.ts'
import { createTestCa, SERVER_NAMES } from '../../helpers/delivery/testCa.ts'
import { startReceiver, type Receiver } from '../../helpers/delivery/receivers.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

const PAYER = '0x209693bc6afc0c5328ba36faf03c514ef312287c'
const OTHER = '0x1111111111111111111111111111111111111111'
const PUSH_SUBJECT = 'mailto:push-ops@example.test'

class TestClock implements Clock {
  constructor(public ms = Date.parse('2026-03-02T10:00:00.000Z')) {}
  now(): number {
    return this.ms
  }
}

let paymentSeq = 0
/** A payment and its unit as the two arguments of a paid domain call. */
const paid = (): [PaidCall, UnitOfWork] => {
  const p = payment()
  return [p, p.unit]
}

/** A paid call's payment and, beside it, its unit of work (as the dispatcher hands them to a handler). */
function payment(payer: string | null = PAYER, paymentId = `cr_test_${++paymentSeq}`): PaidCall & { unit: UnitOfWork } {
  return { kind: 'paid', payment_id: paymentId, rail: 'credits', payer, unit: new UnitOfWork() }
}

interface Harness {
  dir: string
  log: EmbeddedLog
  ledger: TestLedger
  clock: TestClock
  delivery: DeliveryService
  reopen(): Promise<DeliveryService>
}

async function harness(t: { teardown(fn: () => unknown): void }, opts: { key?: string; retryDelayMs?: number; dir?: string; recordContacts?: boolean; ca?: string; push?: boolean } = {}): Promise<Harness> {
  const dir = opts.dir ?? (await makeTempDir(t, 'svc-delivery-'))
  const ledger = new TestLedger()
  const clock = new TestClock()
  const h = { dir, ledger, clock } as Harness
  const open = async () => {
    h.log = await EmbeddedLog.open(join(dir, 'log'))
    const guard = UrlGuard.create({ allow: ['127.0.0.1/32'] })
    const http = PinnedHttpClient.create({ timeoutMs: 2000, ...(opts.ca ? { ca: opts.ca } : {}) })
    h.delivery = await DeliveryService.open({
      log: h.log, ledger, clock, guard, http,
      // The service's own push path: WebPushSender over the guarded, address-pinned transport (app/openDelivery.ts).
      push: opts.push ? await WebPushSender.open({ dir: join(dir, 'delivery'), subject: PUSH_SUBJECT, transport: guardedPushTransport(guard, http) }) : null,
      signer: await HookSigner.open({ dir: join(dir, 'delivery'), key: opts.key ?? null }),
      retryDelayMs: opts.retryDelayMs ?? 50,
      recordContacts: opts.recordContacts ?? true,
    })
    return h.delivery
  }
  h.reopen = async () => {
    await h.delivery.close()
    await h.log.close()
    return open()
  }
  await open()
  t.teardown(async () => {
    await h.delivery.close()
    await h.log.close()
  })
  return h
}

async function attemptRows(h: Harness): Promise<AttemptRow[]> {
  const rows: AttemptRow[] = []
  const j = await Journal.open({ log: h.log, def: DELIVERY_ATTEMPTS })
  const f = await j.follow(`t.rows.${Math.random()}`, (r) => rows.push(r))
  await f.stop()
  return rows
}

t.test('a resolution hook: armed in the paid unit, delivered signed on resolution, one row per attempt', async (t) => {
  const h = await harness(t)
  const rx = await startReceiver(t)
  const d = h.ledger.addDecision()
  const pay = payment()
  const armed = (await h.delivery.armHook({ decision_id: d.decision_id, url: `${rx.url}/hook` }, pay, pay.unit))!
  await pay.unit.commit()
  t.equal(armed.status, 'armed')
  t.match(armed.secret, /^whsec_/)
  t.notOk('live' in armed, 'the registration never claims the hook is live')
  rx.secrets.set('/hook', String(armed.secret))
  const e = h.ledger.resolve(d, 'not')
  await rx.waitFor(1)
  await h.delivery.idle()
  const got = rx.received[0]!
  t.equal(got.verified, true, 'the receiver verified the signature with its own HMAC')
  t.same(JSON.parse(got.body), { status: 'resolved', decision_id: d.decision_id, outcome: 'not', resolved_at: e.outcome.resolved_at, statistic: 1.5 }, 'the body is the resolution record')
  t.match(got.headers['x-svc-delivery-id'], /^dlv_[0-9a-f]{32}$/)
  t.ok(Math.abs(Number(got.headers['x-svc-timestamp']) - h.clock.now() / 1000) < 2, 'signed timestamp')
  const rows = await attemptRows(h)
  t.equal(rows.length, 1)
  t.match(rows[0], { target_kind: 'hook', attempt: 1, status: 'delivered', final: true, http_status: 200, error_class: null, decision_id: d.decision_id, delivery_id: got.headers['x-svc-delivery-id'] })
  t.ok(rows[0]!.latency_ms! >= 0)

  await t.rejects(h.delivery.checkHook({ decision_id: d.decision_id, url: `${rx.url}/hook` }), { code: 'HOOK_CLOCK_TERMINAL', detail: { resolution: `/v1/resolutions/${d.decision_id}` } }, 'a terminal clock is 409 pointing at the resolution route')
  t.equal(await h.delivery.checkHook({ decision_id: '00000000-0000-4000-8000-000000000000', url: `${rx.url}/x` }), null, 'unknown decision')
  const d2 = h.ledger.addDecision()
  await t.rejects(h.delivery.checkHook({ decision_id: d2.decision_id, url: 'http://10.0.0.1/x' }), { code: 'UNSAFE_URL', detail: { reason: 'URL_ADDRESS_REFUSED' } })
})

t.test('over HTTPS with a test certificate authority: verified certificate, verified signature', async (t) => {
  const ca = await createTestCa(t)
  const h = await harness(t, { ca: ca.cert })
  const rx = await startReceiver(t, await ca.issue(SERVER_NAMES))
  t.match(rx.url, /^https:/)
  const d = h.ledger.addDecision()
  const p = payment()
  const armed = (await h.delivery.armHook({ decision_id: d.decision_id, url: `${rx.url}/tls` }, p, p.unit))!
  await p.unit.commit()
  rx.secrets.set('/tls', String(armed.secret))
  h.ledger.resolve(d)
  await rx.waitFor(1)
  await h.delivery.idle()
  t.equal(rx.received[0]!.verified, true, 'the HTTPS receiver verified the signature with its own HMAC')
  const rows = await attemptRows(h)
  t.match(rows, [{ status: 'delivered', http_status: 200, error_class: null }])
  // The same receiver, but the service does not trust the CA: a TLS failure, recorded, retried once.
  const untrusting = await harness(t)
  const d2 = untrusting.ledger.addDecision()
  const p2 = payment()
  await untrusting.delivery.armHook({ decision_id: d2.decision_id, url: `${rx.url}/tls` }, p2, p2.unit)
  await p2.unit.commit()
  untrusting.ledger.resolve(d2)
  await untrusting.delivery.idle()
  t.same((await attemptRows(untrusting)).map((r) => [r.attempt, r.error_class, r.final]).sort(), [[1, 'tls', false], [2, 'tls', true]])
  t.equal(rx.received.length, 1, 'nothing reached the receiver over an untrusted connection')
})

t.test('one retry with backoff, then final; a redirect is never followed nor retried', async (t) => {
  const h = await harness(t, { retryDelayMs: 100 })
  const rx = await startReceiver(t)
  rx.answer = (r) => (r.path === '/flaky' ? { status: rx.received.filter((x) => x.path === '/flaky').length === 1 ? 503 : 200 } : r.path === '/down' ? { status: 500 } : { status: 302, headers: { location: 'http://10.0.0.1/' } })
  const secrets = new Map<string, string>()
  const arm = async (path: string) => {
    const d = h.ledger.addDecision()
    const p = payment()
    const r = (await h.delivery.armHook({ decision_id: d.decision_id, url: `${rx.url}${path}` }, p, p.unit))!
    await p.unit.commit()
    secrets.set(path, String(r.secret))
    rx.secrets.set(path, String(r.secret))
    return d
  }
  const flaky = await arm('/flaky')
  const down = await arm('/down')
  const moved = await arm('/moved')
  for (const d of [flaky, down, moved]) h.ledger.resolve(d)
  await rx.waitFor(5)
  await h.delivery.idle()
  const rows = await attemptRows(h)
  const by = (d: { decision_id: string }) => rows.filter((r) => r.decision_id === d.decision_id).sort((a, b) => a.attempt - b.attempt)
  t.same(by(flaky).map((r) => [r.attempt, r.status, r.http_status, r.final]), [[1, 'failed', 503, false], [2, 'delivered', 200, true]])
  t.same(by(down).map((r) => [r.attempt, r.status, r.final]), [[1, 'failed', false], [2, 'failed', true]], 'one retry, no third attempt')
  t.same(by(moved).map((r) => [r.attempt, r.error_class, r.final]), [[1, 'redirect', true]], 'a redirect is final')
  const ids = rx.received.filter((r) => r.path === '/flaky').map((r) => r.headers['x-svc-delivery-id'])
  t.equal(ids.length, 2)
  t.equal(ids[0], ids[1], 'a retry keeps its delivery id')
  t.ok(rx.received.every((r) => r.verified === true), 'every attempt verifies')
  t.equal(rx.received.length, 5)
})

t.test('a resolution written while the service was down is delivered after restart, once', async (t) => {
  const h = await harness(t)
  const rx = await startReceiver(t)
  const d = h.ledger.addDecision()
  const p = payment()
  const r = (await h.delivery.armHook({ decision_id: d.decision_id, url: `${rx.url}/late` }, p, p.unit))!
  await p.unit.commit()
  rx.secrets.set('/late', String(r.secret))
  await h.delivery.close()
  h.ledger.resolve(d, 'obtains', { publish: false })
  await h.reopen()
  await rx.waitFor(1)
  await h.delivery.idle()
  t.equal(rx.received[0]!.verified, true, 'signed with the same secret after the restart')
  await h.reopen()
  await h.delivery.idle()
  t.equal(rx.received.length, 1, 'a second restart delivers nothing again: the record says final')
  t.equal((await attemptRows(h)).length, 1)
})

t.test('outcome hook endpoints: payer match, cap, replay, owner-only pause, the 30-day window, counts', async (t) => {
  const key = 'a'.repeat(64)
  const h = await harness(t, { key })
  const rx = await startReceiver(t)
  const id = h.delivery.newEndpointId()
  const pay = payment(PAYER, id)
  t.equal(await h.delivery.checkEndpoint(PAYER, `${rx.url}/ep`), null, 'nothing to replay')
  const reg = await h.delivery.registerEndpoint(PAYER, `${rx.url}/ep`, id, pay, pay.unit)
  await pay.unit.commit()
  t.equal(reg.replayed, false)
  t.equal(reg.endpoint.endpoint_id, id, "the endpoint id is the debit's ref")
  t.equal(reg.endpoint.status, 'registered')
  t.match(reg.endpoint.secret, /^whsec_/)
  t.equal(reg.endpoint.secret_storage, 'encrypted (AES-256-GCM)')
  rx.secrets.set('/ep', String(reg.endpoint.secret))

  const again = await h.delivery.registerEndpoint(PAYER, `${rx.url}/ep`, h.delivery.newEndpointId(), ...paid())
  t.equal(again.replayed, true, 'the same URL inside its window replays')
  t.notOk('secret' in again.endpoint, 'the secret is not shown again')
  t.equal(again.endpoint.endpoint_id, id)

  // A decision this payer paid for, and one another payer paid for.
  const mine = h.ledger.addDecision()
  const theirs = h.ledger.addDecision()
  for (const [d, who] of [[mine, PAYER], [theirs, OTHER]] as const) {
    const p = payment(who)
    h.delivery.recordAskIn(p.unit, p, d.decision_id)
    await p.unit.commit()
  }
  h.ledger.resolve(mine)
  h.ledger.resolve(theirs)
  await rx.waitFor(1)
  await h.delivery.idle()
  t.equal(rx.received.length, 1, "only the payer's own decision")
  t.equal(rx.received[0]!.verified, true, 'signed with the decrypted per-endpoint secret')
  t.equal(JSON.parse(rx.received[0]!.body).decision_id, mine.decision_id)
  t.same(h.delivery.listEndpoints(PAYER)[0]!.deliveries, { registered: 1, delivered: 1, failing: 0 }, 'counts from delivery rows')

  // The cap: 10 active per payer.
  for (let i = 1; i < ENDPOINT_CAP; i++) {
    const eid = h.delivery.newEndpointId()
    const p = payment(PAYER, eid)
    await h.delivery.registerEndpoint(PAYER, `${rx.url}/ep${i}`, eid, p, p.unit)
    await p.unit.commit()
  }
  await t.rejects(h.delivery.checkEndpoint(PAYER, `${rx.url}/one-more`), { code: 'HOOK_ENDPOINT_CAP' }, 'the 11th is a typed 409')
  t.equal(await h.delivery.checkEndpoint(OTHER, `${rx.url}/one-more`), null, 'another payer has its own cap')

  // Owner-only pause; history kept.
  t.equal(await h.delivery.pauseEndpoint(OTHER, id), null, 'a foreign id reads as unknown')
  const paused = (await h.delivery.pauseEndpoint(PAYER, id))!
  t.equal(paused.status, 'paused')
  t.same(paused.deliveries, { registered: 1, delivered: 1, failing: 0 }, 'history kept')
  const d3 = h.ledger.addDecision()
  const p3 = payment(PAYER)
  h.delivery.recordAskIn(p3.unit, p3, d3.decision_id)
  await p3.unit.commit()
  h.ledger.resolve(d3)
  await h.delivery.idle()
  t.equal(rx.received.filter((r) => r.path === '/ep').length, 1, 'a paused endpoint receives nothing')

  // The 30-day window, then expired; renewal is a new registration.
  h.clock.ms += ENDPOINT_WINDOW_MS + 1000
  const list = h.delivery.listEndpoints(PAYER)
  t.ok(list.filter((e) => e.endpoint_id !== id).every((e) => e.status === 'expired'), 'expired after 30 days')
  t.equal(await h.delivery.checkEndpoint(PAYER, `${rx.url}/ep1`), null, 'an expired URL registers anew (a new id, a new debit)')

  // After a restart the same state, secrets still decrypt.
  await h.reopen()
  t.same(h.delivery.listEndpoints(PAYER).map((e) => e.status), list.map((e) => e.status))
})

t.test('follows: idempotent, channels updated, unconfigured channels fail visibly, deleting an absent one is data', async (t) => {
  const h = await harness(t)
  const q = { question_id: 'S05_volatility_expansion', subject_kind: 'asset' as const, subject: 'BTC' }
  const a = await h.delivery.setFollow(PAYER, { ...q, channels: 1 })
  const b = await h.delivery.setFollow(PAYER, { ...q, channels: 1 })
  t.equal(a.created, true)
  t.equal(b.created, false, 'the same follow again')
  t.equal(a.follow.follow_id, b.follow.follow_id)
  const c = await h.delivery.setFollow(PAYER, { ...q, channels: 3 })
  t.equal(c.follow.channels, 3, 'channels updated')
  t.same(c.follow.channels_unconfigured, ['push', 'email'], 'this deployment configures neither')
  t.equal(h.delivery.listFollows(PAYER).length, 1)
  const d = h.ledger.addDecision()
  h.ledger.resolve(d)
  const other = h.ledger.addDecision({ asset: 'ETH' })
  h.ledger.resolve(other)
  await h.delivery.idle()
  const rows = await attemptRows(h)
  t.same(rows.map((r) => [r.channel, r.status, r.error_class, r.final, r.decision_id]).sort(), [
    ['email', 'failed', 'channel_unconfigured', true, d.decision_id],
    ['push', 'failed', 'channel_unconfigured', true, d.decision_id],
  ], 'one visible failed row per unconfigured channel, none for another subject')
  const gone = await h.delivery.removeFollow(PAYER, String(a.follow.follow_id))
  t.same(gone, { follow_id: a.follow.follow_id, removed: true, was_following: true })
  t.same(await h.delivery.removeFollow(PAYER, String(a.follow.follow_id)), { follow_id: a.follow.follow_id, removed: false, was_following: false }, 'absent: data, not an error')
  t.equal(h.delivery.listFollows(PAYER).length, 0)
})

t.test('alert watches: threshold gates, one per decision, cooldown in event time, cap 50', async (t) => {
  const h = await harness(t)
  const w = await h.delivery.createAlert(PAYER, { kind: 'probability', question_id: null, subject_kind: 'asset', subject: 'BTC', threshold: 0.6, cooldown_s: 900 })
  t.equal(w.created, true)
  t.equal((await h.delivery.createAlert(PAYER, { kind: 'probability', question_id: null, subject_kind: 'asset', subject: 'BTC', threshold: 0.6, cooldown_s: 900 })).created, false, 'the same watch is idempotent')
  h.ledger.now += 1000
  h.ledger.addDecision({ probability: 0.5 }) // below the threshold: gated
  h.ledger.now += 1000
  const hit = h.ledger.addDecision({ probability: 0.7 })
  h.ledger.now += 60_000
  h.ledger.addDecision({ probability: 0.9 }) // inside the cooldown
  h.ledger.now += 900_000
  const after = h.ledger.addDecision({ probability: 0.65 })
  await h.delivery.idle()
  // push is not configured here, so each notification is one visible failed row: the rows are the notifications.
  let rows = (await attemptRows(h)).filter((r) => r.target_kind === 'alert')
  t.same(rows.map((r) => r.decision_id).sort(), [hit.decision_id, after.decision_id].sort(), 'gated, then one, then cooled down, then one')
  await h.reopen()
  await h.delivery.idle()
  rows = (await attemptRows(h)).filter((r) => r.target_kind === 'alert')
  t.equal(rows.length, 2, 'a restart replays every decision and notifies nothing twice')
  for (let i = 1; i < 50; i++) {
    await h.delivery.createAlert(PAYER, { kind: 'refusal', question_id: null, subject_kind: 'wallet', subject: `0x${i.toString(16).padStart(40, '0')}`, threshold: null, cooldown_s: 60 })
  }
  t.equal(h.delivery.listAlerts(PAYER).length, 50)
  await t.rejects(h.delivery.createAlert(PAYER, { kind: 'resolution', question_id: null, subject_kind: 'asset', subject: 'SOL', threshold: null, cooldown_s: 60 }), { code: 'ALERT_CAP' })
  t.equal((await h.delivery.deleteAlert(PAYER, String(w.alert.alert_id))).deleted, true)
  t.equal((await h.delivery.createAlert(PAYER, { kind: 'resolution', question_id: null, subject_kind: 'asset', subject: 'SOL', threshold: null, cooldown_s: 60 })).created, true, 'room again after a delete')
})

t.test('push fan-out: follows and alert watches reach each active device, VAPID-signed and decrypted by the browser', async (t) => {
  const ca = await createTestCa(t)
  // A real HTTPS push service on 127.0.0.1 (certificate from the test CA): bob's subscription has expired there (410).
  const svc = await pushService(t, { tls: await ca.issue(SERVER_NAMES), answer: (token) => (token === 'bob' ? 410 : 201) })
  const h = await harness(t, { ca: ca.cert, push: true })
  t.same(h.delivery.pushConfig(), { configured: true, vapid_public_key: (h.delivery.pushConfig() as { vapid_public_key: string }).vapid_public_key })
  t.match(h.delivery.pushConfig().vapid_public_key, /^[A-Za-z0-9_-]{87}$/, 'the VAPID public key a page subscribes with')
  const alice = svc.browser('alice')
  const bob = svc.browser('bob')
  t.equal((await h.delivery.registerDevice(PAYER, alice.subscription)).created, true)
  t.equal((await h.delivery.registerDevice(PAYER, bob.subscription)).created, true)
  const carol = svc.browser('carol')
  await h.delivery.registerDevice(OTHER, carol.subscription)
  await h.delivery.setFollow(PAYER, { question_id: 'S05_volatility_expansion', subject_kind: 'asset', subject: 'BTC', channels: 1 })
  await h.delivery.createAlert(PAYER, { kind: 'probability', question_id: null, subject_kind: 'asset', subject: 'BTC', threshold: 0.6, cooldown_s: 900 })

  h.ledger.now += 1000
  const d = h.ledger.addDecision({ probability: 0.7 })
  await h.delivery.idle()
  h.ledger.now += 3_600_000
  const e = h.ledger.resolve(d, 'obtains')
  await h.delivery.idle()

  const at = (token: string) => svc.received.filter((r) => r.path === `/wpush/v2/${token}`)
  t.equal(at('carol').length, 0, 'another payer\'s device receives nothing')
  t.equal(at('bob').length, 1, 'bob: the alert went, the push service said gone, so the resolution was not sent to him')
  const got = at('alice')
  t.equal(got.length, 2, 'alice: the alert, then the resolution')
  for (const r of got) {
    t.equal(r.vapidProblem, null, 'the push service accepts the VAPID JWT')
    t.equal(r.jwt?.claims.aud, svc.origin, 'aud is the push service origin')
    t.equal(r.decryptProblem, null, 'the browser decrypts the aes128gcm body')
  }
  const [alert, resolution] = got.map((r) => JSON.parse(r.plaintext!) as Record<string, unknown>)
  t.match(alert, { type: 'alert.probability', decision_id: d.decision_id, probability: 0.7, threshold: 0.6, kind: 'probability', delivery_id: /^dlv_[0-9a-f]{32}$/ })
  t.match(resolution, { type: 'resolution', decision_id: d.decision_id, outcome: 'obtains', resolved_at: e.outcome.resolved_at, delivery_id: /^dlv_[0-9a-f]{32}$/ })
  t.match(String(resolution!.text), /resolved obtains/)

  const rows = (await attemptRows(h)).filter((r) => r.channel === 'push')
  const byId = new Map(rows.map((r) => [r.delivery_id, r]))
  t.equal(byId.size, rows.length, 'each delivery id once in the record')
  t.match(byId.get(String(alert!.delivery_id)), { target_kind: 'alert', status: 'delivered', http_status: 201, final: true, error_class: null })
  t.match(byId.get(String(resolution!.delivery_id)), { target_kind: 'follow', status: 'delivered', http_status: 201, final: true, error_class: null })
  t.same(rows.filter((r) => r.status !== 'delivered').map((r) => [r.target_kind, r.error_class, r.http_status, r.final]), [['alert', 'gone', 410, true]], 'bob\'s one failed row: gone, final, not retried')
  t.same(h.delivery.listDevices(PAYER).map((x) => [x.active, x.host]).sort(), [[false, new URL(svc.origin).host], [true, new URL(svc.origin).host]], 'bob\'s device disabled, row kept')
  for (const dv of h.delivery.listDevices(PAYER)) t.notOk('keys' in dv || 'endpoint' in dv, 'the listing never shows keys or the endpoint')

  // Posting the same subscription again reactivates it with refreshed keys; a restart replays and sends nothing twice.
  // (Event time moves on: bob's device comes back after the resolution, so the restart must not push it to him.)
  h.ledger.now += 60_000
  const bobAgain = svc.browser('bob')
  t.equal((await h.delivery.registerDevice(PAYER, bobAgain.subscription)).created, false, 'the same endpoint is the same device')
  t.ok(h.delivery.listDevices(PAYER).every((x) => x.active), 'reactivated')
  const before = svc.received.length
  await h.reopen()
  await h.delivery.idle()
  t.same(svc.received.slice(before).map((r) => [r.path, r.plaintext]), [], 'after a restart every delivery id is already in the record: nothing re-sent')
  t.equal((await attemptRows(h)).filter((r) => r.channel === 'push').length, rows.length)
})

t.test('contacts: 201 recorded, 200 already recorded, 503 CONTACTS_UNWIRED when off; never a sent message', async (t) => {
  const h = await harness(t)
  const a = await h.delivery.recordContact({ contact: 'Trader@Example.com', consent: true, source: 'landing', seat: null })
  t.equal(a.created, true)
  t.equal(a.contact.message_sent, false)
  const b = await h.delivery.recordContact({ contact: 'trader@example.com ', consent: true, source: null, seat: null })
  t.equal(b.created, false, 'the same contact, normalized')
  t.equal(a.contact.contact_id, b.contact.contact_id)
  await h.reopen()
  t.equal((await h.delivery.recordContact({ contact: 'trader@example.com', consent: true, source: null, seat: null })).created, false, 'after a restart too')
  const off = await harness(t, { recordContacts: false })
  const refused = await off.delivery.recordContact({ contact: '@someone_x', consent: true, source: null, seat: null }).catch((err: unknown) => err)
  t.ok(refused instanceof ServiceError && refused.code === 'CONTACTS_UNWIRED', 'CONTACTS_UNWIRED')
})
