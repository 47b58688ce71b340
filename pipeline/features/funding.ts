/**
 * Funding conventions shared by features, questions and their resolvers.
 *
 * ../shared/reference/hyperliquid-api.md §5: "Interest component I = 0.01 % per 8 h = 0.00125 % per hour = 1.25e-05/h
 * … When the premium is small, F sits exactly on 1.25e-05 … Anomaly / z-score features must treat 1.25e-05 as the
 * neutral value, not 0." OKX USDT swaps use the same 0.01 %/8 h interest component, so one neutral serves both.
 */

/** Neutral funding, fraction per hour. */
export const NEUTRAL_FUNDING_PER_HOUR = 1.25e-5

/**
 * Dead band around neutral, fraction per hour: 10 % of the neutral rate. A rate within it "sits on neutral"
 * (S07 refuses; a settlement inside it is on neither side).
 */
export const FUNDING_DEAD_BAND_PER_HOUR = 1.25e-6

/** A settled rate per interval, normalised to per hour (OKX 8 h rate / 8; Hyperliquid hourly rate / 1). */
export function fundingPerHour(rate: number, intervalHours: number): number {
  return rate / intervalHours
}

/** −1, 0 or +1: the side of neutral beyond the dead band. */
export function fundingSide(ratePerHour: number): -1 | 0 | 1 {
  const dev = ratePerHour - NEUTRAL_FUNDING_PER_HOUR
  if (dev > FUNDING_DEAD_BAND_PER_HOUR) return 1
  if (dev < -FUNDING_DEAD_BAND_PER_HOUR) return -1
  return 0
}
