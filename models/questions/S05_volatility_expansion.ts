/**
 * S05_volatility_expansion (spec catalog: "Volatility expansion; entry-priced; free-allowance eligible").
 * Event: realized volatility (Parkinson, per hour) over the next 4 h exceeds 1.5 × the trailing 7-day baseline
 * fixed at decision time. Four hours so hourly bars give four ranges; 1.5 × so the event is neither rare nor common.
 */
import type { FeatureSnapshot } from '../../pipeline/features/FeatureSnapshot.ts'
import type { Resolution } from '../QuestionModel.ts'
import type { ResolutionWindow } from '../../pipeline/features/ResolutionWindow.ts'
import { BinaryQuestion, type Frame } from './BinaryQuestion.ts'
import { feature, isoMinute, num } from './common.ts'
import { CALENDAR_FEATURES, VOL_BASELINE_FEATURE, logRatio, returnInSd, volBaseline, volCandidates } from './volFrame.ts'
import { numberCondition, windowParkinsonPerHour } from './windowStats.ts'

export const S05_HORIZON_MS = 4 * 3_600_000
export const S05_K = 1.5
const V1_FEATURES = ['ln_pk24h_over_base', 'ln_pk4h_over_base', 'ln_pk1h_over_base', 'abs_ret24h_in_sd']

function frame(s: FeatureSnapshot, horizonMs: number): Frame {
  const end = s.at + horizonMs
  const { baseline, refusal } = volBaseline(s)
  const b = baseline ?? NaN
  const conditions = {
    window_start: isoMinute(s.at),
    window_end: isoMinute(end),
    estimator: 'parkinson_per_hour',
    baseline_feature: VOL_BASELINE_FEATURE,
    baseline_per_hour: baseline,
    k: S05_K,
    threshold_per_hour: baseline === null ? null : S05_K * b,
  }
  const event =
    baseline === null
      ? `${s.asset} realized volatility (Parkinson, per hour) from ${isoMinute(s.at)} to ${isoMinute(end)} exceeds ${S05_K} × its trailing 7-day baseline`
      : `${s.asset} realized volatility (Parkinson, per hour) from ${isoMinute(s.at)} to ${isoMinute(end)} exceeds ${S05_K} × its trailing 7-day baseline of ${num(b)}/h, i.e. ${num(S05_K * b)}/h`
  if (refusal) return { event, conditions, x: null, refusal }
  const x = [logRatio(s, 'pk_24h', b), logRatio(s, 'pk_4h', b), logRatio(s, 'pk_1h', b), feature(s, 'ret_24h')]
  if (x.some((v) => v === null)) return { event, conditions, x: null, refusal: { refusal: 'insufficient_confidence', reason: 'features_unavailable' } }
  x[3] = Math.abs(x[3]!) / (b * Math.sqrt(24))
  const r4 = returnInSd(s, '4h', b)
  const candidates = { ...volCandidates(s, b, horizonMs), abs_ret24h_in_sd: x[3], abs_ret4h_in_sd: r4 === null ? null : Math.abs(r4) }
  return { event, conditions, x: x as number[], refusal: null, candidates }
}

function resolve(conditions: Record<string, unknown>, window: ResolutionWindow): Resolution {
  if (!window.complete) return { outcome: 'unresolvable', statistic: null, realized_choice: null, reason: 'bars_incomplete' }
  const threshold = numberCondition(conditions, 'threshold_per_hour')
  const v = windowParkinsonPerHour(window)!
  return {
    outcome: v > threshold ? 'obtains' : 'not',
    statistic: { realized_vol_per_hour: v, threshold_per_hour: threshold, bars: window.bars.length },
    realized_choice: null,
    reason: null,
  }
}

export const S05_volatility_expansion = new BinaryQuestion({
  id: 'S05_volatility_expansion',
  label: 'Volatility expansion',
  horizonMs: S05_HORIZON_MS,
  entryTier: true,
  requiredInputs: ['bars'],
  featureNames: V1_FEATURES,
  featureSets: [
    { name: 'v1', features: V1_FEATURES },
    { name: 'har', features: [...V1_FEATURES, 'ln_pk30d_over_base', 'abs_ret4h_in_sd'] },
    { name: 'har+calendar', features: [...V1_FEATURES, 'ln_pk30d_over_base', 'abs_ret4h_in_sd', ...CALENDAR_FEATURES] },
  ],
  frame,
  resolve,
})
