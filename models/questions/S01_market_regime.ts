/**
 * S01_market_regime (spec catalog: "Market regime; distribution over regime classes; horizon 60m; entry-priced;
 * free-allowance eligible"). The record's probability is the modal class's (QuestionModel contract).
 *
 * Classes over (t, t + 60 m], thresholds fixed at decision time from the trailing 7-day baseline σ (Parkinson vol per
 * hour, pk_7d):
 *   trend_up       60 m log return r > +1.0 σ
 *   trend_down     r < −1.0 σ
 *   range_volatile |r| ≤ 1.0 σ and the window's Parkinson vol per hour > 1.0 σ
 *   range_quiet    otherwise
 *
 * Method (docs/methodology.md): conditional class frequencies over a 3 × 3 grid of two decision-time features
 * (ln(pk_24h/σ) and the trailing 4 h return in σ units; tercile edges from the fit slice), Dirichlet-smoothed toward the
 * fit slice's class frequencies with α = 8; then a calibration step on the later, disjoint 30 % of the training
 * samples: the shrinkage weight λ ∈ {0, 0.05, …, 1} toward the class frequencies that minimises the multi-class
 * Brier score there (ties → the smaller λ). Deterministic.
 */
import type { FeatureSnapshot } from '../../pipeline/features/FeatureSnapshot.ts'
import type { FittedParams, LabelledSample, ModelOutput, QuestionModel, Resolution } from '../QuestionModel.ts'
import type { ResolutionWindow } from '../../pipeline/features/ResolutionWindow.ts'
import { CALIBRATION_BAND_FLOOR } from '../verification/calibrationReport.ts'
import { quantileSorted } from '../verification/bootstrap.ts'
import { evidenceConfidence } from '../confidence.ts'
import { jcsSha256 } from '../../common/hash.ts'
import { FIT_SHARE, TRAIN_FLOOR, feature, inputRefusal, isoMinute, num, refusal, timeOrdered, trainedOn } from './common.ts'
import { VOL_BASELINE_FEATURE, logRatio, volBaseline } from './volFrame.ts'
import { numberCondition, windowLastClose, windowParkinsonPerHour } from './windowStats.ts'

export const S01_CLASSES = ['trend_up', 'trend_down', 'range_quiet', 'range_volatile'] as const
export type RegimeClass = (typeof S01_CLASSES)[number]
export const S01_HORIZON_MS = 3_600_000
export const S01_TREND_SD = 1.0
export const S01_VOL_K = 1.0
export const S01_ALPHA = 8
export const S01_METHOD = 'grid3x3-dirichlet+shrink'
const LAMBDA_GRID = Array.from({ length: 21 }, (_, i) => i / 20)

interface Cell {
  counts: number[]
  n: number
  dist: number[]
}

export interface RegimeParams {
  status: 'ok' | 'insufficient'
  method: typeof S01_METHOD
  feature_names: string[]
  train_floor: number
  usable: number
  n_fit: number
  n_cal: number
  alpha: number
  edges: number[][]
  prior: number[]
  cells: Cell[]
  lambda: number
  cal_counts: number[]
  class_counts: number[]
}

interface Frame {
  event: string
  conditions: Record<string, unknown>
  x: number[] | null
  refusal: { refusal: 'stale_input' | 'insufficient_confidence' | 'suppress'; reason: string } | null
}

function frame(s: FeatureSnapshot, horizonMs: number): Frame {
  const end = s.at + horizonMs
  const { baseline, refusal: baseRefusal } = volBaseline(s)
  const ref = feature(s, 'price_last')
  const trend = baseline === null ? null : S01_TREND_SD * baseline * Math.sqrt(horizonMs / 3_600_000)
  const vol = baseline === null ? null : S01_VOL_K * baseline
  const conditions: Record<string, unknown> = {
    window_start: isoMinute(s.at),
    window_end: isoMinute(end),
    reference_price: ref,
    baseline_feature: VOL_BASELINE_FEATURE,
    baseline_per_hour: baseline,
    trend_threshold_log: trend,
    vol_threshold_per_hour: vol,
    estimator: 'parkinson_per_hour',
    classes: [...S01_CLASSES],
  }
  const event =
    trend === null
      ? `${s.asset} market regime from ${isoMinute(s.at)} to ${isoMinute(end)}`
      : `${s.asset} market regime from ${isoMinute(s.at)} to ${isoMinute(end)}: trend_up if the log return from ${num(ref ?? NaN)} exceeds +${num(trend)}, trend_down if below −${num(trend)}, else range_volatile if realized vol (Parkinson) exceeds ${num(vol!)}/h, else range_quiet`
  if (baseRefusal) return { event, conditions, x: null, refusal: baseRefusal }
  const b = baseline!
  const r4 = feature(s, 'ret_4h')
  const x = [logRatio(s, 'pk_24h', b), r4 === null ? null : r4 / (b * 2)]
  if (ref === null || x.some((v) => v === null)) return { event, conditions, x: null, refusal: { refusal: 'insufficient_confidence', reason: 'features_unavailable' } }
  return { event, conditions, x: x as number[], refusal: null }
}

function tercile(v: number, edges: readonly number[]): number {
  return v <= edges[0]! ? 0 : v <= edges[1]! ? 1 : 2
}

function cellOf(x: readonly number[], edges: readonly number[][]): number {
  return tercile(x[0]!, edges[0]!) * 3 + tercile(x[1]!, edges[1]!)
}

function mix(cell: readonly number[], prior: readonly number[], lambda: number): number[] {
  return cell.map((p, k) => (1 - lambda) * p + lambda * prior[k]!)
}

/** Multi-class Brier of one forecast: Σ_k (p_k − 1[k = realized])². */
export function multiBrier(dist: readonly number[], realized: number): number {
  let s = 0
  for (let k = 0; k < dist.length; k++) s += (dist[k]! - (k === realized ? 1 : 0)) ** 2
  return s
}

export class MarketRegimeQuestion implements QuestionModel {
  readonly id = 'S01_market_regime' as const
  readonly label = 'Market regime'
  readonly answer = 'choice' as const
  readonly scope = 'market' as const
  readonly horizonMs = S01_HORIZON_MS
  readonly horizon = '60m'
  readonly entryTier = true
  readonly classes = S01_CLASSES
  readonly sold = true

  private row(s: LabelledSample): { x: number[]; y: number } | null {
    const y = S01_CLASSES.indexOf(s.resolution.realized_choice as RegimeClass)
    if (s.resolution.outcome === 'unresolvable' || y < 0) return null
    if (inputRefusal(s.snapshot, ['bars'])) return null
    const f = frame(s.snapshot, this.horizonMs)
    return f.refusal || !f.x ? null : { x: f.x, y }
  }

  fit(samples: readonly LabelledSample[]): FittedParams {
    const used: LabelledSample[] = []
    const rows: { x: number[]; y: number }[] = []
    for (const s of timeOrdered(samples)) {
      const r = this.row(s)
      if (r) {
        used.push(s)
        rows.push(r)
      }
    }
    const K = S01_CLASSES.length
    const classCounts = new Array<number>(K).fill(0)
    for (const r of rows) classCounts[r.y]!++
    const params: RegimeParams = {
      status: 'insufficient',
      method: S01_METHOD,
      feature_names: ['ln_pk24h_over_base', 'ret4h_in_sd'],
      train_floor: TRAIN_FLOOR,
      usable: rows.length,
      n_fit: 0,
      n_cal: 0,
      alpha: S01_ALPHA,
      edges: [],
      prior: [],
      cells: [],
      lambda: 0,
      cal_counts: [],
      class_counts: classCounts,
    }
    if (rows.length >= TRAIN_FLOOR) {
      const nFit = Math.floor(rows.length * FIT_SHARE)
      const fitRows = rows.slice(0, nFit)
      const calRows = rows.slice(nFit)
      const edges = [0, 1].map((j) => {
        const sorted = fitRows.map((r) => r.x[j]!).sort((a, b) => a - b)
        return [quantileSorted(sorted, 1 / 3), quantileSorted(sorted, 2 / 3)]
      })
      const prior = new Array<number>(K).fill(0)
      for (const r of fitRows) prior[r.y]! += 1 / fitRows.length
      const cells: Cell[] = Array.from({ length: 9 }, () => ({ counts: new Array<number>(K).fill(0), n: 0, dist: [] }))
      for (const r of fitRows) {
        const c = cells[cellOf(r.x, edges)]!
        c.counts[r.y]!++
        c.n++
      }
      for (const c of cells) c.dist = c.counts.map((k, i) => (k + S01_ALPHA * prior[i]!) / (c.n + S01_ALPHA))
      const calCounts = new Array<number>(9).fill(0)
      for (const r of calRows) calCounts[cellOf(r.x, edges)]!++
      let best = { lambda: 0, score: Infinity }
      for (const lambda of LAMBDA_GRID) {
        let score = 0
        for (const r of calRows) score += multiBrier(mix(cells[cellOf(r.x, edges)]!.dist, prior, lambda), r.y)
        if (score < best.score - 1e-12) best = { lambda, score }
      }
      Object.assign(params, { status: 'ok', n_fit: fitRows.length, n_cal: calRows.length, edges, prior, cells, lambda: best.lambda, cal_counts: calCounts })
    }
    const p = params as unknown as Record<string, unknown>
    return { question_id: this.id, version: `${S01_METHOD}@${jcsSha256(p).slice(0, 12)}`, trained_on: trainedOn(used, this.horizonMs, null), params: p }
  }

  evaluate(snapshot: FeatureSnapshot, fitted: FittedParams | null): ModelOutput {
    const f = frame(snapshot, this.horizonMs)
    const input = inputRefusal(snapshot, ['bars'])
    if (input) return refusal(input, f.event, this.horizon, f.conditions)
    if (f.refusal || !f.x) return refusal(f.refusal ?? { refusal: 'insufficient_confidence', reason: 'features_unavailable' }, f.event, this.horizon, f.conditions)
    if (!fitted) return refusal({ refusal: 'insufficient_confidence', reason: 'model_not_fitted' }, f.event, this.horizon, f.conditions)
    if (fitted.question_id !== this.id) throw new RangeError(`fitted params of ${fitted.question_id} given to ${this.id}`)
    const p = fitted.params as unknown as RegimeParams
    if (p.status !== 'ok') return refusal({ refusal: 'insufficient_confidence', reason: 'sample_below_floor' }, f.event, this.horizon, f.conditions)
    const cell = cellOf(f.x, p.edges)
    const band = p.cal_counts[cell]!
    if (band < CALIBRATION_BAND_FLOOR) return refusal({ refusal: 'insufficient_confidence', reason: 'calibration_band_below_floor' }, f.event, this.horizon, f.conditions)
    const dist = mix(p.cells[cell]!.dist, p.prior, p.lambda)
    let modal = 0
    for (let k = 1; k < dist.length; k++) if (dist[k]! > dist[modal]!) modal = k
    const distribution = Object.fromEntries(S01_CLASSES.map((c, k) => [c, dist[k]!]))
    return {
      kind: 'claim',
      event: f.event,
      horizon: this.horizon,
      conditions: { ...f.conditions, predicted_class: S01_CLASSES[modal] },
      probability: dist[modal]!,
      distribution,
      confidence: evidenceConfidence(p.n_fit, band),
      evidence: { method: p.method, fitted_version: fitted.version, n_fit: p.n_fit, n_cal: p.n_cal, cell, cell_fit_n: p.cells[cell]!.n, cell_cal_n: band, lambda: p.lambda },
    }
  }

  /**
   * The realized class is always measured; the outcome grades the claim's modal class (conditions.predicted_class):
   * obtains when the realized class is the predicted one. Conditions without a predicted class (a refusal's) have
   * nothing to grade: outcome 'not' with reason 'no_predicted_class', realized_choice still set.
   */
  resolve(conditions: Record<string, unknown>, window: ResolutionWindow): Resolution {
    if (!window.complete) return { outcome: 'unresolvable', statistic: null, realized_choice: null, reason: 'bars_incomplete' }
    const ref = numberCondition(conditions, 'reference_price')
    const trend = numberCondition(conditions, 'trend_threshold_log')
    const vol = numberCondition(conditions, 'vol_threshold_per_hour')
    const r = Math.log(windowLastClose(window)! / ref)
    const v = windowParkinsonPerHour(window)!
    const realized: RegimeClass = r > trend ? 'trend_up' : r < -trend ? 'trend_down' : v > vol ? 'range_volatile' : 'range_quiet'
    const predicted = typeof conditions.predicted_class === 'string' ? conditions.predicted_class : null
    return {
      outcome: predicted !== null && predicted === realized ? 'obtains' : 'not',
      statistic: { log_return: r, realized_vol_per_hour: v, realized_class: realized },
      realized_choice: realized,
      reason: predicted === null ? 'no_predicted_class' : null,
    }
  }
}

export const S01_market_regime = new MarketRegimeQuestion()
