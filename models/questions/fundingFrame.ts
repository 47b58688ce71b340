/** The funding baseline shared by S06 and S07: the trailing 30-day distribution of per-hour rates, fixed at decision time. */
import type { FeatureSnapshot } from '../../pipeline/features/FeatureSnapshot.ts'
import { feature, type Refusal } from './common.ts'

/** Settlements the 30-day distribution needs before its sd means anything (a week of OKX 8 h settlements: 21). */
export const FUNDING_BASELINE_MIN_SETTLEMENTS = 21

export function fundingBaseline(s: FeatureSnapshot): { sd: number | null; refusal: Refusal | null } {
  const n = feature(s, 'funding_n_30d')
  const sd = feature(s, 'funding_sd_30d')
  if (n === null || sd === null || n < FUNDING_BASELINE_MIN_SETTLEMENTS) return { sd, refusal: { refusal: 'insufficient_confidence', reason: 'baseline_unavailable' } }
  if (!(sd > 0)) return { sd, refusal: { refusal: 'insufficient_confidence', reason: 'baseline_degenerate' } }
  return { sd, refusal: null }
}
