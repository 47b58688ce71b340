/**
 * The binary method v2 (models/questions/BinaryQuestion.ts, live since jev-2.0.0): feature set and λ by walk-forward,
 * Platt calibration, the sale gate. Fitted on a generated tape's decisions: deterministic, chosen inside the fit slice,
 * continuous probabilities, and the same refusals as v1 below the training floor.
 */
import t from 'tap'
import { buildDataset, splitSamples } from '../../../models/Dataset.ts'
import { BINARY_METHOD_V2, LAMBDA_GRID, PLATT_IDENTITY, PLATT_MIN_EVENTS, plattMap, type BinaryParamsV2 } from '../../../models/questions/BinaryQuestion.ts'
import { mapCheck } from '../../../record/releases/evaluate.ts'
import { S05_volatility_expansion } from '../../../models/questions/S05_volatility_expansion.ts'
import { jcsSha256 } from '../../../common/hash.ts'
import { H, T0, mergeTicks, syntheticBars } from '../../helpers/ticks.ts'

const V2 = S05_volatility_expansion.withMethod('v2')
const V1 = S05_volatility_expansion.withMethod('v1')

t.test('v2 fits deterministically with a walk-forward λ and answers with a continuous, calibrated probability', async (t) => {
  const { samples } = buildDataset(mergeTicks(syntheticBars('BTC', 120 * 24), syntheticBars('ETH', 120 * 24, 9)), [S05_volatility_expansion])
  const all = samples.get('S05_volatility_expansion')!
  const { train, test } = splitSamples(all, S05_volatility_expansion.horizonMs, T0 + 90 * 24 * H)
  const fitted = V2.fit(train)
  const p = fitted.params as unknown as BinaryParamsV2
  t.equal(p.status, 'ok')
  t.equal(p.method, BINARY_METHOD_V2)
  t.ok((LAMBDA_GRID as readonly number[]).includes(p.lambda), `λ ${p.lambda} from the grid`)
  t.same([...new Set(p.walk_forward.map((w) => w.feature_set))], ['v1', 'har', 'har+calendar'], 'the three nested feature sets, simplest first')
  t.equal(p.walk_forward.length, 3 * LAMBDA_GRID.length, 'every (feature set, λ) candidate scored')
  t.ok(p.walk_forward.every((w) => w.folds === 3), 'on 3 folds inside the fit slice')
  const best = Math.min(...p.walk_forward.map((w) => w.brier!))
  t.equal(p.walk_forward.find((w) => w.lambda === p.lambda && w.feature_set === p.feature_set)!.brier, best, 'the chosen (set, λ) has the lowest walk-forward Brier')
  t.equal(p.feature_names.length, p.beta.length - 1, 'one coefficient per chosen feature')
  t.ok(p.sale_gate && ['sold', 'blocked'].includes(p.sale_gate.status), 'the sale gate is measured at fit time')
  t.ok(p.sale_gate!.n_scored > 0 && p.sale_gate!.n_train > 0, 'on a holdout of the training span')
  t.ok(Date.parse(p.sale_gate!.holdout_start!) < T0 + 90 * 24 * H, 'the holdout lies inside the training span, before the test split')
  t.ok(fitted.version.startsWith(`${BINARY_METHOD_V2}@`) && /@[0-9a-f]{12}$/.test(fitted.version), `version ${fitted.version}: method @ content hash`)
  t.same(V2.fit([...train].reverse()), fitted, 'same samples in any order: identical parameters')
  t.equal(S05_volatility_expansion.method, 'v2', 'the live question is v2 (jev-2.0.0)')

  // Scored as it would answer if sold (the gate's own refusal is tested below).
  const sold = { ...fitted, params: { ...fitted.params, sale_gate: null } }
  const probabilities = test.map((s) => V2.evaluate(s.snapshot, sold)).filter((o) => o.kind === 'claim').map((o) => o.probability)
  t.ok(probabilities.length > 100, `${probabilities.length} claims`)
  t.ok(probabilities.every((x) => x > 0 && x < 1))
  t.ok(new Set(probabilities).size > 20, `${new Set(probabilities).size} distinct probabilities (the isotonic v1 gives a handful)`)
  const v1 = V1.fit(train)
  const v1Values = new Set(test.map((s) => V1.evaluate(s.snapshot, v1)).filter((o) => o.kind === 'claim').map((o) => o.probability))
  t.ok(new Set(probabilities).size > v1Values.size, `more resolution than v1 (${v1Values.size} values)`)
})

t.test('a fit the sale gate blocked refuses every decision with the measured reason, and the verdict is part of the version', async (t) => {
  const { samples } = buildDataset(mergeTicks(syntheticBars('BTC', 120 * 24), syntheticBars('ETH', 120 * 24, 9)), [S05_volatility_expansion])
  const all = samples.get('S05_volatility_expansion')!
  const fitted = V2.fit(all)
  const p = fitted.params as unknown as BinaryParamsV2
  const blocked = { ...fitted, params: { ...fitted.params, sale_gate: { ...p.sale_gate!, status: 'blocked', reason: 'no_skill_with_confidence' } } }
  const out = V2.evaluate(all[all.length - 1]!.snapshot, blocked)
  t.equal(out.kind, 'refusal')
  t.match(out, { refusal: 'insufficient_confidence', reason: 'not_sold:no_skill_with_confidence' })
  t.notOk(jcsSha256(blocked.params).startsWith(fitted.version.split('@')[1]!), 'a different verdict is a different content hash')
})

t.test('v2 below the training floor refuses, never emits a constant', async (t) => {
  const { samples } = buildDataset(syntheticBars('BTC', 10 * 24), [S05_volatility_expansion])
  const few = samples.get('S05_volatility_expansion')!
  const fitted = V2.fit(few)
  t.equal((fitted.params as unknown as BinaryParamsV2).status, 'insufficient')
  const out = V2.evaluate(few[few.length - 1]!.snapshot, fitted)
  t.equal(out.kind, 'refusal')
})

t.test('Platt needs PLATT_MIN_EVENTS outcomes of the rarer kind in its slice; below it the map is the identity', async (t) => {
  // 191 rows, raw log-odds spread a little around 2.7: as S07's OKX calibration slice, with k misses among the lowest.
  const z = Array.from({ length: 191 }, (_, i) => 2.2 + (i / 190) * 1.0)
  const slice = (k: number): number[] => z.map((_, i) => (i % Math.ceil(191 / k) === 0 && i / Math.ceil(191 / k) < k ? 0 : 1))
  for (const k of [0, 1, 4, PLATT_MIN_EVENTS - 1]) {
    const y = slice(k)
    t.equal(y.length - y.reduce((a, v) => a + v, 0), k)
    t.same(plattMap(z, y), PLATT_IDENTITY, `${k} misses: the identity map`)
  }
  const y = slice(PLATT_MIN_EVENTS)
  t.notSame(plattMap(z, y), PLATT_IDENTITY, `${PLATT_MIN_EVENTS} misses: a fitted map`)
  t.notSame(plattMap(z, y.map((v) => 1 - v)), PLATT_IDENTITY, `${PLATT_MIN_EVENTS} hits among misses: a fitted map`)
  // The identity map serves the regression's own output and passes the release gate's slope bound at slope 1.
  const fitted = { question_id: 'S07_funding_persistence' as const, version: 'x', trained_on: { window_start: '', window_end: '', n: 191, positives: 187 }, params: { status: 'ok', method: BINARY_METHOD_V2, platt: plattMap(z, slice(4)), sale_gate: null } }
  t.match(mapCheck(fitted), { kind: 'platt', monotone: true, max_slope: 1, met: true })
})
