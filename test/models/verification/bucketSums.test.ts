/**
 * The record's figures from band sums (models/verification/bucketSums.ts): a hand-computed Murphy example, and the
 * same numbers as the pair-wise functions (brier.ts, ece.ts, calibrationReport.ts) both ways on random data.
 */
import t from 'tap'
import { bandSumsOf, logLossOf, mergeBandSums, scoresFromBands } from '../../../models/verification/bucketSums.ts'
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
