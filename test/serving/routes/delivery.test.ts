/**
 * The delivery routes over real HTTP on 127.0.0.1, one server for the file: a real DeliveryService (journals on an
 * embedded log, the real URL guard over a fixed resolver table, test/helpers/serving/delivery.ts) over a TestLedger,
 * a real BillingService with the credits rail, and the real billing routes (grants by the operator header, balances
 * and the draws journal read back over HTTP).
 *
 * What it proves: the outcome hook endpoint add-on is one 49,000-credit debit whose ref is the endpoint id; a replay,
 * a refusal (unsafe URL, cap, unknown or terminal decision, bad body) and a challenge charge nothing; ownership of a
 * delete; the resolution hook's typed refusals before its payment.
 */
import { randomUUID } from 'node:crypto'
import t from 'tap'
import { EmbeddedLog } from '../../../pipeline/log/EmbeddedLog.ts'
import { BillingService } from '../../../product/billing/BillingService.ts'
import { priceOf } from '../../../product/billing/pricing.ts'
import { ENDPOINT_CAP } from '../../../product/delivery/DeliveryService.ts'
import { CreditsPaymentGate } from '../../../serving/payments/CreditsPaymentGate.ts'
import { RailRouter } from '../../../serving/payments/RailRouter.ts'
import { ROUTES } from '../../../serving/routes/registry.ts'
import { TestClock } from '../../helpers/callEvents.ts'
import { AuthorizingPaymentGate } from '../../helpers/serving/AuthorizingPaymentGate.ts'
import { OPS_TOKEN } from '../../helpers/serving/billing.ts'
import { withDelivery } from '../../helpers/serving/delivery.ts'
import { jsonCaller, PAY_TO, withServer } from '../../helpers/serving/server.ts'
import { makeTempDir } from '../../helpers/tmp.ts'

const A = '0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa'
const B = '0xbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb'
/** Holds exactly one add-on's worth: its replay is asked of a payer whose balance no longer covers the price. */
const D = '0xdddddddddddddddddddddddddddddddddddddddd'
/** The cap payer. */
const C = '0xcccccccccccccccccccccccccccccccccccccccc'
/** Never granted anything. */
const N = '0x1111111111111111111111111111111111111111'
const BUYER = '0x9999999999999999999999999999999999999999'
const ADDON = 49_000
const DEEP = priceOf('decision.deep').credits
const T0 = Date.parse('2026-03-04T09:00:00.000Z')

const dir = await makeTempDir(t, 'svc-delivery-routes-')
const log = await EmbeddedLog.open(dir)
const clock = new TestClock(T0)
const billing = await BillingService.open({ log, clock, opsToken: OPS_TOKEN })
// One log for billing and delivery: a paid registration's unit of work (its debit and its registration row) is atomic on one log.
const { delivery, ledger } = await withDelivery(t, clock, undefined, { log })
t.teardown(async () => {
  await delivery.close()
  await billing.close()
  await log.close()
})
const server = await withServer(t, {
  routes: ROUTES,
  services: {
    clock, billing, delivery,
    paymentGate: new RailRouter({ payTo: PAY_TO, credits: new CreditsPaymentGate(billing.ledger, PAY_TO), x402: new AuthorizingPaymentGate(BUYER) }),
  },
})

const call = jsonCaller(server)
const as = (payer: string) => ({ 'x-svc-payer': payer })
const balance = async (payer: string): Promise<number> => {
  const r = await call('GET', `/v1/billing/credits?payer=${payer}`)
  if (r.status !== 200) throw new Error(`balance of ${payer}: ${r.status}`)
  return r.body.data.balance_credits
}
type Draw = { kind: string; amount: number; reason: string; ref: string }
const draws = async (payer: string): Promise<Draw[]> => (await call('GET', `/v1/billing/draws?payer=${payer}&limit=500`)).body.data.draws
const grant = async (payer: string, credits: number) => {
  const r = await call('POST', '/v1/billing/grants', { action: 'grant', payer, credits, ref: `grant-${payer}-${credits}` }, { 'x-svc-ops': OPS_TOKEN })
  if (r.status !== 200) throw new Error(`grant to ${payer}: ${r.status} ${JSON.stringify(r.body)}`)
}

await grant(A, 100_000)
await grant(B, 100_000)
await grant(D, ADDON)
await grant(C, (ENDPOINT_CAP + 1) * ADDON)

const URL_A = 'https://hooks.example.com/a/outcomes'
let endpointA = ''

t.test('POST /v1/hook-endpoints: 201, one 49,000-credit debit with ref = the endpoint id, the secret shown once', async (t) => {
  const before = await balance(A)
  t.equal(before, 100_000)
  const r = await call('POST', '/v1/hook-endpoints', { url: URL_A }, as(A))
  t.equal(r.status, 201, JSON.stringify(r.body))
  const ep = r.body.data
  t.match(ep.endpoint_id, /^he_[0-9a-f]{32}$/)
  t.match(ep.secret, /^whsec_[A-Za-z0-9+/]+=*$/)
  t.equal(ep.url, URL_A)
  t.equal(ep.status, 'registered', 'registered, never a claim that the receiver is live')
  for (const claim of ['live', 'verified', 'reachable', 'delivered']) t.notOk(claim in ep, `no ${claim} claim`)
  t.same(ep.deliveries, { registered: 0, delivered: 0, failing: 0 })
  t.equal(Date.parse(ep.expires_at) - Date.parse(ep.registered_at), 30 * 86_400_000, 'a 30-day window')
  t.equal(ep.paused_at, null)
  t.equal(r.headers.get('x-svc-credits-charged'), String(ADDON))
  t.equal(r.headers.get('x-svc-credits-balance'), String(before - ADDON))
  t.match(r.body.meta.pricing, { key: 'delivery.hook_endpoint', credits: ADDON, rail: 'credits', payment_id: ep.endpoint_id }, 'the payment is named by the endpoint id')
  t.equal(await balance(A), before - ADDON, 'the balance dropped by exactly 49,000')
  const debits = (await draws(A)).filter((d) => d.kind === 'debit')
  t.equal(debits.length, 1, 'one debit')
  t.match(debits[0], { amount: -ADDON, reason: 'delivery.hook_endpoint', ref: ep.endpoint_id }, 'the debit carries ref = the endpoint id')
  // The same row in the ledger itself (the draws journal the balance is rebuilt from).
  t.equal(billing.ledger.draws(A, 500).draws.filter((d) => d.kind === 'debit' && d.ref === ep.endpoint_id).reduce((s, d) => s + d.amount, 0), -ADDON)
  endpointA = ep.endpoint_id
})

t.test('re-posting the same URL replays: 200, same id, no secret, nothing charged', async (t) => {
  const before = await balance(A)
  const drawCount = (await draws(A)).length
  const r = await call('POST', '/v1/hook-endpoints', { url: URL_A }, as(A))
  t.equal(r.status, 200, JSON.stringify(r.body))
  t.equal(r.body.data.endpoint_id, endpointA)
  t.equal(r.body.data.replayed, true)
  t.notOk('secret' in r.body.data, 'the secret is not re-shown')
  t.notOk(JSON.stringify(r.body).includes('whsec_'), 'nowhere in the body')
  t.equal(r.headers.get('x-svc-credits-charged'), null, 'no charge header')
  t.equal(r.body.meta.pricing, null, 'no payment named: none was asked or taken')
  t.equal(r.headers.get('cache-control'), 'private, no-store', "a payer's endpoint is never cached")
  t.equal(await balance(A), before, 'balance unchanged')
  t.equal((await draws(A)).length, drawCount, 'no draw row written')
})

t.test('a replay is free even when the balance no longer covers the add-on price', async (t) => {
  const url = 'https://hooks.example.com/d/outcomes'
  const first = await call('POST', '/v1/hook-endpoints', { url }, as(D))
  t.equal(first.status, 201)
  t.equal(await balance(D), 0, 'all spent on the add-on')
  const again = await call('POST', '/v1/hook-endpoints', { url }, as(D))
  t.equal(again.status, 200, `a free replay is not a payment challenge: ${JSON.stringify(again.body.error ?? null)}`)
  t.equal(again.body.data?.endpoint_id, first.body.data.endpoint_id)
  t.notOk(again.body.data && 'secret' in again.body.data)
  t.equal(again.headers.get('x-svc-credits-charged'), null)
  t.equal(await balance(D), 0)
})

t.test('a payer without credits gets the 402 challenge and no endpoint is created', async (t) => {
  const r = await call('POST', '/v1/hook-endpoints', { url: 'https://hooks.example.com/n/outcomes' }, as(N))
  t.equal(r.status, 402)
  t.equal(r.body.error.code, 'PAYMENT_REQUIRED')
  t.match(r.body.error.detail, { reason: 'INSUFFICIENT_BALANCE', balance: 0, required_credits: ADDON, pricing_key: 'delivery.hook_endpoint' })
  t.ok(r.headers.get('payment-required'), 'the x402 challenge header')
  const list = await call('GET', '/v1/hook-endpoints', undefined, as(N))
  t.equal(list.status, 200)
  t.same(list.body.data, { items: [], count: 0 }, 'nothing registered')
  t.same(await draws(N), [])
})

t.test('an unsafe URL is 400 UNSAFE_URL with the reason, before the payment: nothing charged', async (t) => {
  const before = await balance(A)
  const drawCount = (await draws(A)).length
  for (const [url, reason] of [
    ['https://10.0.0.1/x', 'URL_ADDRESS_REFUSED'],
    ['https://127.0.0.1/x', 'URL_ADDRESS_REFUSED'],
    ['https://169.254.169.254/latest/meta-data', 'URL_ADDRESS_REFUSED'],
    ['https://[::1]/x', 'URL_ADDRESS_REFUSED'],
    ['https://unknown.example.org/x', 'URL_HOST_UNRESOLVABLE'],
    ['https://user:pw@hooks.example.com/x', 'URL_CREDENTIALS_REFUSED'],
  ] as const) {
    const r = await call('POST', '/v1/hook-endpoints', { url }, as(A))
    t.equal(r.status, 400, url)
    t.equal(r.body.error?.code, 'UNSAFE_URL', url)
    t.equal(r.body.error?.detail?.reason, reason, url)
    t.notOk(r.headers.get('x-svc-credits-charged'), url)
  }
  t.equal((await call('POST', '/v1/hook-endpoints', { url: 'https://10.0.0.1/x' }, as(N))).status, 400, 'a refusal is typed before the challenge: no 402 for a payer without credits')
  t.equal(await balance(A), before, 'balance unchanged')
  t.equal((await draws(A)).length, drawCount, 'no draw row')
  t.equal((await call('GET', '/v1/hook-endpoints', undefined, as(A))).body.data.count, 1, 'nothing registered')
})

t.test('GET lists with counts; DELETE is owner-only (404 for another payer) and pauses, keeping the history', async (t) => {
  const list = await call('GET', '/v1/hook-endpoints', undefined, as(A))
  t.equal(list.status, 200)
  t.equal(list.body.data.count, 1)
  t.match(list.body.data.items[0], { endpoint_id: endpointA, url: URL_A, status: 'registered', paused_at: null, deliveries: { registered: 0, delivered: 0, failing: 0 } })
  t.notOk('secret' in list.body.data.items[0], 'the listing never shows the secret')
  t.same((await call('GET', '/v1/hook-endpoints', undefined, as(B))).body.data, { items: [], count: 0 }, "B sees none of A's")

  const foreign = await call('DELETE', `/v1/hook-endpoints/${endpointA}`, undefined, as(B))
  t.equal(foreign.status, 404)
  t.equal(foreign.body.error.code, 'HOOK_ENDPOINT_NOT_FOUND')
  const unknown = await call('DELETE', `/v1/hook-endpoints/he_${'0'.repeat(32)}`, undefined, as(A))
  t.equal(unknown.status, 404)
  t.same({ ...foreign.body.error, request_id: null, detail: null }, { ...unknown.body.error, request_id: null, detail: null }, 'a foreign id reads as unknown')
  t.equal((await call('GET', '/v1/hook-endpoints', undefined, as(A))).body.data.items[0].status, 'registered', "B's delete changed nothing")

  const del = await call('DELETE', `/v1/hook-endpoints/${endpointA}`, undefined, as(A))
  t.equal(del.status, 200)
  t.match(del.body.data, { endpoint_id: endpointA, status: 'paused', paused_at: String })
  const again = await call('DELETE', `/v1/hook-endpoints/${endpointA}`, undefined, as(A))
  t.equal(again.status, 200, 'a second delete is data')
  t.equal(again.body.data.paused_at, del.body.data.paused_at)
  const after = await call('GET', '/v1/hook-endpoints', undefined, as(A))
  t.equal(after.body.data.count, 1, 'history kept: the paused endpoint is still listed')
  t.match(after.body.data.items[0], { endpoint_id: endpointA, status: 'paused' })
  t.equal(await balance(A), 100_000 - ADDON, 'pausing refunds nothing and charges nothing')
})

t.test(`cap: ${ENDPOINT_CAP} active per payer; the next is 409 HOOK_ENDPOINT_CAP and uncharged`, async (t) => {
  t.equal(await balance(C), (ENDPOINT_CAP + 1) * ADDON, 'enough for one more than the cap: the refusal is the cap, not the balance')
  const ids = new Set<string>()
  for (let i = 0; i < ENDPOINT_CAP; i++) {
    const r = await call('POST', '/v1/hook-endpoints', { url: `https://hooks.example.com/c/${i}` }, as(C))
    t.equal(r.status, 201, `endpoint ${i}`)
    t.equal(r.headers.get('x-svc-credits-charged'), String(ADDON))
    ids.add(r.body.data.endpoint_id)
  }
  t.equal(ids.size, ENDPOINT_CAP, 'distinct ids')
  t.equal(await balance(C), ADDON)
  const debitRefs = (await draws(C)).filter((d) => d.kind === 'debit').map((d) => d.ref)
  t.same(new Set(debitRefs), ids, 'one debit per endpoint, each with ref = its endpoint id')

  const over = await call('POST', '/v1/hook-endpoints', { url: 'https://push.example.com/c/over' }, as(C))
  t.equal(over.status, 409)
  t.equal(over.body.error.code, 'HOOK_ENDPOINT_CAP')
  t.match(over.body.error.detail, { active: ENDPOINT_CAP, cap: ENDPOINT_CAP })
  t.equal(over.headers.get('x-svc-credits-charged'), null)
  t.equal(await balance(C), ADDON, 'uncharged')
  t.equal((await draws(C)).filter((d) => d.kind === 'debit').length, ENDPOINT_CAP)
  t.equal((await call('GET', '/v1/hook-endpoints', undefined, as(C))).body.data.count, ENDPOINT_CAP)

  // A replay of an active URL at the cap is still a replay, not a cap refusal.
  const replay = await call('POST', '/v1/hook-endpoints', { url: 'https://hooks.example.com/c/0' }, as(C))
  t.equal(replay.status, 200)
  t.equal(replay.body.data.replayed, true)
  // Pausing one frees a slot: the eleventh registers, for the one add-on price left.
  const [first] = ids
  t.equal((await call('DELETE', `/v1/hook-endpoints/${first}`, undefined, as(C))).status, 200)
  const eleventh = await call('POST', '/v1/hook-endpoints', { url: 'https://push.example.com/c/over' }, as(C))
  t.equal(eleventh.status, 201)
  t.equal(await balance(C), 0)
  t.equal((await call('GET', '/v1/hook-endpoints', undefined, as(C))).body.data.count, ENDPOINT_CAP + 1, 'the paused one is still listed')
})

t.test('POST /v1/hooks: unknown decision 404 and terminal clock 409 before the payment; an open one arms at the decision price', async (t) => {
  const before = await balance(B)
  const drawCount = (await draws(B)).length

  const unknownId = randomUUID()
  const unknown = await call('POST', '/v1/hooks', { decision_id: unknownId, url: 'https://hooks.example.com/h/1' }, as(B))
  t.equal(unknown.status, 404)
  t.equal(unknown.body.error.code, 'DECISION_NOT_FOUND')
  t.equal(unknown.headers.get('x-svc-credits-charged'), null)
  t.equal((await call('POST', '/v1/hooks', { decision_id: unknownId, url: 'https://hooks.example.com/h/1' }, as(N))).status, 404, 'no challenge for a typed refusal')

  const done = ledger.addDecision()
  ledger.resolve(done, 'obtains')
  await delivery.idle()
  const terminal = await call('POST', '/v1/hooks', { decision_id: done.decision_id, url: 'https://hooks.example.com/h/2' }, as(B))
  t.equal(terminal.status, 409)
  t.equal(terminal.body.error.code, 'HOOK_CLOCK_TERMINAL')
  t.equal(terminal.body.error.detail.resolution, `/v1/resolutions/${done.decision_id}`)
  t.equal(terminal.body.error.detail.decision_id, done.decision_id)
  t.equal(terminal.headers.get('x-svc-credits-charged'), null)

  const open = ledger.addDecision()
  const unsafe = await call('POST', '/v1/hooks', { decision_id: open.decision_id, url: 'https://192.168.1.10/h' }, as(B))
  t.equal(unsafe.status, 400)
  t.match(unsafe.body.error, { code: 'UNSAFE_URL', detail: { reason: 'URL_ADDRESS_REFUSED' } })

  t.equal(await balance(B), before, 'no refusal charged')
  t.equal((await draws(B)).length, drawCount)

  const armed = await call('POST', '/v1/hooks', { decision_id: open.decision_id, url: 'https://hooks.example.com/h/3' }, as(B))
  t.equal(armed.status, 201, JSON.stringify(armed.body))
  t.match(armed.body.data, { hook_id: /^hk_[0-9a-f]{32}$/, decision_id: open.decision_id, status: 'armed', secret: /^whsec_/, horizon_end: open.horizon_end })
  t.match(armed.body.data.delivery_record, /does not mean the receiver is live/)
  t.equal(armed.headers.get('x-svc-credits-charged'), String(DEEP))
  t.equal(await balance(B), before - DEEP, 'charged the decision price')
  t.match((await draws(B)).filter((d) => d.kind === 'debit'), [{ amount: -DEEP, reason: 'decision.deep' }])

  const broke = await call('POST', '/v1/hooks', { decision_id: open.decision_id, url: 'https://hooks.example.com/h/4' }, as(N))
  t.equal(broke.status, 402, 'an open clock asks a payer without credits to pay')
  t.match(broke.body.error.detail, { reason: 'INSUFFICIENT_BALANCE', required_credits: DEEP })
})

t.test('bad bodies and headers are a 400 VALIDATION envelope, never a 500, and never charge', async (t) => {
  const before = await balance(B)
  const drawCount = (await draws(B)).length
  const id = randomUUID()
  for (const [method, path, body, headers] of [
    ['POST', '/v1/hook-endpoints', {}, as(B)],
    ['POST', '/v1/hook-endpoints', { url: 'ftp://hooks.example.com/x' }, as(B)],
    ['POST', '/v1/hook-endpoints', { url: 'hooks.example.com/x' }, as(B)],
    ['POST', '/v1/hook-endpoints', { url: 42 }, as(B)],
    ['POST', '/v1/hook-endpoints', { url: `https://hooks.example.com/${'x'.repeat(2048)}` }, as(B)],
    ['POST', '/v1/hook-endpoints', { url: 'https://hooks.example.com/x', extra: true }, as(B)],
    ['POST', '/v1/hook-endpoints', { url: 'https://hooks.example.com/x' }, {}],
    ['POST', '/v1/hook-endpoints', { url: 'https://hooks.example.com/x' }, { 'x-svc-payer': '0x12' }],
    ['GET', '/v1/hook-endpoints', undefined, {}],
    ['DELETE', '/v1/hook-endpoints/he_nothex', undefined, as(B)],
    ['DELETE', `/v1/hook-endpoints/he_${'0'.repeat(32)}`, undefined, {}],
    ['POST', '/v1/hooks', { url: 'https://hooks.example.com/x' }, as(B)],
    ['POST', '/v1/hooks', { decision_id: id }, as(B)],
    ['POST', '/v1/hooks', { decision_id: 'not-a-uuid', url: 'https://hooks.example.com/x' }, as(B)],
    ['POST', '/v1/hooks', { decision_id: id, url: 'mailto:a@b.c' }, as(B)],
    ['POST', '/v1/hooks', { decision_id: id, url: 'https://hooks.example.com/x', secret: 'mine' }, as(B)],
    // Push endpoints must be https (spec, Authentication 7); hooks may be http or https.
    ['POST', '/v1/push/endpoints', { subscription: { endpoint: 'http://push.example.com/s', keys: { p256dh: 'B'.repeat(87), auth: 'A'.repeat(22) } } }, as(B)],
  ] as const) {
    const r = await call(method, path, body, headers as Record<string, string>)
    const what = `${method} ${path} ${JSON.stringify(body ?? '').slice(0, 80)} ${JSON.stringify(headers)}`
    t.equal(r.status, 400, what)
    t.equal(r.body.error?.code, 'VALIDATION', what)
    t.ok(r.body.error?.request_id, `${what}: an error envelope`)
  }
  // A body that is not JSON at all.
  const raw = await fetch(server.url + '/v1/hook-endpoints', { method: 'POST', headers: { 'content-type': 'application/json', ...as(B) }, body: '{"url": ' })
  t.equal(raw.status, 400)
  t.equal((await raw.json()).error.code, 'VALIDATION')
  t.equal(await balance(B), before, 'nothing charged')
  t.equal((await draws(B)).length, drawCount)
  t.same((await call('GET', '/v1/hook-endpoints', undefined, as(B))).body.data, { items: [], count: 0 })
})
