/**
 * The calibration figures `svc eval` prints, on known answers (issue 12: fixed-width bins hid a two-valued
 * forecaster's errors). The forecaster issues 0.130 and 0.157, 100 times each; those groups realize 0.07 and 0.23.
 */
import t from 'tap'
import { perValueReliability } from '../../models/evaluateQuestion.ts'
import { expectedCalibrationError } from '../../models/verification/ece.ts'
import { murphyDecomposition } from '../../models/verification/brier.ts'

const twoValued = [
  ...Array.from({ length: 100 }, (_, i) => ({ p: 0.13, y: i < 7 ? 1 : 0 })),
  ...Array.from({ length: 100 }, (_, i) => ({ p: 0.157, y: i < 23 ? 1 : 0 })),
]

t.test('per-value reliability: each distinct forecast with its n and realized rate', async (t) => {
  const table = perValueReliability(twoValued)
  t.equal(table.length, 2)
  t.match(table[0], { p: 0.13, n: 100, realized: 0.07 })
  t.match(table[1], { p: 0.157, n: 100, realized: 0.23 })
  t.ok(Math.abs(table[0]!.gap - -0.06) < 1e-12 && Math.abs(table[1]!.gap - 0.073) < 1e-12, 'gap = realized − p')
  t.same(perValueReliability([]), [])
})

t.test('adaptive bins separate the two values; fixed-width bins merge them and report a tenth of the error', async (t) => {
  const adaptive = expectedCalibrationError(twoValued, { bins: 10, strategy: 'quantile' })!
  const fixed = expectedCalibrationError(twoValued, { bins: 10, strategy: 'uniform' })!
  // Adaptive: ½·|0.07 − 0.13| + ½·|0.23 − 0.157| = 0.0665. Fixed: both in (0.1, 0.2]: |0.15 − 0.1435| = 0.0065.
  t.ok(Math.abs(adaptive.value - 0.0665) < 1e-12, `adaptive ECE ${adaptive.value}`)
  t.ok(Math.abs(fixed.value - 0.0065) < 1e-12, `fixed-width ECE ${fixed.value}`)
  t.equal(adaptive.n_nonempty, 2)
})

t.test('Murphy decomposition of the two-valued forecaster on deciles: the identity holds with the within-bin terms', async (t) => {
  // Deciles of 0.13 and 0.157 are (0.1,0.2] for both: one bin, two values, so WBV/WBC carry the rest.
  const m = murphyDecomposition(twoValued, 10)!
  const bs = twoValued.reduce((a, { p, y }) => a + (p - y) ** 2, 0) / twoValued.length
  t.ok(Math.abs(m.brier - bs) < 1e-12)
  t.ok(Math.abs(m.unc - 0.15 * 0.85) < 1e-12, 'UNC = ȳ(1 − ȳ) with ȳ = 0.15')
  t.ok(Math.abs(m.rel - m.res + m.unc + m.residual - m.brier) < 1e-12, 'BS = REL − RES + UNC + residual')
  t.ok(m.residual !== 0, 'two values in one decile: the three-term form leaves a residual')
})
