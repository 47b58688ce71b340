/**
 * S06_funding_anomaly (spec catalog: "Funding anomaly; entry-priced; free-allowance eligible; can be unresolvable
 * when no funding settlement falls in the window").
 * Event: a funding settlement in (t, t + 8 h] deviates from neutral (1.25e-05/h) by more than 2 trailing 30-day
 * standard deviations of the per-hour rate, the band fixed at decision time. Eight hours so an OKX 8-hourly series
 * has one settlement per window; Hyperliquid hourly has eight.
 * Spec, What the service does 3: "Unresolvable is a legal outcome and is never coerced into not."
 */
import type { FeatureSnapshot } from '../../pipeline/features/FeatureSnapshot.ts'
import type { Resolution } from '../QuestionModel.ts'
import type { ResolutionWindow } from '../../pipeline/features/ResolutionWindow.ts'
import { NEUTRAL_FUNDING_PER_HOUR } from '../../pipeline/features/funding.ts'
import { BinaryQuestion, type Frame } from './BinaryQuestion.ts'
import { feature, isoMinute, num } from './common.ts'
import { FUNDING_PHASE_FEATURES, fundingBaseline, fundingCandidates } from './fundingFrame.ts'
import { numberCondition } from './windowStats.ts'

export const S06_HORIZON_MS = 8 * 3_600_000
export const S06_Z_STAR = 2
const V1_FEATURES = ['abs_funding_z', 'funding_absz_mean_24h', 'funding_z']

function frame(s: FeatureSnapshot, horizonMs: number): Frame {
  const end = s.at + horizonMs
  const { sd, refusal } = fundingBaseline(s)
  const half = sd === null ? null : S06_Z_STAR * sd
  const conditions = {
    window_start: isoMinute(s.at),
    window_end: isoMinute(end),
    neutral_per_hour: NEUTRAL_FUNDING_PER_HOUR,
    baseline_sd_per_hour: sd,
    z_star: S06_Z_STAR,
    band_low_per_hour: half === null ? null : NEUTRAL_FUNDING_PER_HOUR - half,
    band_high_per_hour: half === null ? null : NEUTRAL_FUNDING_PER_HOUR + half,
  }
  const event =
    half === null
      ? `a ${s.asset} funding settlement between ${isoMinute(s.at)} and ${isoMinute(end)} deviates from neutral 1.25e-05/h by more than ${S06_Z_STAR} trailing 30-day sds`
      : `a ${s.asset} funding settlement between ${isoMinute(s.at)} and ${isoMinute(end)} deviates from neutral 1.25e-05/h by more than ${S06_Z_STAR} × the trailing 30-day sd ${num(sd!)}/h, i.e. falls outside [${num(NEUTRAL_FUNDING_PER_HOUR - half)}, ${num(NEUTRAL_FUNDING_PER_HOUR + half)}] per hour`
  if (refusal) return { event, conditions, x: null, refusal }
  const z = feature(s, 'funding_z')
  const absz24 = feature(s, 'funding_absz_mean_24h')
  if (z === null || absz24 === null) return { event, conditions, x: null, refusal: { refusal: 'insufficient_confidence', reason: 'features_unavailable' } }
  return { event, conditions, x: [Math.abs(z), absz24, z], refusal: null, candidates: { ...fundingCandidates(s), abs_funding_z: Math.abs(z), funding_absz_mean_24h: absz24, funding_z: z } }
}

function resolve(conditions: Record<string, unknown>, window: ResolutionWindow): Resolution {
  if (!window.fundingComplete) return { outcome: 'unresolvable', statistic: null, realized_choice: null, reason: 'funding_coverage_incomplete' }
  if (window.funding.length === 0) return { outcome: 'unresolvable', statistic: { settlements: 0 }, realized_choice: null, reason: 'no_settlement_in_window' }
  const lo = numberCondition(conditions, 'band_low_per_hour')
  const hi = numberCondition(conditions, 'band_high_per_hour')
  const neutral = numberCondition(conditions, 'neutral_per_hour')
  let maxDev = 0
  let outside = 0
  for (const f of window.funding) {
    maxDev = Math.max(maxDev, Math.abs(f.rate_per_hour - neutral))
    if (f.rate_per_hour < lo || f.rate_per_hour > hi) outside++
  }
  return {
    outcome: outside > 0 ? 'obtains' : 'not',
    statistic: { settlements: window.funding.length, outside_band: outside, max_abs_deviation_per_hour: maxDev },
    realized_choice: null,
    reason: null,
  }
}

export const S06_funding_anomaly = new BinaryQuestion({
  id: 'S06_funding_anomaly',
  label: 'Funding anomaly',
  horizonMs: S06_HORIZON_MS,
  entryTier: true,
  requiredInputs: ['funding'],
  featureNames: V1_FEATURES,
  featureSets: [
    { name: 'v1', features: V1_FEATURES },
    { name: 'persistence', features: [...V1_FEATURES, 'funding_dev_bps', 'log1p_same_side_streak', 'same_side_share_24h'] },
    { name: 'persistence+phase', features: [...V1_FEATURES, 'funding_dev_bps', 'log1p_same_side_streak', 'same_side_share_24h', ...FUNDING_PHASE_FEATURES] },
  ],
  frame,
  resolve,
})
