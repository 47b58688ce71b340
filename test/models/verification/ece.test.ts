import t from 'tap'
import { groupByBins } from '../../../models/verification/bins.ts'
import { expectedCalibrationError, quantileEdges } from '../../../models/verification/ece.ts'
import { close, VECTOR_A, VECTOR_B, VECTOR_C } from '../../helpers/verificationVectors.ts'

// forecast-verification.md §3 / §7.2 "Vector A": ECE 0.40 (K=10), 0.333 (K=5, (a,b]), 0.267 (K=5, [a,b)), 0.10 (K=3).
t.test('vector A: ECE ℓ1 by K and convention', async (t) => {
  const table: Array<[number, '(a,b]' | '[a,b)', number]> = [
    [10, '(a,b]', 0.4],
    [10, '[a,b)', 0.4],
    [5, '(a,b]', 0.333333],
    [5, '[a,b)', 0.266667],
    [3, '(a,b]', 0.1],
    [3, '[a,b)', 0.1],
  ]
  for (const [k, convention, expected] of table) {
    const e = expectedCalibrationError(VECTOR_A, { bins: k, convention })!
    close(t, e.value, expected, 5e-7, `K=${k} ${convention}`)
    t.same({ n_bins: e.n_bins, strategy: e.strategy, norm: e.norm, convention: e.convention }, { n_bins: k, strategy: 'uniform', norm: 'l1', convention })
  }
  // Not the mixed-representation answer (§2: "ECE 0.266667 … instead of 0.4").
  t.not(Math.abs(expectedCalibrationError(VECTOR_A)!.value - 0.266667) < 1e-4, true)
})

// forecast-verification.md §7.1 P3: scikit-learn calibration_curve docstring, n_bins=3 →
// prob_true = [0, 0.5, 1.0], prob_pred = [0.2, 0.525, 0.85]; §7.2 vector B: ECE ℓ1 0.138889.
t.test('P3 / vector B: calibration_curve and ECE, K = 3', async (t) => {
  const groups = groupByBins(VECTOR_B, 3)
  const probTrue = groups.map((g) => g.freq)
  const probPred = groups.map((g) => g.meanP)
  t.same(probTrue, [0, 0.5, 1.0])
  ;[0.2, 0.525, 0.85].forEach((v, i) => close(t, probPred[i]!, v, 1e-15, `prob_pred[${i}]`))
  close(t, expectedCalibrationError(VECTOR_B, { bins: 3 })!.value, 0.138889, 5e-7, 'ECE ℓ1')
  // ℓ2 by hand: sqrt((3/9)(0.2)² + (2/9)(0.025)² + (4/9)(0.15)²)
  const l2 = Math.sqrt((3 / 9) * 0.04 + (2 / 9) * 0.025 ** 2 + (4 / 9) * 0.15 ** 2)
  close(t, expectedCalibrationError(VECTOR_B, { bins: 3, norm: 'l2' })!.value, l2, 1e-15, 'ECE ℓ2')
})

// forecast-verification.md §7.2 "Vector C": ECE 0.40 "any K, any strategy — a quantile-bin implementation returning 0
// is wrong"; §2 "A constant forecaster must still get ECE = |p − ȳ|".
t.test('vector C: constant forecaster ECE = |p − ȳ| for every K, strategy, norm and convention', async (t) => {
  for (const bins of [1, 2, 3, 5, 10, 20, 100]) {
    for (const strategy of ['uniform', 'quantile'] as const) {
      for (const convention of ['(a,b]', '[a,b)'] as const) {
        for (const norm of ['l1', 'l2'] as const) {
          const e = expectedCalibrationError(VECTOR_C, { bins, strategy, convention, norm })!
          close(t, e.value, 0.4, 1e-15, `K=${bins} ${strategy} ${convention} ${norm}`)
          t.equal(e.n_nonempty, 1)
        }
      }
    }
  }
  t.same(quantileEdges(VECTOR_C.map((x) => x.p), 4), [0, 0.7, 0.7, 0.7, 1], 'collapsed quantile edges')
})

t.test('quantile bins hold equal mass, p = 0 and p = 1 included', async (t) => {
  const pairs = [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 1].map((p, i) => ({ p, y: i % 2 }))
  const e = expectedCalibrationError(pairs, { bins: 5, strategy: 'quantile' })!
  t.equal(e.n_nonempty, 5)
  t.equal(e.n, 10)
  t.equal(expectedCalibrationError([]), null)
  t.throws(() => expectedCalibrationError(pairs, { strategy: 'kmeans' as never }), /strategy/)
  t.throws(() => expectedCalibrationError(pairs, { norm: 'linf' as never }), /norm/)
})
