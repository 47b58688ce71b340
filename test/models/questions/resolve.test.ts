import t from 'tap'
import { TickHistory } from '../../../pipeline/features/TickHistory.ts'
import { S06_funding_anomaly } from '../../../models/questions/S06_funding_anomaly.ts'
import { S07_funding_persistence } from '../../../models/questions/S07_funding_persistence.ts'
import { S01_market_regime } from '../../../models/questions/S01_market_regime.ts'
import { S05_volatility_expansion } from '../../../models/questions/S05_volatility_expansion.ts'
import { H, T0, bar, funding } from '../../helpers/ticks.ts'

const s06Conditions = { neutral_per_hour: 1.25e-5, band_low_per_hour: 0, band_high_per_hour: 2.5e-5 }

t.test('S06: a window with no settlement is unresolvable, never not', async (t) => {
  const h = new TickHistory()
  // OKX 8-hourly settlements at T0 and T0+8h; the window (T0+1h, T0+7h] holds none.
  h.ingest(funding('BTC', T0, 0.0001))
  h.ingest(funding('BTC', T0 + 8 * H, 0.0001))
  const r = S06_funding_anomaly.resolve(s06Conditions, h.window('BTC', T0 + H, T0 + 7 * H))
  t.equal(r.outcome, 'unresolvable')
  t.equal(r.reason, 'no_settlement_in_window')
  t.equal(S07_funding_persistence.resolve({ side: 'above' }, h.window('BTC', T0 + H, T0 + 7 * H)).outcome, 'unresolvable')
})

t.test('S06: funding series that ends before the window is unresolvable; a settlement outside the band obtains', async (t) => {
  const h = new TickHistory()
  h.ingest(funding('BTC', T0, 0.0001))
  const ended = S06_funding_anomaly.resolve(s06Conditions, h.window('BTC', T0 + 24 * H, T0 + 32 * H))
  t.equal(ended.outcome, 'unresolvable')
  t.equal(ended.reason, 'funding_coverage_incomplete')
  h.ingest(funding('BTC', T0 + 8 * H, 0.0004)) // 5e-5/h > 2.5e-5/h
  h.ingest(funding('BTC', T0 + 16 * H, 0.0001))
  const hit = S06_funding_anomaly.resolve(s06Conditions, h.window('BTC', T0, T0 + 8 * H))
  t.equal(hit.outcome, 'obtains')
  t.same(hit.statistic, { settlements: 1, outside_band: 1, max_abs_deviation_per_hour: 5e-5 - 1.25e-5 })
  t.equal(S06_funding_anomaly.resolve(s06Conditions, h.window('BTC', T0 + 8 * H, T0 + 16 * H)).outcome, 'not', '1.25e-5/h is inside the band')
})

t.test('S01: the realized class from hand-computed return and range', async (t) => {
  const h = new TickHistory()
  h.ingest(bar('BTC', T0, 100, 100, 100, 100))
  h.ingest(bar('BTC', T0 + H, 100, 103, 99.5, 102))
  const w = h.window('BTC', T0, T0 + H)
  const base = { reference_price: 100, trend_threshold_log: 0.01, vol_threshold_per_hour: 0.01 }
  // ln(102/100) = 0.0198 > 0.01: trend_up.
  const up = S01_market_regime.resolve({ ...base, predicted_class: 'trend_up' }, w)
  t.equal(up.realized_choice, 'trend_up')
  t.equal(up.outcome, 'obtains')
  // Threshold 0.03 > |r|: range; Parkinson sqrt(ln(103/99.5)² / 4ln2) = 0.0207 > 0.01: range_volatile.
  const vol = S01_market_regime.resolve({ ...base, trend_threshold_log: 0.03, predicted_class: 'range_quiet' }, w)
  t.equal(vol.realized_choice, 'range_volatile')
  t.equal(vol.outcome, 'not')
  const quiet = S01_market_regime.resolve({ ...base, trend_threshold_log: 0.03, vol_threshold_per_hour: 0.05 }, w)
  t.equal(quiet.realized_choice, 'range_quiet')
  t.equal(S01_market_regime.resolve(base, h.window('BTC', T0 + H, T0 + 2 * H)).outcome, 'unresolvable', 'no bars after T0+1h')
})

t.test('S05: realized Parkinson vol over the window against the fixed threshold', async (t) => {
  const h = new TickHistory()
  h.ingest(bar('BTC', T0, 100, 100, 100, 100))
  for (let i = 1; i <= 4; i++) h.ingest(bar('BTC', T0 + i * H, 100, 101, 99, 100))
  const v = Math.sqrt(Math.log(101 / 99) ** 2 / (4 * Math.LN2))
  const w = h.window('BTC', T0, T0 + 4 * H)
  t.equal(S05_volatility_expansion.resolve({ threshold_per_hour: v - 1e-9 }, w).outcome, 'obtains')
  t.equal(S05_volatility_expansion.resolve({ threshold_per_hour: v }, w).outcome, 'not', 'exceeds means strictly above')
})
