/**
 * The sale gate (issue 12, item 4): "A question that cannot beat its baseline with confidence is not sold … Selling
 * noise is worse than refusing." Developers' guide: "A probability is sold only when it beats a plain baseline on data
 * the model never saw, with confidence."
 *
 * Measured at fit time on the training span only (never on a test window): the fit's usable rows in time order are cut
 * at FIT_SHARE; the whole method (feature and penalty choice, calibration) is refitted on the rows whose windows closed
 * before the cut and scored on the rows after it, the holdout. On the holdout, against the base rate of the rows before
 * the cut:
 *   - fewer than GATE_MIN_SCORED scored decisions     → blocked, holdout_below_floor
 *   - BSS's day-block bootstrap 95 % lower bound ≤ 0   → blocked, no_skill_with_confidence
 *   - BSS below the one-feature baseline's BSS         → blocked, loses_to_one_feature_baseline
 *   - otherwise                                        → sold
 * The verdict is part of the fitted parameters (so it is content-hashed into fitted_version and a replay refuses
 * exactly as the original did), a blocked fit refuses every decision with insufficient_confidence and reason
 * `not_sold:<reason>`, and GET /v1/signals shows the verdict with its figures.
 */
import { blockBootstrapSkillCi, DEFAULT_SEED } from './verification/bootstrap.ts'
import { isoMs } from '../ingest/Tick.ts'
import { FIT_SHARE, TRAIN_FLOOR } from './questions/common.ts'
import { DAY_MS } from '../common/time.ts'

export const GATE_MIN_SCORED = 100
/** Resamples of the gate's interval: fewer than `svc eval`'s 2,000, as it runs at every fit; the seed is the same. */
export const GATE_RESAMPLES = 1000
export const GATE_REASONS = ['holdout_below_floor', 'no_skill_with_confidence', 'loses_to_one_feature_baseline'] as const
export type GateReason = (typeof GATE_REASONS)[number]


/** One scored holdout decision: the model's, the base rate's and the one-feature baseline's Brier scores. */
export interface GateRow {
  at: number
  model: number
  reference: number
  oneFeature: number
}

/** The verdict as it is stored in fitted params and shown by /v1/signals (JSON-safe). */
export interface SaleGate {
  status: 'sold' | 'blocked'
  reason: GateReason | null
  /** First decision time of the holdout. */
  holdout_start: string | null
  n_train: number
  n_scored: number
  brier: number | null
  reference_brier: number | null
  bss: number | null
  /** Day-block bootstrap 95 % interval of the BSS: [low, high]. */
  bss_ci: [number, number] | null
  one_feature_bss: number | null
  resamples: number
}

/**
 * The gate's cut of a fit's usable rows (time-ordered): the holdout is the later (1 − FIT_SHARE) of them, the method is
 * refitted on the rows before it whose windows closed before its first decision (a one-horizon embargo), split again
 * FIT_SHARE / rest into fit and calibration slices. `enough` is false when that earlier span is below TRAIN_FLOOR or
 * there is no holdout: the gate then blocks with holdout_below_floor, reporting the span's size.
 */
export function gateSplit<T extends { at: number }>(rows: readonly T[], horizonMs: number): { fit: T[]; cal: T[]; train: T[]; holdout: T[]; enough: boolean } {
  const cut = Math.floor(rows.length * FIT_SHARE)
  const holdout = rows.slice(cut)
  const cutAt = holdout[0]?.at ?? Infinity
  const train = rows.slice(0, cut).filter((r) => r.at + horizonMs <= cutAt)
  const nFit = Math.floor(train.length * FIT_SHARE)
  return { fit: train.slice(0, nFit), cal: train.slice(nFit), train, holdout, enough: train.length >= TRAIN_FLOOR && holdout.length > 0 }
}

const round = (x: number | null): number | null => (x === null ? null : Number(x.toPrecision(12)))

/** The verdict on scored holdout rows (see the rules above). */
export function saleGateOf(rows: readonly GateRow[], nTrain: number): SaleGate {
  const n = rows.length
  let model = 0
  let reference = 0
  let oneFeature = 0
  let start = Infinity
  for (const r of rows) {
    model += r.model
    reference += r.reference
    oneFeature += r.oneFeature
    start = Math.min(start, r.at)
  }
  const bss = n > 0 && reference > 0 ? 1 - model / reference : null
  const ci = n > 1 ? blockBootstrapSkillCi(rows, (r) => Math.floor(r.at / DAY_MS), { seed: DEFAULT_SEED, resamples: GATE_RESAMPLES }) : null
  const oneFeatureBss = n > 0 && reference > 0 ? 1 - oneFeature / reference : null
  let reason: GateReason | null = null
  if (n < GATE_MIN_SCORED) reason = 'holdout_below_floor'
  else if (!ci || !(ci.lower > 0)) reason = 'no_skill_with_confidence'
  else if (oneFeatureBss !== null && bss !== null && bss < oneFeatureBss) reason = 'loses_to_one_feature_baseline'
  return {
    status: reason === null ? 'sold' : 'blocked',
    reason,
    holdout_start: n > 0 ? isoMs(start) : null,
    n_train: nTrain,
    n_scored: n,
    brier: n > 0 ? round(model / n) : null,
    reference_brier: n > 0 ? round(reference / n) : null,
    bss: round(bss),
    bss_ci: ci ? [round(ci.lower)!, round(ci.upper)!] : null,
    one_feature_bss: round(oneFeatureBss),
    resamples: GATE_RESAMPLES,
  }
}

/** The one-line measured reason a blocked question shows, e.g. for /v1/signals. */
export function gateSummary(g: SaleGate): string {
  const f = (x: number | null) => (x === null ? 'n/a' : x.toFixed(3))
  const ci = g.bss_ci ? ` [${f(g.bss_ci[0])}, ${f(g.bss_ci[1])}]` : ''
  return `holdout from ${g.holdout_start ?? 'n/a'}: ${g.n_scored} scored decisions, BSS ${f(g.bss)}${ci} vs base rate, one-feature baseline BSS ${f(g.one_feature_bss)}`
}
