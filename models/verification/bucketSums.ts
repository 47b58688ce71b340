/**
 * The measured record's figures from per-band sufficient statistics.
 *
 * Every published figure of the record (spec, Intelligence measures, Computation rules 1-3) is a function of sums over
 * resolved pairs within the calibration report's decile bands ('(a,b]', first band [0, 0.1]): n, Σp, Σy, Σp², Σpy,
 * Σ(p − y)² and Σ log loss. So the batch jobs (record/RecordJob.ts) keep those sums per question, subject and band,
 * append the sums of new pairs at each run, and derive everything here from the totals: the same numbers a direct
 * pass over the pairs gives (test/models/verification/bucketSums.test.ts checks both ways), without rereading the
 * ledger.
 *
 * Rule 1: "BS = REL − RES + UNC over decile buckets shared with the calibration report." With several distinct
 * forecasts in one band the identity leaves a residual, WBV − 2·WBC (forecast-verification.md §1); both are published
 * by the batch job beside the three terms, computed from Σp² and Σpy.
 */
import { binIndex } from './bins.ts'
import type { ForecastPair } from './pairs.ts'

export const DECILE_BANDS = 10
/** Log loss clips p to [ε, 1 − ε] so a confident miss costs a finite amount (scikit-learn's historical ε). */
export const LOG_LOSS_EPSILON = 1e-15

export interface BandSums {
  /** Decile band 0..9. */
  bucket: number
  n: number
  sum_p: number
  sum_y: number
  sum_p2: number
  sum_py: number
  sum_sq: number
  sum_ll: number
}

export function logLossOf(p: number, y: number): number {
  const q = Math.min(1 - LOG_LOSS_EPSILON, Math.max(LOG_LOSS_EPSILON, p))
  return -(y * Math.log(q) + (1 - y) * Math.log(1 - q))
}

/** The band sums of a set of pairs (all ten bands, empty ones with n = 0). */
export function bandSumsOf(pairs: readonly ForecastPair[]): BandSums[] {
  const out: BandSums[] = Array.from({ length: DECILE_BANDS }, (_, bucket) => ({ bucket, n: 0, sum_p: 0, sum_y: 0, sum_p2: 0, sum_py: 0, sum_sq: 0, sum_ll: 0 }))
  for (const { p, y } of pairs) {
    const b = out[binIndex(p, DECILE_BANDS)]!
    b.n++
    b.sum_p += p
    b.sum_y += y
    b.sum_p2 += p * p
    b.sum_py += p * y
    b.sum_sq += (p - y) * (p - y)
    b.sum_ll += logLossOf(p, y)
  }
  return out
}

/** Adds band sums by band (inputs may list any bands in any order, repeated). */
export function mergeBandSums(rows: readonly BandSums[]): BandSums[] {
  const out: BandSums[] = Array.from({ length: DECILE_BANDS }, (_, bucket) => ({ bucket, n: 0, sum_p: 0, sum_y: 0, sum_p2: 0, sum_py: 0, sum_sq: 0, sum_ll: 0 }))
  for (const r of rows) {
    if (!Number.isInteger(r.bucket) || r.bucket < 0 || r.bucket >= DECILE_BANDS) throw new RangeError(`bucket must be an integer in [0, ${DECILE_BANDS - 1}]`)
    const b = out[r.bucket]!
    b.n += r.n
    b.sum_p += r.sum_p
    b.sum_y += r.sum_y
    b.sum_p2 += r.sum_p2
    b.sum_py += r.sum_py
    b.sum_sq += r.sum_sq
    b.sum_ll += r.sum_ll
  }
  return out
}

export interface RecordScores {
  n: number
  brier: number
  logloss: number
  /** REL, RES, UNC of rule 1 over the decile bands; residual = BS − (REL − RES + UNC) = WBV − 2·WBC. */
  reliability: number
  resolution: number
  uncertainty: number
  residual: number
  base_rate: number
  /** Rule 2: 1 − BS/UNC (the constant base-rate forecaster); null when UNC = 0 (every outcome the same). */
  skill_vs_reference: number | null
  /** ℓ1 ECE over the same decile bands: Σ (n_b/N)·|mean p_b − freq_b|. */
  ece: number
}

/** Scores of the pairs summed in `bands`; null for no pairs (a score of nothing is not zero). */
export function scoresFromBands(bands: readonly BandSums[]): RecordScores | null {
  let n = 0
  let sumY = 0
  let sumSq = 0
  let sumLl = 0
  for (const b of bands) {
    n += b.n
    sumY += b.sum_y
    sumSq += b.sum_sq
    sumLl += b.sum_ll
  }
  if (n === 0) return null
  const baseRate = sumY / n
  let { rel, res, ece } = bandTerms(bands, baseRate)
  rel /= n
  res /= n
  ece /= n
  const unc = baseRate * (1 - baseRate)
  const brier = sumSq / n
  return recordScores({ n, brier, logloss: sumLl / n, rel, res, unc, baseRate, ece })
}

/**
 * One class's one-vs-rest band sums of a distribution question (S01): per decision and class k, p = p_k (the
 * distribution's probability of k), y = 1 when k is the realized class; the band is p_k's decile band. sum_sq sums
 * (p_k − o_k)², so Σ over classes and bands of sum_sq is Σ over decisions of the multi-class Brier Σ_k (p_k − o_k)².
 * sum_ll sums −o_k·ln p_k (p clipped as for a binary pair), so its total over classes is Σ −ln p(realized class).
 * Every decision lists every class of its distribution, so each class counts every decision once; a realized class
 * the distribution lacks counts as one more class with p = 0 for that decision.
 */
export interface ClassBandSums extends BandSums {
  class: string
}

/** One realized decision of a distribution question: its distribution and the realized class. */
export interface DistributionPair {
  distribution: Readonly<Record<string, number>>
  realized: string
}

/** The class band sums of realized decisions (what the batch job sums in SQL); only bands with a decision are listed. */
export function classBandSumsOf(decisions: readonly DistributionPair[]): ClassBandSums[] {
  const out = new Map<string, ClassBandSums>()
  for (const { distribution, realized } of decisions) {
    const entries = Object.entries(distribution)
    if (!(realized in distribution)) entries.push([realized, 0])
    for (const [c, p] of entries) {
      const y = c === realized ? 1 : 0
      const bucket = binIndex(p, DECILE_BANDS)
      const key = `${c}\n${bucket}`
      const b = out.get(key) ?? { class: c, bucket, n: 0, sum_p: 0, sum_y: 0, sum_p2: 0, sum_py: 0, sum_sq: 0, sum_ll: 0 }
      b.n++
      b.sum_p += p
      b.sum_y += y
      b.sum_p2 += p * p
      b.sum_py += p * y
      b.sum_sq += (p - y) * (p - y)
      b.sum_ll += y === 1 ? -Math.log(Math.min(1 - LOG_LOSS_EPSILON, Math.max(LOG_LOSS_EPSILON, p))) : 0
      out.set(key, b)
    }
  }
  return [...out.values()]
}

/** The class rows by class, each class's bands merged (classes in name order). */
export function bandSumsByClass(rows: readonly ClassBandSums[]): Map<string, BandSums[]> {
  const grouped = new Map<string, BandSums[]>()
  for (const r of rows) grouped.set(r.class, [...(grouped.get(r.class) ?? []), r])
  return new Map([...grouped.keys()].sort().map((k) => [k, mergeBandSums(grouped.get(k)!)]))
}

/** Σ n·(p̄ − ȳ)², Σ n·(ȳ − base)², Σ n·|p̄ − ȳ| over decile bands: the unnormalized reliability, resolution and ECE. */
function bandTerms(bands: ReadonlyArray<{ n: number; sum_p: number; sum_y: number }>, baseRate: number): { rel: number; res: number; ece: number } {
  let rel = 0
  let res = 0
  let ece = 0
  for (const b of bands) {
    if (b.n === 0) continue
    const meanP = b.sum_p / b.n
    const freq = b.sum_y / b.n
    rel += b.n * (meanP - freq) ** 2
    res += b.n * (freq - baseRate) ** 2
    ece += b.n * Math.abs(meanP - freq)
  }
  return { rel, res, ece }
}

/**
 * Scores of one distribution question from its classes' one-vs-rest band sums; null for no decisions. N is the number
 * of decisions (the largest class count: every class of the distribution counts every decision). Over the N decisions:
 * brier = mean Σ_k (p_k − o_k)² (the multi-class Brier, the score the sale gate sells on); logloss = mean −ln p(realized);
 * the Murphy terms are the sums over classes of each class's one-vs-rest terms over its decile bands (REL_k, RES_k and
 * UNC_k = f_k(1 − f_k), f_k the realized class frequency), so BS = REL − RES + UNC + residual as for a binary question
 * and UNC = Σ_k f_k(1 − f_k) is the multi-class Brier of the constant forecaster that states the realized class
 * frequencies (the reference of skill_vs_reference); ece is the classwise ECE, the mean over classes of each class's
 * one-vs-rest ℓ1 ECE over the decile bands (for two classes it equals the binary ECE). base_rate is the largest class
 * frequency (the modal class's hit rate of the constant forecaster).
 */
export function distributionScoresFromBands(rows: readonly ClassBandSums[]): RecordScores | null {
  const classes = [...bandSumsByClass(rows).values()]
  const n = Math.max(0, ...classes.map((bands) => bands.reduce((s, b) => s + b.n, 0)))
  if (n === 0) return null
  let brier = 0
  let logloss = 0
  let rel = 0
  let res = 0
  let unc = 0
  let ece = 0
  let baseRate = 0
  for (const bands of classes) {
    const f = bands.reduce((s, b) => s + b.sum_y, 0) / n
    baseRate = Math.max(baseRate, f)
    unc += f * (1 - f)
    for (const b of bands) {
      brier += b.sum_sq
      logloss += b.sum_ll
    }
    const terms = bandTerms(bands, f)
    rel += terms.rel
    res += terms.res
    ece += terms.ece
  }
  brier /= n
  rel /= n
  res /= n
  ece /= n * classes.length
  return recordScores({ n, brier, logloss: logloss / n, rel, res, unc, baseRate, ece })
}

/** The scores with what derives from the terms: the decomposition's residual and the skill against the reference. */
function recordScores(x: { n: number; brier: number; logloss: number; rel: number; res: number; unc: number; baseRate: number; ece: number }): RecordScores {
  return {
    n: x.n,
    brier: x.brier,
    logloss: x.logloss,
    reliability: x.rel,
    resolution: x.res,
    uncertainty: x.unc,
    residual: x.brier - (x.rel - x.res + x.unc),
    base_rate: x.baseRate,
    skill_vs_reference: x.unc > 0 ? 1 - x.brier / x.unc : null,
    ece: x.ece,
  }
}

/**
 * Scores of several groups of decisions pooled (e.g. every binary question's pairs and each distribution question's
 * decisions): every figure is a per-decision mean, so the pool is the n-weighted mean of each (the Murphy identity
 * holds term by term); skill_vs_reference = 1 − BS/UNC of the pooled figures. One group is returned as it is; none
 * (or only empty ones): null.
 */
export function poolScores(groups: readonly (RecordScores | null)[]): RecordScores | null {
  const present = groups.filter((g): g is RecordScores => g !== null && g.n > 0)
  if (present.length === 0) return null
  if (present.length === 1) return present[0]!
  const n = present.reduce((s, g) => s + g.n, 0)
  const mean = (k: 'brier' | 'logloss' | 'reliability' | 'resolution' | 'uncertainty' | 'residual' | 'base_rate' | 'ece') =>
    present.reduce((s, g) => s + g.n * g[k], 0) / n
  const brier = mean('brier')
  const unc = mean('uncertainty')
  return {
    n,
    brier,
    logloss: mean('logloss'),
    reliability: mean('reliability'),
    resolution: mean('resolution'),
    uncertainty: unc,
    residual: mean('residual'),
    base_rate: mean('base_rate'),
    skill_vs_reference: unc > 0 ? 1 - brier / unc : null,
    ece: mean('ece'),
  }
}

/**
 * The record's scores over every question (the snapshot's components, and a calibration report's over a subset):
 * binary questions' pairs pooled by band (scoresFromBands), each distribution question (one with class rows) by its
 * distribution (distributionScoresFromBands, its modal-class pairs in `byQuestion` left out), pooled per decision
 * (poolScores). The modal-class view of every question is scoresFromBands over `byQuestion` alone.
 */
export function recordScoresOf(
  byQuestion: ReadonlyMap<string, readonly BandSums[]>,
  byClass: ReadonlyMap<string, readonly ClassBandSums[]>,
): RecordScores | null {
  const distribution = [...byClass].filter(([, rows]) => rows.some((r) => r.n > 0))
  const scored = new Set(distribution.map(([q]) => q))
  const binary = mergeBandSums([...byQuestion].filter(([q]) => !scored.has(q)).flatMap(([, bands]) => bands))
  return poolScores([scoresFromBands(binary), ...distribution.map(([, rows]) => distributionScoresFromBands(rows))])
}
