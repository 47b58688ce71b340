/**
 * The candidate binary method v2 (models/questions/BinaryQuestion.ts): walk-forward λ, Platt calibration. Fitted on
 * a generated tape's decisions: deterministic, λ from the grid chosen inside the fit slice, continuous probabilities,
 * and the same refusals as v1 below the training floor.
 */
import t from 'tap'
import { buildDataset, splitSamples } from '../../../models/Dataset.ts'
import { BINARY_METHOD_V2, LAMBDA_GRID, type BinaryParamsV2 } from '../../../models/questions/BinaryQuestion.ts'
import { S05_volatility_expansion } from '../../../models/questions/S05_volatility_expansion.ts'
import { H, T0, mergeTicks, syntheticBars } from '../../helpers/ticks.ts'

const V2 = S05_volatility_expansion.withMethod('v2')

t.test('v2 fits deterministically with a walk-forward λ and answers with a continuous, calibrated probability', async (t) => {
  const { samples } = buildDataset(mergeTicks(syntheticBars('BTC', 120 * 24), syntheticBars('ETH', 120 * 24, 9)), [S05_volatility_expansion])
  const all = samples.get('S05_volatility_expansion')!
  const { train, test } = splitSamples(all, S05_volatility_expansion.horizonMs, T0 + 90 * 24 * H)
  const fitted = V2.fit(train)
  const p = fitted.params as unknown as BinaryParamsV2
  t.equal(p.status, 'ok')
  t.equal(p.method, BINARY_METHOD_V2)
  t.ok((LAMBDA_GRID as readonly number[]).includes(p.lambda), `λ ${p.lambda} from the grid`)
  t.equal(p.walk_forward.length, LAMBDA_GRID.length, 'every candidate scored')
  t.ok(p.walk_forward.every((w) => w.folds === 3), 'on 3 folds inside the fit slice')
  const best = Math.min(...p.walk_forward.map((w) => w.brier!))
  t.equal(p.walk_forward.find((w) => w.lambda === p.lambda)!.brier, best, 'the chosen λ has the lowest walk-forward Brier')
  t.ok(fitted.version.startsWith(`${BINARY_METHOD_V2}@`) && /@[0-9a-f]{12}$/.test(fitted.version), `version ${fitted.version}: method @ content hash`)
  t.same(V2.fit([...train].reverse()), fitted, 'same samples in any order: identical parameters')

  const probabilities = test.map((s) => V2.evaluate(s.snapshot, fitted)).filter((o) => o.kind === 'claim').map((o) => o.probability)
  t.ok(probabilities.length > 100, `${probabilities.length} claims`)
  t.ok(probabilities.every((x) => x > 0 && x < 1))
  t.ok(new Set(probabilities).size > 20, `${new Set(probabilities).size} distinct probabilities (the isotonic v1 gives a handful)`)
  const v1 = S05_volatility_expansion.fit(train)
  const v1Values = new Set(test.map((s) => S05_volatility_expansion.evaluate(s.snapshot, v1)).filter((o) => o.kind === 'claim').map((o) => o.probability))
  t.ok(new Set(probabilities).size > v1Values.size, `more resolution than v1 (${v1Values.size} values)`)
  t.equal(S05_volatility_expansion.method, 'v1', 'the live question stays v1')
})

t.test('v2 below the training floor refuses, never emits a constant', async (t) => {
  const { samples } = buildDataset(syntheticBars('BTC', 10 * 24), [S05_volatility_expansion])
  const few = samples.get('S05_volatility_expansion')!
  const fitted = V2.fit(few)
  t.equal((fitted.params as unknown as BinaryParamsV2).status, 'insufficient')
  const out = V2.evaluate(few[few.length - 1]!.snapshot, fitted)
  t.equal(out.kind, 'refusal')
})
