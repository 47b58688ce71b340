/**
 * The candidate S01 method v2 (models/questions/S01_market_regime.ts): multinomial regression on continuous features,
 * feature set and λ by walk-forward inside the fit slice, temperature scaling on the later 30 %. Fitted on synthetic
 * samples whose regime depends on the features; v1 (jev-1.0.0) stays available and answers exactly as before.
 */
import t from 'tap'
import type { FeatureSnapshot } from '../../../pipeline/features/FeatureSnapshot.ts'
import type { LabelledSample, ModelOutput } from '../../../models/QuestionModel.ts'
import { buildDataset } from '../../../models/Dataset.ts'
import {
  MarketRegimeQuestion,
  S01_CLASSES,
  S01_FEATURE_SETS_V2,
  S01_LAMBDA_GRID_V2,
  S01_METHOD,
  S01_METHOD_V2,
  S01_WALK_FORWARD_FOLDS,
  S01_market_regime,
  multiBrier,
  type RegimeParamsV2,
} from '../../../models/questions/S01_market_regime.ts'
import { softmax } from '../../../models/fit/multinomial.ts'
import { isoMs } from '../../../ingest/Tick.ts'
import { H, T0, mergeTicks, syntheticBars } from '../../helpers/ticks.ts'

const V2 = S01_market_regime.withMethod('v2')
const V1 = S01_market_regime.withMethod('v1')
const SIGMA = 0.01

function lcg(seed: number): () => number {
  let s = seed
  return () => {
    s = (s * 1103515245 + 12345) % 2147483648
    return s / 2147483648
  }
}

function snapshot(at: number, f: Record<string, number | null>): FeatureSnapshot {
  return {
    asset: 'BTC',
    at,
    features: { price_last: 100, pk_7d: SIGMA, ...f },
    freshness: [{ input: 'bars', ok: true, staleness_budget_ms: 2 * H + 60_000, age_ms: 0, last_success_at: isoMs(at), quality: 'real' }],
    sources: ['okx:swap'],
  }
}

/**
 * Hourly samples: the last hour's vol ratio v = ln(pk_1h/σ) and return r (σ units) set the regime through a known
 * softmax: high v → range_volatile, large +r → trend_up, large −r → trend_down, else range_quiet.
 */
function samples(n: number, seed: number, start = T0, only?: (y: number) => boolean): LabelledSample[] {
  const rnd = lcg(seed)
  const out: LabelledSample[] = []
  for (let i = 0; out.length < n; i++) {
    const v = rnd() * 2 - 1
    const r = rnd() * 5 - 2.5
    const eta = [-2 + 1.6 * r + v, -2 - 1.6 * r + v, 0, -1 + 3 * v]
    const p = softmax(eta)
    let u = rnd()
    let y = 0
    while (y < 3 && u > p[y]!) u -= p[y++]!
    if (only && !only(y)) continue
    const snap = snapshot(start + i * H, {
      pk_1h: SIGMA * Math.exp(v),
      pk_4h: SIGMA * Math.exp(v / 2 + (rnd() - 0.5) * 0.2),
      pk_24h: SIGMA * Math.exp(v / 4 + (rnd() - 0.5) * 0.2),
      ret_1h: r * SIGMA,
      ret_4h: (rnd() - 0.5) * 2 * SIGMA,
      ret_24h: (rnd() - 0.5) * 5 * SIGMA,
    })
    out.push({ snapshot: snap, resolution: { outcome: 'not', statistic: null, realized_choice: S01_CLASSES[y]!, reason: null } })
  }
  return out
}

function refusalOf(out: ModelOutput): string {
  return out.kind === 'refusal' ? `${out.refusal}:${out.reason}` : 'claim'
}

t.test('v2 fits deterministically, chooses set and λ by walk-forward, and the modal class varies', async (t) => {
  const train = samples(2400, 1)
  const fitted = V2.fit(train)
  const p = fitted.params as unknown as RegimeParamsV2
  t.equal(p.status, 'ok')
  t.equal(p.method, S01_METHOD_V2)
  t.ok(fitted.version.startsWith(`${S01_METHOD_V2}@`) && /@[0-9a-f]{12}$/.test(fitted.version), fitted.version)
  t.equal(p.usable, 2400)
  t.equal(p.n_fit, 1680)
  t.equal(p.n_cal, 720)
  t.match(p.sale_gate, { status: 'sold', reason: null, n_scored: 720 }, 'the sale gate measured the method on the later 30 % of the training rows: sold, the regime depends on the features')
  t.ok(p.sale_gate!.bss_ci![0] > 0 && p.sale_gate!.bss! >= p.sale_gate!.one_feature_bss!, `holdout BSS ${p.sale_gate!.bss} [${p.sale_gate!.bss_ci}] vs one feature ${p.sale_gate!.one_feature_bss}`)
  t.equal(p.walk_forward.length, S01_FEATURE_SETS_V2.length * S01_LAMBDA_GRID_V2.length, 'every set × λ scored')
  t.ok(p.walk_forward.every((w) => w.folds === S01_WALK_FORWARD_FOLDS && w.brier !== null), `on ${S01_WALK_FORWARD_FOLDS} folds inside the fit slice`)
  const best = Math.min(...p.walk_forward.map((w) => w.brier!))
  t.equal(p.walk_forward.find((w) => w.feature_set === p.feature_set && w.lambda === p.lambda)!.brier, best, 'the chosen pair has the lowest walk-forward Brier')
  t.ok(p.feature_names.includes('ln_pk1h_over_base') && p.feature_names.includes('ret1h_in_sd'), `the informative features are in the chosen set ${p.feature_set}`)
  t.same(p.beta[S01_CLASSES.indexOf('range_quiet')], new Array(p.feature_names.length + 1).fill(0), 'range_quiet is the pinned reference')
  t.ok(p.temperature > 0 && p.cal_log_loss_after! <= p.cal_log_loss_before!)
  t.same(V2.fit([...train].reverse()), fitted, 'same samples in any order: identical parameters')
  t.doesNotThrow(() => JSON.parse(JSON.stringify(fitted.params)), 'JSON-safe params')

  const test = samples(1200, 2, T0 + 4000 * H)
  const predicted = new Map<string, number>()
  let brier = 0
  let brierBase = 0
  let worstSum = 0
  const freq = S01_CLASSES.map((c) => train.filter((s) => s.resolution.realized_choice === c).length / train.length)
  for (const s of test) {
    const out = V2.evaluate(s.snapshot, fitted)
    if (out.kind !== 'claim') throw new Error(`unexpected refusal ${refusalOf(out)}`)
    const dist = S01_CLASSES.map((c) => out.distribution![c]!)
    worstSum = Math.max(worstSum, Math.abs(dist.reduce((a, b) => a + b, 0) - 1))
    const modal = S01_CLASSES[dist.indexOf(Math.max(...dist))]!
    if (out.conditions.predicted_class !== modal) t.fail('predicted_class is the modal class')
    if (out.probability !== Math.max(...dist)) t.fail('probability is the modal class probability')
    predicted.set(modal, (predicted.get(modal) ?? 0) + 1)
    const y = S01_CLASSES.indexOf(s.resolution.realized_choice as (typeof S01_CLASSES)[number])
    brier += multiBrier(dist, y)
    brierBase += multiBrier(freq, y)
    // The event and its conditions are v1's: only the fit and the answer changed.
    const v1 = S01_market_regime.evaluate(s.snapshot, null)
    if (out.event !== v1.event) t.fail('same event sentence as v1')
    const { predicted_class: _, ...rest } = out.conditions
    if (JSON.stringify(rest) !== JSON.stringify(v1.conditions)) t.fail('same conditions as v1')
  }
  t.ok(worstSum < 1e-12, 'every distribution sums to 1')
  t.ok(predicted.size >= 3, `modal classes ${JSON.stringify(Object.fromEntries(predicted))}`)
  t.ok(brier / brierBase < 0.9, `skill against the training class frequencies: BSS ${(1 - brier / brierBase).toFixed(3)}`)
  const v1Fit = V1.fit(train)
  let brierV1 = 0
  for (const s of test) {
    const out = V1.evaluate(s.snapshot, v1Fit)
    const y = S01_CLASSES.indexOf(s.resolution.realized_choice as (typeof S01_CLASSES)[number])
    brierV1 += out.kind === 'claim' ? multiBrier(S01_CLASSES.map((c) => out.distribution![c]!), y) : multiBrier(freq, y)
  }
  t.ok(brier < brierV1, `v2 Brier ${(brier / test.length).toFixed(4)} below v1's ${(brierV1 / test.length).toFixed(4)} (v1 sees neither pk_1h nor ret_1h)`)
})

t.test('v2 is the live default (jev-2.0.0); v1 stays available and unchanged', async (t) => {
  const train = samples(600, 3)
  t.equal(S01_market_regime.method, 'v2', 'the live question is v2')
  t.equal(new MarketRegimeQuestion().method, 'v2')
  t.equal(V2.method, 'v2')
  t.equal(V2.withMethod('v1').method, 'v1')
  t.ok(V2 instanceof MarketRegimeQuestion && V2 !== S01_market_regime)
  const v1 = V1.fit(train)
  t.ok(v1.version.startsWith(`${S01_METHOD}@`))
  t.same(V2.withMethod('v1').fit(train), v1, 'withMethod(v1) fits the v1 method')
  t.same(new MarketRegimeQuestion('v1').fit(train), v1)
  // A v2 question given v1 parameters answers as v1 (evaluate dispatches on the parameters' method).
  const s = samples(1, 4, T0 + 1000 * H)[0]!.snapshot
  t.same(V2.evaluate(s, v1), V1.evaluate(s, v1))
  t.equal(V2.id, S01_market_regime.id)
  t.equal(V2.horizonMs, S01_market_regime.horizonMs)
})

t.test('v2 refuses, never emits a constant: below the floor, a class absent from the fit slice, missing features', async (t) => {
  const few = samples(50, 5)
  const small = V2.fit(few)
  t.equal((small.params as unknown as RegimeParamsV2).status, 'insufficient')
  t.equal(refusalOf(V2.evaluate(few[0]!.snapshot, small)), 'insufficient_confidence:sample_below_floor')

  const noDown = samples(300, 6, T0, (y) => y !== 1)
  const absent = V2.fit(noDown)
  const pa = absent.params as unknown as RegimeParamsV2
  t.equal(pa.status, 'insufficient')
  t.equal(pa.fit_class_counts[1], 0)
  t.equal(refusalOf(V2.evaluate(noDown[0]!.snapshot, absent)), 'insufficient_confidence:class_absent_in_fit')

  const train = samples(600, 7)
  const fitted = V2.fit(train)
  t.equal((fitted.params as unknown as RegimeParamsV2).status, 'ok')
  const at = T0 + 2000 * H
  t.equal(refusalOf(V2.evaluate(snapshot(at, { pk_1h: null, pk_4h: SIGMA, pk_24h: SIGMA, ret_1h: 0, ret_4h: 0, ret_24h: 0 }), fitted)), 'insufficient_confidence:features_unavailable')
  t.equal(refusalOf(V2.evaluate(snapshot(at, { pk_7d: null, pk_1h: SIGMA, pk_4h: SIGMA, pk_24h: SIGMA, ret_1h: 0, ret_4h: 0, ret_24h: 0 }), fitted)), 'insufficient_confidence:baseline_unavailable')
  t.equal(refusalOf(V2.evaluate(train[0]!.snapshot, null)), 'insufficient_confidence:model_not_fitted')
  // Training rows lacking a candidate feature are not used.
  const holes = train.map((s, i) => (i % 10 === 0 ? { ...s, snapshot: { ...s.snapshot, features: { ...s.snapshot.features, ret_24h: null } } } : s))
  t.equal((V2.fit(holes).params as unknown as RegimeParamsV2).usable, 540)
})

t.test('v2 on snapshots built by the feature pipeline', async (t) => {
  const { samples: built } = buildDataset(mergeTicks(syntheticBars('BTC', 60 * 24), syntheticBars('ETH', 60 * 24, 9)), [S01_market_regime])
  const all = built.get('S01_market_regime')!
  const cut = T0 + 45 * 24 * H
  const train = all.filter((s) => s.snapshot.at + S01_market_regime.horizonMs <= cut)
  const fitted = V2.fit(train)
  const p = fitted.params as unknown as RegimeParamsV2
  t.equal(p.status, 'ok', `${p.usable} usable rows`)
  // The training rows are exactly v1's (resolved, and the frame answers: an unfitted v1 refuses only for the missing
  // model) that also carry every v2 candidate feature.
  const v2Inputs = ['pk_1h', 'pk_4h', 'pk_24h', 'ret_1h', 'ret_4h', 'ret_24h']
  const expected = train.filter(
    (s) =>
      s.resolution.outcome !== 'unresolvable' &&
      s.resolution.realized_choice !== null &&
      refusalOf(S01_market_regime.evaluate(s.snapshot, null)) === 'insufficient_confidence:model_not_fitted' &&
      v2Inputs.every((f) => s.snapshot.features[f] !== null && s.snapshot.features[f] !== undefined),
  ).length
  t.equal(p.usable, expected, 'usable rows = v1 rows with every v2 feature')
  t.ok(p.usable < train.length, `${train.length - p.usable} early or unresolved decisions left out`)
  const outs = all.filter((s) => s.snapshot.at >= cut).map((s) => V2.evaluate(s.snapshot, fitted))
  t.ok(outs.length > 100)
  t.ok(outs.every((o) => o.kind === 'claim' && o.probability >= 0.25 && o.probability <= 1 && o.confidence > 0))
})
