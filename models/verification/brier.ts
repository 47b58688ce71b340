/**
 * Brier score, its Murphy decomposition with the two within-bin terms, and skill.
 *
 * Spec, Computation rules 1–2: "Brier score BS = mean of (p - o)^2 over resolved pairs; BS = REL - RES + UNC over decile
 * buckets shared with the calibration report. … UNC = mean o * (1 - mean o)." "BSS = 1 - BS/BS_ref, with BS_ref = UNC
 * (the constant base-rate forecaster) … A negative BSS is published as negative."
 *
 * forecast-verification.md §1 (Stephenson, Coelho & Jolliffe 2008): with bins, the exact identity is
 *   BS = REL − RES + UNC + WBV − 2·WBC
 * Murphy's three-term form holds only when every bin holds one distinct forecast value, so the output carries wbv, wbc
 * and residual = BS − (REL − RES + UNC). Values are plug-in estimates (not bias-corrected, Ferro & Fricker 2012).
 */
import { assertConvention, DEFAULT_CONVENTION, groupByBins, uniformEdges, type BinConvention, type BinSpec } from './bins.ts'
import { assertBinCount, assertPairs, baseRate, type ForecastPair } from './pairs.ts'

export interface MurphyDecomposition {
  readonly n: number
  readonly brier: number
  readonly rel: number
  readonly res: number
  readonly unc: number
  readonly wbv: number
  readonly wbc: number
  /** BS − (REL − RES + UNC) = WBV − 2·WBC: what Murphy's three-term form leaves out on these bins. */
  readonly residual: number
  readonly base_rate: number
  readonly bins: BinSpec
}

/** Mean of (p − y)²; null for no pairs (a score of nothing is not zero). */
export function brierScore(pairs: readonly ForecastPair[]): number | null {
  assertPairs(pairs)
  if (pairs.length === 0) return null
  let sum = 0
  for (const { p, y } of pairs) sum += (p - y) * (p - y)
  return sum / pairs.length
}

/** Decomposition over K equal-width bins (default the spec's deciles, `(a,b]`); empty bins are dropped; null for n = 0. */
export function murphyDecomposition(
  pairs: readonly ForecastPair[],
  bins = 10,
  convention: BinConvention = DEFAULT_CONVENTION,
): MurphyDecomposition | null {
  assertPairs(pairs)
  assertBinCount(bins)
  assertConvention(convention)
  const n = pairs.length
  if (n === 0) return null
  const brier = brierScore(pairs)!
  const ybar = baseRate(pairs)
  let rel = 0
  let res = 0
  let wbv = 0
  let wbc = 0
  for (const g of groupByBins(pairs, bins, convention)) {
    rel += g.n * (g.meanP - g.freq) ** 2
    res += g.n * (g.freq - ybar) ** 2
    for (const i of g.members) {
      const { p, y } = pairs[i]!
      wbv += (p - g.meanP) ** 2
      wbc += (p - g.meanP) * (y - g.freq)
    }
  }
  rel /= n
  res /= n
  wbv /= n
  wbc /= n
  const unc = ybar * (1 - ybar)
  return {
    n,
    brier,
    rel,
    res,
    unc,
    wbv,
    wbc,
    residual: brier - (rel - res + unc),
    base_rate: ybar,
    bins: { k: bins, edges: uniformEdges(bins), convention },
  }
}

/**
 * Skill against a named reference score: 1 − BS/BS_ref. Negative skill is returned as negative.
 * Null when the reference is 0 (a perfect reference, e.g. UNC of an all-same outcome sample): skill is undefined.
 */
export function brierSkillScore(bs: number, reference: number): number | null {
  if (!Number.isFinite(bs) || bs < 0) throw new RangeError('bs must be a finite number >= 0')
  if (!Number.isFinite(reference) || reference < 0) throw new RangeError('reference must be a finite number >= 0')
  if (reference === 0) return null
  return 1 - bs / reference
}

/** The spec's BSS: reference = UNC = ȳ(1 − ȳ), the constant base-rate forecaster on the same sample. */
export function brierSkillVsClimatology(pairs: readonly ForecastPair[]): number | null {
  const bs = brierScore(pairs)
  if (bs === null) return null
  const ybar = baseRate(pairs)
  return brierSkillScore(bs, ybar * (1 - ybar))
}
