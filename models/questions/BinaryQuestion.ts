/**
 * A fitted binary question: the shared machinery behind S03, S04, S05, S06 and S07.
 *
 * Method (docs/methodology.md): the time-ordered usable training samples are split 70/30; an L2 logistic regression
 * (IRLS, λ = 1, standardised features; models/fit/logistic.ts) is fitted on the earlier 70 %, and an isotonic map
 * (PAV with a minimum block of CALIBRATION_BAND_FLOOR outcomes, Laplace-smoothed; models/fit/isotonic.ts) is fitted
 * on the later, disjoint 30 % from the regression's raw output to outcomes. The answer is the calibrated value of the
 * block the raw output falls in. Refusals: see evaluate().
 *
 * Method v2 (a candidate, scored by `svc eval --models v2`, not live): the same features and 70/30 split; the L2
 * penalty λ is chosen from LAMBDA_GRID by walk-forward validation inside the fit slice (models/fit/walkForward.ts: 3
 * expanding folds after the first half, one-horizon embargo, mean Brier of the regression's output); the regression
 * is refitted on the whole fit slice with that λ; calibration is Platt scaling on the later 30 % (a logistic
 * regression of the outcome on logit(raw), λ = PLATT_L2), a smooth monotone map that keeps the regression's
 * resolution instead of collapsing it into a few isotonic steps.
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
import { jcsSha256 } from '../../common/hash.ts'
import { FIT_SHARE, TRAIN_FLOOR, horizonString, inputRefusal, refusal, timeOrdered, trainedOn, type Refusal } from './common.ts'

export const BINARY_METHOD = 'logit-l2-irls+isotonic-pav'
export const BINARY_METHOD_V2 = 'logit-l2-walkforward+platt'
/** Candidate penalties, most regularised first (walk-forward ties go to the earlier one). */
export const LAMBDA_GRID = [100, 10, 1, 0.1, 0.01] as const
/** Platt scaling's own penalty: just enough to keep a separable calibration slice finite. */
export const PLATT_L2 = 1e-3
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
  walk_forward: Array<{ lambda: number; brier: number | null; folds: number }>
  /** Platt map on z = logit(raw): its standardisation and [intercept, slope]. */
  platt: { mean: number[]; sd: number[]; beta: number[] }
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

/** What a question derives from the snapshot alone: the dated event, its conditions, and its model inputs. */
export interface Frame {
  event: string
  conditions: Record<string, unknown>
  /** Model inputs (fixed order = featureNames); null when the frame refuses. */
  x: number[] | null
  refusal: Refusal | null
}

export interface BinaryQuestionSpec {
  id: QuestionId
  label: string
  horizonMs: number
  entryTier: boolean
  requiredInputs: readonly FeatureInput[]
  featureNames: readonly string[]
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

  constructor(spec: BinaryQuestionSpec, method: BinaryMethod = 'v1') {
    this.spec = spec
    this.method = method
    this.id = spec.id
    this.label = spec.label
    this.horizonMs = spec.horizonMs
    this.horizon = horizonString(spec.horizonMs)
    this.entryTier = spec.entryTier
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
    const used: LabelledSample[] = []
    const rows: UsableRow[] = []
    for (const s of timeOrdered(samples)) {
      const r = this.row(s)
      if (r) {
        used.push(s)
        rows.push({ ...r, at: s.snapshot.at })
      }
    }
    return { used, rows }
  }

  /**
   * The fit both methods share: the usable rows in time order, the training floor, the 70/30 split, the parameter
   * record's common fields and its content-hashed version. `empty` are the method's own fields before fitting;
   * `fitSlices` fits the two slices and returns the method's fields (lambda, coefficients, calibration).
   */
  private fitBy(
    samples: readonly LabelledSample[],
    method: string,
    empty: Record<string, unknown>,
    fitSlices: (fitRows: UsableRow[], calRows: UsableRow[]) => Record<string, unknown>,
  ): FittedParams {
    const { used, rows } = this.usableRows(samples)
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

  private fitV2(samples: readonly LabelledSample[]): FittedParams {
    return this.fitBy(samples, BINARY_METHOD_V2, { walk_forward: [], platt: { mean: [], sd: [], beta: [] } }, (fitRows, calRows) => {
      const folds = walkForwardFolds(fitRows, (r) => r.at, this.horizonMs)
      const brierOf = (lambda: number, fold: Fold<UsableRow>) => {
        const lr = fitLogistic(fold.train.map((r) => r.x), fold.train.map((r) => r.y), lambda)
        return fold.validate.reduce((a, r) => a + (predictLogistic(lr, r.x) - r.y) ** 2, 0) / fold.validate.length
      }
      const chosen = selectByWalkForward(LAMBDA_GRID, folds, brierOf)
      const lr = fitLogistic(fitRows.map((r) => r.x), fitRows.map((r) => r.y), chosen.best)
      const platt = fitLogistic(calRows.map((r) => [logit(predictLogistic(lr, r.x))]), calRows.map((r) => r.y), PLATT_L2)
      return {
        lambda: chosen.best,
        walk_forward: chosen.losses.map((l) => ({ lambda: l.candidate, brier: l.mean, folds: l.folds })),
        mean: lr.mean,
        sd: lr.sd,
        beta: lr.beta,
        platt: { mean: platt.mean, sd: platt.sd, beta: platt.beta },
      }
    })
  }

  private fitV1(samples: readonly LabelledSample[]): FittedParams {
    return this.fitBy(samples, BINARY_METHOD, { min_block: CALIBRATION_BAND_FLOOR, calibration: [] }, (fitRows, calRows) => {
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
    const raw = predictLogistic(p, frame.x!)
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
        lambda: p.lambda,
        raw_probability: raw,
        features: Object.fromEntries(this.spec.featureNames.map((n, i) => [n, frame.x![i]!])),
      },
    }
  }

  resolve(conditions: Record<string, unknown>, window: ResolutionWindow): Resolution {
    return this.spec.resolve(conditions, window)
  }
}
