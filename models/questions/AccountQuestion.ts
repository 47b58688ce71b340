/**
 * The shared machinery of the account-scoped questions (spec catalog: "S09..S11 Account-scoped questions: the subject
 * is a wallet"): a frame derived from the wallet snapshot (models/account/accountSnapshot.ts), class probabilities
 * fitted as conditional cell frequencies (models/account/cellFrequencies.ts), and a resolver that reads the
 * ResolutionWindow's `account` part.
 *
 * Refusals, in order: the wallet input is missing (suppress 'input_unavailable:wallet') or late/degraded
 * (stale_input); the frame refuses (e.g. the wallet's own sample is inadequate: insufficient_confidence
 * 'wallet_sample_inadequate'); no fit, a fit below the training floor, or a cell below the calibration band floor
 * (insufficient_confidence). PROVIDER_DOWN never reaches a question: it is an error before any snapshot exists.
 */
import type { FeatureSnapshot } from '../../pipeline/features/FeatureSnapshot.ts'
import type { FittedParams, LabelledSample, ModelOutput, QuestionId, QuestionModel, Resolution } from '../QuestionModel.ts'
import type { ResolutionWindow } from '../../pipeline/features/ResolutionWindow.ts'
import { WALLET_INPUT } from '../account/accountSnapshot.ts'
import { CELL_METHOD, fitCells, predictCells, type CellDim, type CellParams, type CellRow } from '../account/cellFrequencies.ts'
import { evidenceConfidence } from '../confidence.ts'
import { jcsSha256 } from '../../common/hash.ts'
import { horizonString, refusal, timeOrdered, trainedOn, type Refusal } from './common.ts'

export interface AccountFrame {
  event: string
  conditions: Record<string, unknown>
  x: number[] | null
  refusal: Refusal | null
}

export interface AccountQuestionSpec {
  id: QuestionId
  label: string
  answer: 'probability' | 'choice'
  horizonMs: number
  /** Class labels; for a probability question ['not', 'obtains'] and the probability is P(obtains). */
  classes: readonly string[]
  dims: readonly CellDim[]
  frame(snapshot: FeatureSnapshot, horizonMs: number): AccountFrame
  /** The realized class index from the window, or a reason it is unresolvable. */
  realize(conditions: Record<string, unknown>, window: ResolutionWindow): { y: number; statistic: Record<string, number | string | null> } | { unresolvable: string }
}

export function walletInputRefusal(snapshot: FeatureSnapshot): Refusal | null {
  const f = snapshot.freshness.find((x) => x.input === WALLET_INPUT)
  if (!f) return { refusal: 'suppress', reason: `input_unavailable:${WALLET_INPUT}` }
  if (f.quality === 'degraded') return { refusal: 'stale_input', reason: `input_degraded:${WALLET_INPUT}` }
  if (!f.ok) return { refusal: 'stale_input', reason: `input_stale:${WALLET_INPUT}` }
  return null
}

export class AccountQuestion implements QuestionModel {
  readonly id: QuestionId
  readonly label: string
  readonly answer: 'probability' | 'choice'
  readonly scope = 'account' as const
  readonly horizonMs: number
  readonly horizon: string
  readonly entryTier = false
  readonly classes: readonly string[] | null
  readonly sold = true
  readonly spec: AccountQuestionSpec

  constructor(spec: AccountQuestionSpec) {
    this.spec = spec
    this.id = spec.id
    this.label = spec.label
    this.answer = spec.answer
    this.horizonMs = spec.horizonMs
    this.horizon = horizonString(spec.horizonMs)
    this.classes = spec.answer === 'choice' ? spec.classes : null
  }

  frame(snapshot: FeatureSnapshot): AccountFrame {
    return this.spec.frame(snapshot, this.horizonMs)
  }

  private row(s: LabelledSample): CellRow | null {
    if (s.resolution.outcome === 'unresolvable') return null
    if (walletInputRefusal(s.snapshot)) return null
    const f = this.spec.frame(s.snapshot, this.horizonMs)
    if (f.refusal || !f.x) return null
    const y =
      this.spec.answer === 'choice'
        ? this.spec.classes.indexOf(s.resolution.realized_choice ?? '')
        : s.resolution.outcome === 'obtains' ? 1 : 0
    return y < 0 ? null : { x: f.x, y }
  }

  fit(samples: readonly LabelledSample[]): FittedParams {
    const used: LabelledSample[] = []
    const rows: CellRow[] = []
    for (const s of timeOrdered(samples)) {
      const r = this.row(s)
      if (r) {
        used.push(s)
        rows.push(r)
      }
    }
    const p = fitCells(this.spec.classes, this.spec.dims, rows) as unknown as Record<string, unknown>
    const positives = this.spec.answer === 'probability' ? rows.reduce((a, r) => a + r.y, 0) : null
    return { question_id: this.id, version: `${CELL_METHOD}@${jcsSha256(p).slice(0, 12)}`, trained_on: trainedOn(used, this.horizonMs, positives), params: p }
  }

  evaluate(snapshot: FeatureSnapshot, fitted: FittedParams | null): ModelOutput {
    const f = this.spec.frame(snapshot, this.horizonMs)
    const input = walletInputRefusal(snapshot)
    if (input) return refusal(input, f.event, this.horizon, f.conditions)
    if (f.refusal || !f.x) return refusal(f.refusal ?? { refusal: 'insufficient_confidence', reason: 'features_unavailable' }, f.event, this.horizon, f.conditions)
    if (!fitted) return refusal({ refusal: 'insufficient_confidence', reason: 'model_not_fitted' }, f.event, this.horizon, f.conditions)
    if (fitted.question_id !== this.id) throw new RangeError(`fitted params of ${fitted.question_id} given to ${this.id}`)
    const p = fitted.params as unknown as CellParams
    if (p.status !== 'ok') return refusal({ refusal: 'insufficient_confidence', reason: 'sample_below_floor' }, f.event, this.horizon, f.conditions)
    const at = predictCells(p, f.x)
    if (at.cal_n < p.min_band) return refusal({ refusal: 'insufficient_confidence', reason: 'calibration_band_below_floor' }, f.event, this.horizon, f.conditions)
    const evidence = { method: p.method, fitted_version: fitted.version, n_fit: p.n_fit, n_cal: p.n_cal, cell: at.cell, cell_fit_n: at.fit_n, cell_cal_n: at.cal_n, lambda: p.lambda }
    const confidence = evidenceConfidence(p.n_fit, at.cal_n)
    if (this.spec.answer === 'probability') {
      return { kind: 'claim', event: f.event, horizon: this.horizon, conditions: f.conditions, probability: at.dist[1]!, distribution: null, confidence, evidence }
    }
    let modal = 0
    for (let k = 1; k < at.dist.length; k++) if (at.dist[k]! > at.dist[modal]!) modal = k
    return {
      kind: 'claim',
      event: f.event,
      horizon: this.horizon,
      conditions: { ...f.conditions, predicted_class: this.spec.classes[modal] },
      probability: at.dist[modal]!,
      distribution: Object.fromEntries(this.spec.classes.map((c, k) => [c, at.dist[k]!])),
      confidence,
      evidence,
    }
  }

  /**
   * Choice questions grade the claim's modal class (conditions.predicted_class), as S01; a probability question's
   * outcome is the event itself. No account window, or an incomplete one: unresolvable.
   */
  resolve(conditions: Record<string, unknown>, window: ResolutionWindow): Resolution {
    if (!window.account) return { outcome: 'unresolvable', statistic: null, realized_choice: null, reason: 'no_account_window' }
    if (!window.account.complete) return { outcome: 'unresolvable', statistic: null, realized_choice: null, reason: 'account_window_incomplete' }
    const r = this.spec.realize(conditions, window)
    if ('unresolvable' in r) return { outcome: 'unresolvable', statistic: null, realized_choice: null, reason: r.unresolvable }
    if (this.spec.answer === 'probability') return { outcome: r.y === 1 ? 'obtains' : 'not', statistic: r.statistic, realized_choice: null, reason: null }
    const realized = this.spec.classes[r.y]!
    const predicted = typeof conditions.predicted_class === 'string' ? conditions.predicted_class : null
    return {
      outcome: predicted !== null && predicted === realized ? 'obtains' : 'not',
      statistic: r.statistic,
      realized_choice: realized,
      reason: predicted === null ? 'no_predicted_class' : null,
    }
  }
}
