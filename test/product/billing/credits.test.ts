/**
 * The credits rail and the billing routes over real HTTP on 127.0.0.1, with the draws journal on a real EmbeddedLog
 * (and Kafka where the journal is the point). The paid route is the test work route (test/helpers/serving/
 * workRoutes.ts): the decision engine adapter is other work, and this route drives the payment seam the same way.
 */
import { withProof } from '../../helpers/serving/signIn.ts'
import t from 'tap'
import { UnitOfWork } from '../../../pipeline/journal/UnitOfWork.ts'
import { join } from 'node:path'
import { Journal } from '../../../pipeline/journal/Journal.ts'
import { DRAWS } from '../../../pipeline/records/drawRecord.ts'
import { BillingService } from '../../../product/billing/BillingService.ts'
import { DAY_MS } from '../../../common/time.ts'
import { type Hold } from '../../../product/billing/CreditLedger.ts'
import { RailRouter } from '../../../serving/payments/RailRouter.ts'
import { decodeHeader, type PaymentRequired } from '../../../serving/payments/x402.ts'
import { ROUTES } from '../../../serving/routes/registry.ts'
import type { Clock } from '../../../common/Clock.ts'
import type { PaidCall } from '../../../pipeline/journal/PaidCall.ts'
import { priceOf } from '../../../product/billing/pricing.ts'
import { Pipeline } from '../../../pipeline/Pipeline.ts'
import { Catalog, withCatalog } from '../../../sql/Catalog.ts'
import type { EventLog } from '../../../pipeline/log/EventLog.ts'
import { forEachLog } from '../../helpers/logs.ts'
import { makeTempDir } from '../../helpers/tmp.ts'
import { OPS_TOKEN, withBilling } from '../../helpers/serving/billing.ts'
import { PAY_TO, withServer } from '../../helpers/serving/server.ts'
import { WorkBook, workRoutes } from '../../helpers/serving/workRoutes.ts'
import { CreditsPaymentGate } from '../../../serving/payments/CreditsPaymentGate.ts'

const PAYER = '0x1111111111111111111111111111111111111111'
const T0 = Date.parse('2026-03-01T00:00:00.000Z')

class TestClock implements Clock {
  constructor(public t: number) {}
  now(): number {
    return this.t
  }
}

async function paidServer(t: Parameters<typeof withBilling>[0], opts: { log?: EventLog; clock?: Clock; opsToken?: string | null } = {}) {
  const billing = await withBilling(t, opts)
  const book = new WorkBook()
  const server = await withServer(t, {
    routes: [...ROUTES, ...workRoutes(book)],
    services: { billing, paymentGate: new RailRouter({ payTo: PAY_TO, credits: new CreditsPaymentGate(billing.ledger, PAY_TO) }), ...(opts.clock ? { clock: opts.clock } : {}) },
  })
  const call = async (method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(server.url + path, {
      method,
      headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...(await withProof(server, path, headers, body)) },
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
    })
    return { status: res.status, headers: res.headers, body: JSON.parse(await res.text()) }
  }
  const ask = (question_id: string, extra: Record<string, unknown> = {}, payer = PAYER) =>
    call('POST', '/v1/test/work', { question_id, n: 8, ...extra }, { 'x-svc-payer': payer })
  const grant = (credits: number, ref: string, payer = PAYER) =>
    call('POST', '/v1/billing/grants', { action: 'grant', payer, credits, ref }, { 'x-svc-ops': OPS_TOKEN })
  const balance = async (payer = PAYER) => (await call('GET', `/v1/billing/credits?payer=${payer}`)).body.data.balance_credits as number
  return { billing, server, book, call, ask, grant, balance }
}

t.test('ACCEPTANCE: 1,000 concurrent paid calls against a balance covering exactly 500', async (t) => {
  await forEachLog(t, async (t, makeLog, kind) => {
    const log = await makeLog()
    const dataDir = await makeTempDir(t, 'svc-billing-data-')
    const s = await paidServer(t, { log })
    t.equal((await s.grant(500 * 1000, 'acceptance')).status, 200)
    t.equal(await s.balance(), 500_000)

    const results = await Promise.all(Array.from({ length: 1000 }, () => s.ask('S03_trend_continuation')))
    const ok = results.filter((r) => r.status === 200)
    const refused = results.filter((r) => r.status === 402)
    t.equal(ok.length, 500, 'exactly 500 answers')
    t.equal(refused.length, 500, 'the rest are challenged')
    t.ok(refused.every((r) => r.body.error.code === 'PAYMENT_REQUIRED' && r.body.error.detail.reason === 'INSUFFICIENT_BALANCE'))
    t.ok(refused.every((r) => r.body.error.detail.required_credits === 1000 && typeof r.body.error.detail.balance === 'number'))
    const pr = decodeHeader<PaymentRequired>(refused[0]!.headers.get('payment-required')!)
    t.equal(pr.x402Version, 2)
    t.equal(pr.accepts[0]!.amount, priceOf('decision.deep').amount_atomic, 'the standard x402 challenge for the route price')
    t.equal(new Set(ok.map((r) => r.body.data.payment_id)).size, 500, 'one payment id per answer')
    t.ok(ok.every((r) => r.headers.get('x-svc-credits-charged') === '1000'))
    t.equal(await s.balance(), 0, 'the balance ends at 0')

    // The journal, read back from the log, sums to the spend.
    const journal = await Journal.open({ log, def: DRAWS })
    const rows = await journal.readAll()
    await journal.close()
    const debits = rows.filter((r) => r.kind === 'debit')
    t.equal(debits.length, 500)
    t.equal(debits.reduce((a, r) => a + r.amount, 0), -500_000, 'debits sum to the spend')
    t.equal(rows.reduce((a, r) => a + r.amount, 0), 0, 'credits minus debits = the balance')
    t.equal(rows.filter((r) => r.kind === 'answer').length, 500, 'every debit has its answer receipt')
    t.same(new Set(debits.map((r) => r.ref)), new Set(ok.map((r) => r.body.data.payment_id)), 'debit refs are the answered payment ids')

    // Rebuilt from the journal on start: same balance, nothing to recover. (The running ledger stops following first:
    // on the embedded log a follower group has one consumer.)
    await s.billing.ledger.close()
    const again = await BillingService.open({ log, clock: { now: () => Date.now() }, opsToken: null })
    t.equal(again.ledger.balance(PAYER), 0)
    t.same(again.ledger.recovered, [])
    await again.close()

    if (kind === 'embedded') {
      // Sunk through the Parquet sink into DuckDB.
      await Catalog.apply(dataDir)
      const pipeline = await Pipeline.start({ dataDir, log, sink: { maxAgeMs: 0, checkIntervalMs: 0 } })
      try {
        await pipeline.drain(pipeline.names.draws)
      } finally {
        await pipeline.close()
      }
      const sums = await withCatalog(dataDir, {}, (c) =>
        c.query(`select kind, count(*)::INTEGER as n, sum(amount)::BIGINT as total from billing_draws group by kind order by kind`))
      t.same(sums, [{ kind: 'credit', n: 1, total: '500000' }, { kind: 'debit', n: 500, total: '-500000' }], 'billing_draws in DuckDB')
      t.ok(join(dataDir, 'parquet'))
    }
  })
})

t.test('free allowance: idempotent, never recharges, entry tier only, a refusal never consumes a question', async (t) => {
  const s = await paidServer(t)
  const status0 = await s.call('GET', `/v1/billing/scout?payer=${PAYER}`)
  t.same(status0.body.data, { payer: PAYER, available: true, balance_credits: 0, credits_per_grant: 3000, questions_left: null }, 'GET never grants')
  const first = await s.call('POST', '/v1/billing/scout', { payer: PAYER })
  t.same(first.body.data, { granted: true, balance_credits: 3000 })
  const twice = await Promise.all([s.call('POST', '/v1/billing/scout', { payer: PAYER }), s.call('POST', '/v1/billing/scout', { payer: PAYER })])
  t.same(twice.map((r) => r.body.data), [{ granted: false, balance_credits: 3000 }, { granted: false, balance_credits: 3000 }], 'idempotent')

  const notEntry = await s.ask('S03_trend_continuation')
  t.equal(notEntry.status, 402, 'the allowance is not spendable off the entry tier')
  t.equal(notEntry.body.error.detail.reason, 'INSUFFICIENT_BALANCE')
  // Issue 14: the 402 said balance 0 while /v1/billing/credits said 3000. It reports the same balance, what of it this
  // call could use, and why the rest does not count.
  t.equal(notEntry.body.error.detail.balance, await s.balance(), 'the balance GET /v1/billing/credits reports')
  t.equal(notEntry.body.error.detail.balance, 3000)
  t.equal(notEntry.body.error.detail.spendable_credits, 0, 'none of it pays a non-entry question')
  t.equal(notEntry.body.error.detail.free_allowance_credits, 3000)
  t.match(notEntry.body.error.detail.free_allowance_note, 'entry-tier questions only (S01_market_regime, S05_volatility_expansion, S06_funding_anomaly)')
  t.match(notEntry.body.error.message, /balance \(3000\) cannot cover this call: 3000 of it is free allowance/)

  const refusal = await s.ask('S05_volatility_expansion', { refuse: true })
  t.equal(refusal.status, 200)
  t.equal(refusal.headers.get('x-svc-credits-charged'), '0', 'a refusal never consumes a question')
  t.equal(await s.balance(), 3000)

  for (const q of ['S01_market_regime', 'S05_volatility_expansion', 'S06_funding_anomaly']) t.equal((await s.ask(q)).status, 200, q)
  t.equal(await s.balance(), 0)
  t.equal((await s.ask('S01_market_regime')).status, 402, 'three questions, then the challenge')
  const again = await s.call('POST', '/v1/billing/scout', { payer: PAYER })
  t.same(again.body.data, { granted: false, balance_credits: 0 }, 'never recharges')
  const draws = await s.call('GET', `/v1/billing/draws?payer=${PAYER}`)
  t.equal(draws.body.data.count, 4, 'one grant, three debits; the refusal wrote nothing')
})

t.test('402 on a non-entry question with free allowance and too few paid credits: the whole balance, the spendable part', async (t) => {
  const s = await paidServer(t)
  await s.call('POST', '/v1/billing/scout', { payer: PAYER })
  await s.grant(400, 'top-up-short')
  const short = await s.ask('S03_trend_continuation')
  t.equal(short.status, 402, 'paid credits below the price fall short')
  const d = short.body.error.detail
  t.same([d.balance, d.spendable_credits, d.free_allowance_credits, d.required_credits], [await s.balance(), 400, 3000, 1000])
  t.equal(d.balance, 3400)
  const entry = await s.call('POST', '/v1/test/work', { question_id: 'S01_market_regime', n: 8 }, { 'x-svc-payer': '0x2222222222222222222222222222222222222222' })
  t.equal(entry.status, 402, 'no allowance, no credits')
  t.same([entry.body.error.detail.balance, entry.body.error.detail.spendable_credits, entry.body.error.detail.free_allowance_credits], [0, 0, undefined], 'nothing excluded, no note')
  t.equal(entry.body.error.message, 'The credit balance cannot cover this call; top up, or pay per call with PAYMENT-SIGNATURE.')
})

t.test('what is charged: answers and refusal decisions; not throws, typed 4xx refusals or re-served repeats', async (t) => {
  const s = await paidServer(t)
  await s.grant(10_000, 'g1')
  t.equal((await s.ask('S03_trend_continuation', { refuse: true })).headers.get('x-svc-credits-charged'), '1000', 'a refusal decision on paid credits is charged')
  const thrown = await s.ask('S03_trend_continuation', { fail: 'throw' })
  t.equal(thrown.status, 500)
  const typed = await s.ask('S03_trend_continuation', { fail: 'typed' })
  t.equal(typed.status, 409)
  const repeat = await s.ask('S03_trend_continuation', { repeat: true })
  t.equal(repeat.status, 200)
  t.equal(repeat.headers.get('x-svc-credits-charged'), null, 'a repeat is not charged')
  t.equal(await s.balance(), 9000)
  const draws = (await s.call('GET', `/v1/billing/draws?payer=${PAYER}`)).body.data
  t.equal(draws.count, 2, 'one grant, one debit: no rows for released calls')
  t.equal(draws.draws[0].kind, 'debit', 'newest first')
  t.equal(draws.draws[0].amount, -1000)
})

t.test('a credit purchase is part of its call: a dropped unit credits nothing and leaves the purchase retryable', async (t) => {
  const s = await paidServer(t, { clock: new TestClock(T0) })
  const failed = new UnitOfWork()
  const call: PaidCall = { kind: 'paid', payment_id: 'x402_pack_retry', rail: 'x402', payer: PAYER }
  await s.billing.purchasePack('booster_150k', PAYER, call, failed, priceOf('billing.pack.booster_150k'))
  failed.abort() // settlement failed: the dispatcher drops the unit
  t.equal(await s.balance(), 0, 'no lot without a captured payment')
  const unit = new UnitOfWork()
  await s.billing.purchasePack('booster_150k', PAYER, call, unit, priceOf('billing.pack.booster_150k'))
  await unit.commit()
  t.equal(await s.balance(), 150_000, 'the same payment id credits once it is captured')
  const again = new UnitOfWork()
  await s.billing.purchasePack('booster_150k', PAYER, call, again, priceOf('billing.pack.booster_150k'))
  await again.commit()
  t.equal(await s.balance(), 150_000, 'and never twice')
})

t.test('lots: soonest expiry first, expired lots not spendable, packs 60-day and plans 30-day', async (t) => {
  const clock = new TestClock(T0)
  const s = await paidServer(t, { clock })
  const pay = (id: string): PaidCall & { unit: UnitOfWork; run(): Promise<void> } => {
    const unit = new UnitOfWork()
    return { kind: 'paid', payment_id: id, rail: 'x402', payer: PAYER, unit, run: () => unit.commit() }
  }
  const packPay = pay('x402_pack_1')
  const pack = (await s.billing.purchasePack('booster_150k', PAYER, packPay, packPay.unit, priceOf('billing.pack.booster_150k'))) as Record<string, unknown>
  t.equal(await s.balance(), 0, 'the lot lands only when the payment is captured')
  await packPay.run()
  t.match(pack, { pack_id: 'booster_150k', base_price_usd: '150.00', current_price_usd: '150.00', credits_added: 150_000, balance_credits: 150_000 })
  const planPay = pay('x402_plan_1')
  await s.billing.purchasePlan('operator', PAYER, planPay, planPay.unit, priceOf('billing.plan.operator'))
  await planPay.run()
  await s.grant(1000, 'forever')
  const lots = (await s.call('GET', `/v1/billing/credits?payer=${PAYER}`)).body.data.lots
  t.same(lots.map((l: { source: string; expires_at: string | null }) => [l.source, l.expires_at]), [
    ['plan.operator', new Date(T0 + 30 * DAY_MS).toISOString()],
    ['pack.booster_150k', new Date(T0 + 60 * DAY_MS).toISOString()],
    ['grant', null],
  ], 'plan 30 days, pack 60 days, grant never; listed soonest expiry first')

  // Draw the plan lot down to 500, then a call spans plan and pack.
  for (const credits of [...Array<number>(149).fill(1000), 500]) {
    const unit = new UnitOfWork()
    s.billing.ledger.settleHoldIn(s.billing.ledger.hold(PAYER, credits, { key: 'decision.deep', entryTier: false }) as Hold, { refusal: false }, unit)
    await unit.commit()
  }
  const spanning = await s.ask('S03_trend_continuation', { n: 1 })
  t.equal(spanning.status, 200)
  const d = (await s.call('GET', `/v1/billing/draws?payer=${PAYER}&limit=2`)).body.data.draws
  t.same(d.map((r: { amount: number; lot_id: string }) => r.amount).sort(), [-500, -500], 'one row per lot, soonest expiry first')
  t.equal(d[0].ref, d[1].ref, 'same ref on both rows')

  clock.t = T0 + 61 * DAY_MS
  const after = (await s.call('GET', `/v1/billing/credits?payer=${PAYER}`)).body.data
  t.equal(after.balance_credits, 1000, 'expired plan and pack lots are not spendable; the grant is')
  t.same(after.lots.filter((l: { expired: boolean }) => l.expired).length, 2)
  t.equal((await s.ask('S03_trend_continuation')).status, 200)
  t.equal((await s.ask('S03_trend_continuation')).status, 402)
})

t.test('reversal by ref: idempotent, never a second credit; reversed_at derived', async (t) => {
  const s = await paidServer(t)
  await s.grant(3000, 'g')
  const paid = await s.ask('S03_trend_continuation')
  const ref = paid.body.data.payment_id as string
  t.equal(await s.balance(), 2000)
  const reverse = () => s.call('POST', '/v1/billing/grants', { action: 'reverse', payer: PAYER, ref }, { 'x-svc-ops': OPS_TOKEN })
  const [a, b] = await Promise.all([reverse(), reverse()])
  t.same([a.status, b.status], [200, 200])
  t.same([a.body.data.replayed, b.body.data.replayed].sort(), [false, true], 'one reversal, one replay')
  const c = await reverse()
  t.equal(c.body.data.replayed, true)
  t.equal(await s.balance(), 3000, 'credited back exactly once')
  const draws = (await s.call('GET', `/v1/billing/draws?payer=${PAYER}`)).body.data.draws
  t.equal(draws.filter((r: { kind: string }) => r.kind === 'refund').length, 1)
  const debit = draws.find((r: { kind: string }) => r.kind === 'debit')
  t.equal(debit.reversed_at, draws.find((r: { kind: string }) => r.kind === 'refund').created_at)
  const unknown = await s.call('POST', '/v1/billing/grants', { action: 'reverse', payer: PAYER, ref: 'cr_nope' }, { 'x-svc-ops': OPS_TOKEN })
  t.equal(unknown.status, 404)
  t.equal(unknown.body.error.code, 'DEBIT_NOT_FOUND')
  const foreign = await s.call('POST', '/v1/billing/grants', { action: 'reverse', payer: '0x2222222222222222222222222222222222222222', ref }, { 'x-svc-ops': OPS_TOKEN })
  t.equal(foreign.status, 404, "another payer's debit reads as unknown")
})

t.test('operator grants: OPS_UNSET without a token, 403 on a wrong or missing one, idempotent by ref', async (t) => {
  const unset = await paidServer(t, { opsToken: null })
  const r0 = await unset.grant(1000, 'x')
  t.equal(r0.status, 503)
  t.equal(r0.body.error.code, 'OPS_UNSET')
  t.equal(await unset.balance(), 0, 'never a public grant')

  const s = await paidServer(t)
  const body = { action: 'grant', payer: PAYER, credits: 1000, ref: 'r1' }
  for (const [label, headers] of [['wrong', { 'x-svc-ops': OPS_TOKEN + 'x' }], ['short', { 'x-svc-ops': 'x' }], ['missing', {}]] as const) {
    const r = await s.call('POST', '/v1/billing/grants', body, headers)
    t.equal(r.status, 403, label)
    t.equal(r.body.error.code, 'OPS_FORBIDDEN')
  }
  t.equal((await s.grant(1000, 'r1')).body.data.replayed, false)
  t.equal((await s.grant(1000, 'r1')).body.data.replayed, true)
  t.equal(await s.balance(), 1000)
  const noCredits = await s.call('POST', '/v1/billing/grants', { action: 'grant', payer: PAYER, ref: 'r2' }, { 'x-svc-ops': OPS_TOKEN })
  t.equal(noCredits.status, 400)
  t.equal(noCredits.body.error.detail.field, '/body/credits')
  const badPayer = await s.ask('S03_trend_continuation', {}, '0xnope')
  t.equal(badPayer.status, 400, 'x-svc-payer must be an address')
})

t.test('credit purchases: credits never buy credits; the challenge says no top-up rail is wired', async (t) => {
  const s = await paidServer(t)
  await s.grant(1_000_000, 'big')
  const byCredits = await s.call('POST', '/v1/billing/plans/operator', { payer: PAYER }, { 'x-svc-payer': PAYER })
  t.equal(byCredits.status, 409)
  t.equal(byCredits.body.error.code, 'PLAN_NOT_RECHARGEABLE')
  t.equal((await s.call('POST', '/v1/billing/packs/booster_150k', { payer: PAYER }, { 'x-svc-payer': PAYER })).status, 409)
  t.equal(await s.balance(), 1_000_000)
  const unpaid = await s.call('POST', '/v1/billing/packs/booster_150k', { payer: PAYER })
  t.equal(unpaid.status, 402)
  t.match(unpaid.body.error.detail.settlement_note, /no top-up rail wired/)
  t.equal(decodeHeader<PaymentRequired>(unpaid.headers.get('payment-required')!).accepts[0]!.amount, '150000000')
})

t.test('rate lock: quote, fee challenge, operator issue', async (t) => {
  const s = await paidServer(t)
  const q = await s.call('GET', '/v1/billing/rate-lock', undefined, { 'x-svc-payer': PAYER })
  t.equal(q.status, 200)
  t.equal(q.body.data.spot_usd_per_credit, 0.001)
  t.match(q.body.data.lock, { premium: 0.2, months: 12, purchase_usd_per_credit: 0.0012, break_even: { turns_to_pay_off: 1 } })
  const fee = await s.call('POST', '/v1/billing/rate-lock', { credits: 10_000 }, { 'x-svc-payer': PAYER })
  t.equal(fee.status, 402)
  t.equal(fee.body.error.detail.fee_usd, '12.00', '10,000 credits × $0.001 × 1.2')
  t.equal(decodeHeader<PaymentRequired>(fee.headers.get('payment-required')!).accepts[0]!.amount, '12000000')
  const issued = await s.call('POST', '/v1/billing/rate-lock', { credits: 10_000, ref: 'lock-1' }, { 'x-svc-payer': PAYER, 'x-svc-ops': OPS_TOKEN })
  t.equal(issued.status, 201)
  t.match(issued.body.data, { granted: true, credits: 10_000, rung: 0, fee_usd: '0.00', locked_usd_per_credit: 0.001, status: 'settling' })
  t.equal(await s.balance(), 10_000)
})

t.test('surge meter: ratio null when the after-window has no settled revenue', async (t) => {
  const clock = new TestClock(T0)
  const s = await paidServer(t, { clock })
  const surge = async (turnAt: number) =>
    (await s.call('GET', `/v1/ops/surge?turn_at=${new Date(turnAt).toISOString()}`, undefined, { 'x-svc-ops': OPS_TOKEN })).body.data
  t.match(await surge(T0), { before_usd: 0, after_usd: 0, ratio: null })
  await s.billing.ledger.credit(PAYER, 10_000, { reason: 'pack.booster_150k', ref: 'p', lifetimeDays: 60 })
  await s.grant(10_000, 'free-credits')
  clock.t = T0 + DAY_MS
  await s.ask('S03_trend_continuation') // from the pack lot (soonest expiry)
  const before = await surge(T0 + 2 * DAY_MS)
  t.match(before, { before_usd: 1, after_usd: 0, ratio: null }, 'no after-window revenue: null, not 0')
  clock.t = T0 + 3 * DAY_MS
  await s.ask('S03_trend_continuation')
  await s.ask('S03_trend_continuation')
  t.match(await surge(T0 + 2 * DAY_MS), { before_usd: 1, after_usd: 2, ratio: 2 })
  const noOps = await s.call('GET', '/v1/ops/surge', undefined, {})
  t.equal(noOps.status, 403)
})
