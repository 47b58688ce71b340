/** The funding baseline shared by S06 and S07: the trailing 30-day distribution of per-hour rates, fixed at decision time. */
import type { FeatureSnapshot } from '../../pipeline/features/FeatureSnapshot.ts'
import { feature, type Refusal } from './common.ts'
import { fundingPhase } from './seasonality.ts'

/** Settlements the 30-day distribution needs before its sd means anything (a week of OKX 8 h settlements: 21). */
export const FUNDING_BASELINE_MIN_SETTLEMENTS = 21

export function fundingBaseline(s: FeatureSnapshot): { sd: number | null; refusal: Refusal | null } {
  const n = feature(s, 'funding_n_30d')
  const sd = feature(s, 'funding_sd_30d')
  if (n === null || sd === null || n < FUNDING_BASELINE_MIN_SETTLEMENTS) return { sd, refusal: { refusal: 'insufficient_confidence', reason: 'baseline_unavailable' } }
  if (!(sd > 0)) return { sd, refusal: { refusal: 'insufficient_confidence', reason: 'baseline_degenerate' } }
  return { sd, refusal: null }
}

/** The funding cycle's phase at the decision (models/questions/seasonality.ts fundingPhase). */
export const FUNDING_PHASE_FEATURES = ['funding_phase_sin', 'funding_phase_cos'] as const

/**
 * The funding candidates of S06/S07's v2 models: the level (deviation from neutral in bps per hour), the z-score and
 * its 24 h mean magnitude, persistence (the same-side streak and 24 h share) and where the decision sits in the
 * settlement cycle. Basis (mark against index) is not among them: no recorded tape carries a mark and an index price
 * beside its funding (docs/decisions.md).
 */
export function fundingCandidates(s: FeatureSnapshot): Record<string, number | null> {
  const dev = feature(s, 'funding_dev_per_hour')
  const streak = feature(s, 'funding_same_side_streak')
  const interval = feature(s, 'funding_interval_hours')
  const [sin, cos] = interval !== null && interval > 0 ? fundingPhase(s.at, interval) : [null, null]
  return {
    funding_z: feature(s, 'funding_z'),
    funding_dev_bps: dev === null ? null : dev * 1e4,
    funding_absz_mean_24h: feature(s, 'funding_absz_mean_24h'),
    log1p_same_side_streak: streak === null ? null : Math.log1p(streak),
    same_side_share_24h: feature(s, 'funding_same_side_share_24h'),
    funding_phase_sin: sin,
    funding_phase_cos: cos,
  }
}
