/**
 * Wilson score interval for a binomial proportion (base rates, priors).
 *
 * Spec, Computation rules 5: "Priors … per question the pooled rate, Wilson interval, n, successes, verdict".
 * forecast-verification.md §5: centre = (p̂ + z²/(2n)) / (1 + z²/n); half = z·sqrt(p̂(1−p̂)/n + z²/(4n²)) / (1 + z²/n);
 * "x = 0 → lower bound exactly 0; x = n → upper bound exactly 1. Clamp to [0,1] … n = 0 → return null".
 */

/** Two-sided 95 % normal quantile, Φ⁻¹(0.975). */
export const Z95 = 1.959963984540054

export interface WilsonInterval {
  readonly lower: number
  readonly upper: number
  readonly method: 'wilson'
  readonly z: number
}

export function wilsonInterval(successes: number, n: number, z: number = Z95): WilsonInterval | null {
  if (!Number.isInteger(n) || n < 0) throw new RangeError('n must be an integer >= 0')
  if (!Number.isInteger(successes) || successes < 0 || successes > n) {
    throw new RangeError('successes must be an integer in [0, n]')
  }
  if (!Number.isFinite(z) || z <= 0) throw new RangeError('z must be a finite number > 0')
  if (n === 0) return null
  const phat = successes / n
  const z2 = z * z
  const denom = 1 + z2 / n
  const centre = (phat + z2 / (2 * n)) / denom
  const half = (z * Math.sqrt((phat * (1 - phat)) / n + z2 / (4 * n * n))) / denom
  const lower = successes === 0 ? 0 : Math.min(1, Math.max(0, centre - half))
  const upper = successes === n ? 1 : Math.min(1, Math.max(0, centre + half))
  return { lower, upper, method: 'wilson', z }
}
