import t from 'tap'
import { FeatureState } from '../../../pipeline/features/FeatureState.ts'
import { stalenessBudgetMs, STALENESS_BUDGET_RULES } from '../../../pipeline/features/stalenessBudgets.ts'
import { NEUTRAL_FUNDING_PER_HOUR } from '../../../pipeline/features/funding.ts'
import { parkinsonVariance } from '../../../pipeline/features/volatility.ts'
import { H, T0, bar, funding, liquidation, price } from '../../helpers/ticks.ts'

const close = (t: { ok(v: boolean, m: string): unknown }, a: number | null | undefined, b: number, msg: string) => t.ok(a !== null && a !== undefined && Math.abs(a - b) <= 1e-12 * Math.max(1, Math.abs(b)), `${msg}: ${a} ≈ ${b}`)

t.test('bar features against hand-computed values', async (t) => {
  const fs = new FeatureState()
  // Three hourly bars: closes 100 → 110 → 99.
  fs.ingest(bar('BTC', T0 + 1 * H, 98, 101, 97, 100))
  fs.ingest(bar('BTC', T0 + 2 * H, 100, 112, 99, 110))
  fs.ingest(bar('BTC', T0 + 3 * H, 110, 111, 95, 99))
  const at = T0 + 3 * H
  const f = fs.snapshot('BTC', at).features
  close(t, f.price_last, 99, 'last close')
  close(t, f.ret_1h, Math.log(99 / 110), 'ret_1h = ln(99/110)')
  close(t, f.rv_1h, Math.abs(Math.log(99 / 110)), 'rv_1h = |r| of the one bar in the hour')
  // Parkinson: (ln(111/95))² / (4 ln 2) per one hour.
  close(t, f.pk_1h, Math.sqrt(Math.log(111 / 95) ** 2 / (4 * Math.LN2)), 'pk_1h')
  t.equal(f.pk_4h, null, 'a 4 h window is null with only 3 h of history')
  t.equal(f.ret_4h, null, 'no close 4 h back')
  close(t, f.history_hours, 2, 'history since the first bar close')
  const fresh = fs.snapshot('BTC', at).freshness.find((x) => x.input === 'bars')!
  t.equal(fresh.ok, true)
  t.equal(fresh.staleness_budget_ms, 2 * H + 60_000, 'bars budget 2 × interval + 60 s')
  t.equal(fresh.age_ms, 0)

  // A snapshot taken at an earlier instant never sees a later bar (event time, not ingestion order).
  const early = fs.snapshot('BTC', T0 + 2 * H).features
  close(t, early.price_last, 110, 'snapshot at T0+2h sees close 110')
  close(t, early.ret_1h, Math.log(110 / 100), 'ret_1h at T0+2h')

  // Stale: 2 h + 61 s after the last bar the budget is breached.
  const stale = fs.snapshot('BTC', at + 2 * H + 61_000).freshness.find((x) => x.input === 'bars')!
  t.equal(stale.ok, false, 'bars older than the budget are not ok')
  t.equal(stale.age_ms, 2 * H + 61_000)
})

t.test('4 h volatility sums four bars and normalises per hour', async (t) => {
  const fs = new FeatureState()
  const closes = [100, 101, 99, 102, 100, 103]
  closes.forEach((c, i) => fs.ingest(bar('ETH', T0 + (i + 1) * H, c, c * 1.01, c * 0.99, c)))
  const at = T0 + 6 * H
  const f = fs.snapshot('ETH', at).features
  let r2 = 0
  for (let i = 2; i < 6; i++) r2 += Math.log(closes[i]! / closes[i - 1]!) ** 2
  close(t, f.rv_4h, Math.sqrt(r2 / 4), 'rv_4h = sqrt(Σ r² over 4 bars / 4 h)')
  const pkBar = Math.log(1.01 / 0.99) ** 2 / (4 * Math.LN2)
  close(t, f.pk_4h, Math.sqrt((4 * pkBar) / 4), 'pk_4h')
  close(t, f.ret_4h, Math.log(103 / 101), 'ret_4h = ln(C_t / C_{t−4h}), the close at T0+2h is 101')
})

t.test('funding per hour, deviation from neutral, z-score and staleness', async (t) => {
  const fs = new FeatureState()
  const rates = [0.0001, 0.0002, 0.00004] // per 8 h
  rates.forEach((r, i) => fs.ingest(funding('SOL', T0 + i * 8 * H, r)))
  const at = T0 + 16 * H
  const f = fs.snapshot('SOL', at).features
  const perHour = rates.map((r) => r / 8)
  close(t, f.funding_rate_per_hour, 0.00004 / 8, 'OKX 8 h rate / 8')
  close(t, f.funding_dev_per_hour, 0.00004 / 8 - 1.25e-5, 'deviation from the 1.25e-05/h neutral')
  t.equal(NEUTRAL_FUNDING_PER_HOUR, 1.25e-5)
  const mean = perHour.reduce((a, b) => a + b, 0) / 3
  const sd = Math.sqrt(perHour.reduce((a, b) => a + (b - mean) ** 2, 0) / 2)
  close(t, f.funding_mean_30d, mean, 'trailing mean')
  close(t, f.funding_sd_30d, sd, 'trailing sd (n − 1)')
  close(t, f.funding_z, (0.00004 / 8 - 1.25e-5) / sd, 'z = (rate − neutral) / sd')
  t.equal(f.funding_n_30d, 3)
  t.equal(f.funding_same_side_streak, 1, 'only the last settlement is below neutral')
  const budget = stalenessBudgetMs('funding', 8 * H)
  t.equal(budget, 8 * H + 15 * 60_000, 'funding budget = interval + 15 min')
  t.equal(fs.snapshot('SOL', at + budget).freshness[0]!.ok, true, 'at the budget: ok')
  t.equal(fs.snapshot('SOL', at + budget + 1).freshness[0]!.ok, false, 'one ms past the budget: stale')
})

t.test('degraded input is not ok; basis and liquidation readiness', async (t) => {
  const fs = new FeatureState()
  fs.ingest(bar('BTC', T0 + H, 1, 1, 1, 1, { quality: 'degraded' }))
  fs.ingest(price('mark', 'BTC', T0 + H, 101))
  fs.ingest(price('index', 'BTC', T0 + H, 100))
  for (let h = 0; h < 5; h++) fs.ingest(liquidation('BTC', T0 + H + h * H + 1000, 10))
  fs.ingest(liquidation('BTC', T0 + 5 * H + 2000, 5)) // same clock hour as the last one
  const snap = fs.snapshot('BTC', T0 + 6 * H)
  const bars = snap.freshness.find((x) => x.input === 'bars')!
  t.equal(bars.ok, false, 'a degraded bar makes bars not ok')
  t.equal(bars.quality, 'degraded')
  const markFresh = snap.freshness.find((x) => x.input === 'mark')!
  t.equal(markFresh.staleness_budget_ms, STALENESS_BUDGET_RULES.mark.fixed_ms)
  t.equal(markFresh.ok, false, 'mark 5 h old is stale (budget 2 min)')
  close(t, snap.features.basis_bps, 100, '(101/100 − 1) × 1e4 bps')
  t.equal(snap.features.liq_hours_24h, 5, 'five distinct clock hours with liquidation records')
  t.equal(snap.features.liq_count_24h, 6)
  t.same(snap.sources, ['hyperliquid:perp', 'okx:swap'])
})

t.test('a second bar series for the same asset is ignored, not mixed', async (t) => {
  const fs = new FeatureState()
  fs.ingest(bar('BTC', T0 + H, 100, 100, 100, 100))
  fs.ingest(bar('BTC', T0 + H + 300_000, 50, 50, 50, 50, { intervalMs: 300_000, source: 'bybit:linear_perp' }))
  t.equal(fs.snapshot('BTC', T0 + 2 * H).features.price_last, 100)
  t.equal(fs.ignoredBars('BTC'), 1)
})

t.test('memory stays bounded: old bars are pruned past the retention', async (t) => {
  const fs = new FeatureState({ retentionMs: 31 * 24 * H })
  for (let i = 1; i <= 24 * 100; i++) fs.ingest(bar('BTC', T0 + i * H, 100, 101, 99, 100))
  const f = fs.snapshot('BTC', T0 + 2400 * H).features
  t.ok(f.pk_30d !== null, '30-day baseline still computable after pruning')
  t.equal(f.history_hours, 2399)
})

t.test('regression: after a gap longer than the retention, the 7-day baseline uses only the bars in its window', async (t) => {
  // Issue 12: the Parkinson sum subtracted 0 below the first retained bar, so it carried the variance of every pruned
  // bar. 40 days of wide bars (2 % range), a 40-day outage, then 5 days of narrow bars (0.5 % range): pk_7d must be the
  // narrow bars' vol alone.
  const fs = new FeatureState()
  let at = T0
  for (let i = 0; i < 40 * 24; i++) fs.ingest(bar('BTC', (at += H), 100, 101, 99, 100))
  at += 40 * 24 * H
  for (let i = 0; i < 5 * 24; i++) fs.ingest(bar('BTC', (at += H), 100, 100.25, 99.75, 100))
  const f = fs.snapshot('BTC', at).features
  const narrow = Math.sqrt(parkinsonVariance(100.25, 99.75)) // per hour: one 1 h bar per hour
  t.ok(f.pk_7d !== null, '120 of the window\'s 168 bars (more than half) and history back to its start: computed')
  t.ok(Math.abs(f.pk_7d! - narrow) < 1e-12, `pk_7d ${f.pk_7d} = the post-gap bars' ${narrow}`)
  t.ok(Math.abs(f.pk_24h! - narrow) < 1e-12, 'and the short windows agree')
  t.equal(f.pk_30d, null, '120 bars of a 720-bar window: below half, no 30-day figure')
})

t.test('a window needs at least half its bars: 83 hourly bars after a gap give no 7-day baseline, 84 do', async (t) => {
  const fs = new FeatureState()
  let at = T0
  for (let i = 0; i < 10 * 24; i++) fs.ingest(bar('BTC', (at += H), 100, 101, 99, 100))
  at += 10 * 24 * H
  for (let i = 0; i < 83; i++) fs.ingest(bar('BTC', (at += H), 100, 101, 99, 100))
  t.equal(fs.snapshot('BTC', at).features.pk_7d, null, '83 < ⌈0.5 × 168⌉')
  fs.ingest(bar('BTC', (at += H), 100, 101, 99, 100))
  t.ok(fs.snapshot('BTC', at).features.pk_7d !== null, '84 = ⌈0.5 × 168⌉')
})
