import t from 'tap'
import { brierSkillVsClimatology } from '../../../models/verification/brier.ts'
import { decisionIntelligenceIndex, INDEX_VERSION } from '../../../models/verification/dii.ts'
import { expectedCalibrationError } from '../../../models/verification/ece.ts'
import type { ForecastPair } from '../../../models/verification/pairs.ts'
import { close } from '../../helpers/verificationVectors.ts'

// Spec rule 3: DII = 100·(0.60·clamp01(BSS) + 0.25·clamp01(1 − ECE/0.20) + 0.15·resolution_rate). Worked by hand:
//  1. BSS 0.10, ECE 0.05, 150 realized, 0 unresolvable: 100·(0.06 + 0.25·0.75 + 0.15·1) = 39.75
//  2. BSS −0.2 → 0, ECE 0.30 → 1 − 1.5 → 0, 100 realized / 25 unresolvable → rr 0.8: 100·(0.15·0.8) = 12
//  3. BSS 0.5, ECE 0, 300 realized / 100 unresolvable → rr 0.75: 100·(0.30 + 0.25 + 0.1125) = 66.25
//  4. BSS 1.0, ECE 0, 100 realized, 0 unresolvable: 100
const EXAMPLES: Array<[number, number, number, number, number]> = [
  [0.1, 0.05, 150, 0, 39.75],
  [-0.2, 0.3, 100, 25, 12],
  [0.5, 0, 300, 100, 66.25],
  [1, 0, 100, 0, 100],
]

t.test('hand-computed DII examples', async (t) => {
  for (const [bss, ece, n_realized, n_unresolvable, expected] of EXAMPLES) {
    const r = decisionIntelligenceIndex({ bss, ece, n_realized, n_unresolvable })
    close(t, r.composite!, expected, 1e-12, `BSS ${bss}, ECE ${ece}, ${n_realized}/${n_unresolvable}`)
    t.equal(r.index_version, '1.1.0')
    t.equal(r.insufficient_note, null)
  }
  t.equal(INDEX_VERSION, '1.1.0', 'index 1.1.0 scores a distribution question by its distribution (issue 30)')
})

t.test('below the 100-realized floor the composite is null (not zero) with a note', async (t) => {
  const r = decisionIntelligenceIndex({ bss: 0.3, ece: 0.02, n_realized: 99, n_unresolvable: 0 })
  t.equal(r.composite, null)
  t.match(r.insufficient_note!, /insufficient/)
  t.equal(r.resolution_rate, 1)
  const none = decisionIntelligenceIndex({ bss: null, ece: null, n_realized: 0, n_unresolvable: 0 })
  t.equal(none.composite, null)
  t.equal(none.resolution_rate, null)
  const undefinedSkill = decisionIntelligenceIndex({ bss: null, ece: 0.1, n_realized: 150, n_unresolvable: 0 })
  t.equal(undefinedSkill.composite, null)
  t.throws(() => decisionIntelligenceIndex({ bss: Number.NaN, ece: 0.1, n_realized: 150, n_unresolvable: 0 }), /bss/)
  t.throws(() => decisionIntelligenceIndex({ bss: 0.1, ece: 0.1, n_realized: 1.5, n_unresolvable: 0 }), /n_realized/)
})

t.test('end to end from pairs: 100 realized forecasts, hand-computed', async (t) => {
  // 50 forecasts at 0.2 (10 hit) and 50 at 0.8 (40 hit): perfectly calibrated, ECE 0 (K=10);
  // BS = 0.16, ȳ = 0.5, UNC = 0.25, BSS = 1 − 0.16/0.25 = 0.36; 20 unresolvable → rr = 100/120.
  const pairs: ForecastPair[] = [
    ...Array.from({ length: 50 }, (_, i) => ({ p: 0.2, y: i < 10 ? 1 : 0 })),
    ...Array.from({ length: 50 }, (_, i) => ({ p: 0.8, y: i < 40 ? 1 : 0 })),
  ]
  const bss = brierSkillVsClimatology(pairs)!
  const ece = expectedCalibrationError(pairs)!.value
  close(t, bss, 0.36, 1e-12, 'BSS')
  close(t, ece, 0, 1e-15, 'ECE')
  const r = decisionIntelligenceIndex({ bss, ece, n_realized: 100, n_unresolvable: 20 })
  close(t, r.composite!, 100 * (0.6 * 0.36 + 0.25 + 0.15 * (100 / 120)), 1e-9, 'DII = 59.1')
  close(t, r.composite!, 59.1, 1e-9, 'DII')
})
