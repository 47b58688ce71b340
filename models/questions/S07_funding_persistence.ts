/**
 * S07_funding_persistence (spec catalog: "Funding persistence").
 * Event: the first funding settlement in (t, t + 8 h] stays on the same side of neutral (1.25e-05/h) as the current
 * one, beyond the dead band of 1.25e-06/h. Current funding inside the dead band has no side: suppress (out of
 * scope, reason 'neutral_funding_out_of_scope'). No settlement in the window: unresolvable, never 'not'.
 */
import type { FeatureSnapshot } from '../../pipeline/features/FeatureSnapshot.ts'
import type { Resolution } from '../QuestionModel.ts'
import type { ResolutionWindow } from '../../pipeline/features/ResolutionWindow.ts'
import { FUNDING_DEAD_BAND_PER_HOUR, NEUTRAL_FUNDING_PER_HOUR, fundingSide } from '../../pipeline/features/funding.ts'
import { BinaryQuestion, type Frame } from './BinaryQuestion.ts'
import { feature, isoMinute, num } from './common.ts'
import { FUNDING_PHASE_FEATURES, fundingBaseline, fundingCandidates } from './fundingFrame.ts'

export const S07_HORIZON_MS = 8 * 3_600_000
const V1_FEATURES = ['abs_funding_z', 'log1p_same_side_streak', 'same_side_share_24h', 'side']

function frame(s: FeatureSnapshot, horizonMs: number): Frame {
  const end = s.at + horizonMs
  const rate = feature(s, 'funding_rate_per_hour')
  const side = rate === null ? 0 : fundingSide(rate)
  const conditions = {
    window_start: isoMinute(s.at),
    window_end: isoMinute(end),
    neutral_per_hour: NEUTRAL_FUNDING_PER_HOUR,
    dead_band_per_hour: FUNDING_DEAD_BAND_PER_HOUR,
    current_rate_per_hour: rate,
    side: side === 1 ? 'above' : side === -1 ? 'below' : 'neutral',
    settlement: 'first_in_window',
  }
  const bound = side === 1 ? NEUTRAL_FUNDING_PER_HOUR + FUNDING_DEAD_BAND_PER_HOUR : NEUTRAL_FUNDING_PER_HOUR - FUNDING_DEAD_BAND_PER_HOUR
  const event =
    side === 0
      ? `the first ${s.asset} funding settlement between ${isoMinute(s.at)} and ${isoMinute(end)} stays on the current side of neutral 1.25e-05/h`
      : `the first ${s.asset} funding settlement between ${isoMinute(s.at)} and ${isoMinute(end)} stays ${side === 1 ? 'above' : 'below'} ${num(bound)}/h (neutral 1.25e-05/h ${side === 1 ? '+' : '−'} dead band 1.25e-06/h), as the current ${num(rate!)}/h is`
  if (rate === null) return { event, conditions, x: null, refusal: { refusal: 'insufficient_confidence', reason: 'features_unavailable' } }
  if (side === 0) return { event, conditions, x: null, refusal: { refusal: 'suppress', reason: 'neutral_funding_out_of_scope' } }
  const { refusal } = fundingBaseline(s)
  if (refusal) return { event, conditions, x: null, refusal }
  const z = feature(s, 'funding_z')
  const streak = feature(s, 'funding_same_side_streak')
  const share = feature(s, 'funding_same_side_share_24h')
  if (z === null || streak === null || share === null) return { event, conditions, x: null, refusal: { refusal: 'insufficient_confidence', reason: 'features_unavailable' } }
  return { event, conditions, x: [Math.abs(z), Math.log1p(streak), share, side], refusal: null, candidates: { ...fundingCandidates(s), abs_funding_z: Math.abs(z), side } }
}

function resolve(conditions: Record<string, unknown>, window: ResolutionWindow): Resolution {
  if (!window.fundingComplete) return { outcome: 'unresolvable', statistic: null, realized_choice: null, reason: 'funding_coverage_incomplete' }
  const first = window.funding[0]
  if (!first) return { outcome: 'unresolvable', statistic: { settlements: 0 }, realized_choice: null, reason: 'no_settlement_in_window' }
  const want = conditions.side === 'above' ? 1 : conditions.side === 'below' ? -1 : 0
  if (want === 0) return { outcome: 'unresolvable', statistic: null, realized_choice: null, reason: 'no_side_at_decision' }
  const got = fundingSide(first.rate_per_hour)
  return {
    outcome: got === want ? 'obtains' : 'not',
    statistic: { first_settlement_at: new Date(first.time).toISOString(), rate_per_hour: first.rate_per_hour, side: got === 1 ? 'above' : got === -1 ? 'below' : 'neutral' },
    realized_choice: null,
    reason: null,
  }
}

export const S07_funding_persistence = new BinaryQuestion({
  id: 'S07_funding_persistence',
  label: 'Funding persistence',
  horizonMs: S07_HORIZON_MS,
  entryTier: false,
  requiredInputs: ['funding'],
  featureNames: V1_FEATURES,
  featureSets: [
    { name: 'v1', features: V1_FEATURES },
    { name: 'level', features: [...V1_FEATURES, 'funding_z', 'funding_dev_bps', 'funding_absz_mean_24h'] },
    { name: 'level+phase', features: [...V1_FEATURES, 'funding_z', 'funding_dev_bps', 'funding_absz_mean_24h', ...FUNDING_PHASE_FEATURES] },
  ],
  frame,
  resolve,
})
