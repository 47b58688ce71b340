/** The one-feature decile baseline on known answers (models/fit/OneFeatureBaseline.ts). */
import t from 'tap'
import { BASELINE_FEATURES, OneFeatureBaseline, type BaselineFeature } from '../../../models/fit/OneFeatureBaseline.ts'
import type { FeatureSnapshot } from '../../../pipeline/features/FeatureSnapshot.ts'

const snap = (x: number | null): FeatureSnapshot => ({ asset: 'BTC', at: 0, features: { x }, freshness: [], sources: [] })
const X: BaselineFeature = { name: 'x', value: (s) => (typeof s.features.x === 'number' ? s.features.x : null) }

t.test('binary: deciles of the training values, each with (k + 1) / (n + 2)', async (t) => {
  // x = 1..100; the event happens exactly when x > 90.
  const rows = Array.from({ length: 100 }, (_, i) => ({ snapshot: snap(i + 1), outcome: i + 1 > 90 ? 1 : 0 }))
  const b = OneFeatureBaseline.fit(X, rows)
  t.equal(b.edges.length, 9)
  t.ok(Math.abs(b.edges[0]! - 10.9) < 1e-12 && Math.abs(b.edges[8]! - 90.1) < 1e-12, 'type-7 quantiles of 1..100: 10.9 … 90.1')
  t.same(b.predict(snap(95)), [11 / 12], 'top decile: 10 of 10 → 11/12')
  t.same(b.predict(snap(5)), [1 / 12], 'bottom decile: 0 of 10 → 1/12')
  t.same(b.predict(snap(90)), [1 / 12], '90 ≤ 90.1: the ninth decile, no event')
  t.same(b.predict(snap(null)), [11 / 102], 'missing feature: the smoothed base rate 10 of 100')
})

t.test('choice: per decile, each class (count + 1) / (n + K)', async (t) => {
  const rows = Array.from({ length: 20 }, (_, i) => ({ snapshot: snap(i), outcome: i < 10 ? 0 : 2 }))
  const b = OneFeatureBaseline.fit(X, rows, 3)
  const low = b.predict(snap(0))
  t.same(low, [3 / 5, 1 / 5, 1 / 5], 'x = 0, 1 in the first decile: both class 0')
  t.ok(Math.abs(low.reduce((a, c) => a + c, 0) - 1) < 1e-12, 'a distribution')
  t.same(b.predict(snap(19)), [1 / 5, 1 / 5, 3 / 5])
})

t.test('ties collapse edges instead of making empty deciles; no values at all gives the base rate', async (t) => {
  const tied = OneFeatureBaseline.fit(X, Array.from({ length: 30 }, (_, i) => ({ snapshot: snap(1), outcome: i % 3 === 0 ? 1 : 0 })))
  t.same(tied.edges, [1])
  t.same(tied.predict(snap(1)), [11 / 32])
  const none = OneFeatureBaseline.fit(X, [{ snapshot: snap(null), outcome: 1 }])
  t.same(none.predict(snap(3)), [2 / 3])
})

t.test('every sold market question names its baseline feature', async (t) => {
  for (const q of ['S01_market_regime', 'S03_trend_continuation', 'S04_drawdown_risk', 'S05_volatility_expansion', 'S06_funding_anomaly', 'S07_funding_persistence']) {
    t.ok(BASELINE_FEATURES[q], q)
  }
  t.equal(BASELINE_FEATURES.S05_volatility_expansion!.name, 'ln(pk_4h/pk_7d)')
  t.equal(BASELINE_FEATURES.S05_volatility_expansion!.value({ ...snap(null), features: { pk_4h: 2, pk_7d: 1 } }), Math.log(2))
  t.equal(BASELINE_FEATURES.S05_volatility_expansion!.value({ ...snap(null), features: { pk_4h: 2, pk_7d: 0 } }), null, 'no log of a zero baseline')
})
