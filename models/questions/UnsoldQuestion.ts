/**
 * A catalog question this deployment does not answer: every evaluate is a suppress refusal with a stable reason,
 * fit records that nothing was fitted, and resolve is unresolvable (there is no claim to grade).
 * Spec, Decision record: "suppress = the model refused as out of scope or unresolvable, or the surface is unavailable."
 */
import type { FeatureSnapshot } from '../../pipeline/features/FeatureSnapshot.ts'
import type { FittedParams, LabelledSample, ModelOutput, QuestionId, QuestionModel, Resolution } from '../QuestionModel.ts'
import { horizonString, isoMinute } from './common.ts'

export interface UnsoldQuestionSpec {
  id: QuestionId
  label: string
  scope: 'market' | 'account'
  horizonMs: number
  /** Reason for the suppress refusal; may depend on the snapshot (S02 names its readiness). */
  reason(snapshot: FeatureSnapshot): string
  /** Extra conditions to record (e.g. S02's readiness count). */
  conditions?(snapshot: FeatureSnapshot): Record<string, unknown>
}

export class UnsoldQuestion implements QuestionModel {
  readonly id: QuestionId
  readonly label: string
  readonly answer = 'probability' as const
  readonly scope: 'market' | 'account'
  readonly horizonMs: number
  readonly horizon: string
  readonly entryTier = false
  readonly classes = null
  readonly sold = false
  private readonly spec: UnsoldQuestionSpec

  constructor(spec: UnsoldQuestionSpec) {
    this.spec = spec
    this.id = spec.id
    this.label = spec.label
    this.scope = spec.scope
    this.horizonMs = spec.horizonMs
    this.horizon = horizonString(spec.horizonMs)
  }

  fit(samples: readonly LabelledSample[]): FittedParams {
    return {
      question_id: this.id,
      version: 'unsold',
      trained_on: { window_start: '', window_end: '', n: 0, positives: null },
      params: { status: 'not_sold', offered_samples: samples.length },
    }
  }

  evaluate(snapshot: FeatureSnapshot, _fitted: FittedParams | null): ModelOutput {
    const end = snapshot.at + this.horizonMs
    return {
      kind: 'refusal',
      refusal: 'suppress',
      reason: this.spec.reason(snapshot),
      event: `${this.label} for ${snapshot.asset} from ${isoMinute(snapshot.at)} to ${isoMinute(end)}`,
      horizon: this.horizon,
      conditions: { window_start: isoMinute(snapshot.at), window_end: isoMinute(end), ...(this.spec.conditions?.(snapshot) ?? {}) },
    }
  }

  resolve(): Resolution {
    return { outcome: 'unresolvable', statistic: null, realized_choice: null, reason: 'not_answered_on_deployment' }
  }
}
