/**
 * Consistency bars for a reliability diagram (Bröcker & Smith 2007, "Increasing the reliability of reliability
 * diagrams"): where a perfectly calibrated forecaster's realized frequency would fall, for a band of n forecasts whose
 * mean is p̄.
 *
 * The band's hit count under perfect calibration is a sum of n Bernoulli(p_i), whose variance is at most that of
 * Binomial(n, p̄) (equality when every p_i = p̄). The record keeps only band sums (n, Σp), so the bar is the exact
 * central interval of Binomial(n, p̄), divided by n: slightly wide when the forecasts in a band differ, never narrow.
 *
 * The interval is [q(α/2), q(1 − α/2)] / n with q(u) the smallest k such that P(K ≤ k) ≥ u (R's qbinom), so it
 * covers at least 1 − α of the mass (discreteness makes it conservative).
 */

export interface ConsistencyInterval {
  /** Lower and upper realized frequency, k/n. */
  readonly lower: number
  readonly upper: number
  /** The hit counts behind them. */
  readonly k: readonly [number, number]
  readonly level: number
  readonly method: 'binomial-central'
}

/** Beyond this many standard deviations from the mode the binomial mass is below double precision. */
const TAIL_SD = 40

/**
 * Binomial(n, p) central interval at `level` as frequencies; null for n = 0 (no forecasts, no bar). Work is
 * O(√n) (the mass is summed only where it is representable), so a band of millions costs microseconds.
 */
export function consistencyInterval(n: number, p: number, level = 0.95): ConsistencyInterval | null {
  if (!Number.isInteger(n) || n < 0) throw new RangeError('n must be an integer >= 0')
  if (!(p >= 0 && p <= 1)) throw new RangeError('p must be in [0, 1]')
  if (!(level > 0 && level < 1)) throw new RangeError('level must be in (0, 1)')
  if (n === 0) return null
  const alpha = 1 - level
  const [kLo, kHi] = p === 0 ? [0, 0] : p === 1 ? [n, n] : binomialQuantiles(n, p, [alpha / 2, 1 - alpha / 2])
  return { lower: kLo! / n, upper: kHi! / n, k: [kLo!, kHi!], level, method: 'binomial-central' }
}

/** Smallest k with P(K ≤ k) ≥ u, for each u (ascending), K ~ Binomial(n, p), 0 < p < 1. */
export function binomialQuantiles(n: number, p: number, us: readonly number[]): number[] {
  const mode = Math.min(n, Math.floor((n + 1) * p))
  const half = Math.ceil(TAIL_SD * Math.sqrt(n * p * (1 - p)) + TAIL_SD)
  const lo = Math.max(0, mode - half)
  const hi = Math.min(n, mode + half)
  // Unnormalized pmf relative to the mode by the ratio recurrence (no factorials, so no overflow); normalized below.
  const w = new Float64Array(hi - lo + 1)
  w[mode - lo] = 1
  const odds = p / (1 - p)
  for (let k = mode; k < hi; k++) w[k + 1 - lo] = (w[k - lo]! * (n - k) * odds) / (k + 1)
  for (let k = mode; k > lo; k--) w[k - 1 - lo] = (w[k - lo]! * k) / ((n - k + 1) * odds)
  let total = 0
  for (const x of w) total += x
  const out: number[] = []
  let cdf = 0
  let k = lo
  for (const u of us) {
    // A tolerance of 1e-12 keeps an exact tie (P(K ≤ k) = u in exact arithmetic) on the exact answer's side.
    while (k < hi && (cdf + w[k - lo]!) / total < u - 1e-12) cdf += w[k++ - lo]!
    out.push(k)
  }
  return out
}
