/**
 * Delivery at rest (issue 29, point 4) over a real EmbeddedLog: with a key, registration URLs, push endpoints and keys
 * and contacts are sealed in the journals (the host stays plain) and opened again by the book after a restart, so a
 * push still reaches the browser and decrypts; a start without the key, or with another, refuses with
 * DeliveryKeyMissing; records written before the key was set stay readable once it is. The whole service over a real
 * data folder: test/app/atRest.test.ts.
 */
import t from 'tap'
import { join } from 'node:path'
import type { Clock } from '../../../common/Clock.ts'
import { UnitOfWork } from '../../../pipeline/journal/UnitOfWork.ts'
import { Journal } from '../../../pipeline/journal/Journal.ts'
import { EmbeddedLog } from '../../../pipeline/log/EmbeddedLog.ts'
import { DELIVERY_CONTACTS, DELIVERY_REGISTRATIONS, contactId, type ContactRow, type RegistrationRow } from '../../../pipeline/records/deliveryRecord.ts'
import { DeliveryKeyMissing, DeliveryService } from '../../../product/delivery/DeliveryService.ts'
import { HookSigner } from '../../../product/delivery/HookSigner.ts'
import { PinnedHttpClient } from '../../../product/delivery/PinnedHttpClient.ts'
import { UrlGuard } from '../../../product/delivery/UrlGuard.ts'
import { WebPushSender } from '../../../product/delivery/WebPushSender.ts'
import { guardedPushTransport } from '../../../product/delivery/guardedPushTransport.ts'
import { TestLedger } from '../../helpers/delivery/ledgerBus.ts'
import { pushService } from '../../helpers/delivery/pushService.ts'
import { createTestCa, SERVER_NAMES } from '../../helpers/delivery/testCa.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

const PAYER = '0x209693bc6afc0c5328ba36faf03c514ef312287c'
const KEY = 'b'.repeat(64)
const OTHER_KEY = 'c'.repeat(64)

class TestClock implements Clock {
  constructor(public ms = Date.parse('2026-03-02T10:00:00.000Z')) {}
  now(): number {
    return this.ms
  }
}

async function opener(t: { teardown(fn: () => unknown): void }, opts: { ca?: string } = {}) {
  const dir = await makeTempDir(t, 'svc-delivery-at-rest-')
  const ledger = new TestLedger()
  const clock = new TestClock()
  let log: EmbeddedLog | null = null
  let delivery: DeliveryService | null = null
  const close = async () => {
    await delivery?.close()
    await log?.close()
    delivery = null
    log = null
  }
  t.teardown(close)
  const open = async (key: string | null) => {
    await close()
    log = await EmbeddedLog.open(join(dir, 'log'))
    const guard = UrlGuard.create({ allow: ['127.0.0.1/32'] })
    const http = PinnedHttpClient.create({ timeoutMs: 2000, ...(opts.ca ? { ca: opts.ca } : {}) })
    delivery = await DeliveryService.open({
      log, ledger, clock, guard, http, retryDelayMs: 50,
      push: await WebPushSender.open({ dir: join(dir, 'delivery'), subject: 'mailto:push-ops@example.test', transport: guardedPushTransport(guard, http) }),
      signer: await HookSigner.open({ dir: join(dir, 'delivery'), key }),
    })
    return delivery
  }
  const rows = async <R>(def: typeof DELIVERY_REGISTRATIONS | typeof DELIVERY_CONTACTS): Promise<R[]> => {
    const out: R[] = []
    const j = await Journal.open({ log: log!, def: def as typeof DELIVERY_REGISTRATIONS })
    const f = await j.follow(`t.rows.${Math.random()}`, (r) => out.push(r as R))
    await f.stop()
    return out
  }
  return { open, close, rows, ledger, clock }
}

const payment = (id: string) => ({ kind: 'paid' as const, payment_id: id, rail: 'credits' as const, payer: PAYER, unit: new UnitOfWork() })

t.test('with a key: URLs, push keys and contacts sealed in the journals, opened after a restart, a push still delivered', async (t) => {
  const ca = await createTestCa(t)
  const svc = await pushService(t, { tls: await ca.issue(SERVER_NAMES), answer: () => 201 })
  const h = await opener(t, { ca: ca.cert })
  let delivery = await h.open(KEY)
  const hookUrl = 'https://127.0.0.1:9/in?token=capability-token-123'
  const id = delivery.newEndpointId()
  const pay = payment(id)
  await delivery.registerEndpoint(PAYER, hookUrl, id, pay, pay.unit)
  await pay.unit.commit()
  const alice = svc.browser('alice')
  await delivery.registerDevice(PAYER, alice.subscription)
  await delivery.setFollow(PAYER, { question_id: 'S05_volatility_expansion', subject_kind: 'asset', subject: 'BTC', channels: 1 })
  const contact = await delivery.recordContact({ contact: 'Alice@Example.org', consent: true, source: null, seat: null })

  const regs = await h.rows<RegistrationRow>(DELIVERY_REGISTRATIONS)
  const endpointRow = regs.find((r) => r.target_kind === 'endpoint')!
  const deviceRow = regs.find((r) => r.target_kind === 'device')!
  t.match(endpointRow.url, /^sealed:A256GCM:/, 'the endpoint URL is sealed')
  t.equal(endpointRow.spec.host, '127.0.0.1:9', 'its host stays plain')
  t.match(deviceRow.url, /^sealed:A256GCM:/, 'the push endpoint is sealed')
  t.match(String(deviceRow.spec.keys), /^sealed:A256GCM:/, 'the push keys are sealed')
  t.notOk(JSON.stringify(regs).includes('capability-token-123') || JSON.stringify(regs).includes(alice.subscription.keys.auth), 'no plain value in any registration')
  t.equal(regs.find((r) => r.target_kind === 'follow')!.url, null, 'a follow has nothing to seal')
  const contacts = await h.rows<ContactRow>(DELIVERY_CONTACTS)
  t.match(contacts[0]!.contact, /^sealed:A256GCM:/, 'the contact is sealed')
  t.not(contacts[0]!.contact_id, contactId('alice@example.org'), 'its id is keyed: not the plain hash of the address')

  delivery = await h.open(KEY)
  t.equal(delivery.listEndpoints(PAYER)[0]!.url, hookUrl, 'the URL reads back after a restart')
  t.equal((await delivery.recordContact({ contact: 'alice@example.org', consent: true, source: null, seat: null })).contact.contact_id, contact.contact.contact_id, 'already recorded')
  const d = h.ledger.addDecision()
  h.ledger.now += 3_600_000
  h.ledger.resolve(d, 'obtains')
  await delivery.idle()
  const got = svc.received.filter((r) => r.path === '/wpush/v2/alice')
  t.equal(got.length, 1, 'the follow reached the device whose endpoint and keys were opened from the record')
  t.equal(got[0]?.decryptProblem, null, 'and the browser decrypts it with its keys')

  for (const [key, why] of [[null, 'without the key'], [OTHER_KEY, 'with another key']] as const) {
    const refused = await h.open(key).catch((err: unknown) => err)
    t.ok(refused instanceof DeliveryKeyMissing, `${why}: delivery refuses to start`)
    t.match(refused, { code: 'DELIVERY_KEY_MISSING', message: /SVC_DELIVERY_KEY/ })
    t.equal((refused as DeliveryKeyMissing).unreadable, 3, `${why}: the endpoint, the device and the contact are counted (the follow holds nothing sealed)`)
  }
})

t.test('records written before the key was set stay readable once it is; new ones are sealed', async (t) => {
  const h = await opener(t)
  let delivery = await h.open(null)
  const id = delivery.newEndpointId()
  const pay = payment(id)
  await delivery.registerEndpoint(PAYER, 'https://127.0.0.1:9/plain', id, pay, pay.unit)
  await pay.unit.commit()
  const before = await delivery.recordContact({ contact: '@plain_handle', consent: true, source: null, seat: null })
  delivery = await h.open(KEY)
  t.equal(delivery.listEndpoints(PAYER)[0]!.url, 'https://127.0.0.1:9/plain', 'a plain record reads as before')
  const again = await delivery.recordContact({ contact: '@plain_handle', consent: true, source: null, seat: null })
  t.equal(again.created, false, 'a contact recorded without the key is found by its plain id')
  t.equal(again.contact.contact_id, before.contact.contact_id)
  await delivery.pauseEndpoint(PAYER, id)
  const regs = await h.rows<RegistrationRow>(DELIVERY_REGISTRATIONS)
  t.same(regs.map((r) => [r.event, r.url?.startsWith('sealed:') ?? null]), [['registered', false], ['paused', true]], 'the old record stays plain, the new one is sealed')
})
