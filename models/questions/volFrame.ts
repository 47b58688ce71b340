/** The volatility baseline shared by the bar-based questions (S01, S03, S04, S05), fixed at decision time. */
import type { FeatureSnapshot } from '../../pipeline/features/FeatureSnapshot.ts'
import type { Refusal } from './common.ts'
import { feature } from './common.ts'
import { dailyHarmonics, weekendShare } from './seasonality.ts'

/** Trailing baseline: Parkinson vol per hour over the last 7 days (at least 84 hourly bars in them and 7 days of history; docs/methodology.md). */
export const VOL_BASELINE_FEATURE = 'pk_7d'
/** Ratios below this are floored before taking logs (a window with flat bars has zero range). */
const RATIO_FLOOR = 1e-3

export interface VolBaseline {
  baseline: number | null
  refusal: Refusal | null
}

export function volBaseline(snapshot: FeatureSnapshot): VolBaseline {
  const b = feature(snapshot, VOL_BASELINE_FEATURE)
  if (b === null) return { baseline: null, refusal: { refusal: 'insufficient_confidence', reason: 'baseline_unavailable' } }
  if (!(b > 0)) return { baseline: b, refusal: { refusal: 'insufficient_confidence', reason: 'baseline_degenerate' } }
  return { baseline: b, refusal: null }
}

/** ln(feature / baseline), floored; null when the feature is missing. */
export function logRatio(snapshot: FeatureSnapshot, name: string, baseline: number): number | null {
  const v = feature(snapshot, name)
  return v === null ? null : Math.log(Math.max(v / baseline, RATIO_FLOOR))
}

/**
 * Heterogeneous-horizon realized volatility (HAR-RV, Corsi 2009) against the weekly baseline: the last hour, 4 h, day
 * and month of Parkinson volatility, each as ln(window / pk_7d). Volatility is persistent on every horizon and the
 * model weighs them; the week is the baseline itself, so its own term is the denominator. The month's term is 0 (the
 * month taken as the week) until 30-day volatility exists (15 days of bars).
 */
export const HAR_FEATURES = ['ln_pk1h_over_base', 'ln_pk4h_over_base', 'ln_pk24h_over_base', 'ln_pk30d_over_base'] as const

/** The calendar features (models/questions/seasonality.ts): two daily harmonics of the decision hour and the window's weekend share. */
export const CALENDAR_FEATURES = ['tod_sin1', 'tod_cos1', 'tod_sin2', 'tod_cos2', 'weekend_share'] as const

/** The HAR and calendar candidates of a bar question's v2 model at baseline `b` (null where a window lacks bars). */
export function volCandidates(s: FeatureSnapshot, b: number, horizonMs: number): Record<string, number | null> {
  const [sin1, cos1, sin2, cos2] = dailyHarmonics(s.at)
  return {
    ln_pk1h_over_base: logRatio(s, 'pk_1h', b),
    ln_pk4h_over_base: logRatio(s, 'pk_4h', b),
    ln_pk24h_over_base: logRatio(s, 'pk_24h', b),
    // Before 15 days of bars there is no monthly term: the month is taken as the week (ln ratio 0), so a short
    // history keeps its decisions instead of losing every row to one missing feature.
    ln_pk30d_over_base: logRatio(s, 'pk_30d', b) ?? 0,
    tod_sin1: sin1,
    tod_cos1: cos1,
    tod_sin2: sin2,
    tod_cos2: cos2,
    weekend_share: weekendShare(s.at, horizonMs),
  }
}

/** A trailing log return in baseline sds over its own window (√hours × b); null when missing. */
export function returnInSd(s: FeatureSnapshot, window: '1h' | '4h' | '24h', b: number): number | null {
  const r = feature(s, `ret_${window}`)
  const hours = window === '1h' ? 1 : window === '4h' ? 4 : 24
  return r === null ? null : r / (b * Math.sqrt(hours))
}
