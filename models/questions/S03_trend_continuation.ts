/**
 * S03_trend_continuation (identifier chosen here; the spec leaves S03 unnamed — docs/decisions.md).
 * Event: over the next 4 h price moves further in the direction of the trailing 4 h return by more than one baseline
 * hour-sd × √4 × 0.5 (= 1 × baseline), i.e. the close 4 h later is beyond reference × exp(±baseline).
 * No trailing move (a 4 h return of exactly 0) has no direction: suppress, out of scope.
 */
import type { FeatureSnapshot } from '../../pipeline/features/FeatureSnapshot.ts'
import type { Resolution } from '../QuestionModel.ts'
import type { ResolutionWindow } from '../../pipeline/features/ResolutionWindow.ts'
import { BinaryQuestion, type Frame } from './BinaryQuestion.ts'
import { feature, isoMinute, num } from './common.ts'
import { CALENDAR_FEATURES, VOL_BASELINE_FEATURE, logRatio, returnInSd, volBaseline, volCandidates } from './volFrame.ts'
import { numberCondition, windowLastClose } from './windowStats.ts'

export const S03_HORIZON_MS = 4 * 3_600_000
/** Required move in baseline sds over the horizon (sd over 4 h = baseline × √4). */
export const S03_MOVE_SD = 0.5
const V1_FEATURES = ['ret4h_in_sd_signed', 'ret24h_in_sd_signed', 'ln_pk24h_over_base', 'ln_pk4h_over_base']

function frame(s: FeatureSnapshot, horizonMs: number): Frame {
  const end = s.at + horizonMs
  const { baseline, refusal } = volBaseline(s)
  const ret4 = feature(s, 'ret_4h')
  const ref = feature(s, 'price_last')
  const direction = ret4 === null || ret4 === 0 ? 0 : ret4 > 0 ? 1 : -1
  const move = baseline === null ? null : S03_MOVE_SD * baseline * Math.sqrt(horizonMs / 3_600_000)
  const target = ref !== null && move !== null && direction !== 0 ? ref * Math.exp(direction * move) : null
  const conditions = {
    window_start: isoMinute(s.at),
    window_end: isoMinute(end),
    direction: direction === 1 ? 'up' : direction === -1 ? 'down' : null,
    reference_price: ref,
    baseline_feature: VOL_BASELINE_FEATURE,
    baseline_per_hour: baseline,
    move_log: move,
    target_price: target,
  }
  const dirWord = direction === 1 ? 'at or above' : 'at or below'
  const event =
    target === null
      ? `${s.asset} continues its trailing 4 h trend by ${isoMinute(end)}`
      : `${s.asset} closes ${dirWord} ${num(target)} at ${isoMinute(end)} (reference ${num(ref!)} at ${isoMinute(s.at)}, move ${num(move!)} in log terms = ${S03_MOVE_SD} × 7-day baseline sd over 4 h)`
  if (refusal) return { event, conditions, x: null, refusal }
  if (ret4 === null || ref === null) return { event, conditions, x: null, refusal: { refusal: 'insufficient_confidence', reason: 'features_unavailable' } }
  if (direction === 0) return { event, conditions, x: null, refusal: { refusal: 'suppress', reason: 'no_trailing_trend' } }
  const b = baseline!
  const ret24 = feature(s, 'ret_24h')
  const x = [(direction * ret4) / (b * 2), ret24 === null ? null : (direction * ret24) / (b * Math.sqrt(24)), logRatio(s, 'pk_24h', b), logRatio(s, 'pk_4h', b)]
  if (x.some((v) => v === null)) return { event, conditions, x: null, refusal: { refusal: 'insufficient_confidence', reason: 'features_unavailable' } }
  const r1 = returnInSd(s, '1h', b)
  const candidates = { ...volCandidates(s, b, horizonMs), ret4h_in_sd_signed: x[0]!, ret24h_in_sd_signed: x[1]!, ret1h_in_sd_signed: r1 === null ? null : direction * r1 }
  return { event, conditions, x: x as number[], refusal: null, candidates }
}

function resolve(conditions: Record<string, unknown>, window: ResolutionWindow): Resolution {
  if (!window.complete) return { outcome: 'unresolvable', statistic: null, realized_choice: null, reason: 'bars_incomplete' }
  const target = numberCondition(conditions, 'target_price')
  const up = conditions.direction === 'up'
  const close = windowLastClose(window)!
  return {
    outcome: (up ? close >= target : close <= target) ? 'obtains' : 'not',
    statistic: { close, target_price: target, direction: up ? 'up' : 'down' },
    realized_choice: null,
    reason: null,
  }
}

export const S03_trend_continuation = new BinaryQuestion({
  id: 'S03_trend_continuation',
  label: 'Trend continuation',
  horizonMs: S03_HORIZON_MS,
  entryTier: false,
  requiredInputs: ['bars'],
  featureNames: V1_FEATURES,
  featureSets: [
    { name: 'v1', features: V1_FEATURES },
    { name: 'har', features: [...V1_FEATURES, 'ret1h_in_sd_signed', 'ln_pk1h_over_base', 'ln_pk30d_over_base'] },
    { name: 'har+calendar', features: [...V1_FEATURES, 'ret1h_in_sd_signed', 'ln_pk1h_over_base', 'ln_pk30d_over_base', ...CALENDAR_FEATURES] },
  ],
  frame,
  resolve,
})
