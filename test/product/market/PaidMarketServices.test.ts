/**
 * The paid market surfaces over real parts: a generated tape replayed through a real EmbeddedLog into a real
 * MarketState and a real EngineRunner (ledger on the same log), served by the real server on 127.0.0.1 and paid
 * through a real payment gate. Expectations are computed from the generated ticks; shapes are checked against the
 * registry's response schemas.
 *
 * The generator's liquidations come in bursts (a 26 h tape has a few liquidation hours per market), so BTC's tape is
 * completed with one labelled liquidation record in each of the last 24 clock hours to make its surface available;
 * ETH keeps only its own and must answer the 200 unavailability. SOL's feed stops 5 minutes before the end: its
 * inputs are served with their staleness stated.
 */
import t from 'tap'
import { isoMs, tickTime, TICK_SCHEMA_VERSION, type LiquidationTick, type Tick } from '../../../ingest/Tick.ts'
import { EngineRunner } from '../../../engine/EngineRunner.ts'
import { LIQ_HOURS_REQUIRED, MarketState } from '../../../pipeline/MarketState.ts'
import { fundingPerHour } from '../../../pipeline/features/funding.ts'
import { topicNames } from '../../../pipeline/topics.ts'
import { EngineServices } from '../../../engine/EngineServices.ts'
import { MarketServices } from '../../../product/market/MarketServices.ts'
import { FUNDING_ASSUMPTIONS, LIQUIDATION_STALENESS_BUDGET_MS, PaidMarketServices } from '../../../product/market/PaidMarketServices.ts'
import { scanProfitLanguage } from '../../../product/market/profitLanguage.ts'
import { ReplayUniverseSource } from '../../../product/market/ReplayUniverseSource.ts'
import { envelopeSchema } from '../../../serving/envelope.ts'
import type { PaymentGate, PaymentGrant, PaymentRequest, ReleaseCause } from '../../../serving/payments/PaymentGate.ts'
import type { Price } from '../../../product/billing/pricing.ts'
import { ROUTES } from '../../../serving/routes/registry.ts'
import { ServiceError } from '../../../common/ServiceError.ts'
import { AuthorizingPaymentGate } from '../../helpers/serving/AuthorizingPaymentGate.ts'
import { makeAjv, withServer } from '../../helpers/serving/server.ts'
import { lastTick, marketFixture } from '../../helpers/marketTape.ts'

const HOUR = 3_600_000
const DAY = 24 * HOUR
const START = Date.parse('2026-01-01T00:00:00Z')
const HOURS = 26
const END = START + HOURS * HOUR
const SOL_CUT = END - 5 * 60_000

/** A gate that authorizes every call and then fails to settle it (as a facilitator refusing /settle would). */
class SettleFailingGate implements PaymentGate {
  readonly released: ReleaseCause[] = []
  #n = 0
  async authorize(_req: PaymentRequest, _price: Price): Promise<PaymentGrant> {
    return {
      kind: 'paid',
      payment_id: `failing-${++this.#n}`,
      rail: 'x402',
      payer: null,
      settle: async () => ({ ok: false, error: new ServiceError('PAYMENT_INVALID', { detail: { reason: 'SETTLEMENT_FAILED' } }) }),
      release: async (cause) => void this.released.push(cause),
    }
  }
}

const ajv = makeAjv()
function validatorOf(routeId: string) {
  const route = ROUTES.find((r) => r.id === routeId)!
  if (route.response.kind !== 'envelope') throw new Error(`${routeId} is not an envelope route`)
  return ajv.compile(envelopeSchema(route.response.schema))
}

async function getJson(url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: any }> {
  const res = await fetch(url, { headers })
  return { status: res.status, body: await res.json() }
}

/** One labelled liquidation record for BTC at `time`. */
function liquidation(time: number, side: 'long' | 'short', notional: number): LiquidationTick {
  const at = isoMs(time)
  return {
    v: TICK_SCHEMA_VERSION, kind: 'liquidation', asset: 'BTC', instrument: 'BTC',
    provenance: { source: 'simulated', provider: 'test-liquidation-fill', timestamp: at, received_at: at, quality: 'simulated' },
    side, price: 95_000, size: notional / 95_000, notional_usd: notional,
  }
}

function liqHoursOf(ticks: Tick[], asset: string): number {
  return new Set(ticks.filter((tk) => tk.kind === 'liquidation' && tk.asset === asset && tickTime(tk) > END - DAY && tickTime(tk) <= END).map((tk) => Math.floor(tickTime(tk) / HOUR))).size
}

t.test('paid market surfaces over a replayed tape, the engine and a real payment gate', async (t) => {
  const fx = await marketFixture(t, { seed: 21, hours: HOURS, assets: ['BTC', 'ETH', 'SOL'] }, (tk) => tk.asset === 'SOL' && tickTime(tk) > SOL_CUT)
  t.equal(fx.endMs, END)
  // One record 30 s before the end of each of the last 24 clock hours (the newest one 30 s before the end).
  const fill = Array.from({ length: 24 }, (_, k) => liquidation(END - k * HOUR - 30_000, k % 3 === 0 ? 'short' : 'long', 10_000 + 1_000 * k))
  await fx.append(fill)
  const ticks = [...fx.ticks, ...fill]
  t.ok(liqHoursOf(fx.ticks, 'ETH') < LIQ_HOURS_REQUIRED, 'ETH keeps fewer than 24 liquidation hours')

  const runner = await EngineRunner.start({ log: fx.log, dataDir: null, cadence: false, groupId: 'test.paid-market.engine' })
  t.teardown(() => runner.close())
  await runner.waitForTicks()
  const engine = new EngineServices(runner)
  const paid = new PaidMarketServices({ state: fx.state, decisions: engine })
  const market = new MarketServices({ state: fx.state, universe: new ReplayUniverseSource(fx.state), paid })
  const gate = new AuthorizingPaymentGate()
  const server = await withServer(t, { services: { market, ledger: engine, engine, paymentGate: gate } })
  const failingGate = new SettleFailingGate()
  const failing = await withServer(t, { services: { market, ledger: engine, engine, paymentGate: failingGate } })
  const decisionsTopic = topicNames().decisions
  const rows = async () => (await fx.log.endOffsets(decisionsTopic)).reduce((a, b) => a + b, 0)

  t.test('liquidation surface: 24/24 hours → the sums of the ticks in the 24 h window', async (t) => {
    const { status, body } = await getJson(`${server.url}/v1/liquidation/BTC`)
    t.equal(status, 200)
    t.ok(validatorOf('liquidation.surface')(body), JSON.stringify(validatorOf('liquidation.surface').errors))
    const inWindow = ticks.filter((tk): tk is LiquidationTick => tk.kind === 'liquidation' && tk.asset === 'BTC' && tickTime(tk) > END - DAY && tickTime(tk) <= END)
    const longs = inWindow.filter((l) => l.side === 'long').reduce((a, l) => a + l.notional_usd, 0)
    const shorts = inWindow.filter((l) => l.side === 'short').reduce((a, l) => a + l.notional_usd, 0)
    const d = body.data
    t.equal(d.available, true)
    t.equal(d.asset, 'BTC')
    t.equal(d.venue, 'simulated', 'a generated tape says so')
    t.equal(d.window, '24h')
    t.equal(d.surface.window, '24h')
    t.equal(d.surface.count, inWindow.length)
    t.ok(Math.abs(d.surface.longs_usd - longs) < 1e-6, `longs ${d.surface.longs_usd} = ${longs}`)
    t.ok(Math.abs(d.surface.shorts_usd - shorts) < 1e-6, `shorts ${d.surface.shorts_usd} = ${shorts}`)
    t.ok(Math.abs(d.surface.total_usd - (longs + shorts)) < 1e-6)
    t.equal(d.hours_observed, 24)
    t.equal(d.window_start, isoMs(END - DAY))
    t.equal(d.window_end, isoMs(END))
    t.equal(d.provenance.quality, 'simulated')
    t.equal(d.provenance.timestamp, isoMs(END - 30_000))
    t.equal(body.meta.pricing.key, 'perp.liquidations')
    t.same(body.meta.freshness, [{ input: 'liquidations', ok: true, staleness_budget_ms: LIQUIDATION_STALENESS_BUDGET_MS, age_ms: 30_000, last_success_at: isoMs(END - 30_000) }])
    t.same(scanProfitLanguage(body), [])
  })

  t.test('liquidation surface below 24/24 hours: a 200 with available false and the N/24 reason, charged', async (t) => {
    const settledBefore = gate.settled.length
    const { status, body } = await getJson(`${server.url}/v1/liquidation/ETH`)
    t.equal(status, 200)
    t.ok(validatorOf('liquidation.surface')(body), JSON.stringify(validatorOf('liquidation.surface').errors))
    const n = liqHoursOf(fx.ticks, 'ETH')
    t.same(body.data, { asset: 'ETH', available: false, reason: `liquidation_tape_hours_below_24 (${n}/24)`, hours_observed: n, hours_required: 24 })
    t.equal(body.meta.state, 'unavailable')
    t.equal(gate.settled.length, settledBefore + 1, 'an honest unavailability is an answer')
  })

  t.test('funding snapshot: the rate accruing now per canonical asset, per hour, with its next settlement', async (t) => {
    const { status, body } = await getJson(`${server.url}/v1/funding`)
    t.equal(status, 200)
    t.ok(validatorOf('funding.snapshot')(body), JSON.stringify(validatorOf('funding.snapshot').errors))
    t.same(body.data.funding.map((r: { asset: string }) => r.asset), ['BTC', 'ETH', 'SOL'])
    for (const row of body.data.funding) {
      const p = lastTick(fx.ticks, row.asset, 'predicted_funding')!
      const s = lastTick(fx.ticks, row.asset, 'funding')!
      t.equal(row.venue, 'simulated')
      t.equal(row.unit, 'fraction_per_hour')
      t.same(row.last_settlement, { rate_per_hour: fundingPerHour(s.rate, s.interval_hours), settled_at: isoMs(tickTime(s)), premium: s.premium })
      if (row.asset === 'SOL') {
        // SOL's last prediction was for the settlement at the end instant, which its stalled feed never delivered:
        // the last settled rate is served, with the next settlement on the hourly schedule.
        t.ok(Date.parse(p.next_funding_at) <= END)
        t.equal(row.rate_kind, 'settled')
        t.equal(row.rate, fundingPerHour(s.rate, s.interval_hours))
        t.equal(row.next_funding_basis, 'venue_schedule')
        t.equal(row.next_funding_at, isoMs(END + HOUR))
        t.equal(row.provenance.timestamp, isoMs(tickTime(s)))
        t.equal(row.provenance.age_ms, END - tickTime(s))
        continue
      }
      t.equal(row.rate_kind, 'predicted', `${row.asset}: the prediction is live`)
      t.equal(row.rate, fundingPerHour(p.rate, p.interval_hours))
      t.equal(row.next_funding_basis, 'predicted')
      t.equal(row.next_funding_at, isoMs(Date.parse(p.next_funding_at)))
      t.ok(Date.parse(row.next_funding_at) > END)
      t.equal(row.provenance.timestamp, isoMs(tickTime(p)))
      t.equal(row.provenance.age_ms, END - tickTime(p))
    }
    t.same(body.meta.freshness.map((f: { input: string; ok: boolean }) => [f.input, f.ok]), [['BTC:funding', true], ['ETH:funding', true], ['SOL:funding', true]])
    t.equal(body.meta.pricing.key, 'perp.funding')
    t.same(scanProfitLanguage(body), [])
  })

  t.test('a failed settlement records neither funding decision', async (t) => {
    const before = await rows()
    const indexed = runner.engine.ledger.index.size.decisions
    const res = await getJson(`${failing.url}/v1/funding/ETH`)
    t.equal(res.status, 402)
    t.equal(res.body.error.detail.reason, 'SETTLEMENT_FAILED')
    t.same(failingGate.released, ['settle_failed'])
    t.equal(await rows(), before, 'no ledger row')
    t.equal(runner.engine.ledger.index.size.decisions, indexed, 'nothing in the ledger index')
    const opp = await getJson(`${failing.url}/v1/funding/opportunities`)
    t.equal(opp.status, 402)
    t.equal(await rows(), before, 'no ledger row for the scan either')
  })

  let ethDecisions: string[] = []
  /** S06 decisions recorded by earlier subtests, by asset. */
  const recordedS06 = new Map<string, string>()
  t.test('funding per asset: S06 and S07 recorded after settlement, basis and execution risk from the ticks', async (t) => {
    const before = await rows()
    const { status, body } = await getJson(`${server.url}/v1/funding/ETH`)
    t.equal(status, 200)
    t.ok(validatorOf('funding.asset')(body), JSON.stringify(validatorOf('funding.asset').errors))
    const d = body.data
    t.equal(d.asset, 'ETH')
    t.equal(d.venue, 'simulated')
    const s06 = d.decisions.S06_funding_anomaly
    const s07 = d.decisions.S07_funding_persistence
    t.equal(s06.question_id, 'S06_funding_anomaly')
    t.equal(s07.question_id, 'S07_funding_persistence')
    for (const rec of [s06, s07]) {
      t.equal(rec.asset, 'ETH')
      t.equal(rec.payment_id, gate.settled[gate.settled.length - 1]!.payment_id, 'the record carries the settled payment')
      const stored = runner.engine.ledger.index.decision(rec.decision_id)
      t.ok(stored, `${rec.question_id} is on the ledger`)
      t.equal(stored?.decision, rec.decision)
      if (['stale_input', 'insufficient_confidence', 'suppress'].includes(rec.decision)) t.equal(rec.probability, 0, 'a refusal claims nothing')
    }
    t.equal(await rows(), before + 2, 'two rows appended')
    ethDecisions = [s06.decision_id, s07.decision_id]
    recordedS06.set('ETH', s06.decision_id)
    const mark = lastTick(fx.ticks, 'ETH', 'mark')!.price
    const index = lastTick(fx.ticks, 'ETH', 'index')!.price
    t.same(d.basis, { basis_bps: ((mark - index) / index) * 1e4, perp_mark: mark, index })
    const book = lastTick(fx.ticks, 'ETH', 'book_top')!
    t.equal(d.execution_risk.top_of_book_depth_usd, book.bid * book.bid_size + book.ask * book.ask_size)
    t.ok(Math.abs(d.execution_risk.spread_bps - ((book.ask - book.bid) / ((book.bid + book.ask) / 2)) * 1e4) < 1e-9)
    t.same(d.assumptions, FUNDING_ASSUMPTIONS)
    t.equal(d.assumptions.economics_modeled, 'none')
    t.equal(d.funding.rate, fundingPerHour(lastTick(fx.ticks, 'ETH', 'predicted_funding')!.rate, 1))
    t.equal(body.meta.state, 'ok')
    t.same(body.meta.freshness.map((f: { input: string }) => f.input).sort(), ['book', 'funding', 'index', 'mark'])
    t.equal(body.meta.pricing.key, 'signals.evaluate')
    t.same(scanProfitLanguage(body), [])
  })

  t.test('a repeat re-serves the recorded decisions and is not charged', async (t) => {
    const before = await rows()
    const released = gate.released.length
    const settled = gate.settled.length
    const { status, body } = await getJson(`${server.url}/v1/funding/ETH`)
    t.equal(status, 200)
    t.same([body.data.decisions.S06_funding_anomaly.decision_id, body.data.decisions.S07_funding_persistence.decision_id], ethDecisions)
    t.equal(await rows(), before, 'no new row')
    t.equal(gate.settled.length, settled, 'not settled')
    t.same(gate.released.slice(released).map((r) => r.cause), ['not_charged'])
  })

  t.test('stale inputs are served with their staleness stated', async (t) => {
    const { status, body } = await getJson(`${server.url}/v1/funding/SOL`)
    t.equal(status, 200)
    t.ok(validatorOf('funding.asset')(body), JSON.stringify(validatorOf('funding.asset').errors))
    t.equal(body.meta.state, 'degraded')
    const mark = body.meta.freshness.find((f: { input: string }) => f.input === 'mark')
    t.same(mark, { input: 'mark', ok: false, staleness_budget_ms: 120_000, age_ms: END - SOL_CUT, last_success_at: isoMs(SOL_CUT) })
    t.equal(body.data.basis.perp_mark, lastTick(fx.ticks, 'SOL', 'mark')!.price, 'the last value, served with its age')
    recordedS06.set('SOL', body.data.decisions.S06_funding_anomaly.decision_id)
  })

  t.test('funding opportunities: an S06 scan over the canonical assets, recorded after settlement', async (t) => {
    const before = await rows()
    const { status, body } = await getJson(`${server.url}/v1/funding/opportunities`)
    t.equal(status, 200)
    t.ok(validatorOf('funding.opportunities')(body), JSON.stringify(validatorOf('funding.opportunities').errors))
    t.same(body.data.opportunities.map((o: { asset: string }) => o.asset), ['BTC', 'ETH', 'SOL'])
    let fresh = 0
    for (const o of body.data.opportunities) {
      t.equal(o.decision.question_id, 'S06_funding_anomaly')
      t.ok(runner.engine.ledger.index.decision(o.decision.decision_id), `${o.asset}: recorded`)
      const earlier = recordedS06.get(o.asset)
      if (earlier) t.equal(o.decision.decision_id, earlier, `${o.asset} re-serves its recorded S06`)
      else fresh++
      const f = o.asset === 'SOL' ? lastTick(fx.ticks, o.asset, 'funding')! : lastTick(fx.ticks, o.asset, 'predicted_funding')!
      const mark = lastTick(fx.ticks, o.asset, 'mark')!.price
      const index = lastTick(fx.ticks, o.asset, 'index')!.price
      t.equal(o.funding_bps, fundingPerHour(f.rate, f.interval_hours) * 1e4)
      t.equal(o.basis_bps, ((mark - index) / index) * 1e4)
    }
    t.equal(fresh, 1, 'BTC was not asked before')
    t.equal(await rows(), before + fresh, 'one new row per asset not asked before')
    t.equal(body.data.assumptions.economics_modeled, 'none')
    t.ok(body.meta.freshness.some((f: { input: string; ok: boolean }) => f.input === 'SOL:mark' && !f.ok), "SOL's stale mark is stated")
    t.same(scanProfitLanguage(body), [])
  })
})

t.test('banned profit language in an output is a wiring fault: INTERNAL, never served, not charged', async (t) => {
  const state = new MarketState()
  const at = isoMs(START)
  // A feed whose source label makes a return claim: it must not reach a caller.
  state.ingest({
    v: TICK_SCHEMA_VERSION, kind: 'funding', asset: 'BTC', instrument: 'BTC', rate: 1.25e-5, interval_hours: 1, premium: 0,
    provenance: { source: 'risk-free-yield:perp', provider: 'test', timestamp: at, received_at: at, quality: 'real' },
  })
  const gate = new AuthorizingPaymentGate()
  const market = new MarketServices({ state, universe: new ReplayUniverseSource(state), paid: new PaidMarketServices({ state, decisions: null }) })
  const server = await withServer(t, { services: { market, paymentGate: gate } })
  const res = await fetch(`${server.url}/v1/funding`)
  const text = await res.text()
  t.equal(res.status, 500)
  t.equal(JSON.parse(text).error.code, 'INTERNAL')
  t.notMatch(text, /risk-free|yield/i, 'the offending text is not in the answer')
  t.same(gate.settled, [], 'not settled')
  t.same(gate.released.map((r) => r.cause), ['handler_failed'])
})

t.test('unwired or without data: 503 PROVIDER_DOWN, nothing charged', async (t) => {
  const state = new MarketState()
  const gate = new AuthorizingPaymentGate()
  const unwired = new MarketServices({ state, universe: new ReplayUniverseSource(state) })
  const s1 = await withServer(t, { services: { market: unwired, paymentGate: gate } })
  for (const path of ['/v1/liquidation/BTC', '/v1/funding', '/v1/funding/BTC', '/v1/funding/opportunities']) {
    const { status, body } = await getJson(`${s1.url}${path}`)
    t.equal(status, 503, path)
    t.match(body.error, { code: 'PROVIDER_DOWN', detail: { reason: 'SERVICE_UNWIRED', missing: 'market.paid' } }, path)
  }

  // Wired, but no market data has reached the state at all.
  const noData = new MarketServices({ state, universe: new ReplayUniverseSource(state), paid: new PaidMarketServices({ state, decisions: null }) })
  const s2 = await withServer(t, { services: { market: noData, paymentGate: gate } })
  for (const path of ['/v1/liquidation/BTC', '/v1/funding', '/v1/funding/BTC', '/v1/funding/opportunities']) {
    const { status, body } = await getJson(`${s2.url}${path}`)
    t.equal(status, 503, path)
    t.match(body.error, { code: 'PROVIDER_DOWN', detail: { reason: 'NO_MARKET_DATA' } }, path)
  }

  // Data but no engine: the raw surfaces answer, the decision surfaces say what is missing.
  const at = isoMs(START)
  state.ingest({
    v: TICK_SCHEMA_VERSION, kind: 'funding', asset: 'BTC', instrument: 'BTC', rate: 2e-5, interval_hours: 1, premium: 1e-4,
    provenance: { source: 'hyperliquid:perp', provider: 'test', timestamp: at, received_at: at, quality: 'real' },
  })
  const snap = await getJson(`${s2.url}/v1/funding`)
  t.equal(snap.status, 200)
  t.match(snap.body.data.funding[0], { asset: 'BTC', venue: 'hyperliquid', rate: 2e-5, rate_kind: 'settled', next_funding_at: isoMs(START + HOUR), next_funding_basis: 'venue_schedule' })
  t.match(snap.body.data.funding[1], { asset: 'ETH', rate: null, provenance: null })
  t.match(snap.body.meta.freshness[1], { input: 'ETH:funding', ok: false, age_ms: null })
  t.equal(snap.body.meta.state, 'degraded')
  const fa = await getJson(`${s2.url}/v1/funding/BTC`)
  t.equal(fa.status, 503)
  t.match(fa.body.error, { code: 'PROVIDER_DOWN', detail: { reason: 'SERVICE_UNWIRED', missing: 'engine' } })
  t.equal(gate.settled.length, 1, 'only the answered snapshot was charged')
  t.ok(gate.released.every((r) => r.cause === 'handler_failed'))
})
