/**
 * Decisions and replays (the paid write path of the engine). Paid operations receive the authorized call; what they
 * record is written only through it, after the payment is captured.
 */
import type { CanonicalAsset } from '../common/schema.ts'
import type { PaidCall } from '../pipeline/journal/PaidCall.ts'
import type { UnitOfWork } from '../pipeline/journal/UnitOfWork.ts'
import type { DecisionRead, ReplayResult, SignalCatalog } from './schemas.ts'

export interface DecideRequest {
  asset: CanonicalAsset
  chain: 'base'
  question_id: string
  /** The wallet of an account-scoped question (S09..S11). */
  subject: string | null
  /** S11's candidate movement. */
  candidate?: Record<string, unknown> | null
}

export interface DecisionService {
  /** Unknown id → null; unverifiable inputs → ServiceError REPLAY_INPUT_LOST; bad pin → VALIDATION. */
  replay(decisionId: string, opts: { ruleset_version: string | null }): Promise<ReplayResult | null>
  decide(input: DecideRequest, payment: PaidCall, unit: UnitOfWork): Promise<DecisionRead>
  /** Previous clock still open → ServiceError CLOCK_OPEN; unknown previous → null. */
  nextDecision(previousDecisionId: string, payment: PaidCall, unit: UnitOfWork): Promise<DecisionRead | null>
  marketRegime(asset: CanonicalAsset, payment: PaidCall, unit: UnitOfWork): Promise<DecisionRead>
  marketRisk(asset: CanonicalAsset, payment: PaidCall, unit: UnitOfWork): Promise<DecisionRead>
  signals(): Promise<SignalCatalog>
  /**
   * The checks of an ask that cost nothing, run before the payment challenge (a refusal that costs nothing must not
   * ask for money first): an unknown question → ServiceError VALIDATION.
   */
  checkAsk(questionId: string): Promise<void>
  /** The same for a next ask: previous clock still open → ServiceError CLOCK_OPEN; unknown previous → false. */
  checkNext(previousDecisionId: string): Promise<boolean>
}
