/**
 * The sale gate's rules (models/saleGate.ts) on hand-built holdouts: each rule decides on the figure it names, and
 * the figures are the ones a reader can recompute (Brier means, skill against the base rate).
 */
import t from 'tap'
import { GATE_MIN_SCORED, GATE_REASONS, gateSummary, saleGateOf, type GateRow } from '../../models/saleGate.ts'

const DAY = 86_400_000
const T0 = Date.UTC(2025, 0, 1)

/** n rows over n/6 days; the model's Brier is `model`, the base rate's `reference`, the one-feature's `oneFeature`. */
function rows(n: number, model: (i: number) => number, reference = 0.2, oneFeature = 0.19): GateRow[] {
  return Array.from({ length: n }, (_, i) => ({ at: T0 + Math.floor(i / 6) * DAY + (i % 6) * 4 * 3_600_000, model: model(i), reference, oneFeature }))
}

t.test('a holdout below the floor is blocked whatever its skill', async (t) => {
  const g = saleGateOf(rows(GATE_MIN_SCORED - 1, () => 0.1), 500)
  t.equal(g.status, 'blocked')
  t.equal(g.reason, 'holdout_below_floor')
  t.equal(g.n_scored, GATE_MIN_SCORED - 1)
  t.equal(g.bss, 0.5, 'the figures are still reported: 1 − 0.1/0.2')
})

t.test('skill whose interval reaches 0 is blocked; skill clear of 0 that beats one feature is sold', async (t) => {
  // Alternating days of gain and loss: positive mean, an interval across 0.
  const noisy = saleGateOf(rows(600, (i) => (Math.floor(i / 6) % 2 === 0 ? 0.1 : 0.29)), 900)
  t.ok(noisy.bss! > 0, `BSS ${noisy.bss}`)
  t.ok(noisy.bss_ci![0] <= 0, `interval ${noisy.bss_ci}`)
  t.equal(noisy.reason, 'no_skill_with_confidence')
  const clear = saleGateOf(rows(600, (i) => 0.15 + (i % 6) * 0.002), 900)
  t.equal(clear.status, 'sold')
  t.equal(clear.reason, null)
  t.ok(clear.bss_ci![0] > 0)
  t.equal(clear.reference_brier, 0.2)
  t.equal(clear.one_feature_bss, 0.05, '1 − 0.19/0.2')
  t.equal(clear.holdout_start, new Date(T0).toISOString())
})

t.test('skill with confidence that loses to the one-feature baseline is blocked', async (t) => {
  const g = saleGateOf(rows(600, (i) => 0.17 + (i % 6) * 0.001, 0.2, 0.12), 900)
  t.ok(g.bss_ci![0] > 0)
  t.equal(g.reason, 'loses_to_one_feature_baseline')
  t.match(gateSummary(g), /600 scored decisions, BSS 0\.\d{3} \[0\.\d{3}, 0\.\d{3}\] vs base rate, one-feature baseline BSS 0\.400/)
})

t.test('the reasons are a closed list', async (t) => {
  t.same([...GATE_REASONS], ['holdout_below_floor', 'no_skill_with_confidence', 'loses_to_one_feature_baseline'])
})
