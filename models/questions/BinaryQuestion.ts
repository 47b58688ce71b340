/**
 * A fitted binary question: the shared machinery behind S03, S04, S05, S06 and S07.
 *
 * Method v1 (jev-1.0.0; kept so its rows replay and `svc eval` scores it as the previous version; docs/methodology.md):
 * the time-ordered usable training samples are split 70/30; an L2 logistic regression
 * (IRLS, λ = 1, standardised features; models/fit/logistic.ts) is fitted on the earlier 70 %, and an isotonic map
 * (PAV with a minimum block of CALIBRATION_BAND_FLOOR outcomes, Laplace-smoothed; models/fit/isotonic.ts) is fitted
 * on the later, disjoint 30 % from the regression's raw output to outcomes. The answer is the calibrated value of the
 * block the raw output falls in. Refusals: see evaluate().
 *
 * Method v2 (jev-2.0.0, live): the same 70/30 time split. The feature set (the question's nested candidate sets, simplest first: its v1
 * features, then HAR-RV or funding-persistence terms, then calendar terms) and the L2 penalty λ (LAMBDA_GRID) are
 * chosen together by walk-forward validation inside the fit slice (models/fit/walkForward.ts: 3 expanding folds after
 * the first half, one-horizon embargo, mean Brier of the regression's output); the regression is refitted on the
 * whole fit slice with that choice; calibration is Platt scaling on the later 30 % (a logistic regression of the
 * outcome on logit(raw), λ = PLATT_L2), a smooth monotone map that keeps the regression's resolution instead of
 * collapsing it into a few isotonic steps; with fewer than PLATT_MIN_EVENTS outcomes of either kind in the later 30 %
 * the map is the identity (the regression's output, unrecalibrated). Then the sale gate (models/saleGate.ts): the whole method refitted on the
 * earlier rows and scored on a later holdout of the training span decides whether the question is sold at all.
 */
import type { FeatureSnapshot } from '../../pipeline/features/FeatureSnapshot.ts'
import type { FittedParams, LabelledSample, ModelOutput, QuestionId, QuestionModel, Resolution } from '../QuestionModel.ts'
import type { ResolutionWindow } from '../../pipeline/features/ResolutionWindow.ts'
import type { FeatureInput } from '../../pipeline/features/stalenessBudgets.ts'
import { CALIBRATION_BAND_FLOOR } from '../verification/calibrationReport.ts'
import { DEFAULT_L2, fitLogistic, predictLogistic } from '../fit/logistic.ts'
import { calibrationBlock, fitIsotonic, type CalibrationBlock } from '../fit/isotonic.ts'
import { selectByWalkForward, walkForwardFolds, type Fold } from '../fit/walkForward.ts'
import { evidenceConfidence } from '../confidence.ts'
import { BASELINE_FEATURES, OneFeatureBaseline } from '../fit/OneFeatureBaseline.ts'
import { gateSplit, saleGateOf, type SaleGate } from '../saleGate.ts'
import { jcsSha256 } from '../../common/hash.ts'
import { FIT_SHARE, TRAIN_FLOOR, horizonString, inputRefusal, refusal, timeOrdered, trainedOn, usableRows, type Refusal } from './common.ts'

export const BINARY_METHOD = 'logit-l2-irls+isotonic-pav'
export const BINARY_METHOD_V2 = 'logit-l2-walkforward+platt'
/** Candidate penalties, most regularised first (walk-forward ties go to the earlier one). */
export const LAMBDA_GRID = [100, 10, 1, 0.1, 0.01] as const
/** Platt scaling's own penalty: just enough to keep a separable calibration slice finite. */
export const PLATT_L2 = 1e-3
/**
 * Platt scaling fits a slope and an intercept on the calibration slice; it needs at least this many outcomes of the
 * rarer kind there (the events-per-variable rule for a logistic regression, Peduzzi et al. 1996: 10 events of the
 * less frequent outcome per estimated coefficient). Below it the map is noise (S07 on OKX: 4 misses in 191 rows gave
 * a slope of 7.2 ± 2.4 per raw log-odds), so no map is fitted and the regression's own output is served: the identity
 * map (PLATT_IDENTITY), its penalty already chosen by walk-forward for the Brier score of exactly that output.
 */
export const PLATT_MIN_EVENTS = 10
/** The identity map on z = logit(raw) in the Platt parameter record (standardisation 0/1, intercept 0, slope 1). */
export const PLATT_IDENTITY = { mean: [0], sd: [1], beta: [0, 1] } as const
const LOGIT_CLAMP = 1e-9

export type BinaryMethod = 'v1' | 'v2'

/** The fields both methods' parameter records share (BinaryQuestion.fitBy). */
interface BinaryParamsCommon {
  status: 'ok' | 'insufficient'
  feature_names: string[]
  train_floor: number
  usable: number
  n_fit: number
  n_cal: number
  positives: number
  lambda: number
  mean: number[]
  sd: number[]
  beta: number[]
}

export interface BinaryParamsV2 extends BinaryParamsCommon {
  method: typeof BINARY_METHOD_V2
  /** The chosen candidate set's name (feature_names are its features, in order). */
  feature_set: string
  walk_forward: Array<{ feature_set: string; lambda: number; brier: number | null; folds: number }>
  /** Platt map on z = logit(raw): its standardisation and [intercept, slope]. */
  platt: { mean: number[]; sd: number[]; beta: number[] }
  /** The sale gate's verdict, measured on a holdout of the training span (null while insufficient). */
  sale_gate: SaleGate | null
}

/** A named candidate feature set of the v2 method. */
export interface FeatureSet {
  name: string
  features: readonly string[]
}

/** A v2 training row: every candidate's value (in the question's candidate order), the outcome and the sample. */
interface CandidateRow {
  values: number[]
  y: number
  at: number
  sample: LabelledSample
}

/** What the v2 method fits on rows: the chosen set, penalty and maps, without the gate. */
interface V2Core {
  feature_set: string
  feature_names: string[]
  lambda: number
  walk_forward: BinaryParamsV2['walk_forward']
  mean: number[]
  sd: number[]
  beta: number[]
  platt: BinaryParamsV2['platt']
  /** Column indices of the chosen set in CandidateRow.values. */
  columns: number[]
}

/** A training row: the model inputs, the outcome and the decision time. */
interface UsableRow {
  x: number[]
  y: number
  at: number
}

function logit(p: number): number {
  const q = Math.min(1 - LOGIT_CLAMP, Math.max(LOGIT_CLAMP, p))
  return Math.log(q / (1 - q))
}

/**
 * Platt scaling of the calibration slice (outcome on z = logit(raw), λ = PLATT_L2), or the identity map when the slice
 * has fewer than PLATT_MIN_EVENTS outcomes of either kind.
 */
export function plattMap(z: readonly number[], y: readonly number[]): { mean: number[]; sd: number[]; beta: number[] } {
  const hits = y.reduce((a, v) => a + v, 0)
  if (Math.min(hits, y.length - hits) < PLATT_MIN_EVENTS) return { mean: [...PLATT_IDENTITY.mean], sd: [...PLATT_IDENTITY.sd], beta: [...PLATT_IDENTITY.beta] }
  const fit = fitLogistic(z.map((v) => [v]), y, PLATT_L2)
  return { mean: fit.mean, sd: fit.sd, beta: fit.beta }
}

/** What a question derives from the snapshot alone: the dated event, its conditions, and its model inputs. */
export interface Frame {
  event: string
  conditions: Record<string, unknown>
  /** Model inputs (fixed order = featureNames); null when the frame refuses. */
  x: number[] | null
  refusal: Refusal | null
  /** The v2 candidates by name (null where not computable); absent when the frame refuses. */
  candidates?: Record<string, number | null>
}

export interface BinaryQuestionSpec {
  id: QuestionId
  label: string
  horizonMs: number
  entryTier: boolean
  requiredInputs: readonly FeatureInput[]
  featureNames: readonly string[]
  /** v2: nested candidate feature sets, simplest first (the first is the v1 features); names from Frame.candidates. */
  featureSets: readonly FeatureSet[]
  frame(snapshot: FeatureSnapshot, horizonMs: number): Frame
  resolve(conditions: Record<string, unknown>, window: ResolutionWindow): Resolution
}

export interface BinaryParams extends BinaryParamsCommon {
  method: typeof BINARY_METHOD
  min_block: number
  calibration: CalibrationBlock[]
}

export class BinaryQuestion implements QuestionModel {
  readonly id: QuestionId
  readonly label: string
  readonly answer = 'probability' as const
  readonly scope = 'market' as const
  readonly horizonMs: number
  readonly horizon: string
  readonly entryTier: boolean
  readonly classes = null
  readonly sold = true
  private readonly spec: BinaryQuestionSpec
  readonly method: BinaryMethod
  /** Every v2 candidate name, in first-appearance order over the sets. */
  private readonly candidateNames: readonly string[]

  constructor(spec: BinaryQuestionSpec, method: BinaryMethod = 'v2') {
    this.spec = spec
    this.method = method
    this.id = spec.id
    this.label = spec.label
    this.horizonMs = spec.horizonMs
    this.horizon = horizonString(spec.horizonMs)
    this.entryTier = spec.entryTier
    this.candidateNames = [...new Set(spec.featureSets.flatMap((f) => f.features))]
  }

  /** The model inputs of a sample, or null when it would be refused before the model (not a training row). */
  private row(sample: LabelledSample): { x: number[]; y: number } | null {
    if (sample.resolution.outcome === 'unresolvable') return null
    if (inputRefusal(sample.snapshot, this.spec.requiredInputs)) return null
    const frame = this.spec.frame(sample.snapshot, this.horizonMs)
    if (frame.refusal || !frame.x) return null
    return { x: frame.x, y: sample.resolution.outcome === 'obtains' ? 1 : 0 }
  }

  /** The same question (event, features, resolution) fitted by another method. */
  withMethod(method: BinaryMethod): BinaryQuestion {
    return new BinaryQuestion(this.spec, method)
  }

  fit(samples: readonly LabelledSample[]): FittedParams {
    return this.method === 'v2' ? this.fitV2(samples) : this.fitV1(samples)
  }

  private usableRows(samples: readonly LabelledSample[]): { used: LabelledSample[]; rows: UsableRow[] } {
    return usableRows(samples, (s) => {
      const r = this.row(s)
      return r ? { ...r, at: s.snapshot.at } : null
    })
  }

  /**
   * The fit both methods share: over a method's usable rows (time-ordered, from the samples `used`), the training
   * floor, the 70/30 split, the parameter record's common fields and its content-hashed version. `empty` are the
   * method's own fields before fitting; `fitSlices` fits the two slices and returns the method's fields (lambda,
   * coefficients, calibration).
   */
  private fitBy<R extends { y: number }>(
    used: readonly LabelledSample[],
    rows: readonly R[],
    method: string,
    empty: Record<string, unknown>,
    fitSlices: (fitRows: R[], calRows: R[]) => Record<string, unknown>,
  ): FittedParams {
    const positives = rows.reduce((a, r) => a + r.y, 0)
    const params: Record<string, unknown> = {
      status: 'insufficient',
      method,
      feature_names: [...this.spec.featureNames],
      train_floor: TRAIN_FLOOR,
      usable: rows.length,
      n_fit: 0,
      n_cal: 0,
      positives,
      lambda: DEFAULT_L2,
      mean: [],
      sd: [],
      beta: [],
      ...empty,
    }
    if (rows.length >= TRAIN_FLOOR) {
      const nFit = Math.floor(rows.length * FIT_SHARE)
      const fitRows = rows.slice(0, nFit)
      const calRows = rows.slice(nFit)
      Object.assign(params, { status: 'ok', n_fit: fitRows.length, n_cal: calRows.length, ...fitSlices(fitRows, calRows) })
    }
    return {
      question_id: this.id,
      version: `${method}@${jcsSha256(params).slice(0, 12)}`,
      trained_on: trainedOn(used, this.horizonMs, positives),
      params,
    }
  }

  /** v2 training rows: v1-usable samples whose every candidate is computable (e.g. 30-day vol needs 15 days of bars). */
  private candidateRows(samples: readonly LabelledSample[]): CandidateRow[] {
    const rows: CandidateRow[] = []
    for (const s of timeOrdered(samples)) {
      if (s.resolution.outcome === 'unresolvable' || inputRefusal(s.snapshot, this.spec.requiredInputs)) continue
      const frame = this.spec.frame(s.snapshot, this.horizonMs)
      if (frame.refusal || !frame.x || !frame.candidates) continue
      const values = this.candidateNames.map((n) => frame.candidates![n])
      if (values.some((v) => v === null || v === undefined || !Number.isFinite(v))) continue
      rows.push({ values: values as number[], y: s.resolution.outcome === 'obtains' ? 1 : 0, at: s.snapshot.at, sample: s })
    }
    return rows
  }

  /** Feature set and λ by walk-forward inside the fit slice, the regression on the whole fit slice, Platt on the rest. */
  private fitV2Core(fitRows: readonly CandidateRow[], calRows: readonly CandidateRow[]): V2Core {
    const sets = this.spec.featureSets.map((f) => ({ name: f.name, columns: f.features.map((n) => this.candidateNames.indexOf(n)) }))
    const pick = (r: CandidateRow, columns: readonly number[]) => columns.map((c) => r.values[c]!)
    const folds = walkForwardFolds(fitRows, (r) => r.at, this.horizonMs)
    const candidates = sets.flatMap((set) => LAMBDA_GRID.map((lambda) => ({ set, lambda })))
    const brierOf = (c: (typeof candidates)[number], fold: Fold<CandidateRow>) => {
      const lr = fitLogistic(fold.train.map((r) => pick(r, c.set.columns)), fold.train.map((r) => r.y), c.lambda)
      return fold.validate.reduce((a, r) => a + (predictLogistic(lr, pick(r, c.set.columns)) - r.y) ** 2, 0) / fold.validate.length
    }
    const chosen = selectByWalkForward(candidates, folds, brierOf)
    const { set, lambda } = chosen.best
    const lr = fitLogistic(fitRows.map((r) => pick(r, set.columns)), fitRows.map((r) => r.y), lambda)
    const platt = plattMap(calRows.map((r) => logit(predictLogistic(lr, pick(r, set.columns)))), calRows.map((r) => r.y))
    return {
      feature_set: set.name,
      feature_names: set.columns.map((c) => this.candidateNames[c]!),
      lambda,
      walk_forward: chosen.losses.map((l) => ({ feature_set: l.candidate.set.name, lambda: l.candidate.lambda, brier: l.mean, folds: l.folds })),
      mean: lr.mean,
      sd: lr.sd,
      beta: lr.beta,
      platt: { mean: platt.mean, sd: platt.sd, beta: platt.beta },
      columns: set.columns,
    }
  }

  private static predictCore(core: Pick<V2Core, 'mean' | 'sd' | 'beta' | 'platt'>, x: readonly number[]): number {
    return predictLogistic(core.platt, [logit(predictLogistic(core, x))])
  }

  /**
   * The sale gate on the training span (models/saleGate.ts): the method refitted on the rows whose windows closed
   * before the later (1 − FIT_SHARE) of the rows, scored there against that earlier span's base rate and one-feature
   * baseline.
   */
  private saleGate(rows: readonly CandidateRow[]): SaleGate {
    const split = gateSplit(rows, this.horizonMs)
    const { train, holdout } = split
    if (!split.enough) return saleGateOf([], train.length)
    const core = this.fitV2Core(split.fit, split.cal)
    const base = train.reduce((a, r) => a + r.y, 0) / train.length
    const feature = BASELINE_FEATURES[this.id]
    const oneFeature = feature ? OneFeatureBaseline.fit(feature, train.map((r) => ({ snapshot: r.sample.snapshot, outcome: r.y })), 1) : null
    const scored = holdout.map((r) => {
      const p = BinaryQuestion.predictCore(core, core.columns.map((c) => r.values[c]!))
      const q = oneFeature ? oneFeature.predict(r.sample.snapshot)[0]! : base
      return { at: r.at, model: (p - r.y) ** 2, reference: (base - r.y) ** 2, oneFeature: (q - r.y) ** 2 }
    })
    return saleGateOf(scored, train.length)
  }

  private fitV2(samples: readonly LabelledSample[]): FittedParams {
    const rows = this.candidateRows(samples)
    const empty = { feature_set: null, feature_names: [], lambda: null, walk_forward: [], platt: { mean: [], sd: [], beta: [] }, sale_gate: null }
    return this.fitBy(
      rows.map((r) => r.sample),
      rows,
      BINARY_METHOD_V2,
      empty,
      (fitRows, calRows) => {
        const { columns: _columns, ...core } = this.fitV2Core(fitRows, calRows)
        return { ...core, sale_gate: this.saleGate(rows) }
      },
    )
  }

  private fitV1(samples: readonly LabelledSample[]): FittedParams {
    const { used, rows } = this.usableRows(samples)
    return this.fitBy(used, rows, BINARY_METHOD, { min_block: CALIBRATION_BAND_FLOOR, calibration: [] }, (fitRows, calRows) => {
      const lr = fitLogistic(fitRows.map((r) => r.x), fitRows.map((r) => r.y), DEFAULT_L2)
      const pairs = calRows.map((r) => ({ p: predictLogistic(lr, r.x), y: r.y }))
      return { mean: lr.mean, sd: lr.sd, beta: lr.beta, calibration: fitIsotonic(pairs, CALIBRATION_BAND_FLOOR) }
    })
  }

  /**
   * Refusal order: an unavailable input (suppress) or a stale/degraded one (stale_input) first; then the frame's own
   * refusals (out of scope → suppress, degenerate or missing baseline → insufficient_confidence); then the model's
   * (not fitted / sample below floor / calibration band below floor → insufficient_confidence).
   */
  evaluate(snapshot: FeatureSnapshot, fitted: FittedParams | null): ModelOutput {
    const frame = this.spec.frame(snapshot, this.horizonMs)
    const { event, conditions } = frame
    const input = inputRefusal(snapshot, this.spec.requiredInputs)
    if (input) return refusal(input, event, this.horizon, conditions)
    if (frame.refusal || !frame.x) return refusal(frame.refusal ?? { refusal: 'insufficient_confidence', reason: 'features_unavailable' }, event, this.horizon, conditions)
    if (!fitted) return refusal({ refusal: 'insufficient_confidence', reason: 'model_not_fitted' }, event, this.horizon, conditions)
    if (fitted.question_id !== this.id) throw new RangeError(`fitted params of ${fitted.question_id} given to ${this.id}`)
    if ((fitted.params as { method?: unknown }).method === BINARY_METHOD_V2) return this.evaluateV2(frame, fitted)
    const p = fitted.params as unknown as BinaryParams
    if (p.status !== 'ok') return refusal({ refusal: 'insufficient_confidence', reason: 'sample_below_floor' }, event, this.horizon, conditions)
    const raw = predictLogistic(p, frame.x)
    const block = calibrationBlock(p.calibration, raw)
    if (!block || block.n < p.min_block) {
      return refusal({ refusal: 'insufficient_confidence', reason: 'calibration_band_below_floor' }, event, this.horizon, conditions)
    }
    return {
      kind: 'claim',
      event,
      horizon: this.horizon,
      conditions,
      probability: block.p,
      distribution: null,
      confidence: evidenceConfidence(p.n_fit, block.n),
      evidence: {
        method: p.method,
        fitted_version: fitted.version,
        n_fit: p.n_fit,
        n_cal: p.n_cal,
        raw_probability: raw,
        calibration_block: { x_min: block.x_min, x_max: block.x_max, n: block.n, hits: block.hits },
        features: Object.fromEntries(this.spec.featureNames.map((n, i) => [n, frame.x![i]!])),
      },
    }
  }

  private evaluateV2(frame: Frame, fitted: FittedParams): ModelOutput {
    const { event, conditions } = frame
    const p = fitted.params as unknown as BinaryParamsV2
    if (p.status !== 'ok') return refusal({ refusal: 'insufficient_confidence', reason: 'sample_below_floor' }, event, this.horizon, conditions)
    if (p.sale_gate?.status === 'blocked') return refusal({ refusal: 'insufficient_confidence', reason: `not_sold:${p.sale_gate.reason}` }, event, this.horizon, conditions)
    const x = p.feature_names.map((n) => frame.candidates?.[n] ?? null)
    if (x.some((v) => v === null || !Number.isFinite(v))) return refusal({ refusal: 'insufficient_confidence', reason: 'features_unavailable' }, event, this.horizon, conditions)
    const raw = predictLogistic(p, x as number[])
    const probability = predictLogistic(p.platt, [logit(raw)])
    return {
      kind: 'claim',
      event,
      horizon: this.horizon,
      conditions,
      probability,
      distribution: null,
      confidence: evidenceConfidence(p.n_fit, p.n_cal),
      evidence: {
        method: p.method,
        fitted_version: fitted.version,
        n_fit: p.n_fit,
        n_cal: p.n_cal,
        feature_set: p.feature_set,
        lambda: p.lambda,
        raw_probability: raw,
        features: Object.fromEntries(p.feature_names.map((n, i) => [n, x[i]!])),
      },
    }
  }

  resolve(conditions: Record<string, unknown>, window: ResolutionWindow): Resolution {
    return this.spec.resolve(conditions, window)
  }
}
