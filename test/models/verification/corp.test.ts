import t from 'tap'
import {
  corpDecomposition,
  corpDiagram,
  corpFrom,
  pavBlocks,
  pavBlocksWithTieOrder,
  pointScore,
} from '../../../models/verification/corp.ts'
import type { ForecastPair } from '../../../models/verification/pairs.ts'
import { Prng } from '../../../ingest/Prng.ts'
import { close, randomPairs, VECTOR_A, VECTOR_B, VECTOR_C, VECTOR_D } from '../../helpers/verificationVectors.ts'

// forecast-verification.md §7.1 P1: lorentzenchr/model-diagnostics @ d0d8eec,
// src/model_diagnostics/scoring/tests/test_scoring.py::test_decompose_with_numbers (checked there against R
// reliabilitydiag): y = [0,0,0,1,1,1], p = [0.4,0.3,0.2,0.1,0.5,0.9].
const P1 = {
  brier: { score: 0.2266667, mcb: 0.1016667, dsc: 0.125, unc: 0.25 },
  log: { score: 0.6986228, mcb: 0.3237327, dsc: 0.3182571, unc: 0.6931472 },
} as const

t.test('P1: CORP Brier and log-loss decomposition', async (t) => {
  for (const rule of ['brier', 'log'] as const) {
    const r = corpDecomposition(VECTOR_A, rule)!
    const want = P1[rule]
    close(t, r.score!, want.score, 5e-8, `${rule} mean score`)
    close(t, r.mcb!, want.mcb, 5e-8, `${rule} MCB`)
    close(t, r.dsc, want.dsc, 5e-8, `${rule} DSC`)
    close(t, r.unc, want.unc, 5e-8, `${rule} UNC`)
    close(t, r.mcb! - r.dsc + r.unc, r.score!, 1e-15, `${rule} S̄ = MCB − DSC + UNC`)
    t.equal(r.rule, rule)
  }
})

// forecast-verification.md §7.2 vector A: "PAV blocks: {0.1,0.2,0.3,0.4} → CEP 0.25 (n=4); {0.5} → 1 (n=1);
// {0.9} → 1 (n=1)".
t.test('vector A: PAV blocks', async (t) => {
  t.same(corpDecomposition(VECTOR_A)!.blocks, [
    { x_min: 0.1, x_max: 0.4, n: 4, cep: 0.25 },
    { x_min: 0.5, x_max: 0.5, n: 1, cep: 1 },
    { x_min: 0.9, x_max: 0.9, n: 1, cep: 1 },
  ])
})

// forecast-verification.md §7.2 vector B: "perfectly separable → PAV output equals y … MCB = BS = 0.0625,
// DSC = UNC = 0.246914".
t.test('vector B: separable data', async (t) => {
  const r = corpDecomposition(VECTOR_B)!
  t.same(pavBlocks(VECTOR_B).recalibrated, VECTOR_B.map((x) => x.y))
  close(t, r.mcb!, 0.0625, 1e-15, 'MCB = BS')
  close(t, r.dsc, 0.246914, 5e-7, 'DSC = UNC')
  close(t, r.dsc, r.unc, 1e-15, 'DSC = UNC exactly')
  // Non-strict pooling keeps equal-CEP neighbours apart (as in vector D's expected blocks): one block per value here.
  t.same(r.blocks.map((b) => [b.x_min, b.x_max, b.n, b.cep]), VECTOR_B.map((x) => [x.p, x.p, 1, x.y]))
})

// forecast-verification.md §7.2 vector C: "CORP: one block, CEP 0.3 → MCB 0.16, DSC 0, UNC 0.21".
t.test('vector C: constant forecaster is one block', async (t) => {
  const r = corpDecomposition(VECTOR_C)!
  t.equal(r.blocks.length, 1)
  close(t, r.blocks[0]!.cep, 0.3, 0, 'CEP')
  t.equal(r.blocks[0]!.n, 10)
  close(t, r.mcb!, 0.16, 1e-15, 'MCB')
  close(t, r.dsc, 0, 1e-15, 'DSC')
  close(t, r.unc, 0.21, 1e-15, 'UNC')
})

// forecast-verification.md §7.2 vector D: correct (ties y descending): blocks {0.3} 0.5 (n=2), {0.6} 0.5 (n=2) →
// MCB 0.025, DSC 0. Wrong (ties y ascending): {0.3} 0 (n=1), {0.3,0.6} 0.5 (n=2), {0.6} 1 (n=1) → MCB 0.15,
// DSC 0.125. "A test must reject this."
t.test('vector D: ties sorted by y descending; ascending would split a forecast value', async (t) => {
  const r = corpDecomposition(VECTOR_D)!
  t.same(r.blocks, [
    { x_min: 0.3, x_max: 0.3, n: 2, cep: 0.5 },
    { x_min: 0.6, x_max: 0.6, n: 2, cep: 0.5 },
  ])
  close(t, r.score!, 0.275, 1e-15, 'BS')
  close(t, r.unc, 0.25, 1e-15, 'UNC')
  close(t, r.mcb!, 0.025, 1e-15, 'MCB')
  close(t, r.dsc, 0, 1e-15, 'DSC')

  const wrong = corpFrom(VECTOR_D, 'brier', pavBlocksWithTieOrder(VECTOR_D, 'y_asc'))!
  t.same(wrong.blocks, [
    { x_min: 0.3, x_max: 0.3, n: 1, cep: 0 },
    { x_min: 0.3, x_max: 0.6, n: 2, cep: 0.5 },
    { x_min: 0.6, x_max: 0.6, n: 1, cep: 1 },
  ])
  close(t, wrong.mcb!, 0.15, 1e-15, 'wrong-order MCB')
  close(t, wrong.dsc, 0.125, 1e-15, 'wrong-order DSC')
  t.not(wrong.mcb, r.mcb, 'the tie order changes the published miscalibration')
  const wrongFit = pavBlocksWithTieOrder(VECTOR_D, 'y_asc').recalibrated
  t.not(wrongFit[0], wrongFit[1], 'ascending ties give one forecast value two recalibrated values')
  const fit = pavBlocks(VECTOR_D).recalibrated
  t.equal(fit[0], fit[1], 'descending ties keep one value per forecast')
})

/** Independent weighted PAV over unique forecast values (the textbook form), for cross-checking. */
function referenceFit(pairs: readonly ForecastPair[]): Map<number, number> {
  const byX = new Map<number, { n: number; hits: number }>()
  for (const { p, y } of pairs) {
    const e = byX.get(p) ?? { n: 0, hits: 0 }
    e.n++
    e.hits += y
    byX.set(p, e)
  }
  const xs = [...byX.keys()].sort((a, b) => a - b)
  const blocks: Array<{ xs: number[]; n: number; hits: number }> = []
  for (const x of xs) {
    const e = byX.get(x)!
    blocks.push({ xs: [x], n: e.n, hits: e.hits })
    while (blocks.length > 1) {
      const b = blocks[blocks.length - 1]!
      const a = blocks[blocks.length - 2]!
      if (a.hits / a.n <= b.hits / b.n) break
      blocks.splice(blocks.length - 2, 2, { xs: [...a.xs, ...b.xs], n: a.n + b.n, hits: a.hits + b.hits })
    }
  }
  const fit = new Map<number, number>()
  for (const b of blocks) for (const x of b.xs) fit.set(x, b.hits / b.n)
  return fit
}

t.test('random tie-heavy data: matches weighted PAV on unique values; blocks never split a forecast value', async (t) => {
  let worstIdentity = 0
  for (let s = 0; s < 150; s++) {
    const pairs = randomPairs(7000 + s, 20 + s, s % 3 === 0 ? 0 : 4 + (s % 10))
    const { blocks, recalibrated } = pavBlocks(pairs)
    const ref = referenceFit(pairs)
    pairs.forEach((pr, i) => {
      if (Math.abs(recalibrated[i]! - ref.get(pr.p)!) > 1e-15) t.fail(`seed ${s}: fit differs at p=${pr.p}`)
    })
    for (let b = 1; b < blocks.length; b++) {
      if (!(blocks[b]!.x_min > blocks[b - 1]!.x_max)) t.fail(`seed ${s}: a forecast value spans two blocks`)
      if (!(blocks[b]!.cep >= blocks[b - 1]!.cep)) t.fail(`seed ${s}: CEP decreases`)
    }
    if (blocks.reduce((a, b) => a + b.n, 0) !== pairs.length) t.fail(`seed ${s}: block sizes`)
    for (const rule of ['brier', 'log'] as const) {
      const r = corpDecomposition(pairs, rule)!
      if (r.mcb === null) continue // a certain forecast that failed has infinite log score
      if (r.mcb < -1e-12 || r.dsc < -1e-12) t.fail(`seed ${s} ${rule}: MCB/DSC negative`)
      worstIdentity = Math.max(worstIdentity, Math.abs(r.mcb - r.dsc + r.unc - r.score!))
    }
  }
  t.ok(worstIdentity < 1e-13, `identity exact to ${worstIdentity}`)
})

t.test('log score: 0·log 0 = 0; failed certainty is infinite and reported as null', async (t) => {
  t.equal(pointScore('log', 1, 1), 0)
  t.equal(pointScore('log', 0, 0), 0)
  t.equal(pointScore('log', 0, 1), Infinity)
  close(t, pointScore('log', 0.5, 0), Math.LN2, 1e-16, 'log 2')
  const r = corpDecomposition([{ p: 0, y: 1 }, { p: 0.5, y: 0 }], 'log')!
  t.equal(r.score, null)
  t.equal(r.mcb, null)
  t.ok(Number.isFinite(r.dsc) && Number.isFinite(r.unc))
  // All-same outcomes: UNC 0 by 0·log 0 = 0.
  t.equal(corpDecomposition([{ p: 0.2, y: 1 }, { p: 0.9, y: 1 }], 'log')!.unc, 0)
  t.equal(corpDecomposition([]), null)
  t.throws(() => corpDecomposition(VECTOR_A, 'crps' as never), /rule/)
})

t.test('CORP diagram: the curve is the PAV fit; a calibrated forecaster stays in its consistency band, a biased one leaves it', async (t) => {
  const rng = new Prng(5)
  const levels = [0.1, 0.3, 0.5, 0.7, 0.9]
  const calibrated = Array.from({ length: 2000 }, (_, i) => {
    const p = levels[i % levels.length]!
    return { p, y: rng.float() < p ? 1 : 0 }
  })
  const d = corpDiagram(calibrated, { seed: 2 })!
  t.equal(d.points.length, 5)
  t.equal(d.level, 0.9)
  const pav = pavBlocks(calibrated)
  for (const pt of d.points) {
    const i = calibrated.findIndex((x) => x.p === pt.p)
    t.equal(pt.cep, pav.recalibrated[i], `p ${pt.p}: the curve is the PAV recalibration`)
    t.ok(pt.lower <= pt.p + 1e-12 && pt.p - 1e-12 <= pt.upper, `p ${pt.p}: the band [${pt.lower.toFixed(3)}, ${pt.upper.toFixed(3)}] holds p`)
  }
  const inside = d.points.filter((pt) => pt.lower <= pt.cep && pt.cep <= pt.upper).length
  t.ok(inside >= 4, `calibrated: ${inside} of 5 values inside their 90 % band`)

  // Says 0.1 where the event happens 30 % of the time.
  const biased = Array.from({ length: 1000 }, () => ({ p: 0.1, y: rng.float() < 0.3 ? 1 : 0 }))
  const b = corpDiagram(biased, { seed: 2 })!
  t.ok(b.points[0]!.cep > b.points[0]!.upper, `biased: CEP ${b.points[0]!.cep.toFixed(3)} above the band's top ${b.points[0]!.upper.toFixed(3)}`)

  t.same(corpDiagram(calibrated, { seed: 2 }), d, 'deterministic for a seed')
  t.equal(corpDiagram([]), null)
  const many = Array.from({ length: 500 }, (_, i) => ({ p: i / 500, y: i % 2 }))
  const thin = corpDiagram(many, { resamples: 20, maxPoints: 50 })!
  t.ok(thin.thinned && thin.points.length === 50, 'more distinct values than maxPoints: an even subset')
})
