/**
 * What the engine reads about an account-scoped subject (S09..S11): the wallet history through the wired provider,
 * the journaled snapshot built from it, and the fit the answer uses.
 *
 * Spec, What the service does 4: "An unreachable provider is an error (PROVIDER_DOWN), never a decision." A provider
 * failure becomes EngineError PROVIDER_DOWN (reason WALLET_PROVIDER_DOWN, naming the provider and its reason); nothing
 * is recorded for it.
 *
 * Fit (docs/methodology.md "Account-scoped questions"; docs/decisions.md): pooled parameters when the operator
 * installed them (DecisionEngine.setAccountFit), else the documented cell-frequency fit on the subject's OWN history as
 * read for this decision — labelled rows whose 24 h windows closed by the decision instant (walletSamples), so nothing
 * after `at` is used. Deterministic: the same read fits the same parameters (content-hashed version in the fit store).
 */
import { walletFeatureSnapshot, type RiskCandidate } from '../models/account/accountSnapshot.ts'
import { walletSamples } from '../models/account/walletSamples.ts'
import { WalletProviderError } from '../ingest/wallet/WalletProviderError.ts'
import type { WalletHistory, WalletProvider } from '../ingest/wallet/WalletProvider.ts'
import type { FeatureSnapshot } from '../pipeline/features/FeatureSnapshot.ts'
import type { FittedParams } from '../models/QuestionModel.ts'
import type { AccountQuestion } from '../models/questions/AccountQuestion.ts'
import { EngineError } from './EngineError.ts'

/** How far back a subject is read: the wallet state machine looks back at most 90 daily steps, plus the horizon. */
export const ACCOUNT_HISTORY_MS = 91 * 86_400_000

/** The provider's read of `subject` over [start, end]; a provider failure is EngineError PROVIDER_DOWN. */
export async function readAccountHistory(provider: WalletProvider, subject: string, start: number, end: number): Promise<WalletHistory> {
  try {
    return await provider.history(subject, { start, end })
  } catch (err) {
    if (err instanceof WalletProviderError) {
      throw new EngineError('PROVIDER_DOWN', `the wallet provider '${err.provider}' is unavailable (${err.reason})`, {
        reason: 'WALLET_PROVIDER_DOWN',
        provider: err.provider,
        provider_reason: err.reason,
      })
    }
    throw err
  }
}

/**
 * The journaled snapshot of an account decision at `at`: the wallet features, the candidate and the subject kind
 * (S11; the kind is a label) and the wallet input's freshness. Non-finite features are journaled as null (JSON has no
 * NaN; models read them as missing).
 */
export function accountSnapshot(question: AccountQuestion, history: WalletHistory, at: number, candidate: RiskCandidate | null): FeatureSnapshot {
  const s11 = question.id === 'S11_risk'
  const s = walletFeatureSnapshot(history, at, {
    receivedAt: history.snapshot.received_at,
    ...(s11 && candidate ? { candidate } : {}),
    ...(s11 ? { subjectKind: 'wallet' as const } : {}),
  })
  for (const [k, v] of Object.entries(s.features)) if (v !== null && !Number.isFinite(v)) s.features[k] = null
  return s
}

/** The fit of `question` on the subject's own history (rows whose horizon closed by the read's end). */
export function ownHistoryFit(question: AccountQuestion, history: WalletHistory): FittedParams {
  return question.fit(walletSamples(question, history))
}
