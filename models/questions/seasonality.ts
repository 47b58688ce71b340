/**
 * Calendar features of a decision instant, for the v2 models (docs/methodology.md, "Models v2").
 *
 * Why: crypto volatility and volume have a strong intraday cycle (the US and European sessions, the 00:00/08:00/16:00
 * UTC funding settlements) and a weekend dip, so the hour a 1–4 h window starts at carries information a trailing
 * volatility ratio does not. The features are a deterministic function of the decision time alone (UTC), so a replay
 * reproduces them bit for bit and they need no warm-up.
 */
import { HOUR_MS, DAY_MS } from '../../common/time.ts'
const TAU = 2 * Math.PI

/** Hour of day (UTC, fractional) of an epoch-ms instant. */
export function hourOfDay(at: number): number {
  return (((at % DAY_MS) + DAY_MS) % DAY_MS) / HOUR_MS
}

/**
 * The first two harmonics of the daily cycle at the instant: [sin 2πh/24, cos 2πh/24, sin 4πh/24, cos 4πh/24]. Two
 * harmonics let a logistic model place a morning and an evening peak; more would start fitting noise on a year of
 * hourly decisions.
 */
export function dailyHarmonics(at: number): [number, number, number, number] {
  const a = (TAU * hourOfDay(at)) / 24
  return [Math.sin(a), Math.cos(a), Math.sin(2 * a), Math.cos(2 * a)]
}

/** Share of the window [at, at + horizonMs) that falls on a Saturday or Sunday (UTC), in [0, 1]. */
export function weekendShare(at: number, horizonMs: number): number {
  if (!(horizonMs > 0)) return 0
  let weekend = 0
  let t = at
  const end = at + horizonMs
  while (t < end) {
    const dayStart = Math.floor(t / DAY_MS) * DAY_MS
    const next = Math.min(end, dayStart + DAY_MS)
    const weekday = new Date(dayStart).getUTCDay()
    if (weekday === 0 || weekday === 6) weekend += next - t
    t = next
  }
  return weekend / horizonMs
}

/**
 * Where the instant sits in a funding cycle of `intervalHours` settling on UTC multiples of the interval (OKX 8 h at
 * 00/08/16, Hyperliquid hourly): [sin, cos] of the phase, so 0 h and 7.9 h after a settlement are neighbours.
 */
export function fundingPhase(at: number, intervalHours: number): [number, number] {
  const period = intervalHours * HOUR_MS
  const phase = (((at % period) + period) % period) / period
  return [Math.sin(TAU * phase), Math.cos(TAU * phase)]
}
