/**
 * S04_drawdown_risk (identifier chosen here; the spec leaves S04 unnamed — docs/decisions.md).
 * Event: within the next 4 h some bar trades below reference × exp(−1.5 × baseline × √4), a drawdown of 1.5 baseline
 * sds over the horizon.
 */
import type { FeatureSnapshot } from '../../pipeline/features/FeatureSnapshot.ts'
import type { Resolution } from '../QuestionModel.ts'
import type { ResolutionWindow } from '../../pipeline/features/ResolutionWindow.ts'
import { BinaryQuestion, type Frame } from './BinaryQuestion.ts'
import { feature, isoMinute, num } from './common.ts'
import { CALENDAR_FEATURES, VOL_BASELINE_FEATURE, logRatio, returnInSd, volBaseline, volCandidates } from './volFrame.ts'
import { numberCondition, windowMinLow } from './windowStats.ts'

export const S04_HORIZON_MS = 4 * 3_600_000
export const S04_DRAWDOWN_SD = 1.5
const V1_FEATURES = ['ln_pk24h_over_base', 'ln_pk4h_over_base', 'ret24h_in_sd', 'ret4h_in_sd']

function frame(s: FeatureSnapshot, horizonMs: number): Frame {
  const end = s.at + horizonMs
  const { baseline, refusal } = volBaseline(s)
  const ref = feature(s, 'price_last')
  const depth = baseline === null ? null : S04_DRAWDOWN_SD * baseline * Math.sqrt(horizonMs / 3_600_000)
  const floor = ref !== null && depth !== null ? ref * Math.exp(-depth) : null
  const conditions = {
    window_start: isoMinute(s.at),
    window_end: isoMinute(end),
    reference_price: ref,
    baseline_feature: VOL_BASELINE_FEATURE,
    baseline_per_hour: baseline,
    drawdown_log: depth,
    floor_price: floor,
  }
  const event =
    floor === null
      ? `${s.asset} trades ${S04_DRAWDOWN_SD} baseline sds below its reference between ${isoMinute(s.at)} and ${isoMinute(end)}`
      : `${s.asset} trades below ${num(floor)} between ${isoMinute(s.at)} and ${isoMinute(end)} (reference ${num(ref!)}, drawdown ${num(depth!)} in log terms = ${S04_DRAWDOWN_SD} × 7-day baseline sd over 4 h)`
  if (refusal) return { event, conditions, x: null, refusal }
  const b = baseline!
  const r24 = feature(s, 'ret_24h')
  const r4 = feature(s, 'ret_4h')
  const x = [logRatio(s, 'pk_24h', b), logRatio(s, 'pk_4h', b), r24 === null ? null : r24 / (b * Math.sqrt(24)), r4 === null ? null : r4 / (b * 2)]
  if (ref === null || x.some((v) => v === null)) return { event, conditions, x: null, refusal: { refusal: 'insufficient_confidence', reason: 'features_unavailable' } }
  const candidates = { ...volCandidates(s, b, horizonMs), ret24h_in_sd: x[2]!, ret4h_in_sd: x[3]!, ret1h_in_sd: returnInSd(s, '1h', b) }
  return { event, conditions, x: x as number[], refusal: null, candidates }
}

function resolve(conditions: Record<string, unknown>, window: ResolutionWindow): Resolution {
  if (!window.complete) return { outcome: 'unresolvable', statistic: null, realized_choice: null, reason: 'bars_incomplete' }
  const floor = numberCondition(conditions, 'floor_price')
  const low = windowMinLow(window)!
  return { outcome: low < floor ? 'obtains' : 'not', statistic: { min_low: low, floor_price: floor }, realized_choice: null, reason: null }
}

export const S04_drawdown_risk = new BinaryQuestion({
  id: 'S04_drawdown_risk',
  label: 'Drawdown risk',
  horizonMs: S04_HORIZON_MS,
  entryTier: false,
  requiredInputs: ['bars'],
  featureNames: V1_FEATURES,
  featureSets: [
    { name: 'v1', features: V1_FEATURES },
    { name: 'har', features: [...V1_FEATURES, 'ln_pk1h_over_base', 'ln_pk30d_over_base', 'ret1h_in_sd'] },
    { name: 'har+calendar', features: [...V1_FEATURES, 'ln_pk1h_over_base', 'ln_pk30d_over_base', 'ret1h_in_sd', ...CALENDAR_FEATURES] },
  ],
  frame,
  resolve,
})
