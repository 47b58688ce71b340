/**
 * The one contract every question module implements (spec: Question catalog; Decision record; Resolution record).
 *
 *   feature snapshot (inputs at event time t) ──evaluate──► model output (claim or typed refusal)
 *   model output ──sealed policy──► decision + action   (models/policy/)
 *   ticks in [t, t + horizon] ──resolve──► outcome: obtains | not | unresolvable
 *
 * Models never read the wall clock or the network: everything they use is in the snapshot, so a journaled snapshot
 * replays to the same answer (input_hash = JCS SHA-256 of the snapshot's inputs).
 */
import type { FeatureSnapshot } from '../pipeline/features/FeatureSnapshot.ts'
import type { ResolutionWindow } from '../pipeline/features/ResolutionWindow.ts'

export const QUESTION_IDS = [
  'S01_market_regime',
  'S02_liquidation_risk',
  'S03_trend_continuation',
  'S04_drawdown_risk',
  'S05_volatility_expansion',
  'S06_funding_anomaly',
  'S07_funding_persistence',
  'S08_basis_dislocation',
  'S09_wallet_state',
  'S10_wallet_flow',
  'S11_risk',
] as const
export type QuestionId = (typeof QUESTION_IDS)[number]

/** Refusal kinds (spec: Decision record, "Refusal meaning"). */
export const REFUSAL_KINDS = ['stale_input', 'insufficient_confidence', 'suppress'] as const
export type RefusalKind = (typeof REFUSAL_KINDS)[number]

/** A claim: a probability for a binary event, or a distribution over named classes (S01). */
export interface ModelClaim {
  kind: 'claim'
  /** The dated event sentence, with concrete thresholds and the window, e.g. "BTC realized vol ... by 2026-01-01T04:00Z". */
  event: string
  /** Duration string '<n>m'. */
  horizon: string
  /** Machine-readable conditions the resolver re-derives the event from (thresholds, baselines, window bounds). */
  conditions: Record<string, unknown>
  /** Binary questions: P(event obtains). Choice questions: probability of the modal class. */
  probability: number
  /** Choice questions only: class → probability, summing to 1. */
  distribution: Record<string, number> | null
  /** 0..1, basis 'jev': defined from evidence (models/confidence.ts). */
  confidence: number
  /** Evidence behind the number, for lineage: sample sizes, calibration band counts, fitted-parameter version. */
  evidence: Record<string, unknown>
}

export interface ModelRefusal {
  kind: 'refusal'
  refusal: RefusalKind
  /** Stable machine reason, e.g. 'input_stale:funding', 'sample_below_floor', 'neutral_funding_out_of_scope'. */
  reason: string
  event: string
  horizon: string
  conditions: Record<string, unknown>
}

export type ModelOutput = ModelClaim | ModelRefusal

export type Outcome = 'obtains' | 'not' | 'unresolvable'

export interface Resolution {
  outcome: Outcome
  /** The measured statistic the outcome was derived from (null when unresolvable for lack of data). */
  statistic: Record<string, number | string | null> | null
  /** For choice questions, the realized class (null unless resolved). */
  realized_choice: string | null
  reason: string | null
}

/** Parameters fitted from history; serialisable, versioned and hashed into state_hash. */
export interface FittedParams {
  question_id: QuestionId
  /** Deterministic version label, e.g. 'logit-v1@<dataset hash prefix>'. */
  version: string
  /** Training window and sample size. */
  trained_on: { window_start: string; window_end: string; n: number; positives: number | null }
  params: Record<string, unknown>
}

/** A training or evaluation sample: the snapshot at decision time and what then happened. */
export interface LabelledSample {
  snapshot: FeatureSnapshot
  resolution: Resolution
}

export interface QuestionModel {
  readonly id: QuestionId
  readonly label: string
  readonly answer: 'probability' | 'choice'
  readonly scope: 'market' | 'account'
  /** Horizon in ms and as the record's duration string. */
  readonly horizonMs: number
  readonly horizon: string
  /** Entry-priced and free-allowance eligible (S01, S05, S06). */
  readonly entryTier: boolean
  /** Choice questions: the class labels, in a fixed order. */
  readonly classes: readonly string[] | null
  /** Whether this deployment sells it; unsold questions answer with a suppress refusal. */
  readonly sold: boolean

  /** Fits parameters from labelled samples that all resolved before the training cut-off. Deterministic. */
  fit(samples: readonly LabelledSample[]): FittedParams
  /** Answers from a snapshot with fitted parameters; never throws for data reasons, it refuses. */
  evaluate(snapshot: FeatureSnapshot, fitted: FittedParams | null): ModelOutput
  /** Re-derives the event from the window's ticks under the claim's conditions. */
  resolve(conditions: Record<string, unknown>, window: ResolutionWindow): Resolution
}
