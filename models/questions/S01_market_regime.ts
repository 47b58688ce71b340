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
 *
 * Method v2 (jev-2.0.0, live; same event, conditions and resolution as v1, which stays for replay): an
 * L2-penalised multinomial (softmax) regression on standardised continuous features (models/fit/multinomial.ts,
 * Newton on the full Hessian, reference class range_quiet pinned at 0, intercepts unpenalised). Candidate features,
 * in three nested sets fixed a priori (S01_FEATURE_SETS_V2): HAR-style volatility ratios ln(pk_1h/σ), ln(pk_4h/σ),
 * ln(pk_24h/σ) against the weekly baseline σ = pk_7d (Corsi 2009's heterogeneous horizons: hour, 4 h and day against
 * the week); then the 1 h, 4 h and 24 h log returns in σ·√hours units and their absolute values; then the two daily
 * harmonics of the UTC hour and the window's weekend share (models/questions/seasonality.ts). No pk_30d: it needs 30
 * days of history, which the shortest tapes (35 days) never give a training decision. The feature set and the penalty
 * λ ∈ S01_LAMBDA_GRID_V2 are chosen together by walk-forward validation inside the fit slice (models/fit/walkForward.ts:
 * 2 expanding folds validating the second half of the fit slice in two blocks, one-horizon embargo, mean multi-class
 * Brier of the regression's output; ties → the smaller set, then the larger λ; 2 folds rather than the default 3 keep
 * the 18 walk-forward fits of a 15,000-row fit slice near a second on a loaded 2-core machine); the regression is
 * refitted on the whole fit slice with the chosen pair; the
 * calibration step is temperature scaling on the later 30 % (one T > 0 minimising the multi-class log loss), which
 * keeps the regression's ranking of classes (and so its modal class) and its resolution. Refusals as v1; besides, a
 * fit slice in which a class never occurs has no finite regression and refuses (class_absent_in_fit). Then the sale
 * gate (models/saleGate.ts) on a holdout of the training span, scored by the multi-class Brier score: a blocked fit
 * refuses every decision with not_sold:<reason>.
 */
import type { FeatureSnapshot } from '../../pipeline/features/FeatureSnapshot.ts'
import type { FittedParams, LabelledSample, ModelOutput, QuestionModel, Resolution } from '../QuestionModel.ts'
import type { ResolutionWindow } from '../../pipeline/features/ResolutionWindow.ts'
import { CALIBRATION_BAND_FLOOR } from '../verification/calibrationReport.ts'
import { quantileSorted } from '../verification/bootstrap.ts'
import { evidenceConfidence } from '../confidence.ts'
import { jcsSha256 } from '../../common/hash.ts'
import { FIT_SHARE, TRAIN_FLOOR, feature, inputRefusal, isoMinute, num, refusal, trainedOn, usableRows } from './common.ts'
import { VOL_BASELINE_FEATURE, logRatio, returnInSd, volBaseline } from './volFrame.ts'
import { dailyHarmonics, weekendShare } from './seasonality.ts'
import { fitMultinomial, fitTemperature, multinomialLogits, softmax, type MultinomialFit } from '../fit/multinomial.ts'
import { selectByWalkForward, walkForwardFolds, type Fold } from '../fit/walkForward.ts'
import { numberCondition, windowLastClose, windowParkinsonPerHour } from './windowStats.ts'
import { BASELINE_FEATURES, OneFeatureBaseline } from '../fit/OneFeatureBaseline.ts'
import { gateSplit, saleGateOf, type SaleGate } from '../saleGate.ts'

export const S01_CLASSES = ['trend_up', 'trend_down', 'range_quiet', 'range_volatile'] as const
export type RegimeClass = (typeof S01_CLASSES)[number]
export const S01_HORIZON_MS = 3_600_000
export const S01_TREND_SD = 1.0
export const S01_VOL_K = 1.0
export const S01_ALPHA = 8
export const S01_METHOD = 'grid3x3-dirichlet+shrink'
const LAMBDA_GRID = Array.from({ length: 21 }, (_, i) => i / 20)

export const S01_METHOD_V2 = 'softmax-l2-walkforward+temperature'
export type RegimeMethod = 'v1' | 'v2'
/** Every v2 candidate feature, in the order the nested sets take them (each set is a prefix of this list). */
export const S01_FEATURES_V2 = [
  'ln_pk1h_over_base',
  'ln_pk4h_over_base',
  'ln_pk24h_over_base',
  'ret1h_in_sd',
  'ret4h_in_sd',
  'ret24h_in_sd',
  'abs_ret1h_in_sd',
  'abs_ret4h_in_sd',
  'abs_ret24h_in_sd',
  'tod_sin1',
  'tod_cos1',
  'tod_sin2',
  'tod_cos2',
  'weekend_share',
] as const
/** The nested candidate feature sets, simplest first (walk-forward ties go to the earlier one). */
export const S01_FEATURE_SETS_V2 = [
  { name: 'har_vol', size: 3 },
  { name: 'har_vol+returns', size: 9 },
  { name: 'har_vol+returns+calendar', size: 14 },
] as const
/** Candidate penalties (on λ/2 · Σ slopes², log-likelihood summed over rows), most regularised first. */
export const S01_LAMBDA_GRID_V2 = [100, 10, 1] as const
/** Walk-forward folds (models/fit/walkForward.ts; validation blocks over the second half of the fit slice). */
export const S01_WALK_FORWARD_FOLDS = 2
/** Newton tolerance of the walk-forward fits, which only rank candidates (the final fit converges to 1e−10). */
const WALK_FORWARD_TOL = 1e-5
/** The class pinned at zero coefficients: the "nothing happens" regime. */
export const S01_REFERENCE_CLASS_V2: RegimeClass = 'range_quiet'

export interface RegimeParamsV2 {
  status: 'ok' | 'insufficient'
  method: typeof S01_METHOD_V2
  /** The chosen set's name and features (the model inputs, in order). */
  feature_set: string
  feature_names: string[]
  candidate_sets: Array<{ name: string; features: string[] }>
  lambda_grid: number[]
  reference_class: RegimeClass
  train_floor: number
  usable: number
  n_fit: number
  n_cal: number
  class_counts: number[]
  fit_class_counts: number[]
  lambda: number
  walk_forward: Array<{ feature_set: string; lambda: number; brier: number | null; folds: number }>
  mean: number[]
  sd: number[]
  /** K rows of [intercept, slopes...] on standardised features, in S01_CLASSES order (the reference row is 0). */
  beta: number[][]
  temperature: number
  cal_log_loss_before: number | null
  cal_log_loss_after: number | null
  /** The sale gate's verdict (models/saleGate.ts), measured on a holdout of the training span; null while insufficient. */
  sale_gate: SaleGate | null
}

/** The v2 candidate features of a snapshot (S01_FEATURES_V2 order), null where one is unavailable; b = the baseline σ. */
function featuresV2(s: FeatureSnapshot, b: number, horizonMs: number): Array<number | null> {
  const r1 = returnInSd(s, '1h', b)
  const r4 = returnInSd(s, '4h', b)
  const r24 = returnInSd(s, '24h', b)
  const abs = (v: number | null) => (v === null ? null : Math.abs(v))
  return [
    logRatio(s, 'pk_1h', b),
    logRatio(s, 'pk_4h', b),
    logRatio(s, 'pk_24h', b),
    r1,
    r4,
    r24,
    abs(r1),
    abs(r4),
    abs(r24),
    ...dailyHarmonics(s.at),
    weekendShare(s.at, horizonMs),
  ]
}

/** The first `size` v2 features, or null when one of them is unavailable. */
function inputsV2(s: FeatureSnapshot, b: number, horizonMs: number, size: number): number[] | null {
  const all = featuresV2(s, b, horizonMs).slice(0, size)
  return all.some((v) => v === null) ? null : (all as number[])
}

/** A v2 training row: every candidate feature, the realized class and the decision time. */
interface RowV2 {
  x: number[]
  y: number
  at: number
  snapshot: FeatureSnapshot
}

/** What the v2 method fits on rows (the chosen set, penalty, coefficients and temperature), without the gate. */
type CoreV2 = Pick<
  RegimeParamsV2,
  'feature_set' | 'feature_names' | 'lambda' | 'walk_forward' | 'mean' | 'sd' | 'beta' | 'temperature' | 'cal_log_loss_before' | 'cal_log_loss_after'
>

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
  readonly method: RegimeMethod

  constructor(method: RegimeMethod = 'v2') {
    this.method = method
  }

  /** The same question (event, conditions, resolution) fitted by another method. */
  withMethod(method: RegimeMethod): MarketRegimeQuestion {
    return new MarketRegimeQuestion(method)
  }

  private row(s: LabelledSample): { x: number[]; y: number } | null {
    const y = S01_CLASSES.indexOf(s.resolution.realized_choice as RegimeClass)
    if (s.resolution.outcome === 'unresolvable' || y < 0) return null
    if (inputRefusal(s.snapshot, ['bars'])) return null
    const f = frame(s.snapshot, this.horizonMs)
    return f.refusal || !f.x ? null : { x: f.x, y }
  }

  fit(samples: readonly LabelledSample[]): FittedParams {
    return this.method === 'v2' ? this.fitV2(samples) : this.fitV1(samples)
  }

  private fitV1(samples: readonly LabelledSample[]): FittedParams {
    const { used, rows } = usableRows(samples, (s) => this.row(s))
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

  /**
   * A v2 training row: a v1 row (resolved to a class, bars fresh, the frame answering) with every candidate feature
   * available. The frame's checks without building its event sentence (the baseline, the reference price, pk_24h and
   * ret_4h: exactly when frame() returns inputs rather than a refusal).
   */
  private rowV2(s: LabelledSample): RowV2 | null {
    const y = S01_CLASSES.indexOf(s.resolution.realized_choice as RegimeClass)
    if (s.resolution.outcome === 'unresolvable' || y < 0) return null
    const snap = s.snapshot
    if (inputRefusal(snap, ['bars'])) return null
    const { baseline, refusal: baseRefusal } = volBaseline(snap)
    if (baseRefusal || feature(snap, 'price_last') === null || feature(snap, 'pk_24h') === null || feature(snap, 'ret_4h') === null) return null
    const x = inputsV2(snap, baseline!, this.horizonMs, S01_FEATURES_V2.length)
    return x ? { x, y, at: snap.at, snapshot: snap } : null
  }

  private fitV2(samples: readonly LabelledSample[]): FittedParams {
    const { used, rows } = usableRows(samples, (s) => this.rowV2(s))
    const K = S01_CLASSES.length
    const countsOf = (rs: readonly RowV2[]) => {
      const c = new Array<number>(K).fill(0)
      for (const r of rs) c[r.y]!++
      return c
    }
    const params: RegimeParamsV2 = {
      status: 'insufficient',
      method: S01_METHOD_V2,
      feature_set: '',
      feature_names: [],
      candidate_sets: S01_FEATURE_SETS_V2.map((c) => ({ name: c.name, features: S01_FEATURES_V2.slice(0, c.size) })),
      lambda_grid: [...S01_LAMBDA_GRID_V2],
      reference_class: S01_REFERENCE_CLASS_V2,
      train_floor: TRAIN_FLOOR,
      usable: rows.length,
      n_fit: 0,
      n_cal: 0,
      class_counts: countsOf(rows),
      fit_class_counts: [],
      lambda: 0,
      walk_forward: [],
      mean: [],
      sd: [],
      beta: [],
      temperature: 1,
      cal_log_loss_before: null,
      cal_log_loss_after: null,
      sale_gate: null,
    }
    if (rows.length >= TRAIN_FLOOR) {
      const nFit = Math.floor(rows.length * FIT_SHARE)
      const fitRows = rows.slice(0, nFit)
      const calRows = rows.slice(nFit)
      const fitCounts = countsOf(fitRows)
      Object.assign(params, { n_fit: fitRows.length, n_cal: calRows.length, fit_class_counts: fitCounts })
      const core = this.fitV2Core(fitRows, calRows)
      if (core) Object.assign(params, { status: 'ok', ...core, sale_gate: this.saleGate(rows) })
    }
    const p = params as unknown as Record<string, unknown>
    return { question_id: this.id, version: `${S01_METHOD_V2}@${jcsSha256(p).slice(0, 12)}`, trained_on: trainedOn(used, this.horizonMs, null), params: p }
  }

  /**
   * Feature set and λ by walk-forward inside the fit slice, the regression refitted on the whole fit slice, the
   * temperature on the calibration slice; null when a class never occurs in the fit slice (class_absent_in_fit).
   */
  private fitV2Core(fitRows: readonly RowV2[], calRows: readonly RowV2[]): CoreV2 | null {
    const K = S01_CLASSES.length
    const reference = S01_CLASSES.indexOf(S01_REFERENCE_CLASS_V2)
    const countsOf = (rs: readonly RowV2[]) => {
      const c = new Array<number>(K).fill(0)
      for (const r of rs) c[r.y]!++
      return c
    }
    if (!countsOf(fitRows).every((c) => c > 0)) return null
    type Candidate = { set: number; lambda: number }
    const candidates: Candidate[] = S01_FEATURE_SETS_V2.flatMap((_, set) => S01_LAMBDA_GRID_V2.map((lambda) => ({ set, lambda })))
    const folds = walkForwardFolds(fitRows, (r) => r.at, this.horizonMs, { folds: S01_WALK_FORWARD_FOLDS })
    // Each set's inputs once; each fold's rows as positions in the fit slice.
    const inputs = S01_FEATURE_SETS_V2.map((set) => fitRows.map((r) => r.x.slice(0, set.size)))
    const position = new Map(fitRows.map((r, i) => [r, i]))
    const foldRows = new Map(folds.map((f, k) => [f, { k, train: f.train.map((r) => position.get(r)!), validate: f.validate.map((r) => position.get(r)!) }]))
    // Warm starts (deterministic: candidates are scored in order, fold by fold): along a set's λ path from the previous
    // λ's coefficients and curvature; the first λ of a larger set from the smaller set's fit (new slopes 0).
    const fits = new Map<string, MultinomialFit>()
    const brierOf = (c: Candidate, fold: Fold<RowV2>): number | null => {
      const { k, train, validate } = foldRows.get(fold)!
      if (countsOf(fold.train).some((n) => n === 0)) return null
      const li = S01_LAMBDA_GRID_V2.indexOf(c.lambda as (typeof S01_LAMBDA_GRID_V2)[number])
      const before = li > 0 ? fits.get(`${c.set}|${k}|${li - 1}`) : c.set > 0 ? fits.get(`${c.set - 1}|${k}|0`) : undefined
      const warm = before ? { init: before.beta, ...(li > 0 ? { curvature: before.curvature } : {}) } : {}
      const x = inputs[c.set]!
      const fit = fitMultinomial(train.map((i) => x[i]!), train.map((i) => fitRows[i]!.y), K, c.lambda, { reference, tol: WALK_FORWARD_TOL, ...warm })
      fits.set(`${c.set}|${k}|${li}`, fit)
      let sum = 0
      for (const i of validate) sum += multiBrier(softmax(multinomialLogits(fit, x[i]!)), fitRows[i]!.y)
      return sum / validate.length
    }
    const chosen = selectByWalkForward(candidates, folds, brierOf)
    const set = S01_FEATURE_SETS_V2[chosen.best.set]!
    const lambda = chosen.best.lambda
    // Refitted on the whole fit slice, started from the chosen candidate's fit on the last fold (converged to 1e−10).
    const last = fits.get(`${chosen.best.set}|${folds.length - 1}|${S01_LAMBDA_GRID_V2.indexOf(lambda as (typeof S01_LAMBDA_GRID_V2)[number])}`)
    const fit = fitMultinomial(inputs[chosen.best.set]!, fitRows.map((r) => r.y), K, lambda, { reference, ...(last ? { init: last.beta } : {}) })
    const calLogits = calRows.map((r) => multinomialLogits(fit, r.x.slice(0, set.size)))
    const temp = fitTemperature(calLogits, calRows.map((r) => r.y))
    return {
      feature_set: set.name,
      feature_names: S01_FEATURES_V2.slice(0, set.size),
      lambda,
      walk_forward: chosen.losses.map((l) => ({ feature_set: S01_FEATURE_SETS_V2[l.candidate.set]!.name, lambda: l.candidate.lambda, brier: l.mean, folds: l.folds })),
      mean: fit.mean,
      sd: fit.sd,
      beta: fit.beta,
      temperature: temp.temperature,
      cal_log_loss_before: temp.log_loss_before,
      cal_log_loss_after: temp.log_loss_after,
    }
  }

  private static distributionOf(core: Pick<CoreV2, 'mean' | 'sd' | 'beta' | 'temperature' | 'feature_names'>, x: readonly number[]): number[] {
    return softmax(multinomialLogits(core, x.slice(0, core.feature_names.length)), core.temperature)
  }

  /**
   * The sale gate on the training span (models/saleGate.ts), as for the binary questions: the method refitted on the
   * rows whose windows closed before the later (1 − FIT_SHARE) of the rows, scored there by the multi-class Brier
   * score against that earlier span's class frequencies and its one-feature baseline.
   */
  private saleGate(rows: readonly RowV2[]): SaleGate {
    const split = gateSplit(rows, this.horizonMs)
    const { train, holdout } = split
    if (!split.enough) return saleGateOf([], train.length)
    const core = this.fitV2Core(split.fit, split.cal)
    if (!core) return saleGateOf([], train.length)
    const base = S01_CLASSES.map((_, k) => train.filter((r) => r.y === k).length / train.length)
    const oneFeature = OneFeatureBaseline.fit(BASELINE_FEATURES[this.id]!, train.map((r) => ({ snapshot: r.snapshot, outcome: r.y })), S01_CLASSES.length)
    const scored = holdout.map((r) => ({
      at: r.at,
      model: multiBrier(MarketRegimeQuestion.distributionOf(core, r.x), r.y),
      reference: multiBrier(base, r.y),
      oneFeature: multiBrier(oneFeature.predict(r.snapshot), r.y),
    }))
    return saleGateOf(scored, train.length)
  }

  private evaluateV2(snapshot: FeatureSnapshot, f: Frame, fitted: FittedParams): ModelOutput {
    const p = fitted.params as unknown as RegimeParamsV2
    if (p.status !== 'ok') {
      const reason = p.usable < p.train_floor ? 'sample_below_floor' : 'class_absent_in_fit'
      return refusal({ refusal: 'insufficient_confidence', reason }, f.event, this.horizon, f.conditions)
    }
    if (p.sale_gate?.status === 'blocked') return refusal({ refusal: 'insufficient_confidence', reason: `not_sold:${p.sale_gate.reason}` }, f.event, this.horizon, f.conditions)
    const b = volBaseline(snapshot).baseline!
    const x = inputsV2(snapshot, b, this.horizonMs, p.feature_names.length)
    if (!x) return refusal({ refusal: 'insufficient_confidence', reason: 'features_unavailable' }, f.event, this.horizon, f.conditions)
    const dist = softmax(multinomialLogits(p, x), p.temperature)
    return this.classClaim(f, dist, evidenceConfidence(p.n_fit, p.n_cal), {
      method: p.method,
      fitted_version: fitted.version,
      n_fit: p.n_fit,
      n_cal: p.n_cal,
      feature_set: p.feature_set,
      lambda: p.lambda,
      temperature: p.temperature,
      features: Object.fromEntries(p.feature_names.map((n, i) => [n, x[i]!])),
    })
  }

  /** The claim of a class distribution: its modal class is the predicted one (what resolve() grades). */
  private classClaim(f: Frame, dist: readonly number[], confidence: number, evidence: Record<string, unknown>): ModelOutput {
    let modal = 0
    for (let k = 1; k < dist.length; k++) if (dist[k]! > dist[modal]!) modal = k
    return {
      kind: 'claim',
      event: f.event,
      horizon: this.horizon,
      conditions: { ...f.conditions, predicted_class: S01_CLASSES[modal] },
      probability: dist[modal]!,
      distribution: Object.fromEntries(S01_CLASSES.map((c, k) => [c, dist[k]!])),
      confidence,
      evidence,
    }
  }

  evaluate(snapshot: FeatureSnapshot, fitted: FittedParams | null): ModelOutput {
    const f = frame(snapshot, this.horizonMs)
    const input = inputRefusal(snapshot, ['bars'])
    if (input) return refusal(input, f.event, this.horizon, f.conditions)
    if (f.refusal || !f.x) return refusal(f.refusal ?? { refusal: 'insufficient_confidence', reason: 'features_unavailable' }, f.event, this.horizon, f.conditions)
    if (!fitted) return refusal({ refusal: 'insufficient_confidence', reason: 'model_not_fitted' }, f.event, this.horizon, f.conditions)
    if (fitted.question_id !== this.id) throw new RangeError(`fitted params of ${fitted.question_id} given to ${this.id}`)
    if ((fitted.params as { method?: unknown }).method === S01_METHOD_V2) return this.evaluateV2(snapshot, f, fitted)
    const p = fitted.params as unknown as RegimeParams
    if (p.status !== 'ok') return refusal({ refusal: 'insufficient_confidence', reason: 'sample_below_floor' }, f.event, this.horizon, f.conditions)
    const cell = cellOf(f.x, p.edges)
    const band = p.cal_counts[cell]!
    if (band < CALIBRATION_BAND_FLOOR) return refusal({ refusal: 'insufficient_confidence', reason: 'calibration_band_below_floor' }, f.event, this.horizon, f.conditions)
    const dist = mix(p.cells[cell]!.dist, p.prior, p.lambda)
    return this.classClaim(f, dist, evidenceConfidence(p.n_fit, band), {
      method: p.method, fitted_version: fitted.version, n_fit: p.n_fit, n_cal: p.n_cal, cell, cell_fit_n: p.cells[cell]!.n, cell_cal_n: band, lambda: p.lambda,
    })
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
