/** The volatility baseline shared by the bar-based questions (S01, S03, S04, S05), fixed at decision time. */
import type { FeatureSnapshot } from '../../pipeline/features/FeatureSnapshot.ts'
import type { Refusal } from './common.ts'
import { feature } from './common.ts'

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
