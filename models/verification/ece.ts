/**
 * Expected calibration error with its binning stated.
 *
 * forecast-verification.md §3: "ECE_ℓ1 = Σ_k (n_k / n) · |ȳ_k − p̄_k| over non-empty bins. (ℓ2 variant:
 * sqrt(Σ_k (n_k/n)(ȳ_k − p̄_k)²).)" Weight by bin count, compare with the bin's mean forecast (not its midpoint), and
 * "Always return {n_bins, strategy, norm, convention} with the value."
 * §2: quantile edges collapse on repeated probabilities; a constant forecaster must still get ECE = |p − ȳ|.
 */
import { assertConvention, DEFAULT_CONVENTION, groupByEdges, uniformEdges, type BinConvention } from './bins.ts'
import { assertBinCount, assertPairs, type ForecastPair } from './pairs.ts'

export type EceStrategy = 'uniform' | 'quantile'
export type EceNorm = 'l1' | 'l2'

export interface EceOptions {
  readonly bins?: number
  readonly strategy?: EceStrategy
  readonly norm?: EceNorm
  readonly convention?: BinConvention
}

export interface EceResult {
  readonly value: number
  /** Requested bin count K (empty bins are dropped from the sum; `n_nonempty` says how many contributed). */
  readonly n_bins: number
  readonly n_nonempty: number
  readonly strategy: EceStrategy
  readonly norm: EceNorm
  readonly convention: BinConvention
  readonly n: number
}

/**
 * Quantile edges as numpy `percentile(p, linspace(0,1,K+1)·100)` (linear interpolation, "type 7"), the scikit-learn
 * `calibration_curve(strategy="quantile")` construction. Equal probabilities give equal (collapsed) edges; a binary
 * search over sorted edges then puts every tied forecast in one bin, never outside all bins.
 */
export function quantileEdges(ps: readonly number[], k: number): number[] {
  assertBinCount(k)
  const sorted = [...ps].sort((a, b) => a - b)
  const last = sorted.length - 1
  const edges: number[] = []
  for (let j = 0; j <= k; j++) {
    const h = (last * j) / k
    const lo = Math.floor(h)
    const frac = h - lo
    const a = sorted[lo]!
    const b = sorted[Math.min(lo + 1, last)]!
    edges.push(frac === 0 ? a : a + frac * (b - a))
  }
  edges[0] = 0
  edges[k] = 1
  return edges
}

/** Null for no pairs. */
export function expectedCalibrationError(pairs: readonly ForecastPair[], options: EceOptions = {}): EceResult | null {
  const { bins = 10, strategy = 'uniform', norm = 'l1', convention = DEFAULT_CONVENTION } = options
  assertPairs(pairs)
  assertBinCount(bins)
  assertConvention(convention)
  if (strategy !== 'uniform' && strategy !== 'quantile') throw new RangeError('strategy must be uniform or quantile')
  if (norm !== 'l1' && norm !== 'l2') throw new RangeError('norm must be l1 or l2')
  const n = pairs.length
  if (n === 0) return null
  const edges = strategy === 'uniform' ? uniformEdges(bins) : quantileEdges(pairs.map((x) => x.p), bins)
  const groups = groupByEdges(pairs, edges, convention)
  let sum = 0
  for (const g of groups) {
    const gap = Math.abs(g.freq - g.meanP)
    sum += (g.n / n) * (norm === 'l1' ? gap : gap * gap)
  }
  return {
    value: norm === 'l1' ? sum : Math.sqrt(sum),
    n_bins: bins,
    n_nonempty: groups.length,
    strategy,
    norm,
    convention,
    n,
  }
}
