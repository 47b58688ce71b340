import t from 'tap'
import { binIndex } from '../../../models/verification/bins.ts'
import {
  brierScore,
  brierSkillScore,
  brierSkillVsClimatology,
  murphyDecomposition,
} from '../../../models/verification/brier.ts'
import { close, randomPairs, VECTOR_A, VECTOR_B, VECTOR_C } from '../../helpers/verificationVectors.ts'

const TOL = 5e-7 // the reference tables are given to 6 decimals

// forecast-verification.md §7.2 "Vector A" table (computed with exact rationals; REL, RES, REL−RES+UNC, WBV, WBC per
// K and convention; bin ids in input order p = [0.4,0.3,0.2,0.1,0.5,0.9]).
const VECTOR_A_TABLE: Array<{
  k: number
  convention: '(a,b]' | '[a,b)'
  ids: number[]
  rel: number
  res: number
  murphy3: number
  wbv: number
  wbc: number
}> = [
  { k: 10, convention: '(a,b]', ids: [3, 2, 1, 0, 4, 8], rel: 0.226667, res: 0.25, murphy3: 0.226667, wbv: 0, wbc: 0 },
  { k: 10, convention: '[a,b)', ids: [4, 3, 2, 1, 5, 9], rel: 0.226667, res: 0.25, murphy3: 0.226667, wbv: 0, wbc: 0 },
  { k: 5, convention: '(a,b]', ids: [1, 1, 0, 0, 2, 4], rel: 0.125, res: 0.166667, murphy3: 0.208333, wbv: 0.001667, wbc: -0.008333 },
  { k: 5, convention: '[a,b)', ids: [2, 1, 1, 0, 2, 4], rel: 0.158333, res: 0.166667, murphy3: 0.241667, wbv: 0.001667, wbc: 0.008333 },
  { k: 3, convention: '(a,b]', ids: [1, 0, 0, 0, 1, 2], rel: 0.011389, res: 0.055556, murphy3: 0.205833, wbv: 0.004167, wbc: -0.008333 },
  { k: 3, convention: '[a,b)', ids: [1, 0, 0, 0, 1, 2], rel: 0.011389, res: 0.055556, murphy3: 0.205833, wbv: 0.004167, wbc: -0.008333 },
]

t.test('vector A across K and conventions: bin ids, REL, RES, WBV, WBC and the exact identity', async (t) => {
  for (const row of VECTOR_A_TABLE) {
    const label = `K=${row.k} ${row.convention}`
    t.same(VECTOR_A.map((x) => binIndex(x.p, row.k, row.convention)), row.ids, `${label} bin ids`)
    const m = murphyDecomposition(VECTOR_A, row.k, row.convention)!
    close(t, m.brier, 0.226667, TOL, `${label} BS`)
    close(t, m.unc, 0.25, 1e-15, `${label} UNC`)
    close(t, m.base_rate, 0.5, 0, `${label} base rate`)
    close(t, m.rel, row.rel, TOL, `${label} REL`)
    close(t, m.res, row.res, TOL, `${label} RES`)
    close(t, m.rel - m.res + m.unc, row.murphy3, TOL, `${label} REL−RES+UNC`)
    close(t, m.wbv, row.wbv, TOL, `${label} WBV`)
    close(t, m.wbc, row.wbc, TOL, `${label} WBC`)
    close(t, m.residual, m.wbv - 2 * m.wbc, 1e-15, `${label} residual = WBV − 2·WBC`)
    close(t, m.rel - m.res + m.unc + m.wbv - 2 * m.wbc, m.brier, 1e-15, `${label} BS = REL − RES + UNC + WBV − 2·WBC`)
    t.same(m.bins, { k: row.k, edges: Array.from({ length: row.k + 1 }, (_, j) => j / row.k), convention: row.convention })
  }
})

// forecast-verification.md §4 / §7.2: using the exact rational of the binary double instead of decimal edges "moves
// 0.1, 0.2, 0.4 and 0.9 up one bin and gives REL 0.158333 … instead of 0.226667" — we must give 0.226667.
t.test('vector A, K=10 (a,b]: not the mixed-representation answer', async (t) => {
  const m = murphyDecomposition(VECTOR_A, 10, '(a,b]')!
  t.not(Math.abs(m.rel - 0.158333) < 1e-4, true, 'REL is not 0.158333')
})

// forecast-verification.md §7.2 "Vector B" (= P3 data), K = 3.
t.test('vector B, K=3: Murphy three-term form misses BS; the five-term identity holds', async (t) => {
  for (const convention of ['(a,b]', '[a,b)'] as const) {
    t.same(VECTOR_B.map((x) => binIndex(x.p, 3, convention)), [0, 0, 0, 1, 1, 2, 2, 2, 2], `${convention} bin ids`)
    const m = murphyDecomposition(VECTOR_B, 3, convention)!
    close(t, m.brier, 0.0625, 1e-15, 'BS')
    close(t, m.unc, 0.246914, TOL, 'UNC')
    close(t, m.base_rate, 5 / 9, 1e-15, 'base rate')
    close(t, m.rel, 0.023472, TOL, 'REL')
    close(t, m.res, 0.191358, TOL, 'RES')
    close(t, m.rel - m.res + m.unc, 0.079028, TOL, 'REL−RES+UNC (≠ BS)')
    close(t, m.wbv, 0.01125, TOL, 'WBV')
    close(t, m.wbc, 0.013889, TOL, 'WBC')
    close(t, m.residual, 0.0625 - 0.079028, TOL, 'residual')
    close(t, m.rel - m.res + m.unc + m.wbv - 2 * m.wbc, m.brier, 1e-15, 'identity')
  }
})

// forecast-verification.md §7.2 "Vector C — constant forecaster".
t.test('vector C: constant forecaster', async (t) => {
  for (const k of [1, 3, 10, 100]) {
    const m = murphyDecomposition(VECTOR_C, k)!
    close(t, m.brier, 0.37, 1e-15, `K=${k} BS`)
    close(t, m.rel, 0.16, 1e-15, `K=${k} REL`)
    close(t, m.res, 0, 0, `K=${k} RES`)
    close(t, m.unc, 0.21, 1e-15, `K=${k} UNC`)
    close(t, m.wbv, 0, 1e-30, `K=${k} WBV`) // the float mean of ten 0.7s is within an ulp of 0.7
    close(t, m.wbc, 0, 1e-15, `K=${k} WBC`)
  }
})

// forecast-verification.md §7.2: "also verified on 200 random data sets, 50–250 pairs, K = 10".
t.test('identity BS = REL − RES + UNC + WBV − 2·WBC on 200 random data sets', async (t) => {
  let worst = 0
  for (let s = 0; s < 200; s++) {
    const pairs = randomPairs(1000 + s, 50 + s, s % 2 === 0 ? 0 : 20)
    for (const convention of ['(a,b]', '[a,b)'] as const) {
      const m = murphyDecomposition(pairs, 10, convention)!
      worst = Math.max(worst, Math.abs(m.rel - m.res + m.unc + m.wbv - 2 * m.wbc - m.brier))
      if (m.n !== pairs.length) t.fail('n')
    }
  }
  t.ok(worst < 1e-14, `worst identity error ${worst}`)
})

t.test('Brier score, skill and empty input', async (t) => {
  t.equal(brierScore([]), null)
  t.equal(murphyDecomposition([]), null)
  t.equal(brierScore([{ p: 1, y: 1 }, { p: 0, y: 0 }]), 0)
  t.equal(brierScore([{ p: 1, y: 0 }]), 1)
  // Spec rule 2: BSS = 1 − BS/UNC; vector A: 1 − 0.226667/0.25 = 0.093333.
  close(t, brierSkillVsClimatology(VECTOR_A)!, 1 - 0.68 / 3 / 0.25, 1e-15, 'vector A BSS')
  // "A negative BSS is published as negative": vector C, 1 − 0.37/0.21.
  close(t, brierSkillVsClimatology(VECTOR_C)!, 1 - 0.37 / 0.21, 1e-14, 'vector C BSS < 0')
  t.ok(brierSkillVsClimatology(VECTOR_C)! < 0)
  // Spec rule 2 "equal to (RES − REL)/UNC" where the three-term form is exact (vector A, K=10: one value per bin).
  const m = murphyDecomposition(VECTOR_A, 10)!
  close(t, brierSkillVsClimatology(VECTOR_A)!, (m.res - m.rel) / m.unc, 1e-15, 'BSS = (RES − REL)/UNC')
  t.equal(brierSkillVsClimatology([{ p: 0.2, y: 1 }, { p: 0.9, y: 1 }]), null, 'UNC = 0: skill undefined')
  t.equal(brierSkillScore(0.1, 0.2), 0.5)
  t.throws(() => brierSkillScore(Number.NaN, 0.2))
  t.throws(() => murphyDecomposition(VECTOR_A, 10, '[a,b]' as never), /convention/)
})
