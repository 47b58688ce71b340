import t from 'tap'
import { blockBootstrapCi, blockBootstrapSkillCi, bootstrapCi, bootstrapMeanCi, pairedDeltaBrier, quantileSorted } from '../../../models/verification/bootstrap.ts'
import { brierScore, brierSkillVsClimatology } from '../../../models/verification/brier.ts'
import type { ForecastPair } from '../../../models/verification/pairs.ts'
import { Prng } from '../../../ingest/Prng.ts'
import { close, randomPairs } from '../../helpers/verificationVectors.ts'

t.test('deterministic for a seed; a different seed gives a different interval', async (t) => {
  const pairs = randomPairs(11, 200)
  const a = bootstrapCi(pairs, brierScore, { seed: 123 })!
  const b = bootstrapCi(pairs, brierScore, { seed: 123 })!
  const c = bootstrapCi(pairs, brierScore, { seed: 124 })!
  t.same(a, b)
  t.not(a.lower, c.lower)
  t.equal(a.resamples, 2000, 'default 2000 resamples')
  t.equal(a.level, 0.95, 'default 95 %')
  t.equal(a.method, 'percentile')
  t.equal(a.estimate, brierScore(pairs))
  t.same(bootstrapCi(pairs, brierScore, { seed: 'release-1.2.0' }), bootstrapCi(pairs, brierScore, { seed: 'release-1.2.0' }), 'string seeds')
  t.throws(() => bootstrapCi(pairs, brierScore, { seed: -1 }), /seed/)
  t.ok(a.lower < a.estimate && a.estimate < a.upper)
})

t.test('undefined statistics are skipped and counted; empty input is null', async (t) => {
  // Skill is undefined on a resample whose outcomes are all the same; with 3 outcomes that happens often.
  const pairs: ForecastPair[] = [{ p: 0.2, y: 0 }, { p: 0.7, y: 1 }, { p: 0.4, y: 0 }]
  const r = bootstrapCi(pairs, brierSkillVsClimatology, { seed: 5, resamples: 500 })!
  t.ok(r.valid_resamples < 500 && r.valid_resamples > 0, `valid ${r.valid_resamples}/500`)
  t.equal(bootstrapCi([], brierScore), null)
  t.equal(bootstrapMeanCi([]), null)
  t.throws(() => bootstrapCi(pairs, brierScore, { level: 1.5 }), /level/)
  t.throws(() => bootstrapCi(pairs, brierScore, { resamples: 0 }), /resamples/)
})

t.test('percentile quantiles use linear interpolation (numpy default)', async (t) => {
  const sorted = Float64Array.from([1, 2, 3, 4, 5])
  t.equal(quantileSorted(sorted, 0), 1)
  t.equal(quantileSorted(sorted, 1), 5)
  t.equal(quantileSorted(sorted, 0.5), 3)
  t.equal(quantileSorted(sorted, 0.1), 1.4)
})

// Coverage sanity: the 95 % percentile interval of a mean should cover the true mean about 95 % of the time. With 300
// simulated data sets the binomial s.d. of the hit rate is ~1.3 points; the band below is ±4 s.d. around 0.95 allowing
// for the percentile method's known slight under-coverage at n = 60.
t.test('coverage of the mean of Bernoulli(0.3) data, n = 60', async (t) => {
  const gen = new Prng(99)
  let covered = 0
  const sets = 300
  for (let s = 0; s < sets; s++) {
    const values = Array.from({ length: 60 }, () => (gen.float() < 0.3 ? 1 : 0))
    const ci = bootstrapMeanCi(values, { seed: s, resamples: 1000 })!
    if (ci.lower <= 0.3 && 0.3 <= ci.upper) covered++
  }
  const rate = covered / sets
  t.ok(rate > 0.88 && rate < 0.99, `coverage ${rate}`)
})

t.test('paired delta Brier: sign, pairing and agreement with the generic bootstrap', async (t) => {
  const gen = new Prng(3)
  const n = 2000
  const y: number[] = []
  const good: number[] = []
  const noisy: number[] = []
  for (let i = 0; i < n; i++) {
    const p = gen.float()
    y.push(gen.float() < p ? 1 : 0)
    good.push(p)
    noisy.push(Math.min(1, Math.max(0, p + (gen.float() - 0.5))))
  }
  const d = pairedDeltaBrier({ y, candidate: good, incumbent: noisy }, { seed: 17 })!
  const bsGood = brierScore(y.map((yi, i) => ({ p: good[i]!, y: yi })))!
  const bsNoisy = brierScore(y.map((yi, i) => ({ p: noisy[i]!, y: yi })))!
  close(t, d.estimate, bsGood - bsNoisy, 1e-15, 'estimate = BS(candidate) − BS(incumbent)')
  t.ok(d.upper < 0, `the better candidate's interval is strictly below zero: [${d.lower}, ${d.upper}]`)
  // Same seed, same resampled rows → identical to the generic bootstrap of the per-row differences.
  const rows = y.map((yi, i) => ({ y: yi, c: good[i]!, b: noisy[i]! }))
  const generic = bootstrapCi(rows, (s) => s.reduce((a, r) => a + (r.c - r.y) ** 2 - (r.b - r.y) ** 2, 0) / s.length, { seed: 17 })!
  close(t, generic.lower, d.lower, 1e-12, 'lower matches the generic row bootstrap')
  close(t, generic.upper, d.upper, 1e-12, 'upper matches the generic row bootstrap')
  // Pairing matters: for two highly correlated forecasters the paired interval is far narrower than either score's own
  // interval (an unpaired comparison could never resolve such a difference).
  const shrunk = good.map((p) => 0.9 * p + 0.05)
  const dc = pairedDeltaBrier({ y, candidate: good, incumbent: shrunk }, { seed: 2 })!
  const ciGood = bootstrapCi(y.map((yi, i) => ({ p: good[i]!, y: yi })), brierScore, { seed: 2 })!
  t.ok(dc.upper - dc.lower < (ciGood.upper - ciGood.lower) / 3, `paired width ${dc.upper - dc.lower} vs ${ciGood.upper - ciGood.lower}`)
  // Identical forecasters: delta exactly 0 with a degenerate interval.
  const same = pairedDeltaBrier({ y, candidate: good, incumbent: good })!
  t.same([same.estimate, same.lower, same.upper], [0, 0, 0])
  t.throws(() => pairedDeltaBrier({ y, candidate: good.slice(1), incumbent: noisy }), /same length/)
  t.throws(() => pairedDeltaBrier({ y: [2], candidate: [0.5], incumbent: [0.5] }), /candidate\[0\]\.y/)
})

t.test('block bootstrap: one row per block is the row bootstrap; correlated rows in a block do not narrow the interval', async (t) => {
  const rng = new Prng(11)
  const values = Array.from({ length: 200 }, () => rng.float())
  const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length
  const rows = values.map((v, i) => ({ day: i, v }))
  const byRow = bootstrapCi(rows, (xs) => mean(xs.map((x) => x.v)), { seed: 3, resamples: 500 })!
  const byBlock = blockBootstrapCi(rows, (r) => r.day, (xs) => mean(xs.map((x) => x.v)), { seed: 3, resamples: 500 })!
  t.equal(byBlock.lower, byRow.lower, 'same seed, singleton blocks in data order: identical lower bound')
  t.equal(byBlock.upper, byRow.upper, 'and upper bound')
  t.equal(byBlock.blocks, 200)

  // Three assets answering the same market each day: three identical rows per day. Resampled as rows, the interval
  // shrinks by about √3 (it counts 600 independent rows); resampled as days it is the 200-day interval.
  const triplicated = rows.flatMap((r) => [r, { ...r }, { ...r }])
  const iid = bootstrapCi(triplicated, (xs) => mean(xs.map((x) => x.v)), { seed: 3, resamples: 2000 })!
  const daily = blockBootstrapCi(triplicated, (r) => r.day, (xs) => mean(xs.map((x) => x.v)), { seed: 3, resamples: 2000 })!
  const single = bootstrapCi(rows, (xs) => mean(xs.map((x) => x.v)), { seed: 3, resamples: 2000 })!
  const width = (i: { lower: number; upper: number }) => i.upper - i.lower
  t.ok(Math.abs(width(daily) / width(single) - 1) < 0.1, `day blocks: width ${width(daily).toFixed(4)} ≈ one row per day ${width(single).toFixed(4)}`)
  t.ok(Math.abs(width(daily) / width(iid) - Math.sqrt(3)) < 0.25, `rows as independent: ${(width(daily) / width(iid)).toFixed(2)}× too narrow (√3)`)
  t.equal(blockBootstrapCi([], (r: { day: number }) => r.day, () => 1), null, 'empty input is null')
})

t.test('blockBootstrapSkillCi: the interval of blockBootstrapCi with the skill statistic, from block sums', async (t) => {
  const rng = (i: number) => ((Math.sin(i * 12.9898) * 43758.5453) % 1 + 1) % 1
  const rows = Array.from({ length: 900 }, (_, i) => ({ day: Math.floor(i / 9), model: 0.1 + 0.2 * rng(i), reference: 0.15 + 0.2 * rng(i + 7) }))
  const skill = (xs: readonly { model: number; reference: number }[]) => {
    let m = 0
    let r = 0
    for (const x of xs) {
      m += x.model
      r += x.reference
    }
    return r > 0 ? 1 - m / r : null
  }
  const slow = blockBootstrapCi(rows, (r) => r.day, skill, { seed: 5, resamples: 1000 })!
  const fast = blockBootstrapSkillCi(rows, (r) => r.day, { seed: 5, resamples: 1000 })!
  t.ok(Math.abs(fast.estimate - slow.estimate) < 1e-12)
  t.ok(Math.abs(fast.lower - slow.lower) < 1e-12, `${fast.lower} vs ${slow.lower}`)
  t.ok(Math.abs(fast.upper - slow.upper) < 1e-12, `${fast.upper} vs ${slow.upper}`)
  t.equal(fast.blocks, slow.blocks)
  t.equal(fast.valid_resamples, slow.valid_resamples)
  t.equal(blockBootstrapSkillCi([], (r: { day: number; model: number; reference: number }) => r.day), null)
  t.equal(blockBootstrapSkillCi([{ day: 0, model: 0.1, reference: 0 }], (r) => r.day), null, 'no reference error: skill undefined')
})
