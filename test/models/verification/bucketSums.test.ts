/**
 * The record's figures from band sums (models/verification/bucketSums.ts): a hand-computed Murphy example, and the
 * same numbers as the pair-wise functions (brier.ts, ece.ts, calibrationReport.ts) both ways on random data.
 */
import t from 'tap'
import {
  bandSumsOf, classBandSumsOf, distributionScoresFromBands, logLossOf, mergeBandSums, poolScores, recordScoresOf, scoresFromBands,
} from '../../../models/verification/bucketSums.ts'
import { brierScore, murphyDecomposition } from '../../../models/verification/brier.ts'
import { calibrationReport, calibrationReportFromBands } from '../../../models/verification/calibrationReport.ts'
import { expectedCalibrationError } from '../../../models/verification/ece.ts'
import { Prng } from '../../../ingest/Prng.ts'

t.test('hand-computed: one forecast value per band, so BS = REL − RES + UNC exactly', async (t) => {
  // p = 0.2 five times (one obtains), p = 0.7 five times (four obtain). N = 10, base rate 0.5, UNC = 0.25.
  // Band (0.1, 0.2]: mean p 0.2, frequency 0.2 → REL term 0, RES term 0.5·(0.2 − 0.5)² = 0.045.
  // Band (0.6, 0.7]: mean p 0.7, frequency 0.8 → REL term 0.5·0.1² = 0.005, RES term 0.5·0.3² = 0.045.
  // BS = (0.8² + 4·0.2² + 4·0.3² + 0.7²)/10 = (0.64 + 0.16 + 0.36 + 0.49)/10 = 0.165 = 0.005 − 0.09 + 0.25.
  const pairs = [...[1, 0, 0, 0, 0].map((y) => ({ p: 0.2, y })), ...[1, 1, 1, 0, 1].map((y) => ({ p: 0.7, y }))]
  const s = scoresFromBands(bandSumsOf(pairs))!
  const near = (a: number | null, b: number, what: string) => t.ok(a !== null && Math.abs(a - b) < 1e-15, `${what}: ${a} = ${b}`)
  near(s.brier, 0.165, 'BS')
  near(s.reliability, 0.005, 'REL')
  near(s.resolution, 0.09, 'RES')
  near(s.uncertainty, 0.25, 'UNC')
  near(s.residual, 0, 'no within-band residual')
  near(s.skill_vs_reference, 1 - 0.165 / 0.25, 'BSS = 1 − BS/UNC = (RES − REL)/UNC')
  near(s.ece, 0.05, 'ECE = 0.5·0 + 0.5·0.1')
  near(s.logloss, -(Math.log(0.2) + 4 * Math.log(0.8) + 4 * Math.log(0.7) + Math.log(0.3)) / 10, 'log loss')
  t.equal(scoresFromBands(bandSumsOf([])), null, 'no pairs: no score (not zero)')
})

t.test('band sums give the pair-wise figures; merging sums of parts gives the sums of the whole', async (t) => {
  const rng = new Prng('bucket-sums')
  for (let k = 0; k < 50; k++) {
    const n = 1 + Math.floor(rng.float() * 400)
    const pairs = Array.from({ length: n }, () => {
      const p = rng.float() < 0.1 ? Math.round(rng.float() * 10) / 10 : rng.float() // edges on purpose
      return { p, y: rng.float() < p ? 1 : 0 }
    })
    const s = scoresFromBands(bandSumsOf(pairs))!
    const m = murphyDecomposition(pairs)!
    const tol = 1e-12
    if (!(Math.abs(s.brier - brierScore(pairs)!) < tol && Math.abs(s.reliability - m.rel) < tol && Math.abs(s.resolution - m.res) < tol && Math.abs(s.uncertainty - m.unc) < tol && Math.abs(s.residual - m.residual) < tol)) {
      t.fail(`set ${k}: band sums disagree with the decomposition`)
    }
    const ece = expectedCalibrationError(pairs)
    if (ece && Math.abs(ece.value - s.ece) > tol) t.fail(`set ${k}: ECE ${s.ece} vs ${ece.value}`)
    const cut = Math.floor(n / 2)
    const merged = scoresFromBands(mergeBandSums([...bandSumsOf(pairs.slice(0, cut)), ...bandSumsOf(pairs.slice(cut))]))!
    if (Math.abs(merged.brier - s.brier) > tol || Math.abs(merged.ece - s.ece) > tol) t.fail(`set ${k}: merged parts differ`)
    t.same(calibrationReportFromBands(bandSumsOf(pairs)), calibrationReport(pairs))
  }
  t.pass('50 random sets agree')
  t.equal(logLossOf(0, 1), -Math.log(1e-15), 'a confident miss costs −ln ε, not infinity')
})

t.test('a distribution question, hand-computed: multi-class Brier, realized-class log loss, classwise terms', async (t) => {
  // Three decisions over four classes (U, D, V, Q). Σ_k (p_k − o_k)²: .12, .70, .50 → BS = 1.32/3 = .44.
  // Class frequencies 1/3, 1/3, 0, 1/3 → UNC = Σ f(1 − f) = 2/3, BSS = 1 − .44/(2/3) = .34.
  // Every p alone in its decile band except Q's two 0.1: REL = Σ n(p̄ − ō)²/N = 1.32/3 = .44 (= BS), RES = (6/9 · 3)/3 = 2/3.
  // Classwise ECE = Σ_k Σ_b n|p̄ − ō| / (N·K) = (.8 + 1.0 + .6 + .8)/12.
  const decisions = [
    { distribution: { U: 0.7, D: 0.1, V: 0.1, Q: 0.1 }, realized: 'U' },
    { distribution: { U: 0.4, D: 0.3, V: 0.2, Q: 0.1 }, realized: 'D' },
    { distribution: { U: 0.1, D: 0.2, V: 0.3, Q: 0.4 }, realized: 'Q' },
  ]
  const s = distributionScoresFromBands(classBandSumsOf(decisions))!
  const near = (a: number | null, b: number, what: string) => t.ok(a !== null && Math.abs(a - b) < 1e-12, `${what}: ${a} = ${b}`)
  t.equal(s.n, 3)
  near(s.brier, 0.44, 'BS')
  near(s.uncertainty, 2 / 3, 'UNC, the Brier of the realized class frequencies')
  near(s.skill_vs_reference, 0.34, 'BSS')
  near(s.reliability, 0.44, 'REL')
  near(s.resolution, 2 / 3, 'RES')
  near(s.residual, 0, 'BS = REL − RES + UNC')
  near(s.logloss, -Math.log(0.7 * 0.3 * 0.4) / 3, 'log loss −ln p(realized)')
  near(s.ece, 3.2 / 12, 'classwise ECE')
  t.equal(distributionScoresFromBands([]), null, 'no decisions: no score')

  // A realized class the distribution lacks counts with p = 0: (0 − 1)² more, and −ln ε.
  const odd = distributionScoresFromBands(classBandSumsOf([{ distribution: { U: 0.5, D: 0.5 }, realized: 'V' }]))!
  near(odd.brier, 0.25 + 0.25 + 1, 'Σ over U, D and the missing V')
  near(odd.logloss, -Math.log(1e-15), 'the missing class costs −ln ε')

  // Two classes: the multi-class Brier is twice the binary Brier, the classwise ECE equals the binary ECE.
  const binary = [{ p: 0.8, y: 1 }, { p: 0.8, y: 0 }, { p: 0.3, y: 0 }]
  const two = distributionScoresFromBands(classBandSumsOf(binary.map(({ p, y }) => ({ distribution: { yes: p, no: 1 - p }, realized: y ? 'yes' : 'no' }))))!
  const one = scoresFromBands(bandSumsOf(binary))!
  near(two.brier, 2 * one.brier, 'K = 2: twice the binary Brier')
  near(two.ece, one.ece, 'K = 2: the binary ECE')
  near(two.logloss, one.logloss, 'K = 2: the binary log loss')
})

t.test('pooling groups per decision', async (t) => {
  // Binary pairs (.8, 1), (.8, 0): BS .34, UNC .25, REL .09, ECE .3; with the three decisions above (BS .44, UNC 2/3):
  // N = 5, BS = (2 · .34 + 3 · .44)/5 = .4, UNC = (2 · .25 + 3 · 2/3)/5 = .5, BSS = .2.
  const binary = scoresFromBands(bandSumsOf([{ p: 0.8, y: 1 }, { p: 0.8, y: 0 }]))!
  const dist = distributionScoresFromBands(classBandSumsOf([
    { distribution: { U: 0.7, D: 0.1, V: 0.1, Q: 0.1 }, realized: 'U' },
    { distribution: { U: 0.4, D: 0.3, V: 0.2, Q: 0.1 }, realized: 'D' },
    { distribution: { U: 0.1, D: 0.2, V: 0.3, Q: 0.4 }, realized: 'Q' },
  ]))!
  const p = poolScores([binary, null, dist])!
  const near = (a: number | null, b: number, what: string) => t.ok(a !== null && Math.abs(a - b) < 1e-12, `${what}: ${a} = ${b}`)
  t.equal(p.n, 5)
  near(p.brier, 0.4, 'BS')
  near(p.uncertainty, 0.5, 'UNC')
  near(p.skill_vs_reference, 0.2, 'BSS')
  near(p.ece, 0.28, 'ECE (2 · .3 + 3 · 3.2/12)/5')
  t.equal(poolScores([binary]), binary, 'one group is itself')
  t.equal(poolScores([null]), null, 'nothing pooled: null')
  const byQuestion = new Map([['B', bandSumsOf([{ p: 0.8, y: 1 }, { p: 0.8, y: 0 }])], ['S01', bandSumsOf([{ p: 0.7, y: 1 }, { p: 0.4, y: 0 }, { p: 0.4, y: 1 }])]])
  const byClass = new Map([['S01', classBandSumsOf([
    { distribution: { U: 0.7, D: 0.1, V: 0.1, Q: 0.1 }, realized: 'U' },
    { distribution: { U: 0.4, D: 0.3, V: 0.2, Q: 0.1 }, realized: 'D' },
    { distribution: { U: 0.1, D: 0.2, V: 0.3, Q: 0.4 }, realized: 'Q' },
  ])]])
  near(recordScoresOf(byQuestion, byClass)!.brier, 0.4, 'recordScoresOf: S01 by its distribution, its modal pairs left out')
  near(recordScoresOf(byQuestion, new Map())!.brier, (0.04 + 0.64 + 0.09 + 0.16 + 0.36) / 5, 'without class sums every pair is binary (the modal view)')
})
