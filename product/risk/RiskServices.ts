/**
 * POST /v1/risk/{transaction,token,wallet,protocol} (spec, Risk assessment (S11)): "All four subject kinds ...
 * share one pipeline; the kind is a label." Response data: { subject: { kind, address }, risk, allow_probability,
 * review_probability, block_probability, confidence, decision, action, input_hash, policy_version, timestamp, full }.
 *
 * One pipeline: read the subject address's history (provider failure → 503 PROVIDER_DOWN, never a decision), build
 * the S11 snapshot with the candidate and the kind label, evaluate with the fitted parameters (a configured fit, else
 * a fit on the subject's own history), and map through the sealed policy. A refusal answers 200 with all three
 * probabilities 0, confidence 0, the refusal kind as decision and risk 'review' (no claim: docs/decisions.md).
 */
import { jcsSha256 } from '../../common/hash.ts'
import { walletFeatureSnapshot, type RiskCandidate } from '../../models/account/accountSnapshot.ts'
import { walletSamples } from '../../models/account/walletSamples.ts'
import type { FittedParams } from '../../models/QuestionModel.ts'
import type { Policy } from '../../models/policy/Policy.ts'
import { activePolicy } from '../../models/policy/rulesets.ts'
import { S11_CLASSES, S11_risk } from '../../models/questions/S11_risk.ts'
import { JEV_VERSION } from '../../models/version.ts'
import type { WalletHistory, WalletProvider } from '../../ingest/wallet/WalletProvider.ts'
import type { PaidCall } from '../../pipeline/journal/PaidCall.ts'
import type { Clock } from '../../common/Clock.ts'
import type { RiskEngine } from './RiskEngine.ts'
import type { RiskSubjectKind } from '../../models/account/accountSnapshot.ts'
import { readHistory } from '../wallet/index.ts'

export interface RiskServicesOptions {
  provider: WalletProvider
  clock: Clock
  policy?: Policy
  /** Pooled S11 parameters (e.g. from the fit store); absent or null → fitted on the subject's own history. */
  fitted?: () => FittedParams | null
}

export class RiskServices implements RiskEngine {
  readonly #provider: WalletProvider
  readonly #clock: Clock
  readonly #policy: Policy
  readonly #fitted: (() => FittedParams | null) | null

  constructor(o: RiskServicesOptions) {
    this.#provider = o.provider
    this.#clock = o.clock
    this.#policy = o.policy ?? activePolicy()
    this.#fitted = o.fitted ?? null
  }

  #fit(history: WalletHistory): FittedParams {
    return this.#fitted?.() ?? S11_risk.fit(walletSamples(S11_risk, history))
  }

  async assess(kind: RiskSubjectKind, body: Record<string, unknown>, _payment: PaidCall): Promise<unknown> {
    const now = this.#clock.now()
    const candidate = body.candidate as RiskCandidate
    const history = await readHistory(this.#provider, String(body.address), now)
    const snapshot = walletFeatureSnapshot(history, now, { receivedAt: history.snapshot.received_at, candidate, subjectKind: kind })
    const fitted = this.#fit(history)
    const output = S11_risk.evaluate(snapshot, fitted)
    const verdict = this.#policy.apply(output, S11_risk.id)
    const claim = output.kind === 'claim' && verdict.confidence > 0 ? output : null
    const dist = claim?.distribution ?? null
    const p = (c: (typeof S11_CLASSES)[number]) => (dist ? dist[c]! : 0)
    let risk: (typeof S11_CLASSES)[number] = 'review'
    if (dist) for (const c of S11_CLASSES) if (dist[c]! > dist[risk]!) risk = c
    const inputs = { question_id: S11_risk.id, subject_kind: kind, snapshot, candidate, token: body.token ?? null, asset: body.asset }
    return {
      subject: { kind, address: history.address },
      risk,
      allow_probability: p('allow'),
      review_probability: p('review'),
      block_probability: p('block'),
      confidence: verdict.confidence,
      decision: verdict.decision,
      action: verdict.action,
      input_hash: jcsSha256(inputs),
      policy_version: this.#policy.version,
      timestamp: new Date(now).toISOString(),
      full: {
        question_id: S11_risk.id,
        event: output.event,
        horizon: output.horizon,
        conditions: claim ? claim.conditions : output.conditions,
        probability: verdict.probability,
        distribution: dist,
        refusal_reason: output.kind === 'refusal' ? output.reason : verdict.confidence === 0 ? 'below_min_confidence' : null,
        matched_rules: verdict.matched_rules,
        evidence: output.kind === 'claim' ? output.evidence : null,
        fitted_version: fitted.version,
        fitted_on: fitted.trained_on,
        features: snapshot.features,
        freshness: snapshot.freshness,
        data_sources: snapshot.sources,
        candidate,
        token: body.token ?? null,
        jev_version: JEV_VERSION,
      },
    }
  }
}
