import t from 'tap'
import { fitLearningCurve } from '../../../models/verification/learningCurve.ts'
import { Prng } from '../../../ingest/Prng.ts'
import { close } from '../../helpers/verificationVectors.ts'

// forecast-verification.md §7.2 "Learning curve, noise-free synthetic": a = 0.5, b = 0.5, c = 0.18;
// n = [50,100,200,400,800,1600] → BS = [0.2507107, 0.23, 0.2153553, 0.205, 0.1976777, 0.1925];
// "must recover (0.5, 0.5, 0.18) to 1e-6".
const NS = [50, 100, 200, 400, 800, 1600]
const BS_TABLE = [0.2507107, 0.23, 0.2153553, 0.205, 0.1976777, 0.1925]
const law = (n: number): number => 0.5 * n ** -0.5 + 0.18

t.test('noise-free synthetic vector: recovers (0.5, 0.5, 0.18) to 1e-6', async (t) => {
  NS.forEach((n, i) => close(t, law(n), BS_TABLE[i]!, 5e-8, `table BS(${n})`))
  for (const weighting of ['n', 'sqrt_n', 'none'] as const) {
    const { fit, note } = fitLearningCurve(NS.map((n) => ({ n, brier: law(n) })), { weighting })
    t.ok(fit, note)
    close(t, fit!.a, 0.5, 1e-6, `${weighting}: a`)
    close(t, fit!.b, 0.5, 1e-6, `${weighting}: b`)
    close(t, fit!.c, 0.18, 1e-6, `${weighting}: c`)
    t.equal(fit!.at_bound, false)
    close(t, fit!.b_ci![0], 0.5, 1e-6, 'noise-free: b interval collapses on b (lower)')
    close(t, fit!.b_ci![1], 0.5, 1e-6, 'noise-free: b interval collapses on b (upper)')
  }
  // The table's 7-decimal values still recover the law to 1e-6.
  const rounded = fitLearningCurve(NS.map((n, i) => ({ n, brier: BS_TABLE[i]! }))).fit!
  close(t, rounded.a, 0.5, 1e-6, 'rounded table: a')
  close(t, rounded.b, 0.5, 1e-6, 'rounded table: b')
  close(t, rounded.c, 0.18, 1e-6, 'rounded table: c')
})

t.test('fewer than three anchor points: fit null with a note', async (t) => {
  for (const pts of [[], [{ n: 50, brier: 0.25 }], [{ n: 50, brier: 0.25 }, { n: 100, brier: 0.23 }, { n: 100, brier: 0.22 }]]) {
    const r = fitLearningCurve(pts)
    t.equal(r.fit, null)
    t.match(r.note, /at least 3/)
  }
  t.throws(() => fitLearningCurve([{ n: 0, brier: 0.2 }]), /points\[0\]\.n/)
  t.throws(() => fitLearningCurve([{ n: 10, brier: 2 }]), /points\[0\]\.brier/)
})

t.test('noisy data: seeded and deterministic; the b interval covers the truth at about its level', async (t) => {
  const ns = [50, 100, 200, 300, 400, 600, 800, 1200, 1600, 2400]
  // Noise with s.d. ∝ 1/√n, as a Brier score over n outcomes has.
  const curve = (s: number): Array<{ n: number; brier: number }> => {
    const gen = new Prng(s, 'curve')
    return ns.map((n) => ({ n, brier: law(n) + (gen.normal() * 0.02) / Math.sqrt(n / 50) }))
  }
  const a = fitLearningCurve(curve(0), { seed: 9, resamples: 300 })
  t.same(a, fitLearningCurve(curve(0), { seed: 9, resamples: 300 }), 'same seed → same fit and interval')
  t.not(a.fit!.b_ci![0], fitLearningCurve(curve(0), { seed: 10, resamples: 300 }).fit!.b_ci![0], 'seed matters')
  const fit = a.fit!
  t.ok(fit.b_ci![0] <= fit.b && fit.b <= fit.b_ci![1], `b ${fit.b} inside [${fit.b_ci}]`)
  t.ok(fit.c >= 0 && fit.c <= 0.25)
  // Coverage over 40 simulated curves (200 resamples each). Binomial s.d. at 0.95 is ~0.035; 0.8 is > 4 s.d. below.
  let covered = 0
  const sets = 40
  for (let s = 1; s <= sets; s++) {
    const ci = fitLearningCurve(curve(s), { seed: s, resamples: 200 }).fit!.b_ci!
    if (ci[0] <= 0.5 && 0.5 <= ci[1]) covered++
  }
  t.ok(covered / sets >= 0.8, `coverage ${covered}/${sets}`)
})

// forecast-verification.md §6: "If the fit hits a bound (e.g. BS rising with n → b → 0), report it as at-bound".
t.test('Brier rising with n: at bound, not a learning rate', async (t) => {
  const { fit, note } = fitLearningCurve([
    { n: 50, brier: 0.18 },
    { n: 100, brier: 0.19 },
    { n: 200, brier: 0.2 },
    { n: 400, brier: 0.21 },
  ])
  t.equal(fit!.at_bound, true)
  t.ok(fit!.bounds_hit.length > 0, `bounds hit: ${fit!.bounds_hit}`)
  t.match(note, /not a learning rate/)
  // A floor above 0.25 forces c to its upper bound.
  const high = fitLearningCurve([{ n: 50, brier: 0.4 }, { n: 100, brier: 0.35 }, { n: 200, brier: 0.33 }, { n: 400, brier: 0.32 }]).fit!
  t.ok(high.c <= 0.25)
  t.ok(high.bounds_hit.includes('c_max'))
})
