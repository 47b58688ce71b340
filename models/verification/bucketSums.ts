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
  rel /= n
  res /= n
  ece /= n
  const unc = baseRate * (1 - baseRate)
  const brier = sumSq / n
  return {
    n,
    brier,
    logloss: sumLl / n,
    reliability: rel,
    resolution: res,
    uncertainty: unc,
    residual: brier - (rel - res + unc),
    base_rate: baseRate,
    skill_vs_reference: unc > 0 ? 1 - brier / unc : null,
    ece,
  }
}
