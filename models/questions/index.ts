/**
 * The question registry: the ONE list of catalog questions. Serving, the dataset builder, eval and the signals
 * catalog all read it; GET /v1/signals derives the live set from `sold` and per-market availability.
 */
import { QUESTION_IDS, type QuestionId, type QuestionModel } from '../QuestionModel.ts'
import { S01_market_regime } from './S01_market_regime.ts'
import { S02_liquidation_risk } from './S02_liquidation_risk.ts'
import { S03_trend_continuation } from './S03_trend_continuation.ts'
import { S04_drawdown_risk } from './S04_drawdown_risk.ts'
import { S05_volatility_expansion } from './S05_volatility_expansion.ts'
import { S06_funding_anomaly } from './S06_funding_anomaly.ts'
import { S07_funding_persistence } from './S07_funding_persistence.ts'
import { S08_basis_dislocation } from './S08_basis_dislocation.ts'
import { S09_wallet_state } from './S09_wallet_state.ts'
import { S10_wallet_flow } from './S10_wallet_flow.ts'
import { S11_risk } from './S11_risk.ts'

export const QUESTIONS: readonly QuestionModel[] = [
  S01_market_regime,
  S02_liquidation_risk,
  S03_trend_continuation,
  S04_drawdown_risk,
  S05_volatility_expansion,
  S06_funding_anomaly,
  S07_funding_persistence,
  S08_basis_dislocation,
  // Account-scoped: the subject is a wallet (models/account/); answered from a wallet provider's history.
  S09_wallet_state,
  S10_wallet_flow,
  S11_risk,
]

const BY_ID = new Map<QuestionId, QuestionModel>(QUESTIONS.map((q) => [q.id, q]))
if (BY_ID.size !== QUESTION_IDS.length || QUESTION_IDS.some((id) => !BY_ID.has(id))) {
  throw new Error('question registry and QUESTION_IDS disagree')
}

export function questionById(id: string): QuestionModel | undefined {
  return BY_ID.get(id as QuestionId)
}

/** Questions this deployment answers with fitted probabilities (market-scoped and sold). */
export function soldMarketQuestions(): QuestionModel[] {
  return QUESTIONS.filter((q) => q.sold && q.scope === 'market')
}

/** Account-scoped questions: the subject is a wallet, named in the ask (S09..S11). */
export const ACCOUNT_QUESTION_IDS: readonly QuestionId[] = QUESTIONS.filter((q) => q.scope === 'account').map((q) => q.id)
