/**
 * Per-bar variance estimators, so realized volatility works for any bar size. Both are summed over the bars of a
 * window and divided by the hours those bars cover, giving a variance per hour; its square root is the per-hour vol.
 *
 * Close-to-close: r_i = ln(C_i / C_{i−1}); σ²·Δt ≈ Σ r_i².
 * Parkinson (1980), "The extreme value method for estimating the variance of the rate of return", J. Business 53(1):
 *   σ²·Δt ≈ (ln(H/L))² / (4 ln 2) per bar — uses the intrabar range, so even one hourly bar gives an estimate.
 */
import { HOUR_MS } from '../../common/time.ts'

const FOUR_LN2 = 4 * Math.LN2

export function logReturn(from: number, to: number): number {
  return Math.log(to / from)
}

/** Parkinson variance of one bar (not normalised by time). */
export function parkinsonVariance(high: number, low: number): number {
  if (!(low > 0) || !(high >= low)) return 0
  const r = Math.log(high / low)
  return (r * r) / FOUR_LN2
}

/** Per-hour volatility from a summed variance over `bars` bars of `intervalMs` each. */
export function perHourVol(summedVariance: number, bars: number, intervalMs: number): number {
  return Math.sqrt(summedVariance / ((bars * intervalMs) / HOUR_MS))
}
